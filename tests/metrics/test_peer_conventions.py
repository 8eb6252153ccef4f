"""Peer conventions as options (issue 17): precision_at's, recall_at's and average_precision's
``denominator`` and ndcg's ``ideal``, each against the peer library that counts that way.

Where the expected values come from:

* hand calculations written out in ``HAND`` (always run);
* the peers themselves (``test_<peer>_*``), on generated data with score ties, empty and missing
  lists and users on one side only. Each test imports its peer and is skipped where the peer is
  not installed: none of them installs into duckrank's test environment without changing what is
  installed there (RecTools and recpack pin numpy < 2; RecTools, RePlay, Recommenders and LensKit
  pin pandas < 3; RePlay also polars 1 and scikit-learn 1.8; LensKit, recpack and torchmetrics
  pull torch, 5-6 GB with CUDA; docs/conventions.md). They were run once, on 2026-11-23, each in
  its own venv (under /tmp) with duckdb 2.0.0, pyarrow and pytest added, as
  ``PYTHONPATH=<repo> <venv>/bin/python -m pytest tests/metrics/test_peer_conventions.py``:
  rectools 0.19.0, replay-rec 0.22.0, recommenders 1.2.1, lenskit 2025.8.1, torchmetrics 1.9.0,
  recpack 0.3.6. The means each peer gave there are recorded in ``PEER_MEANS`` and checked
  against duckrank in every run (``test_options_give_the_recorded_peer_means``), and against the
  peer itself wherever it is installed.

Per user, the duckrank value must equal the peer's to 1e-12, except torchmetrics (float32:
1e-6). The SQL and the numpy kernels (Spark, ``evaluate`` on Arrow) are checked against each
other for every option on the same data.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import duckrank
from duckrank.evaluation import parse_metric
from duckrank.matching.arrays import match_grades, match_hits
from duckrank.metrics import binary, graded

# --- generated data ----------------------------------------------------------------------------
# 120 users, 25 items. Truth: 1..12 distinct items; users u % 10 == 3 have none (absent from the
# truth side). Recommendations: 1..14 distinct items scored 0..3, so most lists hold ties, broken
# by item id descending (RePlay's own rule; the other peers are given the ranks); users
# u % 10 == 7 are absent from the recommendation side and u % 10 == 5 have an empty list (the
# same to every long-format peer). duckrank's rows are the truth side LEFT JOIN the
# recommendations, a missing list read as empty: the users every peer but Recommenders averages
# over (Recommenders' precision, recall and map keep users on both sides only).

USERS = 120
KS = (5, 10)


def _generate() -> tuple[list[tuple[int, int]], list[tuple[int, int, int]]]:
    rng = random.Random(17)
    truth, recs = [], []
    for user in range(USERS):
        if user % 10 != 3:
            truth += [(user, item) for item in rng.sample(range(25), rng.randint(1, 12))]
        if user % 10 not in (5, 7):
            recs += [(user, item, rng.randint(0, 3))
                     for item in rng.sample(range(25), rng.randint(1, 14))]
    return truth, recs


TRUTH_ROWS, REC_ROWS = _generate()


@pytest.fixture(scope="module")
def db() -> duckdb.DuckDBPyConnection:
    con = duckrank.connect()
    con.execute("CREATE TABLE truth_long (u INTEGER, i INTEGER)")
    con.execute("CREATE TABLE rec_long (u INTEGER, i INTEGER, s INTEGER)")
    con.executemany("INSERT INTO truth_long VALUES (?, ?)", TRUTH_ROWS)
    con.executemany("INSERT INTO rec_long VALUES (?, ?, ?)", REC_ROWS)
    con.execute("""
        CREATE TABLE lists AS
        WITH truth AS (SELECT u, list(i) AS truth FROM truth_long GROUP BY u),
             rec AS (SELECT u, list(i ORDER BY s DESC, i DESC) AS rec FROM rec_long GROUP BY u)
        SELECT u, coalesce(rec, []::INTEGER[]) AS rec, truth, rec IS NOT NULL AS has_rec
        FROM truth LEFT JOIN rec USING (u)
    """)
    yield con
    con.close()


def per_user(db: duckdb.DuckDBPyConnection, call: str, both_sides: bool = False) -> dict:
    """user -> value of ``call`` (over rec, truth); ``both_sides``: users with recommendations
    only (Recommenders' user set)."""
    where = "WHERE has_rec" if both_sides else ""
    return dict(db.execute(f"SELECT u, {call} FROM lists {where} ORDER BY u").fetchall())


def mean(values: dict) -> float:
    """avg() over users: NULL (None) and NaN values skipped, as avg() and the peers' nan-means."""
    kept = [v for v in values.values() if v is not None and not math.isnan(v)]
    return sum(kept) / len(kept)


def assert_same(ours: dict, theirs: dict, tolerance: float = 1e-12) -> None:
    """Per user; NULL on our side where the peer gives NaN or leaves the user out."""
    for user, value in ours.items():
        other = theirs.get(user, math.nan)
        if value is None:
            assert other is None or math.isnan(other), (user, other)
        else:
            assert other == pytest.approx(value, abs=tolerance), (user, value, other)


def ranked() -> dict[int, list[int]]:
    """Each user's recommendations in duckrank's order (score desc, item desc)."""
    by_user: dict[int, list[tuple[int, int]]] = {}
    for user, item, score in REC_ROWS:
        by_user.setdefault(user, []).append((score, item))
    return {u: [i for _, i in sorted(items, reverse=True)] for u, items in by_user.items()}


def truth_sets() -> dict[int, list[int]]:
    by_user: dict[int, list[int]] = {}
    for user, item in TRUTH_ROWS:
        by_user.setdefault(user, []).append(item)
    return by_user


# --- the means the peers gave (one-off runs, see the module docstring) ----------------------------
# (peer, duckrank call, k, users) -> mean; users: "truth" = every user with truth, "both" = with
# truth and recommendations.
PEER_MEANS: dict[tuple[str, str, int, str], float] = {
    ("rectools", "average_precision(rec, truth, {k})", 5, "truth"): 0.07839485017725757,
    ("rectools", "average_precision(rec, truth, {k})", 10, "truth"): 0.11302087627980484,
    ("rectools", "average_precision(rec, truth, {k}, denominator := 'k')", 5,
     "truth"): 0.1041049382716049,
    ("rectools", "average_precision(rec, truth, {k}, denominator := 'k')", 10,
     "truth"): 0.07720568783068783,
    ("rectools", "hitrate(rec, truth, {k})", 5, "truth"): 0.5277777777777778,
    ("rectools", "hitrate(rec, truth, {k})", 10, "truth"): 0.6111111111111112,
    ("rectools", "mrr(rec, truth, {k})", 5, "truth"): 0.2975308641975308,
    ("rectools", "mrr(rec, truth, {k})", 10, "truth"): 0.30946134626690175,
    ("rectools", "ndcg(rec, truth, {k})", 5, "truth"): 0.18378622079708154,
    ("rectools", "ndcg(rec, truth, {k})", 10, "truth"): 0.2078621674748305,
    ("rectools", "ndcg(rec, truth, {k}, ideal := 'k')", 5, "truth"): 0.17142747906624028,
    ("rectools", "ndcg(rec, truth, {k}, ideal := 'k')", 10, "truth"): 0.15847356293164705,
    ("rectools", "precision_at(rec, truth, {k}, denominator := 'k')", 5,
     "truth"): 0.1685185185185184,
    ("rectools", "precision_at(rec, truth, {k}, denominator := 'k')", 10,
     "truth"): 0.14999999999999997,
    ("rectools", "recall_at(rec, truth, {k})", 5, "truth"): 0.1319223985890653,
    ("rectools", "recall_at(rec, truth, {k})", 10, "truth"): 0.24619575383464273,
    ("rectools", "recall_at(rec, truth, {k}, denominator := 'min_k_truth')", 5,
     "truth"): 0.19135802469135793,
    ("rectools", "recall_at(rec, truth, {k}, denominator := 'min_k_truth')", 10,
     "truth"): 0.25234053497942394,
    ("replay", "average_precision(rec, truth, {k}, denominator := 'min_k_truth')", 5,
     "truth"): 0.11623713991769538,
    ("replay", "average_precision(rec, truth, {k}, denominator := 'min_k_truth')", 10,
     "truth"): 0.11604708189860305,
    ("replay", "hitrate(rec, truth, {k})", 5, "truth"): 0.5277777777777778,
    ("replay", "hitrate(rec, truth, {k})", 10, "truth"): 0.6111111111111112,
    ("replay", "mrr(rec, truth, {k})", 5, "truth"): 0.2975308641975308,
    ("replay", "mrr(rec, truth, {k})", 10, "truth"): 0.30946134626690175,
    ("replay", "ndcg(rec, truth, {k})", 5, "truth"): 0.18378622079708154,
    ("replay", "ndcg(rec, truth, {k})", 10, "truth"): 0.2078621674748305,
    ("replay", "precision_at(rec, truth, {k}, denominator := 'k')", 5, "truth"): 0.1685185185185184,
    ("replay", "precision_at(rec, truth, {k}, denominator := 'k')", 10,
     "truth"): 0.14999999999999997,
    ("replay", "recall_at(rec, truth, {k})", 5, "truth"): 0.1319223985890653,
    ("replay", "recall_at(rec, truth, {k})", 10, "truth"): 0.24619575383464273,
    ("recommenders", "average_precision(rec, truth, {k})", 5, "both"): 0.10079337879933117,
    ("recommenders", "average_precision(rec, truth, {k})", 10, "both"): 0.14531255521689193,
    ("recommenders", "average_precision(rec, truth, {k}, denominator := 'min_k_truth')", 5,
     "both"): 0.14944775132275132,
    ("recommenders", "average_precision(rec, truth, {k}, denominator := 'min_k_truth')", 10,
     "both"): 0.14920339101248967,
    ("recommenders", "ndcg(rec, truth, {k})", 5, "truth"): 0.18378622079708162,
    ("recommenders", "ndcg(rec, truth, {k})", 10, "truth"): 0.2078621674748304,
    ("recommenders", "precision_at(rec, truth, {k}, denominator := 'k')", 5,
     "both"): 0.21666666666666665,
    ("recommenders", "precision_at(rec, truth, {k}, denominator := 'k')", 10,
     "both"): 0.19285714285714284,
    ("recommenders", "recall_at(rec, truth, {k})", 5, "both"): 0.16961451247165535,
    ("recommenders", "recall_at(rec, truth, {k})", 10, "both"): 0.31653739778739776,
    ("lenskit", "average_precision(rec, truth, {k}, denominator := 'min_returned_truth')", 5,
     "truth"): 0.2024074074074073,
    ("lenskit", "average_precision(rec, truth, {k}, denominator := 'min_returned_truth')", 10,
     "truth"): 0.2272227246277699,
    ("lenskit", "hitrate(rec, truth, {k})", 5, "truth"): 0.5277777777777778,
    ("lenskit", "hitrate(rec, truth, {k})", 10, "truth"): 0.6111111111111112,
    ("lenskit", "mrr(rec, truth, {k})", 5, "truth"): 0.2975308641975308,
    ("lenskit", "mrr(rec, truth, {k})", 10, "truth"): 0.30946134626690175,
    ("lenskit", "ndcg(rec, truth, {k})", 5, "truth"): 0.18378622079708154,
    ("lenskit", "ndcg(rec, truth, {k})", 10, "truth"): 0.2078621674748305,
    ("lenskit", "ndcg(rec, truth, {k}, discount := 'jarvelin')", 5, "truth"): 0.1911538904233359,
    ("lenskit", "ndcg(rec, truth, {k}, discount := 'jarvelin')", 10, "truth"): 0.2117065725493134,
    ("lenskit", "precision_at(rec, truth, {k})", 5, "truth"): 0.27460317460317457,
    ("lenskit", "precision_at(rec, truth, {k})", 10, "truth"): 0.30292894935752085,
    ("lenskit", "recall_at(rec, truth, {k}, denominator := 'min_k_truth')", 5,
     "truth"): 0.19135802469135793,
    ("lenskit", "recall_at(rec, truth, {k}, denominator := 'min_k_truth')", 10,
     "truth"): 0.25234053497942394,
    ("torchmetrics", "average_precision(rec, truth, {k}, denominator := 'hits')", 5,
     "truth"): 0.29679787158966064,
    ("torchmetrics", "average_precision(rec, truth, {k}, denominator := 'hits')", 10,
     "truth"): 0.3005375564098358,
    ("torchmetrics", "mrr(rec, truth, {k})", 5, "truth"): 0.297530859708786,
    ("torchmetrics", "mrr(rec, truth, {k})", 10, "truth"): 0.3094613552093506,
    ("torchmetrics", "precision_at(rec, truth, {k}, denominator := 'k')", 5,
     "truth"): 0.16851851344108582,
    ("torchmetrics", "precision_at(rec, truth, {k}, denominator := 'k')", 10,
     "truth"): 0.15000000596046448,
    ("torchmetrics", "recall_at(rec, truth, {k})", 5, "truth"): 0.1319224089384079,
    ("torchmetrics", "recall_at(rec, truth, {k})", 10, "truth"): 0.24619576334953308,
    ("recpack", "ndcg(rec, truth, {k})", 5, "truth"): 0.18378622079708154,
    ("recpack", "ndcg(rec, truth, {k})", 10, "truth"): 0.2078621674748305,
    ("recpack", "precision_at(rec, truth, {k}, denominator := 'k')", 5,
     "truth"): 0.1685185185185184,
    ("recpack", "precision_at(rec, truth, {k}, denominator := 'k')", 10,
     "truth"): 0.14999999999999997,
    ("recpack", "recall_at(rec, truth, {k})", 5, "truth"): 0.1319223985890653,
    ("recpack", "recall_at(rec, truth, {k})", 10, "truth"): 0.24619575383464273,
    ("recpack", "recall_at(rec, truth, {k}, denominator := 'min_k_truth')", 5,
     "truth"): 0.19135802469135793,
    ("recpack", "recall_at(rec, truth, {k}, denominator := 'min_k_truth')", 10,
     "truth"): 0.25234053497942394,
}


def test_options_give_the_recorded_peer_means(db):
    assert PEER_MEANS, "no recorded peer means"
    for (peer, call, k, users), expected in PEER_MEANS.items():
        value = mean(per_user(db, call.format(k=k), both_sides=users == "both"))
        tolerance = 1e-6 if peer == "torchmetrics" else 1e-12  # float32 there
        assert value == pytest.approx(expected, abs=tolerance), (peer, call, k)


# --- hand calculations -------------------------------------------------------------------------

LOG2_3, LOG2_5 = math.log2(3), math.log2(5)


@dataclass(frozen=True)
class Hand:
    call: str
    expected: float | None
    why: str


HAND = [
    # rec [1, 2, 3], truth {1, 3, 9, 8, 7, 6}, k = 5: hits at ranks 1 and 3; K = min(5, 3) = 3.
    Hand("precision_at([1, 2, 3], [1, 3, 9, 8, 7, 6], 5)", 2 / 3, "2 hits / K = 3"),
    Hand("precision_at([1, 2, 3], [1, 3, 9, 8, 7, 6], 5, denominator := 'k')", 2 / 5,
         "2 hits / k = 5"),
    Hand("recall_at([1, 2, 3], [1, 3, 9, 8, 7, 6], 5)", 2 / 6, "2 hits / |truth| = 6"),
    Hand("recall_at([1, 2, 3], [1, 3, 9, 8, 7, 6], 5, denominator := 'min_k_truth')", 2 / 5,
         "2 hits / min(5, 6)"),
    # AP's sum of precisions at the hits: 1/1 + 2/3 = 5/3.
    Hand("average_precision([1, 2, 3], [1, 3, 9, 8, 7, 6], 5)", 5 / 3 / 6, "/ |truth| = 6"),
    Hand("average_precision([1, 2, 3], [1, 3, 9, 8, 7, 6], 5, denominator := 'min_k_truth')",
         5 / 3 / 5, "/ min(k, |truth|) = 5"),
    Hand("average_precision([1, 2, 3], [1, 3, 9, 8, 7, 6], 5, "
         "denominator := 'min_returned_truth')", 5 / 3 / 3, "/ min(K, |truth|) = 3"),
    Hand("average_precision([1, 2, 3], [1, 3, 9, 8, 7, 6], 5, denominator := 'k')", 5 / 3 / 5,
         "/ k = 5"),
    Hand("average_precision([1, 2, 3], [1, 3, 9, 8, 7, 6], 5, denominator := 'hits')",
         5 / 3 / 2, "/ 2 hits"),
    Hand("average_precision([1, 2, 3], [4], 5, denominator := 'hits')", 0.0,
         "no hit: 0, as torchmetrics and Hivemall"),
    # rec [1, 2, 3], truth {3}, k = 4: one hit at rank 3, DCG = 1 / log2(4) = 1/2.
    Hand("ndcg([1, 2, 3], [3], 4)", 0.5, "IDCG = 1 hit at rank 1 = 1"),
    Hand("ndcg([1, 2, 3], [3], 4, ideal := 'k')", 0.5 / (1 + 1 / LOG2_3 + 1 / 2 + 1 / LOG2_5),
         "IDCG = 4 hits = 1 + 1/log2(3) + 1/2 + 1/log2(5) (RecTools' NDCG)"),
    Hand("ndcg([1, 2, 3], [3], 4, ideal := 'k', discount := 'jarvelin')",
         (1 / LOG2_3) / (1 + 1 + 1 / LOG2_3 + 1 / 2),
         "Järvelin's disc: 1, 1, log2(3), log2(4); DCG = 1 / log2(3)"),
    Hand("ndcg([1, 2, 3], [3], ideal := 'k')", 0.5 / (1 + 1 / LOG2_3 + 1 / 2),
         "k omitted: k = len(rec) = 3 places"),
    # Graded truth (a MAP): ideal := 'k' is k items of truth's largest grade. rec [a, b], truth
    # {a: 2, c: 3}, k = 3, gain 2^g - 1: DCG = 3 / 1; ideal = 7 (1 + 1/log2(3) + 1/2).
    Hand("ndcg(['a', 'b'], map(['a', 'c'], [2.0, 3.0]), 3, ideal := 'k')",
         3 / (7 * (1 + 1 / LOG2_3 + 1 / 2)), "ideal: 3 places of grade 3"),
    Hand("ndcg(['a', 'b'], map(['a', 'c'], [2.0, 3.0]), 3)", 3 / (7 + 3 / LOG2_3),
         "ideal: grades 3, 2 (min(k, n) = 2 places)"),
    # Grades of 1 are the LIST truth: the same value as the binary row above.
    Hand("ndcg(['1', '2', '3'], map(['3'], [1.0]), 4, ideal := 'k')",
         0.5 / (1 + 1 / LOG2_3 + 1 / 2 + 1 / LOG2_5), "as ndcg([1, 2, 3], [3], 4, ideal := 'k')"),
    # An empty rec with k = 5: nothing returned, truth {1}.
    Hand("precision_at([]::INT[], [1], 5)", None, "K = 0: undefined"),
    Hand("precision_at([]::INT[], [1], 5, denominator := 'k')", 0.0, "0 hits / 5"),
    Hand("recall_at([]::INT[], [1], 5, denominator := 'min_k_truth')", 0.0, "0 / min(5, 1)"),
    Hand("average_precision([]::INT[], [1], 5, denominator := 'min_k_truth')", 0.0, "0 / 1"),
    Hand("average_precision([]::INT[], [1], 5, denominator := 'min_returned_truth')", None,
         "min(K = 0, 1) = 0: undefined, as LensKit's NaN"),
    Hand("average_precision([]::INT[], [1], 5, denominator := 'k')", 0.0, "0 / 5"),
    Hand("ndcg([]::INT[], [1], 5, ideal := 'k')", 0.0, "no hit"),
    # k omitted with an empty rec: k = len(rec) = 0, so every denominator but |truth| is 0.
    Hand("precision_at([]::INT[], [1], denominator := 'k')", None, "k = 0"),
    Hand("recall_at([]::INT[], [1], denominator := 'min_k_truth')", None, "min(0, 1) = 0"),
    Hand("average_precision([]::INT[], [1], denominator := 'k')", None, "k = 0"),
    Hand("average_precision([]::INT[], [1], denominator := 'hits')", 0.0, "no hit: 0"),
    # An empty truth: undefined whatever the option (precision needs no truth).
    Hand("recall_at([1], []::INT[], 5, denominator := 'min_k_truth')", None, "no relevant item"),
    Hand("average_precision([1], []::INT[], 5, denominator := 'hits')", None,
         "no relevant item"),
    Hand("ndcg([1], []::INT[], 5, ideal := 'k')", None, "no relevant item"),
    Hand("precision_at([1], []::INT[], 5, denominator := 'k')", 0.0, "0 hits / 5"),
]


@pytest.mark.parametrize("case", HAND, ids=[h.call for h in HAND])
def test_hand_calculations(db, case):
    value = db.execute(f"SELECT {case.call}").fetchall()[0][0]
    if case.expected is None:
        assert value is None, case.why
    else:
        assert value == pytest.approx(case.expected, abs=1e-15), case.why


OPTION_CALLS = [
    ("precision_at", "denominator", c) for c in binary.PRECISION_DENOMINATOR.choices
] + [
    ("recall_at", "denominator", c) for c in binary.RECALL_DENOMINATOR.choices
] + [
    ("average_precision", "denominator", c) for c in binary.AP_DENOMINATOR.choices
] + [
    ("ndcg", "ideal", c) for c in graded.IDEAL.choices
]


@pytest.mark.parametrize(("name", "option", "choice"), OPTION_CALLS)
def test_kernels_equal_sql_for_every_option(db, name, option, choice):
    # The numpy kernel (Spark, evaluate on Arrow) against the SQL macro, on the generated rows
    # plus k omitted and NULL k.
    data = db.sql("SELECT rec, truth, (u % 12)::BIGINT + 1 AS k FROM lists ORDER BY u")
    data = data.to_arrow_table()
    kernel = {m.name: m for m in binary.METRICS}[name].kernel
    for k_sql, k_values in (("k", data["k"].to_numpy()), ("NULL", np.full(data.num_rows, np.nan)),
                            (None, None)):
        k_argument = f", {k_sql}" if k_sql else ""
        sql = db.execute(
            f"SELECT {name}(rec, truth{k_argument}, {option} := '{choice}') "
            "FROM (SELECT *, (u % 12)::BIGINT + 1 AS k FROM lists) ORDER BY u"
        ).fetchall()
        expected = np.array([np.nan if v is None else v for (v,) in sql])
        got = kernel(match_hits(data["rec"], data["truth"], k_values), **{option: choice})
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-15, equal_nan=True)


