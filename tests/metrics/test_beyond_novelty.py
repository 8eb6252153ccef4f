"""Rank-discounted novelty and category diversity (issue 28): ``epc`` and ``efd`` (Vargas and
Castells 2011, as Elliot computes them), the ``discount`` option of ``arp``,
``self_information``, ``exposure_entropy`` and ``exposure_gini`` (ndcg's and rbp's discounts;
LensKit's ExposureGini), RePlay's ``categorical_diversity`` and LensKit's
``rank_biased_entropy``.

Where the expected values come from:

* ``test_*_matches_kernel``: the records' Python kernels (written from the formulas, not from
  the SQL) on generated data with repeated training pairs, items absent from train, NULL
  elements, empty and NULL lists and truths, items with no or several categories, to 1e-12.
* ``test_hand_*``: small examples worked out in the test from the formulas of the sources:
  Elliot's EPC and EFD and their Extended forms (elliot/evaluation/metrics/novelty/EPC/epc.py,
  extended_epc.py, EFD/efd.py, extended_efd.py; its discounted relevance 2^(grade - threshold
  + 1) - 1 from elliot/evaluation/relevance/relevance.py; its
  ``logarithmic_ranking_discount(r) = 1 / log2(r + 2)`` for r from 0, nov = 1 - users / N and
  -log2(users / sum users)), LensKit's rank_biased_entropy (lenskit/metrics/ranking/_entropy.py:
  GeometricRankWeight(0.85), + 1e-6 per category) and ExposureGini (lenskit.stats.gini of the
  rank-weighted totals), and RePlay's CategoricalDiversity docstring example. Elliot is not on
  PyPI and LensKit pulls torch, so neither is run here.
"""

from __future__ import annotations

import math
import re

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from duckrank.metrics.beyond import coverage, diversity, novelty
from duckrank.render.beyond_accuracy import MACROS

K = 5
TOL = 1e-12


def generated() -> dict:
    """40 users, lists of 0..7 distinct items of 25 (popularity-skewed), a NULL element, empty
    and NULL lists, item 99 in no side table; truths (some empty, one NULL); training pairs
    with a repeat; categories: items 0..19, items 0..4 with two categories."""
    rng = np.random.default_rng(2011)
    weights = 1.0 / np.arange(1, 26)
    weights /= weights.sum()
    recs: dict = {u: [int(i) for i in rng.choice(25, int(rng.integers(0, 8)), replace=False,
                                                  p=weights)] for u in range(40)}
    recs[3], recs[4], recs[5] = [], None, [1, None, 2, 99, 3]
    truth: dict = {u: [int(i) for i in rng.choice(25, int(rng.integers(0, 6)), replace=False)]
                   for u in range(40)}
    truth[6], truth[5] = None, [2, 99]
    train = [(int(u), int(i)) for u, i in zip(rng.integers(0, 20, 150),
                                              rng.choice(22, 150, p=None), strict=True)]
    train.append(train[0])
    categories = [(i, "abcd"[i % 4]) for i in range(20)] + [(i, "e") for i in range(5)]
    return {"recs": recs, "truth": truth, "train": train, "categories": categories}


DATA = generated()


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    for statement in MACROS:
        connection.execute(statement)
    list_type = pa.list_(pa.int64())
    connection.register("recs_arrow", pa.table({
        "user": list(DATA["recs"]), "rec": pa.array(list(DATA["recs"].values()), list_type),
        "truth": pa.array([DATA["truth"][u] for u in DATA["recs"]], list_type)}))
    connection.execute("CREATE TABLE recs AS FROM recs_arrow")
    users, items = zip(*DATA["train"], strict=True)
    connection.register("train_arrow", pa.table({"user": users, "item": items}))
    connection.execute("CREATE TABLE train AS FROM train_arrow")
    items, cats = zip(*DATA["categories"], strict=True)
    connection.register("cat_arrow", pa.table({"item": items, "category": cats}))
    connection.execute("CREATE TABLE categories AS FROM cat_arrow")
    connection.execute("CREATE TABLE one_category AS FROM categories WHERE category <> 'e'")
    yield connection
    connection.close()


def per_user(con: duckdb.DuckDBPyConnection, query: str) -> dict:
    return dict(con.execute(query).fetchall())


