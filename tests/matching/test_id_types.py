"""Ids of two different types, and collated text ids: the matching step compares them exactly (or
under the collation, as DuckDB's = does), the native and SQL steps alike, and no metric leaves
[0, 1] (docs/reliability.md, "Ids of two different types").

The expected values come from exact arithmetic in Python (``fractions.Fraction`` of each id as
DuckDB returns it) or are worked out by hand in the test.
"""

from __future__ import annotations

import itertools
import math
import random
import re
import shutil
import subprocess
import sysconfig
from decimal import Decimal
from fractions import Fraction

import duckdb
import pytest

import duckrank
from duckrank.render.macros import SQL_FILE

# Numeric id types, and text cast to each: integers at the edges of each width and of a float's
# exact range (2^24, 2^53), fractions, -0.0, NaN and infinity.
TYPES = (
    "TINYINT", "INTEGER", "BIGINT", "HUGEINT", "UINTEGER", "UBIGINT", "UHUGEINT", "BIGNUM",
    "FLOAT", "DOUBLE", "DECIMAL(4,1)", "DECIMAL(18,3)", "DECIMAL(38,0)", "DECIMAL(38,10)",
)
TEXTS = (
    "0", "1", "-1", "2", "1.5", "0.1", "0.5", "-0.0", "nan", "inf", "16777216", "16777217",
    "9007199254740992", "9007199254740993", "9223372036854775807", "18446744073709551615",
    "18446744073709551616", "170141183460469231731687303715884105727",
    "170141183460469231731687303715884105728", "340282366920938463463374607431768211455",
    "-170141183460469231731687303715884105728", "123456.789", "123456.79",
    "12345678901234567.891", "12345678901234567.89",
)
# DuckDB has no common type of BIGNUM and DECIMAL (its binder error), and duckrank refuses
# DECIMAL against a float (test_refused_pairs_name_the_function_and_both_types).
FLOATS = ("FLOAT", "DOUBLE")


def _excluded(a: str, b: str) -> bool:
    kinds = {a.split("(")[0], b.split("(")[0]}
    return "DECIMAL" in kinds and bool(kinds & {"BIGNUM", *FLOATS})


PAIRS = [(a, b) for a, b in itertools.permutations(TYPES, 2) if not _excluded(a, b)]


@pytest.fixture(scope="module", params=[True, False], ids=["native", "sql"])
def con(request: pytest.FixtureRequest) -> duckdb.DuckDBPyConnection:
    connection = duckrank.connect(native=request.param)
    yield connection
    connection.close()


def _key(value: object) -> object:
    """An id's exact value (NaN and infinities as themselves: DuckDB's = has NaN = NaN)."""
    if value is None:
        return None
    if isinstance(value, float):
        return Fraction(value) if math.isfinite(value) else str(value)
    if isinstance(value, str):  # BIGNUM arrives as its digits
        return Fraction(int(value))
    return Fraction(Decimal(value)) if isinstance(value, Decimal) else Fraction(value)


def _expected(rec: list, truth: list) -> tuple[list[int], int]:
    """The hit positions (a hit is an item of truth not seen earlier in rec) and n, by value."""
    wanted = {_key(t) for t in truth} - {None}
    positions, seen = [], set()
    for i, item in enumerate(rec, start=1):
        key = _key(item)
        if key is not None and key in wanted and key not in seen:
            positions.append(i)
        seen.add(key)
    return positions, len(wanted)


def _lists_table(con: duckdb.DuckDBPyConnection, seed: int) -> None:
    """One row of lists per seed, a column per type: each text cast to the type (those that do not
    fit are left out), a NULL and a repeat of an earlier id, shuffled."""
    rng = random.Random(seed)
    columns = []
    for n, type_name in enumerate(TYPES):
        texts = list(TEXTS)
        rng.shuffle(texts)
        casts = ", ".join(f"TRY_CAST('{text}' AS {type_name})" for text in texts)
        columns.append(
            f"list_filter([{casts}], lambda x: x IS NOT NULL) || [NULL::{type_name}] "
            f"|| list_filter([{casts}], lambda x: x IS NOT NULL)[3:3] AS c{n}"
        )
    con.execute(f"CREATE OR REPLACE TEMP TABLE ids AS SELECT {', '.join(columns)}")


