"""The graded matching step over MAP truth: the native ``duckrank_graded`` (match.c) and its SQL
form ``graded_match_sql`` (duckrank/matching/sql.py), which give the graded formulas the hits
only (ranks and grades), the ideal list, n and the first bad grade.

Expected values are hand calculations written out in each test, from the conventions in
docs/graded.md (an integer id matches the key that is its text, x::VARCHAR = key, as the SQL form
has always compared them); the random rows compare the native step with the SQL form, field by
field, and the metrics with the SQL-only connection's.
"""

from __future__ import annotations

import random

import duckdb
import pytest

from duckrank.matching.sql import INTEGER_KEYS, graded_match_sql

FIELDS = ("K", "pos", "grades", "ideal", "n", "cut", "bad")


def _both(
    con: duckdb.DuckDBPyConnection, rec: str, truth: str, k: int, integer_keys: bool = False
) -> tuple[dict, dict]:
    """(native, SQL form) for one row; rec, truth and k come from a table, as in the macros."""
    truth_type = INTEGER_KEYS[1] if integer_keys else "MAP(VARCHAR, DOUBLE)"
    con.execute(f"CREATE OR REPLACE TEMP TABLE one AS SELECT {rec} AS rec, "
                f"{truth}::{truth_type} AS truth, {k}::BIGINT AS k")
    return con.execute(
        "SELECT duckrank_graded(rec, truth, k), "
        f"{graded_match_sql('rec', 'truth', 'k', integer_keys)} FROM one"
    ).fetchone()

def _assert_agree(rows: list[tuple[dict, dict]]) -> None:
    """The native and SQL structs of each row are equal field by field (the other fields are not
    read when bad > 0), and the rows had hits and bad grades to compare."""
    for native_row, sql_row in rows:
        if sql_row["bad"]:
            assert native_row["bad"] == sql_row["bad"]
        else:
            assert native_row == sql_row
    assert any(row[1]["pos"] for row in rows) and any(row[1]["bad"] for row in rows)


def test_integer_ids_match_the_keys_that_are_their_text(fast) -> None:
    """By hand, k = 4: rec [5, 7, 5, 3, 9]; '07' is not 7's text and 'x' no integer's, so the top
    4 has grades 2 (5), 0 (7), 0 (5 again: a repeat), 1 (3): hits at ranks 1 and 4. The positive
    grades are 2, 1, 3 ('x'), 4 ('07'): n = 4, ideal [4, 3, 2, 1] (9's grade 0 is not one)."""
    expected = {"K": 4, "pos": [1, 4], "grades": [2.0, 1.0], "ideal": [4.0, 3.0, 2.0, 1.0],
                "n": 4, "cut": 4, "bad": 0}
    got = _both(fast, "[5, 7, 5, 3, 9]::BIGINT[]",
                "MAP {'5': 2, '3': 1, '9': 0, 'x': 3, '07': 4}", 4)
    assert got == (expected, expected)


@pytest.mark.parametrize(
    ("rec", "keys", "hit"),
    [
        # The extremes of each reading: int64's smallest and largest, uint64's largest.
        ("[-9223372036854775808, 9223372036854775807]::BIGINT[]",
         ["-9223372036854775808", "9223372036854775807"], [1, 2]),
        ("[18446744073709551615, 0]::UBIGINT[]", ["18446744073709551615", "0"], [1, 2]),
        # Texts that are not an integer's: '-0', '+5', ' 5', '5 ', '05', 2^64, '' (no match).
        ("[0, 5, 5, 5, 5]::INTEGER[]", ["-0", "+5", " 5", "5 ", "05"], []),
        ("[0]::UBIGINT[]", ["18446744073709551616", "-0", ""], []),
        ("[-1, 1]::TINYINT[]", ["-1", "1"], [1, 2]),
    ],
)
def test_integer_readings_at_their_edges(fast, rec: str, keys: list[str], hit: list[int]) -> None:
    """Each key has grade 1; a rank is a hit exactly when x::VARCHAR is one of the keys."""
    truth = "MAP {" + ", ".join(f"'{key}': 1" for key in keys) + "}"
    got, sql = _both(fast, rec, truth, 10)
    assert got == sql
    assert got["pos"] == hit and got["grades"] == [1.0] * len(hit)


