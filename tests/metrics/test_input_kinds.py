"""The input kinds (duckrank.metrics.inputs): one description read by every engine."""

from dataclasses import replace

import pytest

from duckrank.metrics import METRICS
from duckrank.metrics.inputs import INPUT_KINDS, check_engine, kinds_of
from duckrank.metrics.record import Above, Bounds, Option, check_options, option_errors_sql


def test_an_unknown_kind_fails_when_the_record_is_made() -> None:
    with pytest.raises(ValueError, match="unknown input kind 'nope'"):
        replace(METRICS[0], inputs="nope")


def test_every_record_names_a_described_kind() -> None:
    assert {m.inputs for m in METRICS} <= set(INPUT_KINDS)
    assert all(m.kind is INPUT_KINDS[m.inputs] for m in METRICS)


def test_each_engine_handles_exactly_its_kinds() -> None:
    from duckrank.engines.python_udfs import SHAPES
    from duckrank.render.macros import BODIES

    assert set(BODIES) == kinds_of("sql")
    assert set(SHAPES) == kinds_of("python")
    with pytest.raises(ImportError, match="missing"):
        check_engine("a module", "sql", set(BODIES) - {"hits"})


def test_the_kinds_flags_agree_with_the_records() -> None:
    for metric in METRICS:
        assert metric.cutoff == metric.kind.takes_k, metric.name
        assert metric.first_argument == metric.kind.first_argument, metric.name


@pytest.mark.parametrize(("option", "good", "bad", "message"), [
    (Option("x", 2, "", bounds=Above(1)), 1.5, 1, "f: x must be a number > 1, got 1"),
    (Option("x", 0.5, "", bounds=Bounds(0, 1)), 1, 1.5,
     "f: x must be a finite number >= 0 and <= 1, got 1.5"),
    (Option("x", "a", "", choices=("a", "b")), "b", "c", "f: x must be one of 'a', 'b', got 'c'"),
])
def test_one_option_model_gives_sql_and_kernel_checks(option, good, bad, message) -> None:
    check_options("f", (option,), {"x": good})
    with pytest.raises(ValueError) as error:
        check_options("f", (option,), {"x": bad})
    assert str(error.value) == message
    [(condition, raised)] = option_errors_sql("f", (option,))
    assert "x" in condition and raised.startswith("error('f: x must be ")
