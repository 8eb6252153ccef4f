"""Expected exposure over groups of items (Diaz et al., CIKM 2020: a group's exposure is the sum
of its items' expected exposure, compared with the target the same way) and the item-group
fairness metrics requested from ``duckrank.evaluate`` with ``item_groups=`` (issue 28).

Where the expected values come from:

* ``test_hand_*``: hand calculations written out in the docstrings, from the paper's
  definitions (RBP browsing, exposure p^(rank - 1); equal target exposure (1 - p^m) / (m (1 - p))
  for each of the m relevant items). No peer library has the metric (the TREC 2020 Fair
  Ranking track's evaluation script is not a package).
* ``test_*_matches_kernel``: the record's Python kernel
  (``exposure.group_expected_exposure_kernel``, written from the formula) on generated data
  with sampled rankings, NULL elements, empty and NULL lists and truths, items without a
  group, to 1e-12.
* ``test_evaluate_*``: ``duckrank.reports.beyond_accuracy.beyond_accuracy`` on the same data
  (that function and the macros are checked against the kernels and by hand), and a hand
  calculation.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import duckrank
from duckrank.metrics.beyond import exposure
from duckrank.render.beyond_accuracy import MACROS
from duckrank.reports.beyond_accuracy import beyond_accuracy

TOL = 1e-12


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    for statement in MACROS:
        connection.execute(statement)
    yield connection
    connection.close()


def test_hand_group_expected_exposure(con: duckdb.DuckDBPyConnection) -> None:
    """Persistence 0.5, k = 3, groups x {1, 3}, y {2, 9}; item 4 has no group.
    User a, two sampled rankings [1, 2, 3] and [3, 1, 2], truth {1, 3}: e(1) = (1 + 0.5) / 2 =
    0.75, e(2) = (0.5 + 0.25) / 2 = 0.375, e(3) = (0.25 + 1) / 2 = 0.625, so E_x = 1.375,
    E_y = 0.375; m = 2, e* = (1 - 0.25) / (2 x 0.5) = 0.75 each, E*_x = 1.5, E*_y = 0.
    EE-L = (1.375 - 1.5)^2 + 0.375^2 = 0.15625; EE-D = 1.375^2 + 0.375^2 = 2.03125;
    EE-R = 1.375 x 1.5 = 2.0625.
    User b, [2, NULL, 9], truth {9}: E_y = 1 + 0.25 = 1.25, E*_y = 1 (m = 1): EE-L = 0.0625,
    EE-D = 1.5625, EE-R = 1.25 (over the items, expected_exposure gives 1.5625, 1.0625, 0.25:
    the group does not tell 2 from 9).
    User d, [4, 1], truth {4, 2}: item 4 has no group; E_x = 0.5 (item 1 at rank 2), m = 2,
    e* = 0.75, E*_y = 0.75 (item 2): EE-L = 0.5^2 + 0.75^2 = 0.8125, EE-D = 0.25, EE-R = 0.
    User e, no list, truth {1}: E*_x = 1: EE-L = 1, EE-D = EE-R = 0. c (empty truth) and
    f (NULL truth): NULL."""
    con.execute("CREATE OR REPLACE TABLE r AS SELECT * FROM (VALUES ('a', [1, 2, 3], [1, 3]), "
                "('a', [3, 1, 2], [1, 3]), ('b', [2, NULL, 9], [9]), ('c', [4], []), "
                "('d', [4, 1], [4, 2]), ('e', [], [1]), ('f', [1], NULL)) t(user, rec, truth)")
    con.execute("CREATE OR REPLACE TABLE g AS SELECT * FROM (VALUES (1, 'x'), (2, 'y'), "
                "(3, 'x'), (9, 'y')) t(item, \"group\")")
    got = {u: row for u, *row in con.execute(
        "FROM group_expected_exposure('r', 'g', 3)").fetchall()}
    assert got == {"a": [0.15625, 2.03125, 2.0625], "b": [0.0625, 1.5625, 1.25],
                   "c": [None] * 3, "d": [0.8125, 0.25, 0.0], "e": [1.0, 0.0, 0.0],
                   "f": [None] * 3}
    # One group per item: the same loss as over the items (A is the identity).
    con.execute("CREATE OR REPLACE TABLE own AS SELECT item, item AS \"group\" FROM "
                "range(0, 10) t(item)")
    by_group, by_item = (con.execute(f"FROM {call} ORDER BY user").fetchall() for call in (
        "group_expected_exposure('r', 'own', 3, persistence := 0.8)",
        "expected_exposure('r', 3, persistence := 0.8)"))
    for group_row, item_row in zip(by_group, by_item, strict=True):
        assert group_row == pytest.approx(item_row, abs=TOL)


def _generated() -> dict:
    rng = np.random.default_rng(2020)
    recs = [(u, [int(i) for i in rng.choice(15, int(rng.integers(0, 7)), replace=False)])
            for u in range(30)]
    # A second sampled ranking for every third user, NULL elements, an empty and a NULL list.
    recs += [(u, rec[::-1]) for u, rec in recs if u % 3 == 0]
    recs += [(30, [1, None, 2]), (31, []), (32, None)]
    truth: dict = {u: [int(i) for i in rng.choice(15, int(rng.integers(0, 4)), replace=False)]
                   for u in range(33)}
    truth[4] = None
    groups = {i: "abc"[i % 3] for i in range(12)}  # items 12 to 14 without a group
    return {"recs": recs, "truth": truth, "groups": groups}


DATA = _generated()


@pytest.mark.parametrize("persistence", [0.5, 0.85])
def test_group_expected_exposure_matches_kernel(con: duckdb.DuckDBPyConnection,
                                                persistence: float) -> None:
    users, lists = zip(*DATA["recs"], strict=True)
    con.register("recs_arrow", pa.table({
        "user": list(users), "rec": pa.array(list(lists), pa.list_(pa.int64())),
        "truth": pa.array([DATA["truth"][u] for u in users], pa.list_(pa.int64()))}))
    con.register("groups_arrow", pa.table({"item": list(DATA["groups"]),
                                           "grp": list(DATA["groups"].values())}))
    got = {u: row for u, *row in con.execute(
        f"FROM group_expected_exposure('recs_arrow', 'groups_arrow', 4, persistence := "
        f"{persistence}, group_col := 'grp')").fetchall()}
    expected = exposure.group_expected_exposure_kernel(DATA["recs"], DATA["truth"], 4,
                                                       DATA["groups"], persistence)
    assert got.keys() == expected.keys()
    for user, values in expected.items():
        assert got[user] == ([None] * 3 if values is None else
                             [pytest.approx(v, abs=TOL) for v in values]), user


@pytest.mark.parametrize(("query", "message"), [
    ("FROM group_expected_exposure('r', 'g', 3, persistence := 1)",
     "group_expected_exposure: persistence must be a number in (0, 1), got 1"),
    ("FROM group_expected_exposure('r', 'g', 0)",
     "group_expected_exposure: k must be a positive integer, got 0"),
    ("FROM group_expected_exposure('r', 'twice', 3)",
     "group_expected_exposure: item_groups holds item 1 more than once"),
])
def test_errors_name_function_argument_and_value(con: duckdb.DuckDBPyConnection, query: str,
                                                 message: str) -> None:
    con.execute("CREATE OR REPLACE TABLE r AS SELECT 'a' AS user, [1, 2] AS rec, [1] AS truth")
    con.execute("CREATE OR REPLACE TABLE g AS SELECT 1 AS item, 'x' AS \"group\"")
    con.execute("CREATE OR REPLACE TABLE twice AS SELECT * FROM (VALUES (1, 'x'), (1, 'y')) "
                "t(item, \"group\")")
    with pytest.raises(duckdb.Error, match=message.replace("(", r"\(").replace(")", r"\)")):
        con.execute(query).fetchall()


# --- from duckrank.evaluate, with item_groups= ---------------------------------------------------

def _evaluation_data() -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(28)
    run = pd.DataFrame([(u, int(i), float(s)) for u in range(25)
                        for s, i in enumerate(rng.choice(20, int(rng.integers(1, 8)),
                                                         replace=False))],
                       columns=["user", "item", "score"])
    qrels = pd.DataFrame({"user": rng.integers(0, 25, 60), "item": rng.integers(0, 20, 60)})
    return {"run": run, "qrels": qrels.drop_duplicates(),
            "train": pd.DataFrame({"user": rng.integers(0, 30, 150),
                                   "item": rng.integers(0, 20, 150)}),
            "item_groups": pd.DataFrame({"item": range(18),
                                         "group": [f"g{i % 4}" for i in range(18)]})}


GROUP_REQUESTS = ["reo@5", "rsp@5", "group_expected_exposure@5",
                  "group_expected_exposure(persistence=0.8)@3"]


def test_evaluate_takes_item_groups() -> None:
    data = _evaluation_data()
    got = duckrank.evaluate(data["run"], data["qrels"], ["ndcg@5", *GROUP_REQUESTS],
                            train=data["train"], item_groups=data["item_groups"])
    expected = beyond_accuracy(data["run"], GROUP_REQUESTS, qrels=data["qrels"],
                               train=data["train"], item_groups=data["item_groups"])
    assert list(got.columns[-len(GROUP_REQUESTS):]) == GROUP_REQUESTS
    for request in GROUP_REQUESTS:
        assert got[request][0] == pytest.approx(expected[request][0], abs=TOL), request


def test_evaluate_hand_group_expected_exposure() -> None:
    """One ranking per user, k = 2, p = 0.5, groups x {1, 2}, y {3}. User 1 ranks [1, 3]
    (scores 2, 1), truth {3}: E_x = 1, E_y = 0.5, E*_y = 1: EE-L = 1 + 0.25 = 1.25. User 2
    ranks [3, 2], truth {1, 2}: E_y = 1, E_x = 0.5, e* = 0.75 each so E*_x = 1.5: EE-L = 1 + 1
    = 2. Mean 1.625."""
    run = pd.DataFrame({"user": [1, 1, 2, 2], "item": [1, 3, 3, 2],
                        "score": [2.0, 1.0, 2.0, 1.0]})
    qrels = pd.DataFrame({"user": [1, 2, 2], "item": [3, 1, 2]})
    groups = pd.DataFrame({"item": [1, 2, 3], "group": ["x", "x", "y"]})
    got = duckrank.evaluate(run, qrels, "group_expected_exposure@2", item_groups=groups)
    assert got["group_expected_exposure@2"][0] == pytest.approx(1.625, abs=TOL)


def test_evaluate_without_item_groups_names_the_argument() -> None:
    data = _evaluation_data()
    with pytest.raises(ValueError, match="evaluate: 'group_expected_exposure@5': "
                       "group_expected_exposure needs item_groups=, which is not given"):
        duckrank.evaluate(data["run"], data["qrels"], ["group_expected_exposure@5"])
