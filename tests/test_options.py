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


def test_a_boolean_option_takes_true_or_false_and_never_null() -> None:
    flag = Option("normalize", True, "doc", boolean=True)
    assert flag.sql_default() == "true" and flag.requirement() == "true or false"
    flag.check("f", False)
    with pytest.raises(ValueError, match="f: normalize must be true or false, got None"):
        flag.check("f", None)
    with pytest.raises(ValueError, match="got 1"):
        flag.check("f", 1)  # a number is not a flag, even where Python reads it as one
    condition, error = flag.error_sql("f")
    con = duckdb.connect()
    assert con.execute(f"SELECT {condition} FROM (SELECT false AS normalize)").fetchone() == (
        False,)
    with pytest.raises(duckdb.Error, match="f: normalize must be true or false, got NULL"):
        con.execute(f"SELECT CASE WHEN {condition} THEN {error} END "
                    "FROM (SELECT NULL::BOOLEAN AS normalize)").fetchall()


def test_infinity_is_taken_only_where_the_bounds_say_so() -> None:
    # obp's lambda_ of clipping estimators: [0, infinity], infinity meaning no clipping
    clip = Bounds(0, math.inf, finite=False, interval=True)
    assert clip.text() == "a number in [0, inf]"
    assert clip.accepts(math.inf) and clip.accepts(0) and not clip.accepts(math.nan)
    assert not clip.accepts(-1) and not Bounds(0).accepts(math.inf)
    con = duckdb.connect()
    for value, invalid in (("'infinity'::DOUBLE", False), ("'nan'::DOUBLE", True),
                           ("-0.5", True), ("3.0", False)):
        assert con.execute(f"SELECT {clip.invalid_sql('x')} FROM (SELECT {value} AS x)"
                           ).fetchone() == (invalid,), value
    assert Option("lam", math.inf, "doc", bounds=clip).sql_default() == "'infinity'::DOUBLE"


def test_a_helper_macro_names_its_caller_in_the_error() -> None:
    # A helper macro gets its caller's name as a parameter (fn): the error reads it from there.
    k = Option("k", None, "doc", bounds=options.POSITIVE_INTEGER)
    condition, error = k.error_sql("", named_by="fn")
    con = duckdb.connect()
    con.execute(f"CREATE MACRO checked_k(fn, k) AS CASE WHEN {condition} THEN {error} ELSE k END")
    assert con.execute("SELECT checked_k('catalog_coverage', 3)").fetchone() == (3,)
    with pytest.raises(duckdb.Error, match="catalog_coverage: k must be a positive integer, "
                                           "got 0"):
        con.execute("SELECT checked_k('catalog_coverage', 0)").fetchall()
