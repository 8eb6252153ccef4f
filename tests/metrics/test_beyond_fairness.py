"""Popularity bias and item-group fairness (issue 28, duckrank.metrics.beyond.fairness): ACLT,
APLT, PopREO, PopRSP (and Elliot's Extended forms, by head_share), REO and RSP over item groups,
BiasDisparityBS/BR/BD over user and item groups, UserMADrating, ItemMADrating, UserMADranking
and ItemMADranking (Elliot's fairness/MAD); expected exposure (Diaz et al. 2020): the hand
calculation below follows the paper's definitions (RBP exposure, equal target exposure of the
relevant items), no peer library has it.

Where the expected values come from:

* ``test_hand_*``: small examples worked out in the test from Elliot's source
  (elliot/evaluation/metrics/bias/aclt, aplt, pop_reo, pop_rsp; fairness/reo, rsp,
  BiasDisparity; the head from popularity_utils/popularity.py: items by distinct training
  users, most first, added until the running total reaches 80% of the training pairs). Elliot
  is not on PyPI: its formulas are restated in the kernels and checked by hand here.
* ``test_*_matches_kernel``: the records' Python kernels on generated data (popularity ties,
  repeated training pairs, items absent from train, NULL elements, empty and NULL lists and
  truths, users absent from train), to 1e-12.
"""

from __future__ import annotations

import re

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from duckrank.metrics.beyond import exposure, fairness
from duckrank.render.beyond_accuracy import MACROS

K = 4
TOL = 1e-12


def _connection() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    for statement in MACROS:
        con.execute(statement)
    return con


def per_user(con: duckdb.DuckDBPyConnection, query: str) -> dict:
    return dict(con.execute(query).fetchall())


@pytest.fixture(scope="module")
def hand() -> duckdb.DuckDBPyConnection:
    """Training pairs (a, 1), (a, 2), (b, 2), (c, 2), (c, 9) twice, (d, 3), (d, 2): 7 distinct
    pairs; distinct users per item 2: 4, 1: 1, 3: 1, 9: 1. Elliot's head (80% of 7 = 5.6):
    item 2 (5.6 - 4 = 1.6 left), 1 (0.6 left), 3 (-0.4: stop) -> head {1, 2, 3}, tail {9}.
    By items (20% of the 4 items by rows: 2: 4, 9: 2, 1: 1, 3: 1): head {2}, tail {1, 3, 9}.
    Lists (k = 3): a [1, 2, 3] truth [1, 3]; b [2, NULL, 9] truth [9, 4]; c [4] truth [];
    e [] truth [1]. Groups x {1, 3}, y {2, 4}, z {9}."""
    con = _connection()
    con.execute("CREATE TABLE r AS SELECT * FROM (VALUES ('a', [1, 2, 3], [1, 3]), "
                "('b', [2, NULL, 9], [9, 4]), ('c', [4], []), ('e', [], [1])) t(user, rec, truth)")
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES ('a', 1), ('a', 2), ('b', 2), ('c', 2), "
                "('c', 9), ('c', 9), ('d', 3), ('d', 2)) t(user, item)")
    con.execute("CREATE TABLE gr AS SELECT * FROM (VALUES (1, 'x'), (2, 'y'), (3, 'x'), "
                "(4, 'y'), (9, 'z')) t(item, \"group\")")
    return con