@pytest.mark.parametrize("seed", [1, 2])
def test_every_pair_of_numeric_types_compares_by_value(con, seed: int) -> None:
    """Each pair of different numeric types (158 of them): the hit positions and n of the match,
    and average_precision, against exact arithmetic. Before, UHUGEINT against HUGEINT, integers
    against floats beyond 2^24 or 2^53, and DECIMALs of different scales met in an inexact
    common type (a hit counted twice, metrics above 1), or a cast overflowed."""
    _lists_table(con, seed)
    column = {type_name: f"c{n}" for n, type_name in enumerate(TYPES)}
    calls = []
    for a, b in PAIRS:
        rec, truth = column[a], column[b]
        calls += [f"duckrank_matched('t', {rec}, {truth}, 1000)",
                  f"average_precision({rec}, {truth})"]
    lists = con.execute(f"SELECT {', '.join(column.values())} FROM ids").fetchall()[0]
    values = dict(zip(TYPES, lists, strict=True))
    got = con.execute(f"SELECT {', '.join(calls)} FROM ids").fetchall()[0]
    for (a, b), matched, average_precision in zip(PAIRS, got[::2], got[1::2], strict=True):
        positions, n = _expected(values[a], values[b])
        assert (sorted(matched["pos"]), matched["n"]) == (positions, n), (a, b)
        expected = sum(j / p for j, p in enumerate(positions, start=1)) / n
        assert average_precision == pytest.approx(expected, rel=1e-12), (a, b)


def test_uhugeint_against_hugeint(con) -> None:
    """The issue's case: UHUGEINT 2^64 - 1 against HUGEINT 2^64 - 1 and 2^64 met as DOUBLE, where
    both are 2^64: average_precision 1.5, ndcg 1.226, auc 1.010. By value: one hit at rank 1 of
    50, n = 2: AP (1/1)/2, ndcg 1 / (1 + 1/log2 3), auc 1 (every miss below the hit)."""
    rec = "[18446744073709551615::UHUGEINT] || range(1, 50)::UHUGEINT[]"
    truth = "[18446744073709551615::HUGEINT, 18446744073709551616::HUGEINT]"
    got = con.execute(
        f"SELECT average_precision({rec}, {truth}), ndcg({rec}, {truth}), auc({rec}, {truth}), "
        f"dcg({rec}, {truth}), half_life_utility({rec}, {truth})"
    ).fetchall()[0]
    # dcg: one hit at rank 1, (2^1 - 1) / log2 2 = 1. half-life utility: 1 over the ideal
    # 1 + 1 / 2^(1/4) (two relevant items at ranks 1 and 2, half-life 5).
    expected = (0.5, 1 / (1 + 1 / math.log2(3)), 1.0, 1.0, 1 / (1 + 2 ** -0.25))
    assert got == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("rec", "truth", "message"),
    [
        ("[1.5, 2.5]", "[1.5::DOUBLE]",
         "rec is DECIMAL(2,1)[] and truth is DOUBLE[]: DuckDB would compare these ids as DOUBLE"),
        ("[1.5::FLOAT]", "[1.5]", "rec is FLOAT[] and truth is DECIMAL(2,1)[]"),
        ("[TIMESTAMP '2024-03-10 02:30:00', TIMESTAMP '2024-03-10 03:30:00']",
         "[TIMESTAMPTZ '2024-03-10 03:30:00']",
         "rec is TIMESTAMP[] and truth is TIMESTAMP WITH TIME ZONE[]: DuckDB would compare these "
         "ids through the TimeZone setting"),
        ("[DATE '2024-01-01']", "[TIMESTAMPTZ '2024-01-01 00:00:00']",
         "rec is DATE[] and truth is TIMESTAMP WITH TIME ZONE[]"),
        ("[[1]]::INTEGER[][]", "[[1]]::BIGINT[][]",
         "rec is INTEGER[][] and truth is BIGINT[][]: ids that are lists or structs must have "
         "the same type on both sides"),
        ("[{'a': 1}]", "[{'a': 1::BIGINT}]",
         "rec is STRUCT(a INTEGER)[] and truth is STRUCT(a BIGINT)[]"),
    ],
)
@pytest.mark.parametrize("function", ["recall_at", "ndcg", "dcg"])
def test_refused_pairs_name_the_function_and_both_types(con, function: str, rec: str,
                                                        truth: str, message: str) -> None:
    """Pairs with no exact comparison are refused. Before, TIMESTAMP 02:30 and 03:30 on New
    York's spring-forward day were one TIMESTAMPTZ instant: average_precision 2.0."""
    con.execute("SET TimeZone = 'America/New_York'")
    with pytest.raises(duckdb.InvalidInputException) as raised:
        con.execute(f"SELECT {function}({rec}, {truth})").fetchall()
    assert f"{function}: {message}" in str(raised.value)
    assert "cast one side to the other's type" in str(raised.value)


