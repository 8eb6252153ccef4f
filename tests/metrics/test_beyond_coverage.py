"""User coverage and RecTools' recommendation data-quality metrics (issue 28: ``user_coverage``,
``sufficient_reco``, ``unrepeated_reco`` in duckrank.metrics.beyond.coverage), and
``catalog_coverage`` read without the per-user unnesting.

Where the expected values come from:

* ``test_*_matches_kernel``: the record's Python kernel (written from the formula, not from the
  SQL) on generated lists with repeats, NULL elements, empty and NULL lists, short lists and
  users of the test table without a list, to 1e-12.
* ``test_hand_*`` and ``test_rectools_docstring_examples``: small examples worked out in the
  test, and the examples of RecTools 0.19's own docstrings (rectools/metrics/dq.py), copied
  with their printed values.
* ``test_peer_rectools``: RecTools 0.19.0 itself, run where it is importable: ``python -m venv
  /tmp/peers && /tmp/peers/bin/pip install rectools duckdb 'pyarrow<20' pytest`` then
  ``PYTHONPATH=. /tmp/peers/bin/python -m pytest -p no:cacheprovider
  tests/metrics/test_beyond_coverage.py -k peer`` (run on 2026-11-28: passed).
  ``test_pinned_peer_values`` keeps the means that run printed (``-k peer -s``).
"""

from __future__ import annotations

import re

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from conftest import ranked_rows

from duckrank.metrics.beyond import coverage
from duckrank.render.beyond_accuracy import MACROS

K = 4
TOL = 1e-12


def generated() -> dict:
    """50 users with lists of 0..7 items drawn with replacement from 12 items (so repeats), a
    NULL element, an empty and a NULL list; test users 0..59 with gaps (users 50..59 have no
    list; some listed users are not in test)."""
    rng = np.random.default_rng(28)
    recs: dict = {u: [int(i) for i in rng.integers(0, 12, int(rng.integers(0, 8)))]
                  for u in range(50)}
    recs[3], recs[4], recs[5] = [], None, [1, None, 1, 2, 3]
    test = [(u, int(i)) for u in range(60) if u % 6 != 1 for i in rng.integers(0, 12, 2)]
    return {"recs": recs, "test": test}


DATA = generated()


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    for statement in MACROS:
        connection.execute(statement)
    connection.register("recs_arrow", pa.table({
        "user": list(DATA["recs"]), "rec": pa.array(list(DATA["recs"].values()),
                                                    pa.list_(pa.int64()))}))
    connection.execute("CREATE TABLE recs AS FROM recs_arrow")
    users, items = zip(*DATA["test"], strict=True)
    connection.register("test_arrow", pa.table({"user": users, "item": items}))
    connection.execute("CREATE TABLE test AS FROM test_arrow")
    yield connection
    connection.close()


def per_user(con: duckdb.DuckDBPyConnection, query: str) -> dict:
    return dict(con.execute(query).fetchall())


def assert_close(got: dict, expected: dict) -> None:
    assert got.keys() == expected.keys()
    for user, value in expected.items():
        assert got[user] == (None if value is None else pytest.approx(value, abs=TOL)), user


# --- against the kernels ----------------------------------------------------------------------


@pytest.mark.parametrize("full_lists", [False, True])
@pytest.mark.parametrize("with_test", [False, True])
def test_user_coverage_matches_kernel(con: duckdb.DuckDBPyConnection, full_lists: bool,
                                      with_test: bool) -> None:
    test = ", test := 'test'" if with_test else ""
    got = con.execute(f"FROM user_coverage('recs', {K}, full_lists := {full_lists}{test})"
                      ).fetchall()[0]
    users = [u for u, _ in DATA["test"]] if with_test else None
    share, covered, n = coverage.user_coverage_kernel(DATA["recs"], K, users, full_lists)
    assert got[1:] == (covered, n)
    assert got[0] == pytest.approx(share, abs=TOL)


@pytest.mark.parametrize("deep", [False, True])
@pytest.mark.parametrize("k", [1, K, 9])
def test_data_quality_match_kernels(con: duckdb.DuckDBPyConnection, deep: bool, k: int) -> None:
    got = per_user(con, f"FROM sufficient_reco('recs', {k}, deep := {deep})")
    assert_close(got, coverage.sufficient_reco_kernel(DATA["recs"], k, deep))
    got = per_user(con, f"FROM unrepeated_reco('recs', {k}, deep := {deep})")
    assert_close(got, coverage.unrepeated_reco_kernel(DATA["recs"], k, deep))


# --- hand calculations --------------------------------------------------------------------------


def _hand_connection() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    for statement in MACROS:
        con.execute(statement)
    con.execute("CREATE TABLE r AS SELECT * FROM (VALUES (1, [1, 2, 3]), (2, [1, 1, NULL]), "
                "(3, []), (4, NULL), (5, [7])) t(user, rec)")
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES (1, 10), (2, 10), (6, 1), (6, 2), "
                "(NULL, 3)) t(user, item)")
    return con


