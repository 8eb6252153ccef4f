"""The aggregate macros of the pointwise and classification records (``duckrank.metrics.pointwise``,
``duckrank.metrics.classification``): ``rmse(prediction, rating)``, ``roc_auc(score, label)``,
``gauc(rec, truth)``... One ``CREATE MACRO`` per record, its body the record's aggregate SQL."""

from __future__ import annotations

from duckrank.metrics import classification, pointwise
from duckrank.metrics.pointwise import Aggregate

RECORDS: tuple[Aggregate, ...] = (*pointwise.METRICS, *classification.AGGREGATES)

MACROS: tuple[str, ...] = (*classification.GAUC_HELPERS, *(r.macro() for r in RECORDS))