def assert_close(got: dict, expected: dict) -> None:
    assert got.keys() == expected.keys()
    for user, value in expected.items():
        assert got[user] == (None if value is None else pytest.approx(value, abs=TOL, rel=TOL)), \
            user


DISCOUNTS = [("none", 0.85), ("log", 0.85), ("rbp", 0.85), ("rbp", 0.5)]


# --- against the kernels ----------------------------------------------------------------------


@pytest.mark.parametrize(("discount", "p"), DISCOUNTS)
def test_discounted_popularity_matches_kernel(con: duckdb.DuckDBPyConnection, discount: str,
                                              p: float) -> None:
    options = f"discount := '{discount}', persistence := {p}"
    for normalize in (False, True):
        got = per_user(con, f"FROM arp('recs', 'train', {K}, normalize := {normalize}, "
                            f"{options})")
        assert_close(got, novelty.arp_kernel(DATA["recs"], K, DATA["train"], normalize,
                                             discount, p))
        got = per_user(con, f"FROM self_information('recs', 'train', {K}, normalize := "
                            f"{normalize}, {options})")
        assert_close(got, novelty.self_information_kernel(DATA["recs"], K, DATA["train"],
                                                          normalize, discount, p))


@pytest.mark.parametrize(("discount", "p"), DISCOUNTS)
def test_epc_and_efd_match_kernels(con: duckdb.DuckDBPyConnection, discount: str,
                                   p: float) -> None:
    options = f"discount := '{discount}', persistence := {p}"
    for name, kernel in (("epc", novelty.epc_kernel), ("efd", novelty.efd_kernel)):
        got = per_user(con, f"FROM {name}('recs', 'train', {K}, {options})")
        assert_close(got, kernel(DATA["recs"], DATA["truth"], K, DATA["train"], discount, p))


@pytest.mark.parametrize(("discount", "p"), DISCOUNTS)
def test_discounted_exposure_matches_kernels(con: duckdb.DuckDBPyConnection, discount: str,
                                             p: float) -> None:
    options = f"discount := '{discount}', persistence := {p}"
    got = con.execute(f"FROM exposure_entropy('recs', {K}, {options})").fetchall()[0][0]
    assert got == pytest.approx(coverage.exposure_entropy_kernel(DATA["recs"], K, discount, p),
                                abs=TOL)
    got = con.execute(f"FROM exposure_gini('recs', {K}, catalog_size := 30, {options})"
                      ).fetchall()[0][0]
    assert got == pytest.approx(coverage.exposure_gini_kernel(DATA["recs"], K, 30, discount, p),
                                abs=TOL)


@pytest.mark.parametrize(("discount", "p", "smoothing"), [
    ("rbp", 0.85, 0.0), ("none", 0.85, 1e-6), ("log", 0.85, 0.0), ("rbp", 0.6, 0.25)])
def test_category_metrics_match_kernels(con: duckdb.DuckDBPyConnection, discount: str, p: float,
                                        smoothing: float) -> None:
    got = per_user(con, f"FROM rank_biased_entropy('recs', 'categories', {K}, discount := "
                        f"'{discount}', persistence := {p}, smoothing := {smoothing})")
    assert_close(got, diversity.rank_biased_entropy_kernel(
        DATA["recs"], K, DATA["categories"], discount, p, smoothing))
    got = per_user(con, f"FROM categorical_diversity('recs', 'one_category', {K})")
    assert_close(got, diversity.categorical_diversity_kernel(
        DATA["recs"], K, {i: c for i, c in DATA["categories"] if c != "e"}))


def _grades() -> dict:
    """Graded truths for the Extended forms: each user's truth items with grades 0..3 (grade 0
    below every threshold), user 6 NULL, user 7 an empty map."""
    rng = np.random.default_rng(7)
    grades: dict = {u: ({int(i): int(rng.integers(0, 4)) for i in items} if items is not None
                        else None) for u, items in DATA["truth"].items()}
    grades[7] = {}
    return grades


