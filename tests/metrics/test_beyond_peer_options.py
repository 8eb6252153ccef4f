"""The options that give each peer's convention of a beyond-accuracy metric (issue 28):
catalog_coverage's normalize and in_catalog, user_coverage's normalize, exposure_gini's
denominator and complement, exposure_entropy's unit and per_item, self_information's
popularity, long_tail_share's tail_ratio.

Where the expected values come from:

* ``test_*_match_kernels``: the records' Python kernels (written from the formulas, not from the
  SQL) on generated lists with repeats, NULL elements, empty and NULL lists, short lists and
  items absent from train, to 1e-12.
* ``test_hand_*`` and ``test_peer_names_through_evaluate``: small examples worked out in the
  test, each following the peer's own code, named at the test: RePlay 0.22
  replay/metrics/coverage.py (its docstring example, copied with its printed value), Elliot
  elliot/evaluation/metrics/diversity/gini_index/gini_index.py and coverage/item_coverage,
  coverage/user_coverage, RecBole 1.2 recbole/evaluator/metrics.py (ShannonEntropy.get_entropy,
  TailPercentage.get_tail),
  Microsoft Recommenders 1.2.1 recommenders/evaluation/python_evaluation.py (novelty,
  historical_item_novelty).
* ``test_peer_rectools``: RecTools 0.19.0 itself, run where it is importable
  (``PYTHONPATH=. /tmp/peers/bin/python -m pytest -p no:cacheprovider
  tests/metrics/test_beyond_peer_options.py -k peer -s``, run on 2026-11-29: passed);
  ``test_pinned_rectools`` keeps the values that run printed.
"""

from __future__ import annotations

import math
import warnings

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from conftest import ranked_rows

import duckrank
from duckrank.metrics.beyond import coverage, novelty
from duckrank.render.beyond_accuracy import MACROS

TOL = 1e-12
CATALOG_SIZE = 20


def generated() -> dict:
    """40 users with lists of 0..6 items drawn with replacement from 16 items, a NULL element, an
    empty and a NULL list; train: 120 rows over items 0..11 (12..15 never trained on) with
    repeated pairs; the catalog table: items 0..13."""
    rng = np.random.default_rng(2028)
    recs: dict = {u: [int(i) for i in rng.integers(0, 16, int(rng.integers(0, 7)))]
                  for u in range(40)}
    recs[3], recs[4], recs[5] = [], None, [1, None, 1, 14]
    train = [(int(u), int(i)) for u, i in zip(rng.integers(0, 30, 120), rng.integers(0, 12, 120),
                                               strict=True)]
    return {"recs": recs, "train": train, "catalog": list(range(14))}


DATA = generated()


def _connection(recs: dict, train: list, catalog: list) -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    for statement in MACROS:
        connection.execute(statement)
    connection.register("recs_arrow", pa.table({
        "user": list(recs), "rec": pa.array(list(recs.values()), pa.list_(pa.int64()))}))
    connection.execute("CREATE TABLE recs AS FROM recs_arrow")
    users, items = zip(*train, strict=True)
    connection.register("train_arrow", pa.table({"user": users, "item": items}))
    connection.execute("CREATE TABLE train AS FROM train_arrow")
    connection.register("catalog_arrow", pa.table({"item": catalog}))
    connection.execute("CREATE TABLE catalog AS FROM catalog_arrow")
    return connection


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    connection = _connection(DATA["recs"], DATA["train"], DATA["catalog"])
    yield connection
    connection.close()


def one(con: duckdb.DuckDBPyConnection, query: str) -> float | None:
    return con.execute(query).fetchall()[0][0]


