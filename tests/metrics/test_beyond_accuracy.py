"""The beyond-accuracy metrics (duckrank.metrics.beyond_accuracy): SQL macros against the records'
kernels on generated data (ties, empty and NULL lists, NULL elements, unknown items, users absent
from one side), hand calculations, the peers, and the error messages.

Where the expected values come from:

* ``test_*_matches_kernel``: the record's numpy/Python kernel (written from the formula, not
  from the SQL), to 1e-12.
* ``test_hand_*``: a small example worked out in the test.
* Peers: RecTools 0.19.0, RePlay 0.22.0 and Microsoft Recommenders 1.2.1 change packages
  installed in .venv (numpy, pyarrow, scikit-learn), so they are not test dependencies. The
  ``test_peer_*`` tests run them when importable: in a venv of their own with duckdb and pytest,
  ``python -m venv /tmp/peers && /tmp/peers/bin/pip install rectools replay-rec recommenders
  duckdb==2.0.0 pytest`` then ``PYTHONPATH=. /tmp/peers/bin/python -m pytest -p no:cacheprovider
  tests/metrics/test_beyond_accuracy.py -k peer`` (run on 2026-11-23: all passed). Elsewhere they
  skip, and ``test_pinned_peer_values`` keeps the numbers that run printed.
"""

from __future__ import annotations

import math
import re

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from duckrank.metrics import beyond_accuracy as ba
from duckrank.render.beyond_accuracy import DOC_FILE, MACROS, updated

K = 5
N_ITEMS = 40
TOL = 1e-12


def _list_table(con: duckdb.DuckDBPyConnection, name: str, lists: dict) -> None:
    """user, rec and (the users' relevant items, for serendipity) truth."""
    con.register("lists_arrow", pa.table({
        "user": list(lists), "rec": list(lists.values()),
        "truth": pa.array([DATA["truth"][u] for u in lists], pa.list_(pa.int64())),
    }))
    con.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM lists_arrow")
    con.unregister("lists_arrow")


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    """A plain DuckDB connection with only these macros: they need no other duckrank function.
    Tables: recs, other (the second system), train, embeddings, categories; and the lists as the
    peers can take them (see ``peer_lists``)."""
    connection = duckdb.connect()
    for statement in MACROS:
        connection.execute(statement)
    _list_table(connection, "recs", DATA["recs"])
    _list_table(connection, "other", DATA["other"])
    for name, lists in peer_lists().items():
        _list_table(connection, name, lists)
    users, items = zip(*DATA["train"], strict=True)
    connection.register("train_arrow", pa.table({"user": users, "item": items}))
    connection.execute("CREATE TABLE train AS SELECT * FROM train_arrow")
    connection.register("emb_arrow", pa.table({
        "item": list(DATA["embeddings"]), "embedding": list(DATA["embeddings"].values())
    }))
    connection.execute("CREATE TABLE embeddings AS SELECT * FROM emb_arrow")
    connection.register("cat_arrow", pa.table({
        "item": list(DATA["categories"]), "category": list(DATA["categories"].values())
    }))
    connection.execute("CREATE TABLE categories AS SELECT * FROM cat_arrow")
    yield connection
    connection.close()


def generated() -> dict:
    """60 users; lists of 0..8 distinct items from a skewed 40-item catalogue (many exposure and
    popularity ties), one empty and one NULL list, a NULL element, an item (99) that is in no
    side table; a second system whose lists miss some users; training interactions with a
    repeated pair; 3-d embeddings (item 0 a zero vector, items 30+ without one); 4 categories
    (items 35+ without one); each user's relevant items (truth: some empty, one NULL)."""
    rng = np.random.default_rng(17)
    weights = 1.0 / np.arange(1, N_ITEMS + 1)
    weights /= weights.sum()

    def lists(n_users: int) -> dict:
        out = {}
        for u in range(n_users):
            size = int(rng.integers(0, 9))
            out[u] = [int(i) for i in rng.choice(N_ITEMS, size=size, replace=False, p=weights)]
        return out

    recs = lists(60)
    recs[3] = []
    recs[4] = None
    recs[5] = [1, None, 2, 99, 3]
    other = {u: v for u, v in lists(60).items() if u % 7 != 0}
    other[5] = [3, 2, 1]
    train = [(int(u), int(i)) for u, i in zip(rng.integers(0, 30, 300),
                                              rng.choice(N_ITEMS - 5, 300, p=None), strict=True)]
    train.append(train[0])  # a repeated interaction
    embeddings = {i: rng.normal(size=3).round(3).tolist() for i in range(30)}
    embeddings[0] = [0.0, 0.0, 0.0]
    categories = {i: "abcd"[i % 4] for i in range(35)}
    truth = {u: [int(i) for i in rng.choice(N_ITEMS, size=int(rng.integers(0, 8)),
                                            replace=False)] for u in range(60)}
    truth[6] = None
    return {"recs": recs, "other": other, "train": train, "embeddings": embeddings,
            "categories": categories, "truth": truth}


