"""Files generated from the metric records must be current (regenerate with the named command)."""

from duckrank.render.reference import REFERENCE_FILE, render_reference


def test_reference_docs_are_current():
    assert REFERENCE_FILE.read_text() == render_reference(), (
        "run: python -m duckrank.render"
    )