@pytest.mark.parametrize(("discount", "threshold"), [("log", 1), ("none", 2), ("rbp", 0)])
def test_extended_forms_match_kernels(con: duckdb.DuckDBPyConnection, discount: str,
                                      threshold: int) -> None:
    grades = _grades()
    map_type = pa.map_(pa.int64(), pa.int64())
    con.register("graded_arrow", pa.table({
        "user": list(DATA["recs"]), "rec": pa.array(list(DATA["recs"].values()),
                                                    pa.list_(pa.int64())),
        "truth": pa.array([None if grades[u] is None else list(grades[u].items())
                           for u in DATA["recs"]], map_type)}))
    con.execute("CREATE OR REPLACE TABLE graded AS FROM graded_arrow")
    for name, kernel in (("extended_epc", novelty.epc_kernel),
                         ("extended_efd", novelty.efd_kernel)):
        got = per_user(con, f"FROM {name}('graded', 'train', {K}, discount := '{discount}', "
                            f"threshold := {threshold})")
        assert_close(got, kernel(DATA["recs"], grades, K, DATA["train"], discount, 0.85,
                                 threshold))


# --- hand calculations --------------------------------------------------------------------------


def _hand() -> duckdb.DuckDBPyConnection:
    """Training pairs (1, 1), (1, 2), (2, 2), (3, 2), (3, 9) and (3, 9) again: distinct training
    users per item: 1 -> 1, 2 -> 3, 9 -> 1 (N = 3 users, 5 distinct pairs); rows per item:
    1 -> 1, 2 -> 3, 9 -> 2. Item 3 is absent from train."""
    con = duckdb.connect()
    for statement in MACROS:
        con.execute(statement)
    con.execute("CREATE TABLE r AS SELECT * FROM (VALUES ('a', [1, 2, 3], [1, 3]), "
                "('b', [2, NULL, 9], [9]), ('c', [1], []), ('d', [1], NULL), ('e', [], [1])) "
                "t(user, rec, truth)")
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES (1, 1), (1, 2), (2, 2), (3, 2), "
                "(3, 9), (3, 9)) t(user, item)")
    return con


def test_hand_epc_and_efd() -> None:
    """k = 3, Elliot's discount 1 / log2(rank + 1): 1, 1/log2 3, 1/2.
    EPC nov: item 1: 1 - 1/3 = 2/3, item 2: 0, item 9: 2/3, item 3 (not in train): 1.
    a: [1, 2, 3], relevant 1 and 3: (1 * 2/3 + 1/2 * 1) / (1 + 1/log2 3 + 1/2).
    b: [2, NULL, 9], relevant 9: ranks 1 and 3 hold items: (1/2 * 2/3) / (1 + 1/2) = 2/9.
    EFD nov: -log2(users / 5): item 1: log2 5, item 2: log2(5/3), item 9: log2 5, item 3: the
    largest, log2 5. a: (log2 5 + 1/2 log2 5) / (3/2 + 1/log2 3); b: (1/2 log2 5) / (3/2).
    c (empty truth), d (NULL truth), e (empty list): NULL."""
    con = _hand()
    norm = 1.5 + 1 / math.log2(3)
    assert_close(per_user(con, "FROM epc('r', 't', 3)"), {
        "a": (2 / 3 + 0.5) / norm, "b": 2 / 9, "c": None, "d": None, "e": None})
    assert_close(per_user(con, "FROM efd('r', 't', 3)"), {
        "a": 1.5 * math.log2(5) / norm, "b": math.log2(5) / 3, "c": None, "d": None, "e": None})
    # Without a discount: the plain mean over the positions holding items.
    assert_close(per_user(con, "FROM epc('r', 't', 3, discount := 'none')"), {
        "a": (2 / 3 + 1) / 3, "b": (2 / 3) / 2, "c": None, "d": None, "e": None})