DATA = generated()


def peer_lists() -> dict[str, dict]:
    """The lists in the forms the peers accept: ``clean`` without NULL elements (later items
    move up: the peers have no NULL ids); ``full_lists`` the clean lists of at least K items
    (RePlay divides by k); ``with_category`` / ``with_vector`` only items that have a category /
    a non-zero embedding (RecTools' Hamming distance and Recommenders' feature similarity need
    one for every item)."""
    clean = {u: [i for i in (v or []) if i is not None] for u, v in DATA["recs"].items()}
    return {
        "clean": clean,
        "clean_other": {u: [i for i in (v or []) if i is not None]
                        for u, v in DATA["other"].items()},
        "full_lists": {u: v for u, v in clean.items() if len(v) >= K},
        "with_category": {u: [i for i in v if i in DATA["categories"]] for u, v in clean.items()},
        "with_vector": {u: [i for i in v if 1 <= i < 30] for u, v in clean.items()},
    }


def per_user(con: duckdb.DuckDBPyConnection, query: str) -> dict:
    return dict(con.execute(query).fetchall())


def assert_close(got: dict, expected: dict) -> None:
    assert got.keys() == expected.keys()
    for user, value in expected.items():
        if value is None:
            assert got[user] is None, user
        else:
            assert got[user] == pytest.approx(value, abs=TOL, rel=TOL), user


# --- coverage ---------------------------------------------------------------------------------


def test_catalog_coverage_matches_kernel(con: duckdb.DuckDBPyConnection) -> None:
    got = con.execute(f"FROM catalog_coverage('recs', {K}, catalog_size := {N_ITEMS})").fetchall(
    )[0]
    assert got[0] == pytest.approx(ba.catalog_coverage_kernel(DATA["recs"], K, N_ITEMS), abs=TOL)
    # From a table: train holds 35 distinct items (0..34).
    from_table = con.execute(f"FROM catalog_coverage('recs', {K}, catalog := 'train')").fetchall(
    )[0]
    assert from_table[0] == pytest.approx(ba.catalog_coverage_kernel(DATA["recs"], K, 35),
                                          abs=TOL)


def test_exposure_entropy_and_gini_match_kernel(con: duckdb.DuckDBPyConnection) -> None:
    entropy = con.execute(f"FROM exposure_entropy('recs', {K})").fetchall()[0][0]
    assert entropy == pytest.approx(ba.exposure_entropy_kernel(DATA["recs"], K), abs=TOL)
    # The catalogue must hold item 99 too: 41 items.
    gini = con.execute(f"FROM exposure_gini('recs', {K}, catalog_size := 41)").fetchall()[0][0]
    assert gini == pytest.approx(ba.exposure_gini_kernel(DATA["recs"], K, 41), abs=TOL)


def test_hand_coverage() -> None:
    """Lists [1, 2, 3], [2, 3, 4], [] and NULL at k = 2: exposures 1:1, 2:2, 3:1 (4 items).
    Coverage of a 10-item catalogue: 3 / 10. Entropy: p = 1/4, 1/2, 1/4 ->
    -(2 * 1/4 log2 1/4 + 1/2 log2 1/2) = 1 + 0.5 = 1.5 bits. Gini over 10 items, sorted
    x = 0 x 7, 1, 1, 2: sum (2j - 11) x_j = (16 - 11) + (18 - 11) + 2 (20 - 11) = 30, / (10 * 4)
    = 0.75."""
    con = duckdb.connect()
    for statement in MACROS:
        con.execute(statement)
    con.execute("CREATE TABLE r AS SELECT * FROM (VALUES (1, [1, 2, 3]), (2, [2, 3, 4]), "
                "(3, []), (4, NULL)) t(user, rec)")
    assert con.execute("FROM catalog_coverage('r', 2, catalog_size := 10)").fetchall()[0] == (0.3,)
    assert con.execute("FROM exposure_entropy('r', 2)").fetchall()[0][0] == pytest.approx(1.5,
                                                                                       abs=TOL)
    assert con.execute("FROM exposure_gini('r', 2, catalog_size := 10)").fetchall()[0][0] == \
        pytest.approx(0.75, abs=TOL)
    # Every item recommended equally: Gini 0; no exposure at all: NULL.
    assert con.execute("FROM exposure_gini('r', 1, catalog_size := 2)").fetchall()[0][0] == \
        pytest.approx(0.0, abs=TOL)
    con.execute("CREATE TABLE empty AS SELECT 1 AS user, []::INTEGER[] AS rec")
    assert con.execute("FROM exposure_entropy('empty', 3)").fetchall()[0] == (None,)
    empty = con.execute("FROM catalog_coverage('empty', 3, catalog_size := 5)").fetchall()
    assert empty == [(0.0,)]