def test_hand_aclt_and_aplt(hand: duckdb.DuckDBPyConnection) -> None:
    """Elliot's head: a's top 3 has no tail item; b's [2, 9] has 9 (1 of 2 items); c's [4] is
    absent from train (neither group): 0; e: empty list, NULL. By items: a has 1 and 3 in the
    tail (2 of 3)."""
    assert per_user(hand, "FROM aclt('r', 't', 3)") == {"a": 0, "b": 1, "c": 0, "e": None}
    assert per_user(hand, "FROM aplt('r', 't', 3)") == {"a": 0.0, "b": 0.5, "c": 0.0, "e": None}
    assert per_user(hand, "FROM aclt('r', 't', 3, head := 'items')") == {
        "a": 2, "b": 1, "c": 0, "e": None}
    assert per_user(hand, "FROM aplt('r', 't', 3, head := 'items')")["a"] == \
        pytest.approx(2 / 3, abs=TOL)
    # Extended (pop_ratio 0.5 = 3.5 of 7): item 2 alone leaves -0.5 -> head {2}.
    assert per_user(hand, "FROM aclt('r', 't', 3, head_share := 0.5)")["a"] == 2


def test_hand_pop_rsp_and_pop_reo(hand: duckdb.DuckDBPyConnection) -> None:
    """RSP, users a, b, c, e: recommended head items a 3 (1, 2, 3), b 1 (2) -> 4; tail b 1 (9).
    Head items not trained on: a 1 (3), b 2, c 2, e 3 -> 8; tail: a 1, b 1, c 0, e 1 -> 3.
    P = 4/8, 1/3: std / mean = (1/12) / (5/12) = 0.2.
    REO, users with a relevant item (a, b, e): relevant recommended: a 1, 3 (head 2), b 9 (tail
    1); relevant not trained on: a 3 (head), b 9 (tail; 4 has no group), e 1 (head) -> P_head
    = 2/2, P_tail = 1/1: 0."""
    assert hand.execute("FROM pop_rsp('r', 't', 3)").fetchall() == [(pytest.approx(0.2, abs=TOL),
                                                                     2)]
    assert hand.execute("FROM pop_reo('r', 't', 3)").fetchall() == [(0.0, 2)]


def test_hand_reo_and_rsp_over_groups(hand: duckdb.DuckDBPyConnection) -> None:
    """REO: num x 2 (a: 1, 3), y 0, z 1 (b: 9); den x 2 (a: 3, e: 1), y 1 (b: 4), z 1 (b: 9):
    P = 1, 0, 1: std (population) sqrt(2/9) / mean 2/3 = 0.7071...
    RSP: num x 2, y 3 (a: 2, b: 2, c: 4), z 1; den = 4 users x |g| - training pairs of those
    users in g: x 8 - 1, y 8 - 3, z 4 - 1: P = 2/7, 3/5, 1/3."""
    got = hand.execute("FROM reo('r', 't', 'gr', 3)").fetchall()[0]
    assert got == (pytest.approx(np.sqrt(2 / 9) / (2 / 3), abs=TOL), 3)
    p = np.array([2 / 7, 3 / 5, 1 / 3])
    got = hand.execute("FROM rsp('r', 't', 'gr', 3)").fetchall()[0]
    assert got == (pytest.approx(float(np.std(p) / np.mean(p)), abs=TOL), 3)


def test_a_group_without_denominator_is_null(hand: duckdb.DuckDBPyConnection) -> None:
    """Group w holds only item 7, which no user has relevant: REO's P_w is 0 / 0 (Elliot: NaN).
    Lists that hold no item of any group: every P is 0, std / mean is 0 / 0: NULL too."""
    hand.execute("CREATE TABLE gw AS FROM gr UNION ALL SELECT 7, 'w'")
    assert hand.execute("FROM reo('r', 't', 'gw', 3)").fetchall() == [(None, 4)]
    hand.execute("CREATE TABLE none_listed AS SELECT 'a' AS user, [7] AS rec")
    assert hand.execute("FROM rsp('none_listed', 't', 'gr', 3)").fetchall() == [(None, 3)]