def test_a_refused_pair_gives_null_for_null_rows(con) -> None:
    """NULL in, NULL out, as for every other check: the error comes with the first row that has
    both lists."""
    rows = "(VALUES (NULL::DECIMAL(4,1)[], [1.5]::DOUBLE[])) v(rec, truth)"
    assert con.execute(f"SELECT recall_at(rec, truth) FROM {rows}").fetchall() == [(None,)]
    with pytest.raises(duckdb.InvalidInputException, match="recall_at: rec is DECIMAL"):
        con.execute("SELECT recall_at(rec, truth) FROM (VALUES (NULL::DECIMAL(4,1)[], "
                    "NULL::DOUBLE[]), ([1.5], [1.5])) v(rec, truth)").fetchall()


def test_the_usual_pairs_keep_duckdbs_comparison(con) -> None:
    """Integers of any widths, FLOAT against DOUBLE and an INTEGER against a DOUBLE (which holds
    it exactly) take the usual matching step: no conversion of the ids in the plan."""
    for rec, truth in [("[1, 2]::INTEGER[]", "[2]::BIGINT[]"), ("[1, 2]::UBIGINT[]", "[2]"),
                       ("[1, 2]::FLOAT[]", "[2]::DOUBLE[]"), ("[1, 2]", "[2]::DOUBLE[]")]:
        plan = "".join(row[1] for row in con.execute(
            f"EXPLAIN SELECT recall_at(rec, truth) FROM (SELECT {rec} rec, {truth} truth)"
        ).fetchall())
        assert "bignum" not in plan.lower() and "regexp_replace" not in plan, (rec, truth)


# --- collations -----------------------------------------------------------------------------------

def test_collated_ids_match_under_their_collation(con) -> None:
    """The issue's case: rec and truth built from a VARCHAR COLLATE NOCASE column. The native
    step compared bytes (recall 0.0), the SQL one the collation (1.0); DuckDB's = says 'A' = 'a'.
    The native step is not used for collated ids (it cannot see a collation)."""
    con.execute("CREATE OR REPLACE TEMP TABLE events(u INT, item VARCHAR COLLATE NOCASE, "
                "relevant VARCHAR COLLATE NOCASE)")
    con.execute("INSERT INTO events VALUES (1, 'A', 'a'), (1, 'b', 'B')")
    # The lists come from a subquery: an aggregate as truth in the call would bind recall_at's
    # MAP-truth overload (docs/reliability.md).
    query = ("SELECT recall_at(rec, truth, 10) FROM (SELECT list(item) AS rec, "
             "list(relevant) AS truth FROM events GROUP BY u)")
    assert con.execute(query).fetchall() == [(1.0,)]
    plan = "".join(row[1] for row in con.execute(f"EXPLAIN {query}").fetchall())
    assert "duckrank_match" not in plan


def test_long_collated_lists(con) -> None:
    """2,000 items on each side (collated ids are matched by sorting both lists once; the sort
    follows the collation). Lower-case recommendations of upper-case truth: every one hits
    (recall 1), and the upper-case repeats after them are misses (AP 1: all hits come first)."""
    con.execute("CREATE OR REPLACE TEMP TABLE long_events AS SELECT "
                "('x' || range)::VARCHAR COLLATE NOCASE AS lower_id, "
                "('X' || range)::VARCHAR COLLATE NOCASE AS item FROM range(2000)")
    got = con.execute(
        "SELECT recall_at(lower_ids, items, 2000), average_precision(lower_ids || items, items) "
        "FROM (SELECT list(lower_id) AS lower_ids, list(item) AS items FROM long_events)"
    ).fetchall()
    assert got == [(1.0, 1.0)]