# --- popularity and novelty -------------------------------------------------------------------


@pytest.mark.parametrize("normalize", [False, True])
def test_arp_matches_kernel(con: duckdb.DuckDBPyConnection, normalize: bool) -> None:
    got = per_user(con, f"FROM arp('recs', 'train', {K}, normalize := {normalize})")
    assert_close(got, ba.arp_kernel(DATA["recs"], K, DATA["train"], normalize=normalize))


@pytest.mark.parametrize("normalize", [False, True])
def test_self_information_matches_kernel(con: duckdb.DuckDBPyConnection, normalize: bool) -> None:
    got = per_user(con, f"FROM self_information('recs', 'train', {K}, normalize := {normalize})")
    expected = ba.self_information_kernel(DATA["recs"], K, DATA["train"], normalize=normalize)
    assert_close(got, expected)


@pytest.mark.parametrize("head_share", [0.0, 0.2, 0.5, 1.0])
def test_long_tail_share_matches_kernel(con: duckdb.DuckDBPyConnection, head_share: float
                                        ) -> None:
    got = per_user(con, f"FROM long_tail_share('recs', 'train', {K}, head_share := {head_share})")
    assert_close(got, ba.long_tail_share_kernel(DATA["recs"], K, DATA["train"], head_share))


def test_hand_popularity() -> None:
    """train: (u1, i1), (u1, i2), (u2, i2), (u3, i2), (u3, i9): popularity i1 = 1, i2 = 3,
    i9 = 1, 5 interactions, 3 users. User a: top 2 of [1, 2, 3] = 1, 2: ARP (1 + 3) / 2 = 2;
    self-information (-log2(1/3) - log2(3/3)) / 2 = log2(3) / 2; item 3 is cold (1 user,
    log2 3). Long tail with head_share 0.2: ceil(0.2 * 3) = 1 head item (i2): a's top 2 has
    1 tail item -> 0.5."""
    con = duckdb.connect()
    for statement in MACROS:
        con.execute(statement)
    con.execute("CREATE TABLE r AS SELECT * FROM (VALUES ('a', [1, 2, 3]), ('b', [3])) "
                "t(user, rec)")
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES (1, 1), (1, 2), (2, 2), (3, 2), "
                "(3, 9)) t(user, item)")
    assert per_user(con, "FROM arp('r', 't', 2)") == {"a": 2.0, "b": 0.0}
    assert per_user(con, "FROM arp('r', 't', 2, normalize := true)") == {"a": 0.4, "b": 0.0}
    info = per_user(con, "FROM self_information('r', 't', 2)")
    assert info["a"] == pytest.approx(math.log2(3) / 2, abs=TOL)
    assert info["b"] == pytest.approx(math.log2(3), abs=TOL)
    assert per_user(con, "FROM self_information('r', 't', 2, normalize := true)")["b"] == \
        pytest.approx(1.0, abs=TOL)
    assert per_user(con, "FROM long_tail_share('r', 't', 2)") == {"a": 0.5, "b": 1.0}


def test_serendipity_matches_kernel(con: duckdb.DuckDBPyConnection) -> None:
    got = per_user(con, f"FROM serendipity('recs', 'train', {K}, catalog_size := 41)")
    assert_close(got, ba.serendipity_kernel(DATA["recs"], DATA["truth"], K, DATA["train"], 41))


def test_hand_serendipity() -> None:
    """Catalogue of 10; train counts i2: 3, i1: 1, i9: 1 -> popularity ranks i2 1, i1 and i9 2.
    rec [1, 2, 3], truth [1, 3], k = 3: position 1, item 1: max(10/10 - 9/10, 0) * 1 = 0.1;
    item 2: max(9/10 - 10/10, 0) = 0 (and not relevant); item 3, absent from train: (8/10 - 0)
    * 1 = 0.8. Mean 0.9 / 3 = 0.3. Empty truth: 0; NULL truth: NULL."""
    con = duckdb.connect()
    for statement in MACROS:
        con.execute(statement)
    con.execute("CREATE TABLE r AS SELECT * FROM (VALUES ('a', [1, 2, 3], [1, 3]), "
                "('b', [1], []), ('c', [1], NULL)) t(user, rec, truth)")
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES (1, 1), (1, 2), (2, 2), (3, 2), "
                "(3, 9)) t(user, item)")
    got = per_user(con, "FROM serendipity('r', 't', 3, catalog_size := 10)")
    assert got["a"] == pytest.approx(0.3, abs=TOL)
    assert (got["b"], got["c"]) == (0.0, None)