def test_graded_kernel_equals_sql_for_ideal_k(db):
    # The graded overload's numpy kernel against its SQL, grades 0..3 on the generated truth.
    query = """
        SELECT rec, map_from_entries(list_transform(truth, lambda i: {'key': i::VARCHAR,
               'value': (i % 4)::DOUBLE})) AS grades, (u % 12)::BIGINT + 1 AS k
        FROM lists ORDER BY u"""
    data = db.sql(query).to_arrow_table()
    db.register("graded_rows", data)
    for options in ({"ideal": "k"}, {"ideal": "k", "gain": "linear", "discount": "jarvelin"}):
        named = "".join(f", {name} := '{value}'" for name, value in options.items())
        sql = db.execute(f"SELECT ndcg(rec, grades, k{named}) FROM graded_rows").fetchall()
        expected = np.array([np.nan if v is None else v for (v,) in sql])
        matched = match_grades(data["rec"], data["grades"], data["k"].to_numpy())
        got = graded.NDCG_GRADED.kernel(matched, **options)
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-15, equal_nan=True)


@pytest.mark.parametrize(("call", "message"), [
    ("precision_at([1], [1], 5, denominator := 'truth')",
     "precision_at: denominator must be one of 'returned', 'k', got truth"),
    ("recall_at([1], [1], 5, denominator := 'k')",
     "recall_at: denominator must be one of 'truth', 'min_k_truth', got k"),
    ("average_precision([1], [1], 5, denominator := NULL)",
     "average_precision: denominator must be one of 'truth', 'min_k_truth', "
     "'min_returned_truth', 'k', 'hits', got NULL"),
    ("ndcg([1], [1], 5, ideal := 'truth')",
     "ndcg: ideal must be one of 'min_k_truth', 'k', got truth"),
    ("ndcg([1], [1], 2000000, ideal := 'k')",
     "ndcg: ideal := 'k' sums k discounts per row; k must be at most 1000000, got 2000000"),
])
def test_option_errors_name_function_argument_and_value(db, call, message):
    with pytest.raises(duckdb.Error, match=re.escape(message)):
        db.execute(f"SELECT {call}").fetchall()


