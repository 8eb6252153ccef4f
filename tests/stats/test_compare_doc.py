"""The statistical tests' records drive the DuckDB registration and docs/compare.md."""

from __future__ import annotations

import duckrank
from duckrank.render.compare import BEGIN, COMPARE_FILE, END, updated
from duckrank.stats import TESTS, by_name


def test_compare_doc_is_current() -> None:
    # `python -m duckrank.render` rewrites the generated part; the hand-written rest is kept.
    text = COMPARE_FILE.read_text()
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    assert updated(text) == text, "run: .venv/bin/python -m duckrank.render"


def test_every_record_is_complete_and_registered() -> None:
    con = duckrank.connect()
    macros = {
        row[0]: row[1]
        for row in con.execute(
            "SELECT function_name, parameters FROM duckdb_functions() WHERE function_type = "
            "'macro' AND database_name = 'temp'"
        ).fetchall()
    }
    con.close()
    for test in TESTS:
        for text in (test.summary_text, test.null_hypothesis, test.convention, test.undefined,
                     test.prefer, test.source):
            assert text.strip(), test.name
        assert by_name(test.name.upper()) is test
        assert macros[test.name] == [*test.summary.arguments, *(o.name for o in test.options)]
        assert test.fields[0].name == "n"  # every test says how many pairs (values) it used
        assert test.signature in COMPARE_FILE.read_text()