def test_varchar_ids_and_other_column_names() -> None:
    """Ids of any type DuckDB compares, and columns named otherwise (the hand example of
    test_hand_popularity with VARCHAR ids: ARP (1 + 3) / 2 = 2 for user a)."""
    con = duckdb.connect()
    for statement in MACROS:
        con.execute(statement)
    con.execute("CREATE TABLE r AS SELECT * FROM (VALUES ('a', ['x1', 'x2', 'x3']), "
                "('b', ['x3'])) t(customer, items)")
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES ('a', 'x1'), ('a', 'x2'), ('b', 'x2'), "
                "('c', 'x2'), ('c', 'x9')) t(customer, sku)")
    names = "user_col := 'customer', rec_col := 'items', item_col := 'sku'"
    assert per_user(con, f"FROM arp('r', 't', 2, {names})") == {"a": 2.0, "b": 0.0}
    assert con.execute(f"FROM catalog_coverage('r', 2, catalog := 't', {names})"
                       ).fetchall() == [(1.0,)]  # x1, x2, x3 of the 3 items x1, x2, x9
    assert con.execute("SELECT rbo(['x1', 'x2'], ['x2', 'x1'], 2, variant := 'prefix')"
                       ).fetchall()[0][0] == pytest.approx(0.1 * 0.9 * 2 / 2, abs=TOL)


# --- diversity --------------------------------------------------------------------------------


def test_ild_embedding_matches_kernel(con: duckdb.DuckDBPyConnection) -> None:
    got = per_user(con, f"FROM ild_embedding('recs', 'embeddings', {K})")
    assert_close(got, ba.ild_embedding_kernel(DATA["recs"], K, DATA["embeddings"]))


def test_ild_category_matches_kernel(con: duckdb.DuckDBPyConnection) -> None:
    got = per_user(con, f"FROM ild_category('recs', 'categories', {K})")
    assert_close(got, ba.ild_category_kernel(DATA["recs"], K, DATA["categories"]))


def test_hand_ild() -> None:
    """Embeddings 1: (1, 0), 2: (0, 1), 3: (1, 1). Pairs of [1, 2, 3]: cos = 0, 1/sqrt 2,
    1/sqrt 2 -> mean distance (1 + 2 (1 - 1/sqrt 2)) / 3. Categories a, b, a: pairs (1,2),
    (2,3) differ, (1,3) not -> 2/3 = (3^2 - (2^2 + 1^2)) / (3 * 2)."""
    con = duckdb.connect()
    for statement in MACROS:
        con.execute(statement)
    con.execute("CREATE TABLE r AS SELECT 1 AS user, [1, 2, 3] AS rec")
    con.execute("CREATE TABLE e AS SELECT * FROM (VALUES (1, [1.0, 0.0]), (2, [0.0, 1.0]), "
                "(3, [1.0, 1.0])) t(item, vec)")
    con.execute("CREATE TABLE c AS SELECT * FROM (VALUES (1, 'a'), (2, 'b'), (3, 'a')) "
                "t(item, genre)")
    got = con.execute("FROM ild_embedding('r', 'e', 3, vector_col := 'vec')").fetchall()[0][1]
    assert got == pytest.approx((1 + 2 * (1 - 1 / math.sqrt(2))) / 3, abs=TOL)
    got = con.execute("FROM ild_category('r', 'c', 3, category_col := 'genre')").fetchall()[0][1]
    assert got == pytest.approx(2 / 3, abs=TOL)
    con.execute("INSERT INTO e VALUES (4, [1.0, 2.0, 3.0])")
    con.execute("INSERT INTO r VALUES (2, [1, 4])")
    with pytest.raises(duckdb.Error, match="ild_embedding: the vectors of the items of user 2 "
                                           "differ in length"):
        con.execute("FROM ild_embedding('r', 'e', 3, vector_col := 'vec')").fetchall()


