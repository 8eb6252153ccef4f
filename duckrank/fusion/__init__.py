"""Rank fusion (issue 29): one record per method of ranx 0.3.21 and per score normalisation
(docs/fusion.md). The SQL macros are rendered by ``duckrank.render.fusion``; ``duckrank.fuse``
(``duckrank.reports.fusion``) runs them."""

from __future__ import annotations

from duckrank.fusion.methods import SUPERVISED, UNSUPERVISED
from duckrank.fusion.normalisations import NORMALISATIONS, normalisation
from duckrank.fusion.record import FusionMethod, Normalisation, Parameter

METHODS: tuple[FusionMethod, ...] = (*UNSUPERVISED, *SUPERVISED)
BY_NAME = {m.name: m for m in METHODS}


def method(name: str) -> FusionMethod:
    """The record of a fusion method by its name (ranx's: ``'rrf'``, ``'w_bordafuse'``)."""
    if name not in BY_NAME:
        raise ValueError(
            f"method must be one of {', '.join(repr(n) for n in BY_NAME)}, got {name!r}")
    return BY_NAME[name]


__all__ = ["METHODS", "NORMALISATIONS", "FusionMethod", "Normalisation", "Parameter", "method",
           "normalisation"]