# --- against the kernels ----------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 3, 9])
@pytest.mark.parametrize("normalize", [True, False])
def test_catalog_coverage_options_match_kernels(con: duckdb.DuckDBPyConnection, k: int,
                                                normalize: bool) -> None:
    recs = DATA["recs"]
    got = one(con, f"FROM catalog_coverage('recs', {k}, catalog_size := {CATALOG_SIZE}, "
                   f"normalize := {normalize})")
    assert got == pytest.approx(coverage.catalog_coverage_kernel(recs, k, CATALOG_SIZE,
                                                                 normalize), abs=TOL)
    got = one(con, f"FROM catalog_coverage('recs', {k}, catalog := 'catalog', "
                   f"normalize := {normalize}, in_catalog := true)")
    assert got == pytest.approx(coverage.catalog_coverage_kernel(
        recs, k, normalize=normalize, in_catalog=DATA["catalog"]), abs=TOL)


@pytest.mark.parametrize("k", [1, 3, 9])
def test_user_coverage_count_matches_kernel(con: duckdb.DuckDBPyConnection, k: int) -> None:
    got = con.execute(f"FROM user_coverage('recs', {k}, normalize := false)").fetchall()[0]
    assert got == pytest.approx(coverage.user_coverage_kernel(DATA["recs"], k, normalize=False),
                                abs=TOL)


@pytest.mark.parametrize("discount", ["none", "log"])
@pytest.mark.parametrize("denominator", ["n", "n_minus_1"])
@pytest.mark.parametrize("complement", [False, True])
def test_exposure_gini_options_match_kernel(con: duckdb.DuckDBPyConnection, discount: str,
                                            denominator: str, complement: bool) -> None:
    got = one(con, f"FROM exposure_gini('recs', 4, catalog_size := {CATALOG_SIZE}, discount := "
                   f"'{discount}', denominator := '{denominator}', complement := {complement})")
    expected = coverage.exposure_gini_kernel(DATA["recs"], 4, CATALOG_SIZE, discount,
                                             denominator=denominator, complement=complement)
    assert got == pytest.approx(expected, abs=TOL)


@pytest.mark.parametrize("discount", ["none", "rbp"])
@pytest.mark.parametrize("unit", ["bits", "nats"])
@pytest.mark.parametrize("per_item", [False, True])
def test_exposure_entropy_options_match_kernel(con: duckdb.DuckDBPyConnection, discount: str,
                                               unit: str, per_item: bool) -> None:
    got = one(con, f"FROM exposure_entropy('recs', 4, discount := '{discount}', unit := "
                   f"'{unit}', per_item := {per_item})")
    expected = coverage.exposure_entropy_kernel(DATA["recs"], 4, discount, unit=unit,
                                                per_item=per_item)
    assert got == pytest.approx(expected, abs=TOL)


@pytest.mark.parametrize("k", [1, 4])
@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("discount", ["none", "log"])
def test_self_information_by_interactions_matches_kernel(
        con: duckdb.DuckDBPyConnection, k: int, normalize: bool, discount: str) -> None:
    got = dict(con.execute(
        f"FROM self_information('recs', 'train', {k}, normalize := {normalize}, discount := "
        f"'{discount}', popularity := 'interactions')").fetchall())
    expected = novelty.self_information_kernel(DATA["recs"], k, DATA["train"], normalize,
                                               discount, popularity="interactions")
    assert got.keys() == expected.keys()
    for user, value in expected.items():
        assert got[user] == (None if value is None else pytest.approx(value, abs=TOL)), user


@pytest.mark.parametrize("k", [1, 4])
@pytest.mark.parametrize("tail_ratio", [0.01, 0.1, 0.29, 0.5, 1, 9, 12.5])
def test_recbole_tail_matches_kernel(con: duckdb.DuckDBPyConnection, k: int,
                                     tail_ratio: float) -> None:
    """0.29 x 12 items = 3.48 and the count thresholds 9 and 12.5 (ties at the threshold)."""
    got = dict(con.execute(f"FROM long_tail_share('recs', 'train', {k}, tail_ratio := "
                           f"{tail_ratio})").fetchall())
    expected = novelty.long_tail_share_kernel(DATA["recs"], k, DATA["train"],
                                              tail_ratio=tail_ratio)
    assert got.keys() == expected.keys()
    for user, value in expected.items():
        assert got[user] == (None if value is None else pytest.approx(value, abs=TOL)), user