def test_varchar_ids_repeats_nulls_and_the_cut(fast) -> None:
    """By hand, k = 2: rec ['a', NULL, 'a', 'c'] has top 2 ['a', NULL]: one hit, 'a' (grade
    0.5); truth's positive grades 0.5, 3, 2 sort to [3, 2, 0.5], cut at k = 2."""
    got = _both(fast, "['a', NULL, 'a', 'c']",
                "MAP {'a': 0.5, 'c': 3, 'a long key of more than 12 bytes': 2}", 2)
    expected = {"K": 2, "pos": [1], "grades": [0.5], "ideal": [3.0, 2.0], "n": 3, "cut": 2,
                "bad": 0}
    assert got == (expected, expected)


@pytest.mark.parametrize(("grade", "bad"), [("-1", 2), ("'NaN'::DOUBLE", 2),
                                            ("'inf'::DOUBLE", 2), ("NULL", 2), ("0", 3)])
def test_the_first_bad_grade_is_found(fast, grade: str, bad: int) -> None:
    """truth {'a': 1, 'b': <grade>, 'c': -2}: 'b' is the first bad one (index 2) unless its
    grade is 0, which is allowed; then 'c' (-2) is, at index 3."""
    native_row, sql_row = _both(fast, "['a']", f"MAP {{'a': 1, 'b': {grade}, 'c': -2}}", 10)
    assert native_row["bad"] == sql_row["bad"] == bad


def test_native_and_sql_forms_agree_on_random_rows(fast) -> None:
    """Random rows of every rec type the native step takes, keys in and out of integer form,
    repeats, NULL items and zero grades: the same struct field by field (the other fields are
    not read when bad > 0)."""
    rng = random.Random(19)
    keys = ["1", "2", "-3", "07", "+4", "12", "item 1", "a long item name 2", "-0", "0"]
    pools = {"VARCHAR": ["'item 1'", "'a long item name 2'", "'07'", "'1'"],
             "UBIGINT": ["1", "2", "4", "0"]}
    rows = []
    for _ in range(400):
        rec_type = rng.choice(["VARCHAR", "BIGINT", "INTEGER", "UBIGINT", "TINYINT"])
        pool = pools.get(rec_type, ["1", "2", "-3", "4", "12", "0"])
        rec = "[" + ", ".join("NULL" if rng.random() < 0.05 else rng.choice(pool)
                              for _ in range(rng.randrange(12))) + f"]::{rec_type}[]"
        grades = {rng.choice(keys): rng.choice(["0", "0.5", "1", "2", "3", "-1"])
                  for _ in range(rng.randrange(8))}
        truth = "MAP {" + ", ".join(f"'{key}': {g}" for key, g in grades.items()) + "}"
        rows.append(_both(fast, rec, truth, rng.choice([1, 2, 3, 10])))
    _assert_agree(rows)


def test_native_and_sql_forms_agree_on_integer_keys(fast) -> None:
    """Random rows of integer ids against MAP(BIGINT, DOUBLE) truth, negative and zero ids,
    repeats, NULL items and zero grades: the same struct field by field."""
    rng = random.Random(20)
    rows = []
    for _ in range(300):
        rec_type = rng.choice(["BIGINT", "INTEGER", "UBIGINT"])
        smallest = ["(-9223372036854775807 - 1)"] if rec_type == "BIGINT" else []
        pool = (["0", "1", "2", "4", "9223372036854775807"] if rec_type == "UBIGINT"
                else ["-3", "0", "1", "2", "4", "12", *smallest])
        rec = "[" + ", ".join("NULL" if rng.random() < 0.05 else rng.choice(pool)
                              for _ in range(rng.randrange(12))) + f"]::{rec_type}[]"
        keys = ["-3", "0", "1", "2", "5", "12", "9223372036854775807", "(-9223372036854775807 - 1)"]
        grades = {rng.choice(keys): rng.choice(["0", "0.5", "1", "2", "-1"])
                  for _ in range(rng.randrange(8))}
        truth = "MAP {" + ", ".join(f"({key})::BIGINT: {g}" for key, g in grades.items()) + "}"
        rows.append(_both(fast, rec, truth, rng.choice([1, 2, 3, 10]), integer_keys=True))
    _assert_agree(rows)