def test_hand_bias_disparity(hand: duckdb.DuckDBPyConnection) -> None:
    """Item groups x {1, 3}, y {2, 4}, z {9}: P = 2/5, 2/5, 1/5. User groups m {a, b}, f {c, d}.
    Distinct training pairs: m: x 1 (a-1), y 2 (a-2, b-2), z 0 -> bs = (1/3) / (2/5), (2/3) /
    (2/5), 0; f: x 1 (d-3), y 2 (c-2, d-2), z 1 (c-9) -> 1/4 / (2/5), 2/4 / (2/5), 1/4 / (1/5).
    Top 3: m: a 1 x, 2 y, 3 x; b 2 y, 9 z -> x 2, y 2, z 1 of 5 -> br 1, 1, 1; f: c 4 y -> br
    0, 1 / (2/5), 0. bd = (br - bs) / bs, NULL where bs = 0 (m, z)."""
    hand.execute("CREATE TABLE ugr AS SELECT * FROM (VALUES ('a', 'm'), ('b', 'm'), ('c', 'f'), "
                 "('d', 'f')) t(user, \"group\")")
    got = {(g, c): row for g, c, *row in hand.execute(
        "FROM bias_disparity('r', 't', 'ugr', 'gr', 3)").fetchall()}
    expected = {("m", "x"): (5 / 6, 1.0, 1 / (5 / 6) - 1), ("m", "y"): (5 / 3, 1.0, 0.6 - 1),
                ("m", "z"): (0.0, 1.0, None), ("f", "x"): (0.625, 0.0, -1.0),
                ("f", "y"): (1.25, 2.5, 1.0), ("f", "z"): (1.25, 0.0, -1.0)}
    assert got.keys() == expected.keys()
    for key, values in expected.items():
        for value, want in zip(got[key], values, strict=True):
            assert value == (None if want is None else pytest.approx(want, abs=TOL)), key


# --- against the kernels ----------------------------------------------------------------------


def generated() -> dict:
    rng = np.random.default_rng(1928)
    weights = 1.0 / np.arange(1, 21)
    weights /= weights.sum()
    recs: dict = {u: [int(i) for i in rng.choice(20, int(rng.integers(0, 7)), replace=False,
                                                  p=weights)] for u in range(40)}
    recs[3], recs[4], recs[5] = [], None, [1, None, 2, 30]
    truth: dict = {u: [int(i) for i in rng.choice(20, int(rng.integers(0, 5)), replace=False)]
                   for u in range(40)}
    truth[6] = None
    train = [(int(u), int(i)) for u, i in zip(rng.integers(0, 35, 200),
                                              rng.choice(18, 200, p=weights[:18] / weights[:18]
                                                         .sum()), strict=True)]
    train.append(train[0])
    groups = {i: "gh"[i % 2] if i < 10 else "k" for i in range(19)}
    return {"recs": recs, "truth": truth, "train": train, "groups": groups}


DATA = generated()


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    connection = _connection()
    list_type = pa.list_(pa.int64())
    connection.register("recs_arrow", pa.table({
        "user": list(DATA["recs"]), "rec": pa.array(list(DATA["recs"].values()), list_type),
        "truth": pa.array([DATA["truth"][u] for u in DATA["recs"]], list_type)}))
    connection.execute("CREATE TABLE recs AS FROM recs_arrow")
    users, items = zip(*DATA["train"], strict=True)
    connection.register("train_arrow", pa.table({"user": users, "item": items}))
    connection.execute("CREATE TABLE train AS FROM train_arrow")
    connection.register("groups_arrow", pa.table({"item": list(DATA["groups"]),
                                                  "group": list(DATA["groups"].values())}))
    connection.execute("CREATE TABLE item_groups AS FROM groups_arrow")
    yield connection
    connection.close()


HEADS = [("interactions", None), ("interactions", 0.5), ("interactions", 0.0),
         ("items", None), ("items", 0.35)]