def test_kernels_refuse_the_same_values():
    hits = match_hits(pa.array([[1]]), pa.array([[1]]), 5)
    with pytest.raises(ValueError, match="average_precision: denominator must be one of"):
        binary.AVERAGE_PRECISION.kernel(hits, denominator="truths")
    with pytest.raises(ValueError, match="k must be at most 1000000, got 2000000"):
        binary.NDCG.kernel(match_hits(pa.array([[1]]), pa.array([[1]]), 2_000_000), ideal="k")


def test_cli_spelling_reaches_the_option(db):
    # `map(denominator=min_k_truth)@10` on the command line and in evaluate(): the option is read
    # from the record, so the request passes it to the SQL function.
    request = parse_metric("map(denominator=min_k_truth)@10")
    assert (request.name, request.k, request.options) == (
        "average_precision", 10, (("denominator", "min_k_truth"),)
    )
    assert parse_metric("ndcg(ideal=k)@10").options == (("ideal", "k"),)
    assert parse_metric("p(denominator=k)@5").name == "precision_at"
    with pytest.raises(ValueError, match="option denominator must be one of"):
        parse_metric("recall(denominator=k)@10")


# --- the peers -----------------------------------------------------------------------------------
# Each test computes the peer's per-user values (or its mean, where it gives only that) on the
# generated data and compares them with duckrank's, then with the mean recorded in PEER_MEANS.