def test_inter_user_diversity_exact_and_sampled(con: duckdb.DuckDBPyConnection) -> None:
    exact = ba.inter_user_diversity_kernel(DATA["recs"], K)
    value, used, is_exact = con.execute(f"FROM inter_user_diversity('recs', {K})").fetchall()[0]
    # 60 users, 1770 pairs; pairs of two empty (or NULL) lists are left out.
    empty = sum(not (rec or []) for rec in DATA["recs"].values())
    assert empty >= 2
    assert (used, is_exact) == (1770 - empty * (empty - 1) // 2, True)
    assert value == pytest.approx(exact, abs=TOL)
    sampled = f"FROM inter_user_diversity('recs', {K}, pairs := 1000, seed := 7)"
    first = con.execute(sampled).fetchall()[0]
    con.execute("SET threads = 1")
    assert con.execute(sampled).fetchall()[0] == first  # reproducible whatever the threads
    con.execute("RESET threads")
    assert first[2] is False and first[1] > 900  # pairs of two empty lists are left out
    other_seed = con.execute(sampled.replace("seed := 7", "seed := 8")).fetchall()[0]
    assert other_seed[0] != first[0]
    # 1000 pairs: standard error about 0.2 / sqrt(1000) < 0.01.
    assert abs(first[0] - exact) < 0.03


# --- list similarity --------------------------------------------------------------------------

PAIR_QUERY = "SELECT r.user, {fn} FROM recs r LEFT JOIN other o USING (user)"


@pytest.mark.parametrize(("fn", "kernel"), [
    ("overlap_at(r.rec, o.rec, {k})", ba.overlap_kernel),
    ("jaccard_at(r.rec, o.rec, {k})", ba.jaccard_kernel),
    ("rbo(r.rec, o.rec, {k})", ba.rbo_kernel),
    ("rbo(r.rec, o.rec, {k}, p := 0.8, variant := 'ext')",
     lambda a, b, k: ba.rbo_kernel(a, b, k, p=0.8, variant="ext")),
    ("rbo(r.rec, o.rec, {k}, variant := 'prefix')",
     lambda a, b, k: ba.rbo_kernel(a, b, k, variant="prefix")),
])
def test_list_similarity_matches_kernel(con: duckdb.DuckDBPyConnection, fn: str, kernel) -> None:
    got = per_user(con, PAIR_QUERY.format(fn=fn.format(k=K)))
    expected = {u: kernel(rec, DATA["other"].get(u), K) for u, rec in DATA["recs"].items()}
    assert_close(got, expected)


def test_hand_list_similarity() -> None:
    """[1, 2, 3] against [3, 2, 9], k = 3, p = 0.9: X_1 = 0, X_2 = 1, X_3 = 2.
    overlap 2/3; Jaccard 2 / 4; the prefix sum 0.1 (0 + 0.9 * 1/2 + 0.81 * 2/3) = 0.099;
    RBO_min (Webber et al. eq. 11, X_k = 2) = 0.1 / 0.9 ((0 - 2) 0.9 / 1 + (1 - 2) 0.81 / 2
    + 0 - 2 ln 0.1) = 0.1 / 0.9 (-2.205 + 4.605170186) = 0.266685576 (the prefix sum
    leaves out the agreements X_k / d beyond k, which eq. 11 keeps); RBO_ext = 0.1 / 0.9 (0.81
    * 1/2 + 0.729 * 2/3) + 2/3 * 0.729 = 0.099 + 0.486 = 0.585.
    Uneven ([1, 2, 3, 4] against [3, 2]; s = 2, l = 4, X_1 = 0, X_2 = 1, X_3 = X_4 = 2, X_s = 1):
    sum1 = 0.81/2 + 0.729 * 2/3 + 0.6561 * 2/4 = 1.21905; sum2 = 1 * (1/6) 0.729 + 1 * (2/8)
    0.6561 = 0.2855025; ((2 - 1) / 4 + 1/2) 0.6561 = 0.492075; RBO_ext = 0.1/0.9 * 1.5045525
    + 0.492075 = 0.65925."""
    con = duckdb.connect()
    for statement in MACROS:
        con.execute(statement)
    row = con.execute(
        "SELECT overlap_at([1, 2, 3], [3, 2, 9], 3), jaccard_at([1, 2, 3], [3, 2, 9], 3), "
        "rbo([1, 2, 3], [3, 2, 9], 3, variant := 'prefix'), "
        "rbo([1, 2, 3], [3, 2, 9], 3, variant := 'ext'), rbo([1, 2, 3], [3, 2, 9], 3), "
        "rbo([1, 2, 3, 4], [3, 2], 4, variant := 'ext'), rbo([], [1], 3), "
        "jaccard_at([], [], 3), overlap_at([1], NULL, 3), rbo([1, 2], [1, 2], 2, "
        "variant := 'ext')"
    ).fetchall()[0]
    expected = (2 / 3, 0.5, 0.099, 0.585, 0.1 / 0.9 * (-2.205 - 2 * math.log(0.1)), 0.65925,
                None, None, None, 1.0)
    for got, want in zip(row, expected, strict=True):
        assert got == (None if want is None else pytest.approx(want, abs=TOL))


# --- peers (run where they are importable: see the module docstring) ---------------------------


def _long(lists: dict, k: int | None = None):
    """The recommendations as the peers take them: one row per (user, item, rank)."""
    import pandas as pd

    rows = [(u, i, r) for u, items in lists.items()
            for r, i in enumerate([x for x in (items or []) if x is not None][:k], start=1)]
    return pd.DataFrame(rows, columns=["user_id", "item_id", "rank"])


def _train():
    import pandas as pd

    return pd.DataFrame(DATA["train"], columns=["user_id", "item_id"])


def test_peer_rectools(con: duckdb.DuckDBPyConnection) -> None:
    pytest.importorskip("rectools")
    import pandas as pd
    from rectools.metrics import (
        AvgRecPopularity,
        CatalogCoverage,
        Intersection,
        IntraListDiversity,
        MeanInvUserFreq,
        Serendipity,
    )
    from rectools.metrics.distances import PairwiseHammingDistanceCalculator

    lists = peer_lists()
    reco, train = _long(lists["clean"]), _train()
    for normalize in (False, True):
        peer = AvgRecPopularity(k=K, normalize=normalize).calc_per_user(reco, train).to_dict()
        got = per_user(con, f"FROM arp('clean', 'train', {K}, normalize := {normalize}) "
                            "WHERE arp IS NOT NULL")
        assert_close(got, peer)
    peer = MeanInvUserFreq(k=K).calc_per_user(reco, train).to_dict()
    got = per_user(con, f"FROM self_information('clean', 'train', {K}) "
                        "WHERE self_information IS NOT NULL")
    assert_close(got, peer)
    catalog = list(range(N_ITEMS)) + [99]
    peer = CatalogCoverage(k=K, normalize=True).calc(reco, catalog)
    got = con.execute(f"FROM catalog_coverage('clean', {K}, catalog_size := 41)").fetchall()[0][0]
    assert got == pytest.approx(peer, abs=TOL)
    # Intersection: share of reco's top k in the reference's top k; a user absent from the
    # reference counts 0 there (coalesce(other, [])).
    peer = Intersection(k=K).calc_per_user(reco, _long(lists["clean_other"])).to_dict()
    got = per_user(con, f"SELECT r.user, overlap_at(r.rec, coalesce(o.rec, []), {K}) "
                        "FROM clean r LEFT JOIN other o USING (user)")
    assert_close({u: v for u, v in got.items() if u in peer}, peer)
    truth = pd.DataFrame([(u, i) for u, items in DATA["truth"].items() for i in items or []],
                         columns=["user_id", "item_id"])
    peer = Serendipity(k=K).calc_per_user(reco, truth, train, catalog).to_dict()
    got = per_user(con, f"FROM serendipity('clean', 'train', {K}, catalog_size := 41) "
                        "WHERE serendipity IS NOT NULL")
    assert_close(got, {u: v for u, v in peer.items() if DATA["truth"].get(u) is not None})
    # Hamming distance over one-hot categories is 2 for every pair of different categories.
    one_hot = pd.get_dummies(pd.Series(DATA["categories"])).astype(float)
    ild = IntraListDiversity(k=K, distance_calculator=PairwiseHammingDistanceCalculator(one_hot))
    peer = ild.calc_per_user(_long(lists["with_category"])).to_dict()
    got = per_user(con, f"SELECT user, 2 * ild_category FROM ild_category('with_category', "
                        f"'categories', {K}) WHERE ild_category IS NOT NULL")
    assert_close(got, {u: v for u, v in peer.items() if u in got})


def test_peer_replay(con: duckdb.DuckDBPyConnection) -> None:
    pytest.importorskip("replay")
    import pandas as pd
    from replay.metrics import Surprisal

    # RePlay divides by k: compare on the users whose lists hold at least k items.
    reco = _long(peer_lists()["full_lists"]).rename(columns={"user_id": "query_id"})
    reco["rating"] = -reco["rank"].astype(float)
    train = _train().rename(columns={"user_id": "query_id"})
    peer = Surprisal(K, mode=__import__("replay.metrics", fromlist=["PerUser"]).PerUser())(
        reco[["query_id", "item_id", "rating"]], train)
    peer = next(iter(peer.values()))
    got = per_user(con, f"FROM self_information('full_lists', 'train', {K}, normalize := true)")
    assert_close(got, {u: float(v) for u, v in peer.items()})
    del pd


def test_peer_recommenders(con: duckdb.DuckDBPyConnection) -> None:
    pytest.importorskip("recommenders")
    import pandas as pd
    from recommenders.evaluation import python_evaluation as ms

    lists = peer_lists()
    reco = _long(lists["clean"], K).rename(columns={"user_id": "userID", "item_id": "itemID"})
    # Recommenders refuses recommendations of training pairs; its metrics here read only the
    # training items, so the training users are renumbered out of the way.
    train = _train().drop_duplicates().rename(columns={"user_id": "userID", "item_id": "itemID"})
    train["userID"] += 1000
    peer = ms.distributional_coverage(train, reco[["userID", "itemID"]])
    got = con.execute(f"FROM exposure_entropy('clean', {K})").fetchall()[0][0]
    assert got == pytest.approx(peer, abs=TOL)
    peer = ms.catalog_coverage(train, reco[["userID", "itemID"]])
    got = con.execute(f"FROM catalog_coverage('clean', {K}, catalog := 'train')").fetchall()[0][0]
    assert got == pytest.approx(peer, abs=TOL)
    # Feature-vector diversity: every recommended item needs a feature vector, non-zero.
    features = pd.DataFrame({"itemID": list(range(1, 30)), "features": [
        np.array(DATA["embeddings"][i]) for i in range(1, 30)]})
    reco = _long(lists["with_vector"], K).rename(columns={"user_id": "userID", "item_id": "itemID"})
    peer = ms.user_diversity(train, reco[["userID", "itemID"]], item_feature_df=features,
                             item_sim_measure="item_feature_vector")
    got = per_user(con, f"FROM ild_embedding('with_vector', 'embeddings', {K}) "
                        "WHERE ild_embedding IS NOT NULL")
    assert_close(got, dict(zip(peer["userID"], peer["user_diversity"], strict=True)))


# The peers' means on DATA, printed by the peer venv (module docstring) with RecTools 0.19.0,
# RePlay 0.22.0 and Recommenders 1.2.1, each next to the duckrank query that gives it. RecTools
# averages over the users that have recommendations; Intersection counts a user missing from the
# reference as 0; RePlay's Surprisal is on lists of at least k items; Recommenders' coverage
# metrics take the lists already cut at k, and its diversity averages over users with a pair.
PINNED = {
    "rectools_arp": (8.38235294117647, f"SELECT avg(arp) FROM arp('clean', 'train', {K})"),
    "rectools_arp_normalized": (0.02784834864178229, "SELECT avg(arp) FROM arp('clean', "
                                f"'train', {K}, normalize := true)"),
    "rectools_miuf": (2.1515883119795856, "SELECT avg(self_information) FROM "
                      f"self_information('clean', 'train', {K})"),
    "rectools_catalog_coverage": (0.8048780487804879, f"FROM catalog_coverage('clean', {K}, "
                                  "catalog_size := 41)"),
    "rectools_intersection": (0.2254901960784314, "SELECT avg(overlap_at(r.rec, "
                              f"coalesce(o.rec, []), {K})) FROM clean r LEFT JOIN clean_other o "
                              "USING (user)"),
    "replay_surprisal": (0.42967837114558627, "SELECT avg(self_information) FROM "
                         f"self_information('full_lists', 'train', {K}, normalize := true)"),
    # RecTools counts a user without test interactions (NULL truth here) as 0.
    "rectools_serendipity": (0.00389765662362506, "SELECT avg(coalesce(s.serendipity, 0)) FROM "
                             f"serendipity('clean', 'train', {K}, catalog_size := 41) s "
                             "JOIN clean c USING (user) WHERE len(c.rec) > 0"),
    "recommenders_distributional_coverage": (4.2470529335746265,
                                             f"FROM exposure_entropy('clean', {K})"),
    "recommenders_catalog_coverage": (0.9428571428571428, f"FROM catalog_coverage('clean', {K}, "
                                      "catalog := 'train')"),
    "recommenders_diversity": (1.1246492685095903, "SELECT avg(ild_embedding) FROM "
                               f"ild_embedding('with_vector', 'embeddings', {K})"),
}


@pytest.mark.parametrize("name", list(PINNED))
def test_pinned_peer_values(con: duckdb.DuckDBPyConnection, name: str) -> None:
    expected, query = PINNED[name]
    assert con.execute(query).fetchall()[0][0] == pytest.approx(expected, abs=TOL, rel=TOL)


# --- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("query", "message"), [
    ("FROM catalog_coverage('recs', 0, catalog_size := 5)",
     "catalog_coverage: k must be a positive integer, got 0"),
    ("FROM arp('recs', 'train', 2.5)", "arp: k must be a positive integer, got 2.5"),
    ("FROM catalog_coverage('recs', 3)", "catalog_coverage: give catalog (a table name) or "
     "catalog_size"),
    ("FROM catalog_coverage('recs', 3, catalog := 'train', catalog_size := 3)",
     "catalog_coverage: give catalog or catalog_size, not both"),
    ("FROM exposure_gini('recs', 3, catalog_size := 0)",
     "exposure_gini: catalog_size must be a positive integer, got 0"),
    ("FROM exposure_gini('recs', 5, catalog_size := 3)", "exposure_gini: [0-9]+ distinct items "
     "were recommended, more than the catalogue size 3$"),
    ("FROM long_tail_share('recs', 'train', 3, head_share := 1.5)",
     "long_tail_share: head_share must be a finite number in [0, 1], got 1.5"),
    ("FROM inter_user_diversity('recs', 3, pairs := 0)",
     "inter_user_diversity: pairs must be a positive integer, got 0"),
    ("SELECT rbo([1], [1], 3, p := 1)", "rbo: p must be a number in (0, 1), got 1"),
    ("SELECT rbo([1], [1], 3, variant := 'max')",
     "rbo: variant must be one of 'min', 'ext', 'prefix', got max"),
    ("FROM inter_user_diversity('recs', 3, seed := 1.0)", "inter_user_diversity: seed must be an "
     "integer of an integer type (at most 64 bits), got 1.0"),
    ("SELECT jaccard_at([1], [1], NULL)", "jaccard_at: k must be a positive integer, got NULL"),
])
def test_errors_name_function_argument_and_value(con: duckdb.DuckDBPyConnection, query: str,
                                                 message: str) -> None:
    pattern = message if message.endswith("$") else re.escape(message)
    with pytest.raises(duckdb.Error, match=pattern):
        con.execute(query).fetchall()