@pytest.mark.parametrize("integer_keys", [False, True])
def test_long_truth_and_every_ideal_cut_agree_with_sql(fast, integer_keys: bool) -> None:
    """Truth lists of up to 400 grades with many ties and zeros, k on both sides of 128 (up to
    128 ideal grades the native step keeps the largest as it reads them, past it it sorts them
    all) and of the number of positive grades, and a bad grade now and then: the same struct
    field by field as the SQL form, the ideal list included."""
    rng = random.Random(32)
    rows = []
    for _ in range(60):
        size = rng.choice([0, 1, 5, 127, 128, 129, 200, 400])
        ids = rng.sample(range(1000), size)
        grades = [rng.choice(["0", "0.25", "1", "1", "2", "3", "7.5"]) for _ in ids]
        if size and rng.random() < 0.1:
            grades[rng.randrange(size)] = "-1"
        key = "{}::BIGINT" if integer_keys else "'{}'"
        truth = "MAP {" + ", ".join(
            f"{key.format(i)}: {g}" for i, g in zip(ids, grades, strict=True)) + "}"
        picked = rng.sample(range(1000), 150)
        rec = ("[" + ", ".join(str(i) for i in picked) + "]::BIGINT[]" if integer_keys
               else "[" + ", ".join(f"'{i}'" for i in picked) + "]")
        k = rng.choice([1, 10, 100, 128, 129, 150, 300])
        rows.append(_both(fast, rec, truth, k, integer_keys=integer_keys))
    _assert_agree(rows)


def test_metrics_read_the_native_step_and_agree_with_sql(fast, sql_only) -> None:
    """err by hand: rec ['a', 'x', 'b'], truth {a: 1, b: 2}, max_grade 4: R_a = 1/16,
    R_b = 3/16, ERR = R_a / 1 + (1 - R_a) R_b / 3 = 1/16 + 15/256 = 31/256. dcg (exponential
    gain) = 1 / log2(2) + 3 / log2(4) = 2.5; ideal 3 / 1 + 1 / log2(3); ndcg = their ratio.
    A bad grade names its item whichever step finds it."""
    query = ("SELECT err(rec, truth), dcg(rec, truth), ndcg(rec, truth) FROM (SELECT "
             "['a', 'x', 'b'] AS rec, MAP {'a': 1.0, 'b': 2.0} AS truth)")
    plan = "".join(row[1] for row in fast.execute(f"EXPLAIN {query}").fetchall())
    assert "duckrank_graded" in plan
    for con in (fast, sql_only):
        err, dcg, ndcg = con.execute(query).fetchone()
        assert err == pytest.approx(31 / 256, rel=1e-15)
        assert dcg == pytest.approx(2.5, rel=1e-15)
        assert ndcg == pytest.approx(2.5 / (3 + 1 / 1.584962500721156), rel=1e-15)
        with pytest.raises(duckdb.InvalidInputException,
                           match=r"err: the grade of item b in truth must be a finite number "
                                 r">= 0, got -2\.0"):
            con.execute("SELECT err(rec, truth) FROM (SELECT ['a'] AS rec, "
                        "MAP {'a': 1.0, 'b': -2.0} AS truth)").fetchall()


def test_integer_ids_against_integer_keys_through_the_metrics(fast, sql_only) -> None:
    """MAP(BIGINT, DOUBLE) truth (the macros' integer overload, no cast): by hand,
    rec [10, 20, 30], truth {30: 3, 10: 1, -5: 2}, dcg with linear gain = 1 / log2(2) +
    3 / log2(4) = 2.5, the same through both steps."""
    query = ("SELECT dcg(rec, truth, gain := 'linear') FROM (SELECT [10, 20, 30]::BIGINT[] AS "
             "rec, MAP {30: 3.0, 10: 1.0, -5: 2.0}::MAP(BIGINT, DOUBLE) AS truth)")
    assert fast.execute(query).fetchall() == sql_only.execute(query).fetchall() == [(2.5,)]