@pytest.mark.parametrize(("head", "share"), HEADS)
def test_tail_metrics_match_kernels(con: duckdb.DuckDBPyConnection, head: str,
                                    share: float | None) -> None:
    options = f"head := '{head}', head_share := {'NULL' if share is None else share}"
    for name, kernel in (("aclt", fairness.aclt_kernel), ("aplt", fairness.aplt_kernel)):
        got = per_user(con, f"FROM {name}('recs', 'train', {K}, {options})")
        expected = kernel(DATA["recs"], K, DATA["train"], head, share)
        assert got.keys() == expected.keys()
        for user, value in expected.items():
            assert got[user] == (None if value is None else pytest.approx(value, abs=TOL)), user


@pytest.mark.parametrize(("head", "share"), HEADS)
def test_popularity_parity_matches_kernels(con: duckdb.DuckDBPyConnection, head: str,
                                           share: float | None) -> None:
    options = f"head := '{head}', head_share := {'NULL' if share is None else share}"
    groups = fairness.popularity_groups(DATA["train"], head, share)
    got = con.execute(f"FROM pop_reo('recs', 'train', {K}, {options})").fetchall()[0][0]
    assert got == pytest.approx(fairness.reo_kernel(DATA["recs"], DATA["truth"], K,
                                                    DATA["train"], groups), abs=TOL)
    got = con.execute(f"FROM pop_rsp('recs', 'train', {K}, {options})").fetchall()[0][0]
    assert got == pytest.approx(fairness.rsp_kernel(DATA["recs"], K, DATA["train"], groups),
                                abs=TOL)


def test_group_parity_matches_kernels(con: duckdb.DuckDBPyConnection) -> None:
    got = con.execute(f"FROM reo('recs', 'train', 'item_groups', {K})").fetchall()[0][0]
    assert got == pytest.approx(fairness.reo_kernel(DATA["recs"], DATA["truth"], K,
                                                    DATA["train"], DATA["groups"]), abs=TOL)
    got = con.execute(f"FROM rsp('recs', 'train', 'item_groups', {K})").fetchall()[0][0]
    assert got == pytest.approx(fairness.rsp_kernel(DATA["recs"], K, DATA["train"],
                                                    DATA["groups"]), abs=TOL)


def test_bias_disparity_matches_kernel(con: duckdb.DuckDBPyConnection) -> None:
    user_groups = {u: "uvw"[u % 3] for u in range(0, 35, 2)}
    con.register("ug_arrow", pa.table({"user": list(user_groups),
                                       "group": list(user_groups.values())}))
    con.execute("CREATE OR REPLACE TABLE user_groups AS FROM ug_arrow")
    got = {(g, c): row for g, c, *row in con.execute(
        f"FROM bias_disparity('recs', 'train', 'user_groups', 'item_groups', {K})").fetchall()}
    expected = fairness.bias_disparity_kernel(DATA["recs"], K, DATA["train"], user_groups,
                                              DATA["groups"])
    assert got.keys() == expected.keys()
    for key, values in expected.items():
        for value, want in zip(got[key], values, strict=True):
            assert value == (None if want is None else pytest.approx(want, abs=TOL)), key


def test_hand_expected_exposure() -> None:
    """Diaz et al. (2020), persistence 0.5, k = 3. User a has two sampled rankings [1, 2, 3]
    and [3, 1, 2], truth {1, 3}: e(1) = (1 + 0.5) / 2 = 0.75, e(2) = (0.5 + 0.25) / 2 = 0.375,
    e(3) = (0.25 + 1) / 2 = 0.625; m = 2, target (1 - 0.25) / (2 * 0.5) = 0.75. EE-D = 0.75^2 +
    0.375^2 + 0.625^2 = 1.09375; EE-R = 0.75 (0.75 + 0.625) = 1.03125; EE-L = 0 + 0.375^2 +
    (0.625 - 0.75)^2 = 0.15625. b: [2, NULL, 9], truth {9}: e(2) = 1, e(9) = 0.25, target 1:
    EE-L = 1 + 0.75^2 = 1.5625, EE-D = 1.0625, EE-R = 0.25. e: no list, truth {1}: EE-L = 1.
    c: empty truth: NULL."""
    con = _connection()
    con.execute("CREATE TABLE r AS SELECT * FROM (VALUES ('a', [1, 2, 3], [1, 3]), "
                "('a', [3, 1, 2], [1, 3]), ('b', [2, NULL, 9], [9]), ('c', [4], []), "
                "('e', [], [1])) t(user, rec, truth)")
    got = {u: row for u, *row in con.execute("FROM expected_exposure('r', 3)").fetchall()}
    assert got == {"a": [0.15625, 1.09375, 1.03125], "b": [1.5625, 1.0625, 0.25],
                   "c": [None, None, None], "e": [1.0, 0.0, 0.0]}


