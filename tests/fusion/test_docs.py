"""docs/fusion.md is current (its reference part is generated from the records) and names every
method, macro and normalisation; every record is complete."""

from __future__ import annotations

from duckrank.fusion import METHODS, NORMALISATIONS
from duckrank.render.fusion import DOC_FILE, MACROS, updated


def test_the_doc_is_current() -> None:
    text = DOC_FILE.read_text()
    assert updated(text) == text, "run: python -m duckrank.render.fusion"


def test_every_method_and_normalisation_is_documented_and_complete() -> None:
    text = DOC_FILE.read_text()
    for method in METHODS:
        assert f"`{method.sql_name}(" in text and method.formula in text
        assert method.source and method.summary and method.missing and method.ranx_notes
        for parameter in method.parameters:
            assert parameter.doc
    for norm in NORMALISATIONS:
        assert f"`'{norm.name}'`" in text and norm.formula in text
    assert len(MACROS) == len(METHODS) == 25  # ranx 0.3.21's fusion_switch has 25 methods