def test_integer_keys_reach_the_native_step_uncast(fast, sql_only) -> None:
    """A MAP(BIGINT, DOUBLE) truth with integer ids takes the integer overload: the plan casts
    no map to MAP(VARCHAR, DOUBLE). By hand, rec [3, 1, 2], truth {1: 3, 2: 1, 5: 2}, k 3:
    DCG = (2^3 - 1) / log2(3) + (2^1 - 1) / log2(4) = 4.416508275 + 0.5; IDCG = 7 / log2(2) +
    3 / log2(3) + 1 / log2(4) = 7 + 1.892789261 + 0.5; ERR (max_grade 4, the default) =
    R_3 / 2 + (1 - R_3) R_1 / 3 with R_g = (2^g - 1) / 2^4 = 7/32 + (9/16)(1/16)/3 =
    0.23046875 (item 3, ungraded, has R = 0 at rank 1).
    INTEGER ids widen to BIGINT and take the same overload."""
    log2_3 = 1.584962500721156
    dcg = 7 / log2_3 + 0.5
    expected = (dcg / (7 + 3 / log2_3 + 0.5), dcg, 7 / 32 + 9 / 16 / 16 / 3)
    for rec_type in ("BIGINT", "INTEGER"):
        query = ("SELECT ndcg(rec, truth, 3), dcg(rec, truth, 3), err(rec, truth, 3) FROM "
                 f"(SELECT [3, 1, 2]::{rec_type}[] AS rec, "
                 "MAP {1: 3.0, 2: 1.0, 5: 2.0}::MAP(BIGINT, DOUBLE) AS truth)")
        plan = "".join(row[1] for row in fast.execute(f"EXPLAIN {query}").fetchall())
        assert "duckrank_graded" in plan and "MAP(VARCHAR" not in plan
        for con in (fast, sql_only):
            assert con.execute(query).fetchone() == pytest.approx(expected, rel=1e-15)


def test_integer_ids_read_text_keys_as_integers(fast, sql_only) -> None:
    """With integer ids, DuckDB casts a MAP(VARCHAR, DOUBLE) truth to the integer overload's
    MAP(BIGINT, DOUBLE) (docs/graded.md): '01' is the integer 1 (by hand, rec [1], truth
    {'01': 2}: dcg = 2^2 - 1 = 3), and a key that is no integer is DuckDB's conversion error.
    VARCHAR ids against integer keys still compare by text ('1' matches 1, '01' does not)."""
    for con in (fast, sql_only):
        assert con.execute("SELECT dcg([1], MAP {'01': 2.0})").fetchall() == [(3.0,)]
        with pytest.raises(duckdb.ConversionException, match="'a'"):
            con.execute("SELECT dcg([1], MAP {'a': 2.0})").fetchall()
        assert con.execute(
            "SELECT dcg(['01', '1'], MAP {1: 2.0}::MAP(BIGINT, DOUBLE))"
        ).fetchall() == [(3.0 / 1.584962500721156,)]


@pytest.mark.parametrize("rec, truth", [
    ("[1]", "MAP {1: 1.0}::MAP(INTEGER, DOUBLE)"),
    ("['1']", "MAP {1: 1.0}::MAP(BIGINT, DOUBLE)"),
    ("[1]", "MAP {'1': 1}::MAP(VARCHAR, INTEGER)"),
    ("[1]", "[1]"),
])
def test_the_native_step_names_a_truth_it_cannot_read(fast, rec: str, truth: str) -> None:
    """The macros give the native step MAP(VARCHAR, DOUBLE), or MAP(BIGINT, DOUBLE) with integer
    ids; any other truth called directly is an error naming the function."""
    for function in ("duckrank_graded", "duckrank_grades"):
        with pytest.raises(duckdb.InvalidInputException,
                           match=f"{function}: truth must be a MAP\\(VARCHAR, DOUBLE\\), or a "
                                 "MAP\\(BIGINT, DOUBLE\\) for integer ids"):
            fast.execute(f"SELECT {function}({rec}, {truth}, 10)").fetchall()


def test_scratch_counts_against_memory_limit(fast) -> None:
    """By hand: 20,000 keys need a sort buffer of 20,000 x 8 = 160,000 bytes = 156.2 KiB, taken
    first, then a table of 2^16 = 65,536 slots x 32 bytes = 2.0 MiB (the slot size of
    test_native.py), over a 1 MiB limit; 2.5 MiB holds both."""
    query = (
        "SELECT duckrank_graded([1, 2], map_from_entries(list_transform(range(20000), "
        "lambda x: {{'k': x::VARCHAR, 'v': 1.0::DOUBLE}})), 10, '{}').pos"
    )
    with pytest.raises(
        duckdb.InvalidInputException,
        match=r"duckrank_graded: Out of Memory Error: the native matching step could not "
        r"allocate 2\.0 MiB for a row of 20000 truth items \(156\.2 KiB/1\.0 MiB used by it\)",
    ):
        fast.execute(query.format("1 MiB")).fetchall()
    assert fast.execute(query.format("2.5 MiB")).fetchall() == [([1, 2],)]