def check(db, peer: str, call: str, k: int, theirs: dict | float, users: str = "truth",
          tolerance: float = 1e-12) -> None:
    ours = per_user(db, call.format(k=k), both_sides=users == "both")
    if isinstance(theirs, dict):
        assert_same(ours, theirs, tolerance)
        theirs = mean({u: v for u, v in theirs.items() if u in ours})
    assert theirs == pytest.approx(mean(ours), abs=tolerance), (peer, call, k)
    recorded = PEER_MEANS[(peer, call, k, users)]
    assert theirs == pytest.approx(recorded, abs=tolerance), (peer, call, k)


@pytest.mark.parametrize("k", KS)
def test_rectools(db, k):
    rectools = pytest.importorskip("rectools")
    import pandas as pd
    from rectools import metrics

    columns = rectools.Columns
    reco = pd.DataFrame(
        [(u, i, rank) for u, items in ranked().items() for rank, i in enumerate(items, 1)],
        columns=[columns.User, columns.Item, columns.Rank],
    )
    interactions = pd.DataFrame(TRUTH_ROWS, columns=[columns.User, columns.Item])
    cases = [
        (metrics.Precision(k), "precision_at(rec, truth, {k}, denominator := 'k')"),
        (metrics.Precision(k, r_precision=True),
         "recall_at(rec, truth, {k}, denominator := 'min_k_truth')"),
        (metrics.Recall(k), "recall_at(rec, truth, {k})"),
        (metrics.MAP(k), "average_precision(rec, truth, {k})"),
        (metrics.MAP(k, divide_by_k=True),
         "average_precision(rec, truth, {k}, denominator := 'k')"),
        (metrics.NDCG(k), "ndcg(rec, truth, {k}, ideal := 'k')"),
        (metrics.NDCG(k, divide_by_achievable=True), "ndcg(rec, truth, {k})"),
        (metrics.MRR(k), "mrr(rec, truth, {k})"),
        (metrics.HitRate(k), "hitrate(rec, truth, {k})"),
    ]
    for metric, call in cases:
        check(db, "rectools", call, k, metric.calc_per_user(reco, interactions).to_dict())