def test_hand_extended_epc_and_efd() -> None:
    """Elliot's discounted relevance, threshold 1: gain 2^(grade - 1 + 1) - 1 = 2^grade - 1.
    a: [1, 2, 3] with grades {1: 2, 3: 1} -> gains 3 and 1; b: [2, NULL, 9] with {9: 0}: no
    grade reaches 1 -> NULL. EPC (novelty as in test_hand_epc_and_efd: item 1 2/3, item 3 1):
    (1 * 3 * 2/3 + 1/2 * 1 * 1) / (3/2 + 1/log2 3); EFD (log2 5 for items 1 and 3): (3 log2 5
    + 1/2 log2 5) / (3/2 + 1/log2 3). threshold 0 makes b's grade 0 relevant: gain 2^1 - 1 = 1,
    = the binary value 2/9."""
    con = _hand()
    con.execute("CREATE TABLE g AS SELECT * FROM (VALUES ('a', [1, 2, 3], MAP {1: 2, 3: 1}), "
                "('b', [2, NULL, 9], MAP {9: 0})) t(user, rec, truth)")
    norm = 1.5 + 1 / math.log2(3)
    assert_close(per_user(con, "FROM extended_epc('g', 't', 3)"),
                 {"a": (2 + 0.5) / norm, "b": None})
    assert_close(per_user(con, "FROM extended_efd('g', 't', 3)"),
                 {"a": 3.5 * math.log2(5) / norm, "b": None})
    assert per_user(con, "FROM extended_epc('g', 't', 3, threshold := 0)")["b"] == \
        pytest.approx(2 / 9, abs=TOL)
    with pytest.raises(duckdb.Error, match=re.escape(
            "extended_efd: threshold must be a finite number, got NULL")):
        per_user(con, "FROM extended_efd('g', 't', 3, threshold := NULL)")


def test_hand_discounted_popularity() -> None:
    """arp with discount 'rbp', persistence 0.5 (weights 1, 1/2, 1/4): a: (1 * 1 + 1/2 * 3 +
    1/4 * 0) / (7/4) = 10/7; b: ranks 1 and 3: (3 + 1/4 * 2) / (5/4) = 2.8; c, d: item 1 -> 1.
    self_information with discount 'log': novelty log2 3 for items 1 and 3, 0 for item 2 (seen
    by all 3 users): a: (log2 3 + 1/2 log2 3) / (3/2 + 1/log2 3)."""
    con = _hand()
    assert_close(per_user(con, "FROM arp('r', 't', 3, discount := 'rbp', persistence := 0.5)"),
                 {"a": 10 / 7, "b": 2.8, "c": 1.0, "d": 1.0, "e": None})
    got = per_user(con, "FROM self_information('r', 't', 3, discount := 'log')")
    assert got["a"] == pytest.approx(1.5 * math.log2(3) / (1.5 + 1 / math.log2(3)), abs=TOL)
    assert got["b"] == pytest.approx(math.log2(3) / 3, abs=TOL)


def test_hand_rank_weighted_exposure() -> None:
    """LensKit's ExposureGini: exposure = sum of 0.85^(rank - 1) over the positions holding the
    item, then lenskit.stats.gini over the catalogue (StatsDirect, / N). Lists [1, 2], [2, 3]
    at k = 2, catalogue of 4: item 1: 1, item 2: 0.85 + 1 = 1.85, item 3: 0.85, item 4: 0.
    Sorted 0, 0.85, 1, 1.85 (sum 3.7): (-3 * 0 - 1 * 0.85 + 1 * 1 + 3 * 1.85) / (4 * 3.7)
    = 5.7 / 14.8. Entropy of (1, 1.85, 0.85) / 3.7 in bits."""
    con = duckdb.connect()
    for statement in MACROS:
        con.execute(statement)
    con.execute("CREATE TABLE r AS SELECT * FROM (VALUES (1, [1, 2]), (2, [2, 3])) t(user, rec)")
    got = con.execute("FROM exposure_gini('r', 2, catalog_size := 4, discount := 'rbp')"
                      ).fetchall()[0][0]
    assert got == pytest.approx(5.7 / 14.8, abs=TOL)
    p = np.array([1, 1.85, 0.85]) / 3.7
    got = con.execute("FROM exposure_entropy('r', 2, discount := 'rbp')").fetchall()[0][0]
    assert got == pytest.approx(float(-(p * np.log2(p)).sum()), abs=TOL)