# --- hand calculations following the peers' code ---------------------------------------------

# Every list holds k = 3 items (RecBole's and Recommenders' means are over full lists).
# Train: a 2 rows, b 1, c 4, x 1, e 1 (9 rows); d is recommended but never trained on.
HAND_RECS = {"u1": ["a", "b", "c"], "u2": ["x", "a", "d"]}
HAND_TRAIN = [("p", "a"), ("q", "a"), ("p", "b"), ("p", "c"), ("q", "c"), ("r", "c"),
              ("s", "c"), ("q", "x"), ("s", "e")]
# Elliot Gini (gini_index.py): counts sorted 1, 1, 1, 1, 2 (a twice) of 5 recommended items,
# num_items 8, free_norm 6 (the list lengths): sum over j = 0..4 of (2 (j + 8 - 5 + 1) - 8 - 1)
# x count / 6 = (-1 + 1 + 3 + 5 + 7 x 2) / 6 = 22 / 6; / (8 - 1); 1 - that = 1 - 22 / 42.
ELLIOT_GINI = 1 - 22 / 42
# RecBole ShannonEntropy.get_entropy: p = count / (2 users x 3) = 2/6 for a, 1/6 for b, c, x,
# d; -sum p ln p, / 5 distinct items.
RECBOLE_ENTROPY = (-(2 / 6) * math.log(2 / 6) - 4 * (1 / 6) * math.log(1 / 6)) / 5
# Recommenders novelty: historical_item_novelty -log2(count / 9 rows): a log2(9/2), b log2 9,
# c log2(9/4), x log2 9; d is dropped by the inner merge (adds 0) but counts in the 6
# recommendations: (2 log2(9/2) + log2 9 + log2(9/4) + log2 9) / 6.
RECOMMENDERS_NOVELTY = (2 * math.log2(9 / 2) + 2 * math.log2(9) + math.log2(9 / 4)) / 6
# RePlay Coverage (coverage.py _dict_call): |{a, b, c, x, d} & {a, b, c, x, e}| / 5 = 4 / 5.
REPLAY_COVERAGE = 4 / 5
# RecBole TailPercentage.get_tail, tail_ratio 0.1 (its default): the 5 trained items sorted by
# (count, id): (1, b), (1, e), (1, x), (2, a), (4, c); cut = max(int(5 x 0.1), 1) = 1: tail
# {b}; d (untrained) is not in its counts. u1 a, b, c: 1/3; u2 x, a, d: 0; mean 1/6. With
# tail_ratio 0.5: cut int(2.5) = 2, tail {b, e}: the same 1/6; with 2 (a count): items of at
# most 2 interactions {a, b, e, x}: u1 2/3, u2 2/3.
RECBOLE_TAIL = {0.1: 1 / 6, 0.5: 1 / 6, 2: 2 / 3}


@pytest.fixture(scope="module")
def hand() -> duckdb.DuckDBPyConnection:
    connection = _connection({}, [("z", "z")], [])
    for table in ("recs", "train"):
        connection.execute(f"DROP TABLE {table}")
    connection.execute("CREATE TABLE recs AS SELECT * FROM (VALUES ('u1', ['a', 'b', 'c']), "
                       "('u2', ['x', 'a', 'd'])) t(\"user\", rec)")
    rows = ", ".join(f"('{u}', '{i}')" for u, i in HAND_TRAIN)
    connection.execute(f"CREATE TABLE train AS SELECT * FROM (VALUES {rows}) t(\"user\", item)")
    yield connection
    connection.close()