@pytest.mark.parametrize("persistence", [0.5, 0.85])
def test_expected_exposure_matches_kernel(con: duckdb.DuckDBPyConnection,
                                          persistence: float) -> None:
    """The generated lists plus a second sampled ranking for some users (the list reversed)."""
    con.execute("CREATE OR REPLACE TABLE sampled AS FROM recs UNION ALL SELECT user, "
                "list_reverse(rec), truth FROM recs WHERE user % 3 = 0")
    rows = [(u, r) for u, r in DATA["recs"].items()]
    rows += [(u, None if r is None else r[::-1]) for u, r in DATA["recs"].items() if u % 3 == 0]
    expected = exposure.expected_exposure_kernel(rows, DATA["truth"], K, persistence)
    got = {u: row for u, *row in con.execute(
        f"FROM expected_exposure('sampled', {K}, persistence := {persistence})").fetchall()}
    assert got.keys() == expected.keys()
    for user, values in expected.items():
        assert got[user] == ([None] * 3 if values is None else
                             [pytest.approx(v, abs=TOL) for v in values]), user


def test_hand_mad_rating() -> None:
    """Elliot's UserMADrating and ItemMADrating, k = 3, users with a relevant item a, b, d
    (c's truth is empty). Mean top-3 scores: a (0.9 + 0.5 + 0.1) / 3 = 0.5, b (0.8 + 0.6) / 2 =
    0.7 (the NULL position and its score left out), d (1.0 + 0.2) / 2 = 0.6. Groups m {a}, f {b,
    c, d}: |0.5 - 0.65| = 0.15. Items: 1 recommended to a (relevant, 0.9) and d (not) -> 0.45;
    2: 0; 3: 0.1; 9: 0.6; 4: 0.2. Groups x {1, 3}: 0.275, y {2, 4}: 0.1, z {9}: 0.6 -> mean of
    0.175, 0.325, 0.5 = 1/3."""
    con = _connection()
    con.execute("CREATE TABLE r AS SELECT * FROM (VALUES ('a', [1, 2, 3], [0.9, 0.5, 0.1], "
                "[1, 3]), ('b', [2, NULL, 9], [0.8, 0.7, 0.6], [9]), ('c', [4], [0.4], []), "
                "('d', [1, 4], [1.0, 0.2], [4])) t(user, rec, score, truth)")
    con.execute("CREATE TABLE ug AS SELECT * FROM (VALUES ('a', 'm'), ('b', 'f'), ('c', 'f'), "
                "('d', 'f')) t(user, \"group\")")
    con.execute("CREATE TABLE gr AS SELECT * FROM (VALUES (1, 'x'), (2, 'y'), (3, 'x'), "
                "(4, 'y'), (9, 'z')) t(item, \"group\")")
    assert con.execute("FROM user_mad_rating('r', 'ug', 3)").fetchall()[0][0] == \
        pytest.approx(0.15, abs=TOL)
    assert con.execute("FROM item_mad_rating('r', 'gr', 3)").fetchall()[0][0] == \
        pytest.approx(1 / 3, abs=TOL)
    # A NULL list (and its NULL scores) is no list; scores of another length are an error.
    con.execute("INSERT INTO r VALUES ('e', NULL, NULL, [1])")
    assert con.execute("FROM item_mad_rating('r', 'gr', 3)").fetchall()[0][0] == \
        pytest.approx(1 / 3, abs=TOL)
    con.execute("CREATE TABLE short AS SELECT 'a' AS user, [1, 2] AS rec, [0.5] AS score, "
                "[1] AS truth")
    with pytest.raises(duckdb.Error, match="item_mad_rating: scores_col must hold one score per "
                                           "item of rec_col, user a has 2 items and 1 scores"):
        con.execute("FROM item_mad_rating('short', 'gr', 3)").fetchall()


