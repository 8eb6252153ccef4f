"""The statistical tests' records drive the DuckDB registration and docs/compare.md."""

from __future__ import annotations

import pytest

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


def test_the_report_offers_the_tests_whose_records_say_how() -> None:
    """Issue 26, item 5: ``duckrank.compare``'s ``test=``, ``duckrank compare --test`` (its
    choices and help) and the functions a report registers come from the records
    (``StatTest.report``), in the aliases' order; the hand-written docs name each of them."""
    from pathlib import Path

    from duckrank.cli import build_parser
    from duckrank.reports import compare
    from duckrank.reports.compare.command import _test_help
    from duckrank.stats import REPORT_TESTS

    offered = {t.report.alias: t for t in TESTS if t.report is not None}
    assert dict(sorted(offered.items())) == REPORT_TESTS
    assert list(REPORT_TESTS) == ["randomization", "t", "wilcoxon"]
    assert compare.DEFAULT_TEST in REPORT_TESTS
    for alias, test in REPORT_TESTS.items():
        assert test.summary.arguments == ("x", "y") and "p_value" in test.field_names
        assert set(test.option_names) <= set(compare.RESAMPLING)
        assert test.name in compare._REPORT_FUNCTIONS
        assert f"{alias} (" in _test_help()
    assert set(compare._REPORT_FUNCTIONS) == {*(t.name for t in REPORT_TESTS.values()),
                                              "bootstrap_ci", "paired_effect_size"}

    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command")
    test_flag = next(a for a in commands.choices["compare"]._actions if a.dest == "test")
    assert (tuple(test_flag.choices), test_flag.default) == (tuple(REPORT_TESTS),
                                                             compare.DEFAULT_TEST)

    docs = Path(COMPARE_FILE).parent
    hand_written = COMPARE_FILE.read_text().split(BEGIN)[0]
    usage = f"[--test {'|'.join(REPORT_TESTS)}]"
    assert usage in (docs / "integrations.md").read_text()
    for alias in REPORT_TESTS:
        assert f'"{alias}"' in hand_written
        assert f"``'{alias}'``" in (compare.compare.__doc__ or "")


def test_a_test_the_report_runs_is_paired_and_has_a_p_value() -> None:
    import dataclasses

    from duckrank.stats.record import VALUES, InReport

    bootstrap = by_name("bootstrap_ci")
    with pytest.raises(ValueError, match="bootstrap_ci: a test the comparison report runs"):
        dataclasses.replace(bootstrap, report=InReport("ci", "an interval", "no test"))
    with pytest.raises(ValueError, match="paired"):
        dataclasses.replace(by_name("wilcoxon"), summary=VALUES)