def test_hand_peer_conventions(hand: duckdb.DuckDBPyConnection) -> None:
    assert one(hand, "FROM exposure_gini('recs', 3, catalog_size := 8, denominator := "
                     "'n_minus_1', complement := true)") == pytest.approx(ELLIOT_GINI, abs=TOL)
    assert one(hand, "FROM exposure_entropy('recs', 3, unit := 'nats', per_item := true)"
               ) == pytest.approx(RECBOLE_ENTROPY, abs=TOL)
    assert one(hand, "SELECT avg(self_information) FROM self_information('recs', 'train', 3, "
                     "popularity := 'interactions')") == pytest.approx(RECOMMENDERS_NOVELTY,
                                                                        abs=TOL)
    assert one(hand, "FROM catalog_coverage('recs', 3, catalog := 'train', in_catalog := true)"
               ) == pytest.approx(REPLAY_COVERAGE, abs=TOL)
    for ratio, value in RECBOLE_TAIL.items():
        assert one(hand, "SELECT avg(long_tail_share) FROM long_tail_share('recs', 'train', 3, "
                         f"tail_ratio := {ratio})") == pytest.approx(value, abs=TOL), ratio
    # Elliot ItemCoverage (item_coverage.py): len of the set of the top-cutoff items = 5; a
    # count needs no catalogue.
    assert one(hand, "FROM catalog_coverage('recs', 3, normalize := false)") == 5
    # Elliot UserCoverage (user_coverage.py): the users with a non-empty list = 2.
    assert one(hand, "FROM user_coverage('recs', 3, normalize := false)") == 2


def test_replay_coverage_docstring_example() -> None:
    """RePlay 0.22 replay/metrics/coverage.py: ``Coverage(2)(recommendations, train)`` printed
    ``{'Coverage@2': 0.5555555555555556}`` (the lists below are its recommendations ordered by
    rating)."""
    recs = {1: [3, 7, 10, 11, 2], 2: [5, 8, 11, 1, 3], 3: [4, 9, 2]}
    train = [(1, 5), (1, 6), (1, 8), (1, 9), (1, 2), (2, 5), (2, 8), (2, 11), (2, 1), (2, 3),
             (3, 4), (3, 9), (3, 2)]
    connection = _connection(recs, train, [])
    got = one(connection, "FROM catalog_coverage('recs', 2, catalog := 'train', in_catalog := "
                          "true)")
    assert got == pytest.approx(0.5555555555555556, abs=TOL)