def test_hand_rank_biased_entropy() -> None:
    """LensKit's formula: categories x (items 1, 3), y (item 2), z (item 9); weights 0.85^(r-1).
    a: [1, 2, 3]: x = 1 + 0.85^2 = 1.7225, y = 0.85: entropy of (1.7225, 0.85) / 2.5725.
    LensKit's Entropy (no weights, + 1e-6 on each of the 3 categories), item 2 in x and y
    (half each): b: [2, NULL, 9]: x = y = 1/2, z = 1 -> (0.5 + s, 0.5 + s, 1 + s) / (2 + 3s).
    c: [8], an item without a category: NULL."""
    con = duckdb.connect()
    for statement in MACROS:
        con.execute(statement)
    con.execute("CREATE TABLE r AS SELECT * FROM (VALUES ('a', [1, 2, 3]), ('b', [2, NULL, 9]), "
                "('c', [8])) t(user, rec)")
    con.execute("CREATE TABLE c AS SELECT * FROM (VALUES (1, 'x'), (2, 'y'), (3, 'x'), "
                "(9, 'z')) t(item, category)")
    con.execute("CREATE TABLE cm AS FROM c UNION ALL SELECT 2, 'x'")

    def entropy(values: list[float]) -> float:
        p = np.array(values) / sum(values)
        return float(-(p * np.log2(p)).sum())

    got = per_user(con, "FROM rank_biased_entropy('r', 'c', 3)")
    assert got["a"] == pytest.approx(entropy([1.7225, 0.85]), abs=TOL)
    assert got["c"] is None
    s = 1e-6
    got = per_user(con, "FROM rank_biased_entropy('r', 'cm', 3, discount := 'none', "
                        "smoothing := 1e-6)")
    assert got["b"] == pytest.approx(entropy([0.5 + s, 0.5 + s, 1 + s]), abs=TOL)
    # a: x = 1 + 1/2 + 1 (item 2 half in x), y = 1/2, z = 0 (+ s each).
    assert got["a"] == pytest.approx(entropy([2.5 + s, 0.5 + s, s]), abs=TOL)


def test_replay_categorical_diversity_docstring_example() -> None:
    """RePlay 0.22's CategoricalDiversity docstring (replay/metrics/categorical_diversity.py):
    users 1 and 2 have 5 distinct categories, user 3 has 3 (categories 4, 9, 2), so per user
    @3: 1, 1, 1 and @5: 1, 1, 0.6 (mean 0.8666...). Its rows are (user, category) already:
    here each item is its own category."""
    con = duckdb.connect()
    for statement in MACROS:
        con.execute(statement)
    con.execute("CREATE TABLE r AS SELECT * FROM (VALUES (1, [3, 7, 10, 11, 2]), "
                "(2, [5, 8, 11, 1, 3]), (3, [4, 9, 2])) t(user, rec)")
    con.execute("CREATE TABLE c AS SELECT range AS item, range AS category FROM range(12)")
    assert per_user(con, "FROM categorical_diversity('r', 'c', 3)") == {1: 1.0, 2: 1.0, 3: 1.0}
    assert per_user(con, "FROM categorical_diversity('r', 'c', 5)") == {1: 1.0, 2: 1.0, 3: 0.6}
    assert con.execute("SELECT avg(categorical_diversity) FROM categorical_diversity('r', 'c', "
                       "5)").fetchall()[0][0] == pytest.approx(0.8666666666666667, abs=TOL)


# --- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("query", "message"), [
    ("FROM arp('recs', 'train', 3, discount := 'exp')",
     "arp: discount must be one of 'none', 'log', 'rbp', got exp"),
    ("FROM self_information('recs', 'train', 3, discount := NULL)",
     "self_information: discount must be one of 'none', 'log', 'rbp', got NULL"),
    ("FROM arp('recs', 'train', 3, normalize := NULL)",
     "arp: normalize must be true or false, got NULL"),
    ("FROM self_information('recs', 'train', 3, normalize := NULL)",
     "self_information: normalize must be true or false, got NULL"),
    ("FROM epc('recs', 'train', 3, discount := 'rbp', persistence := 1)",
     "epc: persistence must be a number in (0, 1), got 1"),
    ("FROM efd('recs', 'train', 0)", "efd: k must be a positive integer, got 0"),
    ("FROM exposure_entropy('recs', 3, discount := 'rbp', persistence := 0)",
     "exposure_entropy: persistence must be a number in (0, 1), got 0"),
    ("FROM rank_biased_entropy('recs', 'categories', 3, smoothing := -1)",
     "rank_biased_entropy: smoothing must be a finite number >= 0, got -1"),
    ("FROM categorical_diversity('recs', 'categories', 3)",
     "categorical_diversity: categories holds item [0-4] more than once"),
])
def test_errors_name_function_argument_and_value(con: duckdb.DuckDBPyConnection, query: str,
                                                 message: str) -> None:
    pattern = re.escape(message).replace(re.escape("[0-4]"), "[0-4]")  # items 0..4 repeat
    with pytest.raises(duckdb.Error, match=pattern):
        con.execute(query).fetchall()