@pytest.mark.parametrize("k", KS)
def test_replay(db, k):
    pytest.importorskip("replay")
    import pandas as pd
    from replay.metrics import MAP, MRR, NDCG, HitRate, PerUser, Precision, Recall

    # RePlay ranks by its rating column itself, ties broken by item id descending: it gets the
    # raw tied scores.
    recs = pd.DataFrame(REC_ROWS, columns=["query_id", "item_id", "rating"]).astype(
        {"rating": float}
    )
    truth = pd.DataFrame(TRUTH_ROWS, columns=["query_id", "item_id"])
    cases = [
        (Precision, "precision_at(rec, truth, {k}, denominator := 'k')"),
        (Recall, "recall_at(rec, truth, {k})"),
        (MAP, "average_precision(rec, truth, {k}, denominator := 'min_k_truth')"),
        (NDCG, "ndcg(rec, truth, {k})"),
        (MRR, "mrr(rec, truth, {k})"),
        (HitRate, "hitrate(rec, truth, {k})"),
    ]
    for metric, call in cases:
        (values,) = metric(k, mode=PerUser())(recs, truth).values()
        check(db, "replay", call, k, values)


@pytest.mark.parametrize("k", KS)
def test_recommenders(db, k):
    pytest.importorskip("recommenders")
    import pandas as pd
    from recommenders.evaluation import python_evaluation as ev

    # Distinct predictions (len(list) + 1 - rank): Recommenders' sort keeps tied rows in frame
    # order, which this test does not rely on.
    pred = pd.DataFrame(
        [(u, i, float(len(items) + 1 - rank))
         for u, items in ranked().items() for rank, i in enumerate(items, 1)],
        columns=["userID", "itemID", "prediction"],
    )
    true = pd.DataFrame([(u, i, 1.0) for u, i in TRUTH_ROWS],
                        columns=["userID", "itemID", "rating"])
    # precision, recall and map average over the users on both sides; ndcg over every truth user
    # (its outer merge gives a user without recommendations DCG 0).
    cases = [
        (ev.precision_at_k, "precision_at(rec, truth, {k}, denominator := 'k')", "both"),
        (ev.recall_at_k, "recall_at(rec, truth, {k})", "both"),
        (ev.map, "average_precision(rec, truth, {k})", "both"),
        (ev.map_at_k, "average_precision(rec, truth, {k}, denominator := 'min_k_truth')", "both"),
        (ev.ndcg_at_k, "ndcg(rec, truth, {k})", "truth"),
    ]
    for function, call, users in cases:
        check(db, "recommenders", call, k, float(function(true, pred, k=k)), users)