def test_hand_user_coverage() -> None:
    """k = 2. Top 2: user 1 [1, 2], user 2 [1, 1], user 3 [], user 4 NULL, user 5 [7].
    Covered (an item): 1, 2, 5 of 5 users -> 3 / 5. Full (2 items): 1, 2 -> 2 / 5.
    Against test's users {1, 2, 6} (NULL is no user; 6 has no list): 1 and 2 -> 2 / 3."""
    con = _hand_connection()
    assert con.execute("FROM user_coverage('r', 2)").fetchall() == [(0.6, 3, 5)]
    assert con.execute("FROM user_coverage('r', 2, full_lists := true)").fetchall() == \
        [(0.4, 2, 5)]
    assert con.execute("FROM user_coverage('r', 2, test := 't')").fetchall() == [(2 / 3, 2, 3)]
    con.execute("CREATE TABLE nobody AS SELECT 1 AS user LIMIT 0")
    assert con.execute("FROM user_coverage('r', 2, test := 'nobody')").fetchall() == \
        [(None, 0, 0)]


def test_hand_sufficient_and_unrepeated() -> None:
    """k = 3. Non-NULL items of the top 3: user 1: 1, 2, 3 (3 items, distinct); user 2: 1, 1
    (2 items, 1 distinct); user 3: none (empty list); user 4: NULL list; user 5: 7.
    sufficient_reco: [n >= 3] = 1, 0, 0, NULL, 0; deep n / 3 = 1, 2/3, 0, NULL, 1/3.
    unrepeated_reco: [d = n] = 1, 0, NULL, NULL, 1; deep d / n = 1, 1/2, NULL, NULL, 1."""
    con = _hand_connection()
    assert per_user(con, "FROM sufficient_reco('r', 3)") == {
        1: 1.0, 2: 0.0, 3: 0.0, 4: None, 5: 0.0}
    assert_close(per_user(con, "FROM sufficient_reco('r', 3, deep := true)"),
                 {1: 1.0, 2: 2 / 3, 3: 0.0, 4: None, 5: 1 / 3})
    assert per_user(con, "FROM unrepeated_reco('r', 3)") == {
        1: 1.0, 2: 0.0, 3: None, 4: None, 5: 1.0}
    assert per_user(con, "FROM unrepeated_reco('r', 3, deep := true)") == {
        1: 1.0, 2: 0.5, 3: None, 4: None, 5: 1.0}


def test_rectools_docstring_examples() -> None:
    """The examples in RecTools 0.19's rectools/metrics/dq.py docstrings, as lists (their
    ranks are 1, 2, ... per user, except CoveredUsers' user 2, whose only item is at rank 2:
    a NULL at position 1 here)."""
    con = duckdb.connect()
    for statement in MACROS:
        con.execute(statement)
    con.execute("CREATE TABLE s AS SELECT * FROM (VALUES (1, [1, 2]), (2, [1, 2, 3]), "
                "(3, [1, 2, 3, 4, 5])) t(user, rec)")
    # SufficientReco(k=1) -> [1, 1, 1]; k=4 -> [0, 0, 1]; k=4, deep -> [0.5, 0.75, 1.0]
    assert per_user(con, "FROM sufficient_reco('s', 1)") == {1: 1, 2: 1, 3: 1}
    assert per_user(con, "FROM sufficient_reco('s', 4)") == {1: 0, 2: 0, 3: 1}
    assert per_user(con, "FROM sufficient_reco('s', 4, deep := true)") == {
        1: 0.5, 2: 0.75, 3: 1.0}
    con.execute("CREATE TABLE u AS SELECT * FROM (VALUES (1, [1, 2]), (2, [1, 1, 3]), "
                "(3, [1, 2, 2, 1, 5])) t(user, rec)")
    # UnrepeatedReco(k=1) -> [1, 1, 1]; k=4 -> [1, 0, 0]; k=4, deep -> [1, 0.666..., 0.5]
    assert per_user(con, "FROM unrepeated_reco('u', 1)") == {1: 1, 2: 1, 3: 1}
    assert per_user(con, "FROM unrepeated_reco('u', 4)") == {1: 1, 2: 0, 3: 0}
    assert_close(per_user(con, "FROM unrepeated_reco('u', 4, deep := true)"),
                 {1: 1.0, 2: 2 / 3, 3: 0.5})
    con.execute("CREATE TABLE c AS SELECT * FROM (VALUES (1, [1, 2]), (2, [NULL, 1])) "
                "t(user, rec)")
    con.execute("CREATE TABLE i AS SELECT range + 1 AS user, 1 AS item FROM range(4)")
    # CoveredUsers(k=1) -> [1, 0, 0, 0] (mean 0.25); k=2 -> [1, 1, 0, 0] (mean 0.5)
    assert con.execute("FROM user_coverage('c', 1, test := 'i')").fetchall() == [(0.25, 1, 4)]
    assert con.execute("FROM user_coverage('c', 2, test := 'i')").fetchall() == [(0.5, 2, 4)]


# --- RecTools itself (see the module docstring) ------------------------------------------------