def test_peer_names_through_evaluate() -> None:
    """The libraries' names read as the requests above, on the same data and hand values."""
    run = pd.DataFrame([(u, i, 3.0 - r) for u, items in HAND_RECS.items()
                        for r, i in enumerate(items)], columns=["user", "item", "score"])
    qrels = pd.DataFrame({"user": ["u1", "u2", "u3"], "item": ["a", "x", "b"]})
    train = pd.DataFrame(HAND_TRAIN, columns=["user", "item"])
    # (name, the column of its request, value); RecTools' and Elliot's item counts are one
    # request, so one column.
    expected = [
        ("elliot:Gini@3", "exposure_gini(denominator=n_minus_1,complement=true)@3", ELLIOT_GINI),
        ("recbole:shannonentropy@3", "exposure_entropy(unit=nats,per_item=true)@3",
         RECBOLE_ENTROPY),
        ("recommenders:novelty@3", "self_information(popularity=interactions)@3",
         RECOMMENDERS_NOVELTY),
        ("recbole:tailpercentage@3", "long_tail_share(tail_ratio=0.1)@3", RECBOLE_TAIL[0.1]),
        ("rectools:CatalogCoverage@3", "catalog_coverage(normalize=false)@3", 5.0),
        ("elliot:ItemCoverage@3", "catalog_coverage(normalize=false)@3", 5.0),
        # u3 of the qrels has no list: Elliot counts the users of its recommendations.
        ("elliot:UserCoverage@3", "user_coverage(normalize=false)@3", 2.0),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = duckrank.evaluate(run, qrels, [name for name, _, _ in expected], train=train,
                                   catalog_size=8)
        replay = duckrank.evaluate(run, qrels, ["replay:Coverage@3"], train=train,
                                   catalog=train)
    for name, column, value in expected:
        assert result[column][0] == pytest.approx(value, abs=TOL), name
    assert replay["catalog_coverage(in_catalog=true)@3"][0] == pytest.approx(REPLAY_COVERAGE,
                                                                             abs=TOL)


# --- RecTools ---------------------------------------------------------------------------------


def test_peer_rectools(con: duckdb.DuckDBPyConnection) -> None:
    pytest.importorskip("rectools")
    from rectools.metrics import CatalogCoverage

    reco = ranked_rows(DATA["recs"], 9)
    for k in (1, 3, 9):
        for normalize in (False, True):
            peer = CatalogCoverage(k=k, normalize=normalize).calc(reco, DATA["catalog"])
            print(f"rectools_catalog_coverage@{k}_normalize={normalize}", peer)
            got = one(con, f"FROM catalog_coverage('recs', {k}, catalog := 'catalog', "
                           f"normalize := {normalize})")
            assert got == pytest.approx(peer, abs=TOL)


# Printed by test_peer_rectools -s in the peer venv (RecTools 0.19.0).
# (Recommended items outside the 14-item catalogue count, so the share exceeds 1 there too.)
PINNED = {(1, False): 15, (3, False): 16, (9, False): 16,
          (1, True): 1.0714285714285714, (3, True): 1.1428571428571428,
          (9, True): 1.1428571428571428}


@pytest.mark.parametrize(("k", "normalize"), list(PINNED))
def test_pinned_rectools(con: duckdb.DuckDBPyConnection, k: int, normalize: bool) -> None:
    got = one(con, f"FROM catalog_coverage('recs', {k}, catalog := 'catalog', normalize := "
                   f"{normalize})")
    assert got == pytest.approx(PINNED[k, normalize], abs=TOL)


# --- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("query", "message"), [
    ("FROM catalog_coverage('recs', 3, catalog_size := 20, in_catalog := true)",
     "catalog_coverage: in_catalog := true counts the items of the catalog table; give catalog"),
    ("FROM catalog_coverage('recs', 3, catalog_size := 20, normalize := NULL)",
     "catalog_coverage: normalize must be true or false, got NULL"),
    ("FROM catalog_coverage('recs', 3, catalog := 'catalog', in_catalog := NULL)",
     "catalog_coverage: in_catalog must be true or false, got NULL"),
    ("FROM user_coverage('recs', 3, normalize := NULL)",
     "user_coverage: normalize must be true or false, got NULL"),
    ("FROM exposure_gini('recs', 3, catalog_size := 20, denominator := 'n-1')",
     "exposure_gini: denominator must be one of 'n', 'n_minus_1', got n-1"),
    ("FROM exposure_gini('recs', 3, catalog_size := 20, complement := NULL)",
     "exposure_gini: complement must be true or false, got NULL"),
    ("FROM exposure_entropy('recs', 3, unit := 'bit')",
     "exposure_entropy: unit must be one of 'bits', 'nats', got bit"),
    ("FROM exposure_entropy('recs', 3, per_item := NULL)",
     "exposure_entropy: per_item must be true or false, got NULL"),
    ("FROM long_tail_share('recs', 'train', 3, tail_ratio := 0)",
     "long_tail_share: tail_ratio must be a finite number > 0 or NULL, got 0"),
    ("FROM self_information('recs', 'train', 3, popularity := 'rows')",
     "self_information: popularity must be one of 'users', 'interactions', got rows"),
])
def test_errors_name_function_option_and_value(con: duckdb.DuckDBPyConnection, query: str,
                                               message: str) -> None:
    with pytest.raises(duckdb.Error, match=message):
        con.execute(query).fetchall()


def test_gini_over_n_minus_1_of_one_item_is_null() -> None:
    """N - 1 = 0: the record's undefined case."""
    connection = _connection({"u": [1]}, [(1, 1)], [1])
    assert one(connection, "FROM exposure_gini('recs', 1, catalog_size := 1, denominator := "
                           "'n_minus_1')") is None
    assert coverage.exposure_gini_kernel({"u": [1]}, 1, 1, denominator="n_minus_1") is None