@pytest.mark.parametrize("k", KS)
def test_lenskit(db, k):
    pytest.importorskip("lenskit")
    from lenskit.data import ItemList
    from lenskit.metrics.ranking import (
        NDCG,
        AveragePrecision,
        Hit,
        LogRankWeight,
        Precision,
        Recall,
        RecipRank,
    )

    lists = ranked()
    cases = [
        (Precision(k), "precision_at(rec, truth, {k})"),
        (Recall(k), "recall_at(rec, truth, {k}, denominator := 'min_k_truth')"),
        (AveragePrecision(k),
         "average_precision(rec, truth, {k}, denominator := 'min_returned_truth')"),
        # LensKit's default weight clips the rank at 2 (Järvelin's); its base cancels out of the
        # ratio. offset=1 is log2(rank + 1), duckrank's default.
        (NDCG(k), "ndcg(rec, truth, {k}, discount := 'jarvelin')"),
        (NDCG(k, weight=LogRankWeight(offset=1)), "ndcg(rec, truth, {k})"),
        (RecipRank(k), "mrr(rec, truth, {k})"),
        (Hit(k), "hitrate(rec, truth, {k})"),
    ]
    for metric, call in cases:
        theirs = {
            u: float(metric.measure_list(ItemList(item_ids=lists.get(u, []), ordered=True),
                                         ItemList(item_ids=items)))
            for u, items in truth_sets().items()
        }
        check(db, "lenskit", call, k, theirs)