def test_side_tables_with_an_item_twice_are_refused() -> None:
    """An item with two embeddings or two categories was joined twice and counted twice, a wrong
    number in silence (one row per item is the documented input)."""
    con = duckdb.connect()
    for statement in MACROS:
        con.execute(statement)
    con.execute("CREATE TABLE r AS SELECT 1 AS user, [1, 2] AS rec")
    con.execute("CREATE TABLE e AS SELECT * FROM (VALUES (1, [1.0, 0.0]), (2, [0.0, 1.0]), "
                "(2, [0.0, 1.0])) t(item, embedding)")
    con.execute("CREATE TABLE c AS SELECT * FROM (VALUES (1, 'a'), (2, 'b'), (2, 'b')) "
                "t(item, category)")
    with pytest.raises(duckdb.Error, match="ild_embedding: embeddings holds item 2 more than once"):
        con.execute("FROM ild_embedding('r', 'e', 2)").fetchall()
    with pytest.raises(duckdb.Error, match="ild_category: categories holds item 2 more than once"):
        con.execute("FROM ild_category('r', 'c', 2)").fetchall()


def test_exposure_gini_refuses_an_item_outside_a_named_catalogue() -> None:
    """Items 1, 2, 3 recommended (exposures 1, 2, 1). Catalogue {1, 2, 3, 4}: sorted exposures
    0, 1, 1, 2, so Gini = ((-3) 0 + (-1) 1 + 1 * 1 + 3 * 2) / (4 * 4) = 0.375 (by size too).
    Catalogue {1, 2, 4}: item 3 took the place of a catalogue item at 0 and gave 0.375 in
    silence; now an error."""
    con = duckdb.connect()
    for statement in MACROS:
        con.execute(statement)
    con.execute("CREATE TABLE r AS SELECT * FROM (VALUES (1, [1, 2]), (2, [2, 3])) t(user, rec)")
    con.execute("CREATE TABLE whole AS SELECT range + 1 AS item FROM range(4)")
    con.execute("CREATE TABLE partial AS SELECT * FROM (VALUES (1), (2), (4), (NULL)) t(item)")
    for call in ("catalog := 'whole'", "catalog_size := 4"):
        assert con.execute(f"FROM exposure_gini('r', 2, {call})").fetchall() == [(0.375,)]
    # The argument, not its value (from Python, a view made for the call).
    with pytest.raises(duckdb.Error, match=r"exposure_gini: item 3 was recommended but is not in "
                                           r"the catalog table \(catalog\)"):
        con.execute("FROM exposure_gini('r', 2, catalog := 'partial')").fetchall()