def test_one_collated_side_reads_both_sides_under_it(con) -> None:
    """Plain VARCHAR against VARCHAR COLLATE NOCASE: DuckDB compares them under NOCASE, so both
    sides are read so. By hand: rec ['a', 'A', 'b'] against ['a', 'c'] (NOCASE): 'A' repeats 'a'
    (a miss), one hit at rank 1, n = 2: precision 1/3, recall 1/2 (before, 'A' hit again:
    recall 1.0 with 'c' never recommended). rec ['A', 'b'] (NOCASE) against ['a', 'A']: truth is
    one item under NOCASE, n = 1: recall 1, and the half-life utility (graded, n from the same
    match) is that of one relevant item at rank 1: 1."""
    got = con.execute(
        "SELECT precision_at(['a', 'A', 'b'], ['a' COLLATE NOCASE, 'c']), "
        "recall_at(['a', 'A', 'b'], ['a' COLLATE NOCASE, 'c']), "
        "recall_at(['A' COLLATE NOCASE, 'b'], ['a', 'A']), "
        "half_life_utility(['A' COLLATE NOCASE, 'b'], ['a', 'A'])"
    ).fetchall()[0]
    assert got == pytest.approx((1 / 3, 0.5, 1.0, 1.0))


def test_graded_map_truth_compares_text_byte_for_byte(con) -> None:
    """MAP truth is looked up as DuckDB looks up a MAP key, byte for byte (a collation does not
    apply to a MAP lookup in DuckDB either): 'A' does not find key 'a', on both steps."""
    got = con.execute(
        "SELECT ndcg(['A' COLLATE NOCASE], MAP {'a': 1.0}), ndcg(['a' COLLATE NOCASE], "
        "MAP {'a': 1.0})"
    ).fetchall()
    assert got == [(0.0, 1.0)]


def test_the_sql_file_in_the_shell_of_the_test_extra() -> None:
    """sql/duckrank.sql in the real DuckDB shell the test extra installs (1.5): numeric ids of
    two types by value there too; collated ids are refused by a DuckDB before 2.0 (its list
    functions ignore a collation that its comparisons and sorts apply, so no SQL form is
    consistent there) and compared under the collation from 2.0. Values as in the tests above:
    AP 0.5 for the UHUGEINT case; recall 1/2 for ['a', 'A', 'b'] against ['a', 'c'] (NOCASE),
    and the same byte for byte as BLOBs ('A' is then another item, never in truth)."""
    shell = shutil.which("duckdb", path=sysconfig.get_path("scripts"))
    if shell is None:
        pytest.skip("no duckdb shell next to this Python: pip install -e '.[test]'")
    version = subprocess.run([shell, "--version"], capture_output=True, text=True, timeout=60,
                             check=True).stdout
    line = tuple(int(part) for part in re.match(r"v(\d+)\.(\d+)", version).groups())

    def run(query: str) -> subprocess.CompletedProcess:
        return subprocess.run([shell, "-csv", "-noheader", "-c", f".read {SQL_FILE}", "-c", query],
                              capture_output=True, text=True, timeout=300)

    exact = run("SELECT average_precision([18446744073709551615::UHUGEINT] || "
                "range(1, 50)::UHUGEINT[], [18446744073709551615::HUGEINT, "
                "18446744073709551616::HUGEINT])")
    assert exact.stdout.strip() == "0.5", exact.stderr
    blobs = run("SELECT recall_at(list_transform(['a', 'A', 'b'], lambda x: x::BLOB), "
                "list_transform(['a' COLLATE NOCASE, 'c'], lambda x: x::BLOB))")
    assert blobs.stdout.strip() == "0.5", blobs.stderr
    collated = run("SELECT recall_at(['a', 'A', 'b'], ['a' COLLATE NOCASE, 'c'])")
    if line >= (2, 0):
        assert collated.stdout.strip() == "0.5", collated.stderr
    else:
        assert "recall_at: rec is VARCHAR[] and truth is VARCHAR[]: collated ids need DuckDB " \
               "2.0" in collated.stderr
        assert "list_transform(rec, lambda x: x::BLOB)" in collated.stderr