@pytest.mark.parametrize("k", KS)
def test_torchmetrics(db, k):
    pytest.importorskip("torchmetrics")
    import torch
    from torchmetrics import retrieval

    # One query per truth user: its recommendations scored 1 / rank, its relevant items left out
    # of them scored 0 (torchmetrics counts an item of score <= 0 as not retrieved).
    lists, truths = ranked(), truth_sets()
    indexes, preds, target = [], [], []
    for user, relevant in truths.items():
        items = lists.get(user, [])
        missing = [i for i in relevant if i not in items]
        indexes += [user] * (len(items) + len(missing))
        preds += [1 / rank for rank in range(1, len(items) + 1)] + [0.0] * len(missing)
        target += [i in relevant for i in items] + [True] * len(missing)
    arguments = (torch.tensor(preds), torch.tensor(target), torch.tensor(indexes))
    cases = [
        (retrieval.RetrievalPrecision(top_k=k),
         "precision_at(rec, truth, {k}, denominator := 'k')"),
        (retrieval.RetrievalRecall(top_k=k), "recall_at(rec, truth, {k})"),
        (retrieval.RetrievalMAP(top_k=k),
         "average_precision(rec, truth, {k}, denominator := 'hits')"),
        (retrieval.RetrievalMRR(top_k=k), "mrr(rec, truth, {k})"),
    ]
    for metric, call in cases:
        # float32 arithmetic: equal to 1e-6, not 1e-12
        check(db, "torchmetrics", call, k, float(metric(*arguments)), tolerance=1e-6)