def test_peer_rectools(con: duckdb.DuckDBPyConnection) -> None:
    pytest.importorskip("rectools")
    import pandas as pd
    from rectools.metrics import CoveredUsers, SufficientReco, UnrepeatedReco

    reco = ranked_rows(DATA["recs"], 9)
    test = pd.DataFrame(DATA["test"], columns=["user_id", "item_id"])
    for k in (1, K, 9):
        peer = CoveredUsers(k=k).calc(reco, test)
        got = con.execute(f"FROM user_coverage('recs', {k}, test := 'test')").fetchall()[0][0]
        print(f"rectools_covered_users@{k}", peer)
        assert got == pytest.approx(peer, abs=TOL)
        for deep in (False, True):
            for metric, name in ((SufficientReco, "sufficient_reco"),
                                 (UnrepeatedReco, "unrepeated_reco")):
                peer_users = metric(k=k, deep=deep).calc_per_user(reco).to_dict()
                # RecTools has no row for a user without recommendations (empty or NULL lists).
                got = per_user(con, f"FROM {name}('recs', {k}, deep := {deep})")
                assert_close({u: got[u] for u in peer_users},
                             {u: float(v) for u, v in peer_users.items()})
                if k == K:
                    print(f"rectools_{name}@{k}_deep={deep}", np.mean(list(peer_users.values())))


# Printed by test_peer_rectools -s in the peer venv (RecTools 0.19.0), each next to the query
# that gives it here (RecTools' means are over the users with a recommendation).
# The users RecTools' reco table has: those with an item (not the empty or NULL lists).
_WITH_RECO = "s JOIN recs USING (user) WHERE list_count(rec) > 0"
PINNED = {
    "rectools_covered_users@4": (0.68, f"SELECT user_coverage FROM user_coverage('recs', {K}, "
                                 "test := 'test')"),
    "rectools_sufficient_reco@4": (0.6046511627906976, "SELECT avg(sufficient_reco) FROM "
                                   f"sufficient_reco('recs', {K}) {_WITH_RECO}"),
    "rectools_sufficient_reco@4_deep": (0.8313953488372093, "SELECT avg(sufficient_reco) FROM "
                                        f"sufficient_reco('recs', {K}, deep := true) "
                                        f"{_WITH_RECO}"),
    "rectools_unrepeated_reco@4": (0.6744186046511628, "SELECT avg(unrepeated_reco) FROM "
                                   f"unrepeated_reco('recs', {K})"),
    "rectools_unrepeated_reco@4_deep": (0.9089147286821704, "SELECT avg(unrepeated_reco) FROM "
                                        f"unrepeated_reco('recs', {K}, deep := true)"),
}


@pytest.mark.parametrize("name", list(PINNED))
def test_pinned_peer_values(con: duckdb.DuckDBPyConnection, name: str) -> None:
    expected, query = PINNED[name]
    assert con.execute(query).fetchall()[0][0] == pytest.approx(expected, abs=TOL)


# --- errors and catalog_coverage ------------------------------------------------------------------


@pytest.mark.parametrize(("query", "message"), [
    ("FROM user_coverage('recs', 0)", "user_coverage: k must be a positive integer, got 0"),
    ("FROM user_coverage('recs', 2, full_lists := NULL)",
     "user_coverage: full_lists must be true or false, got NULL"),
    ("FROM sufficient_reco('recs', 1.5)", "sufficient_reco: k must be a positive integer, got 1.5"),
    ("FROM sufficient_reco('recs', 2, deep := NULL)",
     "sufficient_reco: deep must be true or false, got NULL"),
    ("FROM unrepeated_reco('recs', NULL)",
     "unrepeated_reco: k must be a positive integer, got NULL"),
])
def test_errors_name_function_argument_and_value(con: duckdb.DuckDBPyConnection, query: str,
                                                 message: str) -> None:
    with pytest.raises(duckdb.Error, match=re.escape(message)):
        con.execute(query).fetchall()


def test_catalog_coverage_reads_only_the_items() -> None:
    """The lean form (no user, no position, no row for an empty list) gives the same number:
    lists [1, 2, 3], [2, NULL, 4], [], NULL at k = 3: items 1, 2, 3, 4 of 10 -> 0.4; a table of
    only empty lists -> 0; k is still checked."""
    con = duckdb.connect()
    for statement in MACROS:
        con.execute(statement)
    con.execute("CREATE TABLE r AS SELECT * FROM (VALUES (1, [1, 2, 3]), (2, [2, NULL, 4]), "
                "(3, []), (4, NULL)) t(user, rec)")
    assert con.execute("FROM catalog_coverage('r', 3, catalog_size := 10)").fetchall() == [(0.4,)]
    assert con.execute("FROM catalog_coverage('r', 1, catalog_size := 10)").fetchall() == [(0.2,)]
    con.execute("CREATE TABLE e AS SELECT 1 AS user, []::INTEGER[] AS rec")
    assert con.execute("FROM catalog_coverage('e', 3, catalog_size := 5)").fetchall() == [(0.0,)]
    with pytest.raises(duckdb.Error, match="catalog_coverage: k must be a positive integer"):
        con.execute("FROM catalog_coverage('r', -1, catalog_size := 10)").fetchall()