def test_mad_rating_matches_kernels(con: duckdb.DuckDBPyConnection) -> None:
    rng = np.random.default_rng(5)
    scores = {u: (None if r is None else [round(float(x), 2) for x in rng.random(len(r))])
              for u, r in DATA["recs"].items()}
    user_groups = {u: "pq"[u % 2] for u in range(0, 40, 3)}
    con.register("scored_arrow", pa.table({
        "user": list(DATA["recs"]), "rec": pa.array(list(DATA["recs"].values()),
                                                    pa.list_(pa.int64())),
        "score": pa.array([scores[u] for u in DATA["recs"]], pa.list_(pa.float64())),
        "truth": pa.array([DATA["truth"][u] for u in DATA["recs"]], pa.list_(pa.int64()))}))
    con.execute("CREATE OR REPLACE TABLE scored AS FROM scored_arrow")
    con.register("mad_groups_arrow", pa.table({"user": list(user_groups),
                                               "group": list(user_groups.values())}))
    con.execute("CREATE OR REPLACE TABLE mad_user_groups AS FROM mad_groups_arrow")
    got = con.execute(f"FROM user_mad_rating('scored', 'mad_user_groups', {K})").fetchall()[0][0]
    assert got == pytest.approx(fairness.user_mad_rating_kernel(
        DATA["recs"], scores, DATA["truth"], K, user_groups), abs=TOL)
    got = con.execute(f"FROM item_mad_rating('scored', 'item_groups', {K})").fetchall()[0][0]
    assert got == pytest.approx(fairness.item_mad_rating_kernel(
        DATA["recs"], scores, DATA["truth"], K, DATA["groups"]), abs=TOL)


def test_hand_mad_ranking() -> None:
    """Elliot's UserMADranking and ItemMADranking, threshold 1 (gain 2^grade - 1): a {1: 3,
    3: 1}, b {9: 1, 4: 3}, c {4: 0}: no gain, left out; d {4: 1}. k = 3, discount 1 / log2(r +
    1). nDCG: a (3 + 1/2) / (3 + 1/log2 3); b (1/2) / (3 + 1/log2 3) (9 at rank 3, rank 2 NULL);
    d (1/log2 3) / 1. Groups m {a}, f {b, c, d}: |a - (b + d) / 2|. Items over the slots of a, b,
    d: 1 (3 + 0) / 2, 2 0, 3 1, 9 1, 4 1 -> x 1.25, y 0.5, z 1: mean of 0.75, 0.25, 0.5."""
    con = _connection()
    con.execute("CREATE TABLE r AS SELECT * FROM (VALUES ('a', [1, 2, 3], MAP {1: 2, 3: 1}), "
                "('b', [2, NULL, 9], MAP {9: 1, 4: 2}), ('c', [4], MAP {4: 0}), "
                "('d', [1, 4], MAP {4: 1})) t(user, rec, truth)")
    con.execute("CREATE TABLE ug AS SELECT * FROM (VALUES ('a', 'm'), ('b', 'f'), ('c', 'f'), "
                "('d', 'f')) t(user, \"group\")")
    con.execute("CREATE TABLE gr AS SELECT * FROM (VALUES (1, 'x'), (2, 'y'), (3, 'x'), "
                "(4, 'y'), (9, 'z')) t(item, \"group\")")
    ideal = 3 + 1 / np.log2(3)
    a, b, d = 3.5 / ideal, 0.5 / ideal, 1 / np.log2(3)
    assert con.execute("FROM user_mad_ranking('r', 'ug', 3)").fetchall()[0][0] == \
        pytest.approx(abs(a - (b + d) / 2), abs=TOL)
    assert con.execute("FROM item_mad_ranking('r', 'gr', 3)").fetchall()[0][0] == \
        pytest.approx(0.5, abs=TOL)
    for name, groups in (("user_mad_ranking", "ug"), ("item_mad_ranking", "gr")):
        with pytest.raises(duckdb.Error, match=re.escape(
                f"{name}: threshold must be a finite number, got NULL")):
            con.execute(f"FROM {name}('r', '{groups}', 3, threshold := NULL)").fetchall()