@pytest.mark.parametrize("k", KS)
def test_recpack(db, k):
    pytest.importorskip("recpack")
    from recpack.metrics import NDCGK, CalibratedRecallK, PrecisionK, RecallK
    from scipy.sparse import csr_matrix

    # User x item matrices; a recommendation's score is len(list) + 1 - rank (0 = none).
    lists = ranked()
    shape = (USERS, 25)
    rows, columns, scores = zip(*[
        (u, i, float(len(items) + 1 - rank))
        for u, items in lists.items() for rank, i in enumerate(items, 1)
    ], strict=True)
    y_pred = csr_matrix((scores, (rows, columns)), shape=shape)
    users, items = zip(*TRUTH_ROWS, strict=True)
    y_true = csr_matrix(([1.0] * len(users), (users, items)), shape=shape)
    cases = [
        (PrecisionK(k), "precision_at(rec, truth, {k}, denominator := 'k')"),
        (RecallK(k), "recall_at(rec, truth, {k})"),
        (CalibratedRecallK(k), "recall_at(rec, truth, {k}, denominator := 'min_k_truth')"),
        (NDCGK(k), "ndcg(rec, truth, {k})"),
    ]
    for metric, call in cases:
        metric.calculate(y_true, y_pred)
        results = metric.results
        theirs = dict(zip(results["user_id"].tolist(), results["score"].tolist(), strict=True))
        check(db, "recpack", call, k, theirs)


def test_evaluate_passes_the_options(db):
    # duckrank.evaluate() breaks score ties by the item's text form, descending (trec_eval's
    # order: '9' before '10'), and scores a judged user without a list as an empty list: the same
    # means as the SQL over every judged user's list, so ordered. (It returns a pandas DataFrame.)
    pytest.importorskip("pandas")
    run = pa.table({"query": [u for u, _, _ in REC_ROWS], "item": [i for _, i, _ in REC_ROWS],
                    "score": [float(s) for _, _, s in REC_ROWS]})
    qrels = pa.table({"query": [u for u, _ in TRUTH_ROWS], "item": [i for _, i in TRUTH_ROWS]})
    requests = {
        "map(denominator=min_k_truth)@5": "average_precision(rec, truth, 5, "
        "denominator := 'min_k_truth')",
        "ndcg(ideal=k)@5": "ndcg(rec, truth, 5, ideal := 'k')",
        "p(denominator=k)@10": "precision_at(rec, truth, 10, denominator := 'k')",
    }
    result = duckrank.evaluate(run, qrels, list(requests))
    for request, call in requests.items():
        expected = mean(dict(db.execute(f"""
            WITH truth AS (SELECT u, list(i) AS truth FROM truth_long GROUP BY u),
                 rec AS (SELECT u, list(i ORDER BY s DESC, i::VARCHAR DESC) AS rec
                         FROM rec_long GROUP BY u)
            SELECT u, {call} FROM (SELECT u, coalesce(rec, []::INTEGER[]) AS rec, truth
                                   FROM truth LEFT JOIN rec USING (u))""").fetchall()))
        assert float(result[request].iloc[0]) == pytest.approx(expected, abs=1e-12), request


@pytest.mark.parametrize("k", KS)
def test_trec_eval_and_ranx_precision_divide_by_k(db, k):
    # trec_eval's P_k (pytrec-eval-terrier) and ranx's precision@k over the users with a list
    # (trec_eval skips the others); distinct scores len(list) + 1 - rank keep duckrank's order.
    pytrec_eval = pytest.importorskip("pytrec_eval")
    ranx = pytest.importorskip("ranx")
    lists, truths = ranked(), truth_sets()
    users = [u for u in truths if lists.get(u)]
    qrels = {str(u): {str(i): 1 for i in truths[u]} for u in users}
    run = {str(u): {str(i): float(len(lists[u]) + 1 - r) for r, i in enumerate(lists[u], 1)}
           for u in users}
    ours = per_user(db, f"precision_at(rec, truth, {k}, denominator := 'k')", both_sides=True)
    trec = pytrec_eval.RelevanceEvaluator(qrels, {f"P_{k}"}).evaluate(run)
    assert_same(ours, {int(u): values[f"P_{k}"] for u, values in trec.items()})
    ranx_run = ranx.Run(run)
    ranx.evaluate(ranx.Qrels(qrels), ranx_run, f"precision@{k}")  # per query in ranx_run.scores
    assert_same(ours, {int(u): v for u, v in ranx_run.scores[f"precision@{k}"].items()})
