"""The one option model (duckrank.options): its spelling, and its SQL check and Python twin."""

from __future__ import annotations

import math

import duckdb
import pytest

from duckrank import options
from duckrank.fusion import METHODS
from duckrank.metrics import METRICS
from duckrank.options import Bounds, Option
from duckrank.stats import TESTS

DOMAINS = (
    Bounds(),
    Bounds(0, 1),
    Bounds(0, 1, open_low=True, open_high=True),
    Bounds(0, open_low=True),
    Bounds(high=2),
    Bounds(1, nullable=True, whole=True),
    Bounds(0.0, 1.0, interval=True),
    Bounds(1, whole=True, words="a positive integer"),
)
# As SQL literals and as Python values: the same value each side.
VALUES = (
    ("NULL", None), ("0", 0), ("1", 1), ("2", 2), ("-1", -1), ("0.5", 0.5), ("2.5", 2.5),
    ("1.0", 1.0), ("'inf'::DOUBLE", math.inf), ("'-inf'::DOUBLE", -math.inf),
    ("'nan'::DOUBLE", math.nan), ("18446744073709551615", 2**64 - 1), ("'abc'", "abc"),
)


@pytest.mark.parametrize(("bounds", "text"), [
    (Bounds(), "a finite number"),
    (Bounds(0, 1), "a finite number >= 0 and <= 1"),
    (Bounds(0, 1, open_low=True, open_high=True), "a finite number > 0 and < 1"),
    (Bounds(high=2), "a finite number <= 2"),
    (Bounds(1, nullable=True, whole=True), "a whole number >= 1 or NULL"),
    (Bounds(0.0, 1.0, interval=True), "a finite number in [0, 1]"),
    (Bounds(0, 1, open_low=True, interval=True), "a finite number in (0, 1]"),
    (Bounds(0.0, interval=True, whole=True), "a whole number >= 0"),
    (Bounds(1, whole=True, words="a positive integer"), "a positive integer"),
])
def test_a_domain_says_what_a_valid_value_is(bounds: Bounds, text: str) -> None:
    assert bounds.text() == text


def test_the_sql_check_and_its_python_twin_agree() -> None:
    connection = duckdb.connect()
    for bounds in DOMAINS:
        # As the macros read it: in a CASE, where a NULL test is a valid value.
        connection.execute("CREATE OR REPLACE MACRO invalid(x) AS "
                           f"CASE WHEN {bounds.invalid_sql('x')} THEN true ELSE false END")
        for literal, value in VALUES:
            [(invalid,)] = connection.execute(f"SELECT invalid({literal})").fetchall()
            assert invalid is not bounds.accepts(value), (bounds, literal)


def test_the_sql_error_and_the_python_error_say_the_same() -> None:
    connection = duckdb.connect()
    for option in (Option("x", 0.5, "", bounds=Bounds(0, 1)),
                   Option("x", "a", "", choices=("a", "b")),
                   Option("x", None, "", bounds=Bounds(1, nullable=True, whole=True))):
        condition, error = option.error_sql("f")
        with pytest.raises(ValueError) as raised:
            option.check("f", 2.5)
        macro = f"CREATE OR REPLACE MACRO f(x) AS CASE WHEN {condition} THEN {error} END"
        connection.execute(macro)
        with pytest.raises(duckdb.Error, match="f: x must be ") as failed:
            connection.execute("SELECT f(2.5)").fetchall()
        assert str(raised.value) in str(failed.value)


def test_integers_are_compared_exactly() -> None:
    seed = Bounds(0, whole=True)
    assert seed.accepts(2**64 - 1) and seed.accepts(10**400)
    assert not Bounds(high=2**64).accepts(2**64 + 1)


def test_an_option_without_a_domain_is_not_checked() -> None:
    option = Option("likelihood", 0.5, "")
    assert not option.checked
    option.check("f", "anything")


@pytest.mark.parametrize(("default", "sql"), [(None, "NULL"), ("it's", "'it''s'"), (0.5, "0.5")])
def test_the_sql_default(default: object, sql: str) -> None:
    assert Option("x", default, "").sql_default() == sql


def test_every_family_reads_the_one_model() -> None:
    assert all(isinstance(o, options.Option) for m in METRICS for o in m.options)
    assert all(isinstance(o, options.Option) and isinstance(o.bounds, Bounds)
               for t in TESTS for o in t.options)
    assert all(isinstance(p.bounds, Bounds)
               for f in METHODS for p in f.parameters if not p.per_system)