@pytest.mark.parametrize("threshold", [1, 2])
def test_mad_ranking_matches_kernels(con: duckdb.DuckDBPyConnection, threshold: int) -> None:
    rng = np.random.default_rng(9)
    grades = {u: (None if items is None else {int(i): int(rng.integers(0, 4)) for i in items})
              for u, items in DATA["truth"].items()}
    user_groups = {u: "pq"[u % 2] for u in range(0, 40, 3)}
    con.register("graded_arrow", pa.table({
        "user": list(DATA["recs"]), "rec": pa.array(list(DATA["recs"].values()),
                                                    pa.list_(pa.int64())),
        "truth": pa.array([None if grades[u] is None else list(grades[u].items())
                           for u in DATA["recs"]], pa.map_(pa.int64(), pa.int64()))}))
    con.execute("CREATE OR REPLACE TABLE graded AS FROM graded_arrow")
    con.register("rank_groups_arrow", pa.table({"user": list(user_groups),
                                                "group": list(user_groups.values())}))
    con.execute("CREATE OR REPLACE TABLE rank_user_groups AS FROM rank_groups_arrow")
    got = con.execute(f"FROM user_mad_ranking('graded', 'rank_user_groups', {K}, threshold := "
                      f"{threshold})").fetchall()[0][0]
    assert got == pytest.approx(fairness.user_mad_ranking_kernel(
        DATA["recs"], grades, K, user_groups, threshold), abs=TOL)
    got = con.execute(f"FROM item_mad_ranking('graded', 'item_groups', {K}, threshold := "
                      f"{threshold})").fetchall()[0][0]
    assert got == pytest.approx(fairness.item_mad_ranking_kernel(
        DATA["recs"], grades, K, DATA["groups"], threshold), abs=TOL)


# --- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("query", "message"), [
    ("FROM aclt('recs', 'train', 3, head := 'users')",
     "aclt: head must be one of 'interactions', 'items', got users"),
    ("FROM aplt('recs', 'train', 3, head_share := 1.5)",
     "aplt: head_share must be a finite number in [0, 1] or NULL, got 1.5"),
    ("FROM pop_rsp('recs', 'train', 0)", "pop_rsp: k must be a positive integer, got 0"),
    ("FROM rsp('recs', 'train', 'dup', 3)", "rsp: item_groups holds item 1 more than once"),
    ("FROM expected_exposure('recs', 3, persistence := 1)",
     "expected_exposure: persistence must be a number in (0, 1), got 1"),
    ("FROM bias_disparity('recs', 'train', 'dup', 'item_groups', 3)",
     "bias_disparity: user_groups holds user 1 more than once"),
])
def test_errors_name_function_argument_and_value(con: duckdb.DuckDBPyConnection, query: str,
                                                 message: str) -> None:
    con.execute("CREATE OR REPLACE TABLE dup AS SELECT * FROM (VALUES (1, 1, 'a'), (1, 1, 'b')) "
                "t(item, user, \"group\")")
    with pytest.raises(duckdb.Error, match=re.escape(message)):
        con.execute(query).fetchall()