def test_every_record_is_a_macro_and_documented(con: duckdb.DuckDBPyConnection) -> None:
    names = {r[0] for r in con.execute("SELECT function_name FROM duckdb_functions() "
                                       "WHERE function_type IN ('macro', 'table_macro')")
             .fetchall()}
    doc = (__import__("pathlib").Path(__file__).resolve().parents[2] / "docs"
           / "beyond-accuracy.md").read_text()
    for metric in ba.METRICS:
        assert metric.name in names
        assert f"`{metric.name}" in doc, metric.name


def test_reference_section_is_current() -> None:
    """docs/beyond-accuracy.md's reference part is generated from the records."""
    assert DOC_FILE.read_text() == updated(DOC_FILE.read_text()), (
        "run: python -m duckrank.render (it also rewrites sql/duckrank.sql)"
    )


def test_registered_by_duckrank_connect() -> None:
    """duckrank.connect() creates the same macros (the hand example of test_hand_list_similarity
    and test_hand_coverage)."""
    import duckrank

    connection = duckrank.connect()
    try:
        connection.execute("CREATE TABLE r AS SELECT * FROM (VALUES (1, [1, 2, 3]), "
                           "(2, [2, 3, 4])) t(user, rec)")
        assert connection.execute("SELECT rbo([1, 2, 3], [3, 2, 9], 3, variant := 'prefix')"
                                  ).fetchall()[0][0] == pytest.approx(0.099, abs=TOL)
        assert connection.execute("FROM catalog_coverage('r', 2, catalog_size := 10)"
                                  ).fetchall() == [(0.3,)]
    finally:
        connection.close()
