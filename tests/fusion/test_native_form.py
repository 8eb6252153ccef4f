"""The native form of the fusion macros (duckrank/render/fusion.py, "the native form";
duckrank/matching/native/fusion.c) against their SQL form, and the three C functions it calls.

Two connections: one with the native step loaded (``native=True``), where a served method
(``native_serves``) under a served normalisation (``_native_norms``) over VARCHAR or integer
items takes the native branch, and one without it (``native=False``), where every call takes the
SQL form. On seeded random runs the two must return the same rows in the same order. The C
functions are also checked directly on hand-written lists, and the plans show which branch runs.
"""

from __future__ import annotations

import json
import math

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import duckrank
from duckrank.engines.duckdb import connect
from duckrank.fusion import METHODS, NORMALISATIONS
from duckrank.matching import native
from duckrank.render.fusion import _native_norms, native_serves

pytestmark = pytest.mark.skipif(native.library_path() is None,
                                reason="the native step is not built")

SERVED = [m for m in METHODS if native_serves(m)]
NORMS = [n.name for n in NORMALISATIONS]
# The normalisations whose statistics are sums over a list (s_sum; s_mean and s_sd): the native
# step adds each list's scores in list order, the SQL form's parallel aggregates (sum, avg,
# stddev_pop) in whatever order their threads meet the rows, so the last bits may differ.
SUMMED = {"sum", "zmuv"}
REL = 1e-12

# Item catalogues: index i of the random runs is VARCHAR_ITEMS[i] or BIGINT_ITEMS[i]. The
# strings include texts longer than DuckDB's 12 inline bytes and than the step's 8-byte prefix,
# texts sharing that prefix, a prefix of another text, the empty text and multi-byte UTF-8; the
# integers decimal texts that order differently from their values (9 and 10, -1 and -10).
VARCHAR_ITEMS = (
    [f"d{i}" for i in range(12)]
    + [f"a long shared prefix {i:02d}" for i in range(12)]
    + ["", " ", "Z", "z", "e", "é", "ü", "abcdefg", "abcdefgh", "abcdefghi", "abcdefgh ",
       "abcdefgi", "abcdefgh-long-tail-1", "abcdefgh-long-tail-2"]
    + [f"item{i}" for i in range(8)]
)
BIGINT_ITEMS = (list(range(-5, 15)) + list(range(95, 105)) + list(range(995, 1005))
                + [2**31, 2**62, -(2**62), 2**63 - 1, -(2**63), 123456789012])
assert len(VARCHAR_ITEMS) == len(BIGINT_ITEMS) == len(set(VARCHAR_ITEMS)) == 46


def _random_runs(seed: int, systems: int, queries: int = 30) -> dict:
    """(system, query, item index, score) columns: per system and query a list of 1 to 40 items
    of the catalogue (one list in ten left out: a system with no list for a query), scores
    rounded to 1 decimal (many ties, within a list and between systems)."""
    rng = np.random.default_rng(seed)
    rows = {"system": [], "query": [], "item": [], "score": []}
    for q in range(queries):
        for s in range(systems):
            if s and rng.random() < 0.1:
                continue
            n = int(rng.integers(1, 41))
            for item in rng.choice(len(BIGINT_ITEMS), n, replace=False):
                rows["system"].append(f"s{s}")
                rows["query"].append(q)
                rows["item"].append(int(item))
                rows["score"].append(round(float(rng.normal(0.0, 1.0)), 1))
    return rows


def _tables(index: int) -> tuple[pa.Table, pa.Table, int]:
    """Method ``index``'s runs (2 to 5 systems) with VARCHAR and with BIGINT items."""
    systems = 2 + index % 4
    rows = _random_runs(1000 + index, systems)
    common = {"system": rows["system"], "query": pa.array(rows["query"], pa.int64()),
              "score": pa.array(rows["score"], pa.float64())}
    varchar = pa.table({**common, "item": pa.array([VARCHAR_ITEMS[i] for i in rows["item"]],
                                                   pa.string())})
    bigint = pa.table({**common, "item": pa.array([BIGINT_ITEMS[i] for i in rows["item"]],
                                                  pa.int64())})
    return varchar, bigint, systems


def _arguments(method, systems: int, seed: int) -> str:
    """The macro's arguments besides runs and norm (random weights rounded to 1 decimal)."""
    rng = np.random.default_rng(seed)
    parts = []
    for p in method.parameters:
        if p.name == "weights":
            weights = ", ".join(f"'s{s}': {round(float(rng.uniform(0.1, 2.0)), 1)}"
                                for s in range(systems))
            parts.append(f", weights := MAP {{{weights}}}")
        elif p.name == "gamma":
            parts.append(", gamma := 0.7")
        elif p.name == "phi":
            parts.append(", phi := 0.8")
        elif p.name == "k":
            parts.append(", k := 10")
        elif p.name == "sigma":
            parts.append(", sigma := 0.05")
        else:  # a parameter this test does not know: add it above
            raise AssertionError(f"{method.name}: parameter {p.name}")
    return "".join(parts)


@pytest.fixture(scope="module")
def connections():
    """(native connection, SQL connection), each with every served macro and the runs of every
    served method as tables runs_<index>_varchar and runs_<index>_bigint."""
    names = [m.sql_name for m in SERVED]
    nat = connect(functions=names, native=True)
    sql = connect(functions=names, native=False)
    assert native.is_loaded(nat)
    assert not native.is_loaded(sql)
    for index in range(len(SERVED)):
        varchar, bigint, _ = _tables(index)
        for con in (nat, sql):
            for kind, table in (("varchar", varchar), ("bigint", bigint)):
                con.register("nfh_input", table)
                con.execute(f"CREATE TABLE runs_{index}_{kind} AS SELECT * FROM nfh_input")
                con.unregister("nfh_input")
    yield nat, sql
    nat.close()
    sql.close()


def _fused(con, call: str) -> list[tuple]:
    return con.execute(f"SELECT query, item, score, rank FROM {call} ORDER BY query, rank"
                       ).fetchall()


def _close(a: float, b: float) -> bool:
    """1e-12 relative; near 0, 1e-12 absolute: zmuv's (score - mean) cancels, and a score equal
    to its list's mean in one form is 1e-16 off it in the other (fuse_med of runs 2 gives 0.0
    in SQL, 1.6e-16 natively), which no relative bound holds."""
    return math.isclose(a, b, rel_tol=REL, abs_tol=REL)


def _assert_near(native_rows: list[tuple], sql_rows: list[tuple], where: str) -> None:
    """The same rows up to the last bits of the scores: per query, the SQL form's items cut
    into runs of scores equal to 1e-12 (a tie in one form can be a difference of one bit in the
    other, which orders the items otherwise); each run must hold the same items at the same
    ranks in both, and each item's scores agree to 1e-12."""
    assert len(native_rows) == len(sql_rows), where
    start = 0
    while start < len(sql_rows):
        end = start + 1
        while (end < len(sql_rows) and sql_rows[end][0] == sql_rows[start][0]
               and _close(sql_rows[end][2], sql_rows[end - 1][2])):
            end += 1
        mine, theirs = native_rows[start:end], sql_rows[start:end]
        assert [r[3] for r in mine] == [r[3] for r in theirs], where
        assert {r[0] for r in mine} == {theirs[0][0]}, where
        scores = {r[1]: r[2] for r in theirs}
        assert scores.keys() == {r[1] for r in mine}, (where, mine, theirs)
        for query, item, score, _ in mine:
            assert _close(score, scores[item]), (where, query, item, score, scores[item])
        start = end


# --- 1. the native form equals the SQL form -------------------------------------------------------


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("index", range(len(SERVED)), ids=[m.name for m in SERVED])
def test_native_form_equals_sql_form(connections, index: int, norm: str) -> None:
    """Every served method under every normalisation (the native form serves only those of
    ``_native_norms``; under the others both connections take the SQL form) over VARCHAR and
    BIGINT items: the same (query, item, rank) rows in the same order and the same scores,
    exactly, except under SUMMED (see there)."""
    nat, sql = connections
    method = SERVED[index]
    arguments = _arguments(method, 2 + index % 4, 2000 + index)
    for kind in ("varchar", "bigint"):
        call = f"{method.sql_name}('runs_{index}_{kind}'{arguments}, norm := '{norm}')"
        # The native connection takes the native branch exactly where it serves the call.
        served = norm in _native_norms(method)
        assert (NATIVE_MARK in _plan_strings(nat, call)) == served, call
        native_rows, sql_rows = _fused(nat, call), _fused(sql, call)
        assert sql_rows, call
        if norm in SUMMED:
            _assert_near(native_rows, sql_rows, call)
        else:
            assert native_rows == sql_rows, call


def test_every_random_run_has_ties_gaps_and_several_systems() -> None:
    """The inputs are what the comparison needs: 2 to 5 systems, lists of 1 to 40 items with
    tied scores, items some systems of a query miss, and queries some system has no list for."""
    counts = set()
    for index in range(len(SERVED)):
        rows = _random_runs(1000 + index, 2 + index % 4)
        systems = sorted(set(rows["system"]))
        counts.add(len(systems))
        lists: dict = {}
        for s, q, i, score in zip(*rows.values(), strict=True):
            lists.setdefault((s, q), []).append((i, score))
        assert max(map(len, lists.values())) <= 40
        assert any(len({x for _, x in v}) < len(v) for v in lists.values())  # ties
        assert len(lists) < len(systems) * 30 or len(systems) == 1  # a missing list
        per_query: dict = {}
        for (_, q), v in lists.items():
            per_query.setdefault(q, []).append({i for i, _ in v})
        assert any(len(set.union(*v)) > len(set.intersection(*v)) for v in per_query.values())
    assert counts == {2, 3, 4, 5}


# --- 2. which branch runs -------------------------------------------------------------------------


def _plan_strings(con, call: str) -> str:
    """Every string of the optimized logical plan, one per line: EXPLAIN's JSON (its text boxes
    cut long expressions), and the logical plan because the physical one shows no UNNEST's
    expressions."""
    con.execute("SET explain_output = 'optimized_only'")
    try:
        text = con.execute(f"EXPLAIN (FORMAT json) SELECT * FROM {call}").fetchall()[0][1]
    finally:
        con.execute("RESET explain_output")
    strings: list[str] = []

    def walk(node) -> None:
        if isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
        elif isinstance(node, str):
            strings.append(node)

    walk(json.loads(text))
    return "\n".join(strings)


# The native form's last step unnests lists (the items, their scores) through list_select in
# the order duckrank_fusion_order gave (``_native_select``); the SQL form's aggregate per (query,
# item) checks duplicates with bit_count (``_duplicate_check``). DuckDB 2.0's plans name a
# projection's expressions by their aliases (``l`` for duckrank_fusion_layout(...), ``o`` for
# duckrank_fusion_order(...)), so the C functions' names never show in EXPLAIN: these two
# markers, and the helper macros' definitions, show which branch runs and what it calls.
NATIVE_MARK = "UNNEST(list_select("
SQL_MARK = "bit_count("


@pytest.mark.parametrize("kind", ["varchar", "bigint"])
def test_the_native_branch_is_taken_on_the_native_connection(connections, kind: str) -> None:
    nat, sql = connections
    wsum = next(i for i, m in enumerate(SERVED) if m.name == "wsum")
    weights = _arguments(SERVED[wsum], 2 + wsum % 4, 0)
    def call(norm: str) -> str:
        return f"fuse_wsum('runs_{wsum}_{kind}'{weights}, norm := '{norm}')"

    served = _plan_strings(nat, call("min-max"))
    assert NATIVE_MARK in served and SQL_MARK not in served
    for con, norm in ((sql, "min-max"), (sql, "borda"), (nat, "borda")):
        plan = _plan_strings(con, call(norm))
        assert NATIVE_MARK not in plan and SQL_MARK in plan, (con is nat, norm)
    # The native branch's helpers call the C functions on the native connection only.
    definitions = {
        con: dict(con.execute(
            "SELECT function_name, string_agg(macro_definition, ' ') FROM duckdb_functions() "
            "WHERE function_name LIKE 'duckrank_fusion_%' GROUP BY ALL").fetchall())
        for con in (nat, sql)}
    for helper in ("layout", "split", "order"):
        c_name = f"duckrank_native_fusion_{helper}"
        assert c_name in definitions[nat][f"duckrank_fusion_{helper}"]
        assert c_name not in definitions[sql][f"duckrank_fusion_{helper}"]
    assert nat.execute("SELECT duckrank_fusion_native()").fetchall() == [(True,)]
    assert sql.execute("SELECT duckrank_fusion_native()").fetchall() == [(False,)]


def test_a_method_the_native_form_does_not_serve_takes_the_sql_form(connections) -> None:
    """bordafuse (its points read the candidates) and isr under min-max-inverted (a
    normalisation that reorders, for a method that reads positions)."""
    nat, _ = connections
    assert not native_serves(next(m for m in METHODS if m.name == "bordafuse"))
    isr = next(i for i, m in enumerate(SERVED) if m.name == "isr")
    assert "min-max-inverted" not in _native_norms(SERVED[isr])
    plan = _plan_strings(nat, f"fuse_isr('runs_{isr}_varchar', norm := 'min-max-inverted')")
    assert NATIVE_MARK not in plan and SQL_MARK in plan
    plan = _plan_strings(nat, f"fuse_isr('runs_{isr}_varchar', norm := 'min-max')")
    assert NATIVE_MARK in plan and SQL_MARK not in plan


# --- 3. the same errors on both forms -------------------------------------------------------------


def _error(con, call: str, table: pa.Table) -> str:
    con.register("nfh_bad", table)
    try:
        with pytest.raises(duckdb.Error) as caught:
            con.execute(f"SELECT * FROM {call}").fetchall()
    finally:
        con.abort()  # the failed result's rest, which holds the connection otherwise
        con.unregister("nfh_bad")
    return str(caught.value)


def _bad_runs(items: list, scores: list | None = None) -> pa.Table:
    return pa.table({"system": ["s0", "s0", "s1", "s0", "s1"], "query": [3, 7, 7, 7, 7],
                     "item": items, "score": scores or [1.0, 2.0, 3.0, 0.5, 1.5]})


@pytest.mark.parametrize(("call", "items", "message"), [
    ("fuse_wsum('nfh_bad', weights := MAP {'s0': 1.0, 's1': 2.0})", ["x", "x", "y", "x", "x"],
     "fuse_wsum: runs lists item x more than once for one system (query 7)"),
    ("fuse_wsum('nfh_bad', weights := MAP {'s0': 1.0, 's1': 2.0})", [10, 10, 9, 10, 10],
     "fuse_wsum: runs lists item 10 more than once for one system (query 7)"),
    ("fuse_rrf('nfh_bad')", ["x", "x", "y", "x", "x"],
     "fuse_rrf: runs lists item x more than once for one system (query 7)"),
    ("fuse_rrf('nfh_bad', norm := 'borda')", ["x", "x", "y", "x", "x"],
     "fuse_rrf: runs lists item x more than once for one system (query 7)"),
])
def test_an_item_listed_twice_is_refused_alike(connections, call, items, message) -> None:
    """s0 lists the item twice for query 7 (rows 2 and 4); query 3 is fine."""
    nat, sql = connections
    errors = [_error(con, call, _bad_runs(items)) for con in (nat, sql)]
    assert message in errors[0]
    assert errors[0] == errors[1]


@pytest.mark.parametrize(("items", "scores", "message"), [
    (["a", "b", "c", "d", "e"], [1.0, None, 3.0, 0.5, 1.5],
     "fuse_wsum: runs has the score NULL for system s0, query 7, item b; scores must be finite "
     "numbers (leave out the items a system did not score)"),
    (["a", None, "c", "d", "e"], None,
     "fuse_wsum: runs has a row with a NULL system, query or item (system s0, query 7, "
     "item NULL)"),
])
def test_null_scores_and_items_are_refused_alike(connections, items, scores, message) -> None:
    nat, sql = connections
    call = "fuse_wsum('nfh_bad', weights := MAP {'s0': 1.0, 's1': 2.0})"
    errors = [_error(con, call, _bad_runs(items, scores)) for con in (nat, sql)]
    assert message in errors[0]
    assert errors[0] == errors[1]


# --- 4. the C functions ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def nat(connections):
    return connections[0]


def _row(system, score, weight, position, count, low, high, total, mean, sd) -> dict:
    return {"system": system, "score": score, "weight": weight, "position": position,
            "s_count": count, "s_min": low, "s_max": high, "s_sum": total, "s_mean": mean,
            "s_sd": sd}


def test_layout_by_hand(nat) -> None:
    """Query 1, its rows (1-based input index: system, item, score):

        1: 1 b 2.0    2: 0 a 1.0    3: 0 c 3.0    4: 1 a 2.0    5: 0 b 1.0    6: 2 c 0.5

    and weights [0.5, 2.0] (system 2 has none: NULL). The lists, by score descending, equal
    scores by item text descending:
      system 0: c 3.0, b 1.0, a 1.0 -> positions c 1, b 2, a 3; count 3, min 1, max 3,
                sum 3 + 1 + 1 = 5, mean 5/3, sd sqrt(((3 - 5/3)^2 + 2 (1 - 5/3)^2) / 3)
                = sqrt((16/9 + 8/9) / 3) = sqrt(8/9);
      system 1: b 2.0, a 2.0 (a tie: b before a) -> b 1, a 2; count 2, min = max = mean = 2,
                sum 4, sd 0;
      system 2: c 0.5 -> c 1; count 1, min = max = sum = mean = 0.5, sd 0.
    The groups, in the order their items first appear when the lists are read in system order,
    each in its own order (rows 3, 5, 2 | 1, 4 | 6): c (rows 3 and 6, in system order), b (5,
    1), a (2, 4): sizes [2, 2, 2], firsts [3, 5, 2] (each group's first row in the input)."""
    nat.execute("CREATE OR REPLACE TEMP TABLE nfh_layout (n INTEGER, systems INTEGER[], "
                "items VARCHAR[], scores DOUBLE[], weights DOUBLE[])")
    nat.execute("""INSERT INTO nfh_layout VALUES
        (1, [1, 0, 0, 1, 0, 2], ['b', 'a', 'c', 'a', 'b', 'c'], [2, 1, 3, 2, 1, 0.5], [0.5, 2]),
        (3, [], [], [], []),
        (4, [0, 1, 0, 0], ['x', 'y', 'y', 'x'], [1, 2, 3, 4], []),
        (5, [0, 0, 0, 0], ['a', 'b', 'a', 'b'], [1, 2, 3, 4], []),
        (6, [0, 0, 0], ['x', 'x', 'x'], [1, 2, 3], []),
        (7, [0, 1, 0], ['q', 'q', 'p'], [5, 5, 5], [1, NULL]),
        (8, [0, 0], ['x', 'x'], [2, 2], [])""")
    got = dict(nat.execute("SELECT n, duckrank_native_fusion_layout(systems, items, scores, "
                           "weights, 1023) FROM nfh_layout ORDER BY n").fetchall())
    sd0 = math.sqrt(8 / 9)
    s0 = (3, 1.0, 3.0, 5.0, 5 / 3, sd0)
    s1 = (2, 2.0, 2.0, 4.0, 2.0, 0.0)
    first = got[1]
    assert first["sizes"] == [2, 2, 2]
    assert first["firsts"] == [3, 5, 2]
    assert first["duplicate"] is None
    expected = [
        _row(0, 3.0, 0.5, 1, *s0), _row(2, 0.5, None, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.0),  # c
        _row(0, 1.0, 0.5, 2, *s0), _row(1, 2.0, 2.0, 1, *s1),  # b
        _row(0, 1.0, 0.5, 3, *s0), _row(1, 2.0, 2.0, 2, *s1),  # a
    ]
    for row, want in zip(first["rows"], expected, strict=True):
        assert row == {**want, "s_sd": pytest.approx(want["s_sd"], rel=1e-15)}
    # No rows: empty lists, no duplicate.
    assert got[3] == {"rows": [], "sizes": [], "firsts": [], "duplicate": None}
    # Duplicates: the groups are walked in the order above, a group's rows in system order and
    # within a system in list order (score descending); the first row whose system is the
    # previous row's of its group is the duplicate (the later one in its system's list), the
    # rest then empty. Row 4: system 0's list is x 4.0 (row 4), y 3.0 (3), x 1.0 (1) -> 1.
    # Row 5: b 4.0 (4), a 3.0 (3), b 2.0 (2), a 1.0 (1); b's group comes first -> 2. Row 6:
    # x 3.0 (3), x 2.0 (2), x 1.0 (1) -> 2. Row 8: equal scores and texts keep the input order
    # -> 2.
    for n, duplicate in ((4, 1), (5, 2), (6, 2), (8, 2)):
        assert got[n] == {"rows": [], "sizes": [], "firsts": [], "duplicate": duplicate}, n
    # After those, a query's lists start afresh. Row 7: system 0's list q 5.0, p 5.0 (a tie: q
    # first); q by both systems (system 1's weight NULL), then p.
    q0 = (2, 5.0, 5.0, 10.0, 5.0, 0.0)
    assert got[7] == {"rows": [_row(0, 5.0, 1.0, 1, *q0),
                               _row(1, 5.0, None, 1, 1, 5.0, 5.0, 5.0, 5.0, 0.0),
                               _row(0, 5.0, 1.0, 2, *q0)],
                      "sizes": [2, 1], "firsts": [1, 3], "duplicate": None}


def test_layout_orders_ties_by_text_descending_beyond_the_prefix(nat) -> None:
    """Equal scores in one list by item text descending, byte by byte (multi-byte UTF-8 after
    ASCII), past the first 8 bytes, a prefix before the longer text."""
    items = ["abcdefgh", "abcdefghi", "abcdefgi", "abcdefgh-long-tail-2", "abcdefgh-long-tail-1",
             "é", "z", "", "d10", "d9"]
    by_text = sorted(items, key=lambda t: t.encode(), reverse=True)
    assert by_text[:3] == ["é", "z", "d9"]
    layout = nat.execute("SELECT duckrank_native_fusion_layout(CAST(list_transform(?, lambda x: "
                         "0) AS INTEGER[]), ?, list_transform(?, lambda x: 1.0), [], 1023)",
                         [items, items, items]).fetchall()[0][0]
    # One system, one group per item: its row's position in the list.
    positions = {items[f - 1]: r["position"] for f, r in zip(layout["firsts"], layout["rows"],
                                                               strict=True)}
    assert positions == {t: p for p, t in enumerate(by_text, 1)}


@pytest.mark.parametrize(("systems", "items", "scores"), [
    ("[0, 1]", "['a']", "[1.0, 2.0]"),
    ("[0]", "['a', 'b']", "[1.0]"),
    ("[0, 1]", "['a', 'b']", "[1.0]"),
])
def test_layout_refuses_lists_of_different_lengths(nat, systems, items, scores) -> None:
    with pytest.raises(duckdb.Error, match="duckrank_native_fusion_layout: systems, items and "
                                           "scores must be lists of one length"):
        nat.execute(f"SELECT duckrank_native_fusion_layout({systems}, {items}, {scores}, [], 1023)"
                    ).fetchall()


@pytest.mark.parametrize(("values", "sizes", "expected"), [
    ("[1.0, 2, 3, 4, 5]", "[2, 1, 2]", [[1.0, 2.0], [3.0], [4.0, 5.0]]),
    ("[1.0, 2, 3]", "[0, 3, 0]", [[], [1.0, 2.0, 3.0], []]),
    ("[1.0, NULL]", "[1, 1]", [[1.0], [None]]),
    ("CAST([] AS DOUBLE[])", "CAST([] AS INTEGER[])", []),
    ("NULL", "[1]", None),
])
def test_split(nat, values, sizes, expected) -> None:
    assert nat.execute(f"SELECT duckrank_native_fusion_split({values}, {sizes})").fetchall() == [
        (expected,)]


def test_split_of_several_rows(nat) -> None:
    """Rows after the first start at the right offsets."""
    got = nat.execute("SELECT duckrank_native_fusion_split(v, s) FROM (VALUES "
                      "(1, [1.0, 2, 3], [1, 2]), (3, [4.0, 5], [2]), "
                      "(4, [6.0], [1])) t(n, v, s) ORDER BY n").fetchall()
    assert got == [([[1.0], [2.0, 3.0]],), ([[4.0, 5.0]],), ([[6.0]],)]


@pytest.mark.parametrize("call", [
    "duckrank_native_fusion_layout(s, ['a', 'b', 'c'][:len(v)], v, [], 1023)",
    "duckrank_native_fusion_split(v, [CAST(len(v) AS INTEGER)])",
    "duckrank_native_fusion_order(v, ['t'], [1, 1, 1][:len(v)])",
])
def test_a_null_row_among_others_gives_null(nat, call) -> None:
    """One NULL list (systems; values; scores) in a chunk of several rows: NULL for that row (a
    NULL struct from the layout), the other rows as ever. Repeated: what DuckDB leaves in a
    NULL row's list entry varies."""
    for _ in range(5):
        got = nat.execute(
            f"SELECT n, {call} IS NULL FROM (VALUES (1, [0, 0]::INTEGER[], [1.0, 2]::DOUBLE[]), "
            "(2, NULL, NULL), (3, [0]::INTEGER[], [4.0]::DOUBLE[])) t(n, s, v) "
            "ORDER BY n").fetchall()
        assert got == [(1, False), (2, True), (3, False)]


@pytest.mark.parametrize("sizes", ["[2, 2]", "[6]", "[3, 3]", "[-1, 6]", "[5, NULL]"])
def test_split_refuses_sizes_that_do_not_add_up(nat, sizes) -> None:
    with pytest.raises(duckdb.Error, match="duckrank_native_fusion_split: sizes must be "
                                           "non-negative and add up to the length of values"):
        nat.execute(f"SELECT duckrank_native_fusion_split([1.0, 2, 3, 4, 5], {sizes})"
                    ).fetchall()


@pytest.mark.parametrize(("scores", "texts", "at", "expected"), [
    # 2.0 first; the 1.0s by text descending, equal texts in list order; then 0.5.
    ("[1.0, 2.0, 1.0, 0.5, 1.0]", "['b', 'x', 'a', 'c', 'b']", "[1, 2, 3, 4, 5]",
     [2, 1, 5, 3, 4]),
    # Score i's text is texts[at[i]]: x, 10, 9 -> 'x' > '9' > '10'.
    ("[1.0, 1.0, 1.0]", "['10', '9', 'x', 'unused']", "[3, 1, 2]", [1, 3, 2]),
    # NaN first (as SQL's DESC puts it), NULL last; equal texts: list order.
    ("[1.0, 'nan'::DOUBLE, NULL, 1.0, 2.0, 'nan'::DOUBLE]", "['t']", "[1, 1, 1, 1, 1, 1]",
     [2, 6, 5, 1, 4, 3]),
    # 0.0 and -0.0 are equal: by text, then list order.
    ("[-0.0, 0.0, -1.0, 1.0]", "['t']", "[1, 1, 1, 1]", [4, 1, 2, 3]),
    ("[-0.0, 0.0, -1.0, 1.0]", "['a', 'b']", "[1, 2, 1, 1]", [4, 2, 1, 3]),
    ("CAST([] AS DOUBLE[])", "CAST([] AS VARCHAR[])", "CAST([] AS INTEGER[])", []),
    ("CAST(NULL AS DOUBLE[])", "['t']", "[1]", None),
])
def test_order(nat, scores, texts, at, expected) -> None:
    assert nat.execute(f"SELECT duckrank_native_fusion_order({scores}, {texts}, {at})"
                       ).fetchall() == [(expected,)]


def test_order_is_stable_past_a_run_of_sorted_elements(nat) -> None:
    """Longer than the step's runs of 16: equal scores and texts still in list order."""
    scores = [float(i % 3) for i in range(50)]
    expected = sorted(range(1, 51), key=lambda i: -scores[i - 1])
    assert nat.execute("SELECT duckrank_native_fusion_order(?::DOUBLE[], ['t'], "
                       "CAST(list_transform(?, lambda x: 1) AS INTEGER[]))", [scores, scores]
                       ).fetchall() == [(expected,)]


@pytest.mark.parametrize(("at", "message"), [
    ("[1, 1]", "scores and at must be lists of one length"),
    ("[1, 1, 3]", "at must hold 1-based indices of texts that are not NULL"),
    ("[1, 0, 1]", "at must hold 1-based indices of texts that are not NULL"),
    ("[1, NULL, 1]", "at must hold 1-based indices of texts that are not NULL"),
])
def test_order_refuses_bad_indices(nat, at, message) -> None:
    with pytest.raises(duckdb.Error, match=f"duckrank_native_fusion_order: {message}"):
        nat.execute(f"SELECT duckrank_native_fusion_order([1.0, 2, 3], ['a', 'b'], {at})"
                    ).fetchall()


# --- 5. integer items: ties by text, not value ----------------------------------------------------

INTEGER_ITEMS = [9, 10, 100, 2, -1, -10, 0]
BY_TEXT = [9, 2, 100, 10, 0, -10, -1]  # their texts descending: '9' > '2' > '100' > '10' > ...


@pytest.mark.parametrize("item_type", ["BIGINT", "INTEGER", "UBIGINT", "HUGEINT"])
@pytest.mark.parametrize("method", ["sum", "rrf"])
def test_equal_integer_items_rank_by_text(connections, item_type: str, method: str) -> None:
    """Two systems give every item the same score: combsum ties them all, and rrf reads the
    positions, which break the ties in each list by item text descending too. Both forms rank
    '9' before '10' (UBIGINT: the negative ids are left out)."""
    items = [i for i in INTEGER_ITEMS if item_type != "UBIGINT" or i >= 0]
    by_text = [i for i in BY_TEXT if i in items]
    ranks = []
    for con in connections:
        con.execute(f"CREATE OR REPLACE TEMP TABLE nfh_ints AS SELECT system, 1 AS query, "
                    f"CAST(item AS {item_type}) AS item, 1.0 AS score FROM (SELECT "
                    f"unnest(['s0', 's1']) AS system) CROSS JOIN (SELECT unnest(?) AS item)",
                    [items])
        fused = duckrank.fuse(con.table("nfh_ints").arrow(), method, None,
                              system_column="system", connection=con)
        rows = fused.select(["item", "score", "rank"]).to_pylist()
        ranks.append(rows)
        if con is connections[0]:  # the native branch serves the integer types
            plan = _plan_strings(con, f"fuse_{method}('nfh_ints', norm := 'none')")
            assert NATIVE_MARK in plan and SQL_MARK not in plan
        assert [r["item"] for r in rows] == by_text, (con, rows)
        assert [r["rank"] for r in rows] == list(range(1, len(items) + 1))
        if method == "rrf":  # position p in both lists: 2 / (60 + p)
            assert [r["score"] for r in rows] == [2 / (60 + p) for p in range(1, len(items) + 1)]
        else:
            assert {r["score"] for r in rows} == {2.0}
    assert ranks[0] == ranks[1]


def test_layout_fills_only_the_fields_asked_for(nat) -> None:
    """fields = score (bit 1), s_count (4), s_min (5) and s_max (6): those filled, the other
    statistics and the weight NULL, and no list sorted (positions are not asked for). Query:
    system 0 lists a 1.0, b 3.0; system 1 lists a 2.0 (hand counts: system 0 count 2, min 1.0,
    max 3.0; system 1 count 1, min = max = 2.0)."""
    fields = 1 << 1 | 1 << 4 | 1 << 5 | 1 << 6
    layout = nat.execute("SELECT duckrank_native_fusion_layout([0, 0, 1]::INTEGER[], "
                         "['a', 'b', 'a'], [1.0, 3.0, 2.0], [0.5, 0.5], ?)",
                         [fields]).fetchall()[0][0]
    blank = {"weight": None, "position": None, "s_sum": None, "s_mean": None, "s_sd": None}
    rows = {(r["system"], r["score"]): r for r in layout["rows"]}
    assert rows[(0, 1.0)] == {"system": 0, "score": 1.0, "s_count": 2, "s_min": 1.0,
                              "s_max": 3.0, **blank}
    assert rows[(0, 3.0)] == {"system": 0, "score": 3.0, "s_count": 2, "s_min": 1.0,
                              "s_max": 3.0, **blank}
    assert rows[(1, 2.0)] == {"system": 1, "score": 2.0, "s_count": 1, "s_min": 2.0,
                              "s_max": 2.0, **blank}
    assert sorted(layout["sizes"]) == [1, 2]


@pytest.mark.parametrize("norm", ["zmuv", "sum", "min-max"])
def test_overflowing_statistics_are_the_same_error_in_both_forms(norm) -> None:
    """Scores of 1e308 and -1e308: their spread (min-max), sum of shifted scores (sum) and
    squared deviations (zmuv) overflow a double. Both forms raise the same error (before, the
    SQL form gave NaN and the native step 0.0 under zmuv; ranx gives 0.0, the true z-scores
    are 1 and -1)."""
    messages = []
    for native_step in (True, False):
        con = connect(functions=["fuse_sum"], native=native_step)
        con.execute("CREATE TABLE huge AS SELECT * FROM (VALUES ('a', 1, 'x', 1e308), "
                    "('a', 1, 'y', -1e308)) t(system, query, item, score)")
        with pytest.raises(duckdb.Error) as caught:
            con.execute(f"SELECT * FROM fuse_sum('huge', norm := '{norm}')").fetchall()
        messages.append(str(caught.value).splitlines()[0])
    assert messages[0] == messages[1]
    assert (f"fuse_sum: the scores of a list of query 1 overflow the {norm} normalisation"
            in messages[0])


@pytest.mark.parametrize("collated", ["column", "session"])
def test_collated_items_take_the_sql_form(collated) -> None:
    """Items under a collation that makes distinct texts equal (NOCASE on the column, or the
    session's default_collation) are grouped and ordered by it in the SQL form; the native
    step compares bytes, so the macro takes the SQL form there and both connections agree.
    Hand check (column case, norm none, CombSUM): 'X' (1.0) and 'x' (2.0) are one item, 3.0;
    'B' (1.0) and 'b' (2.0) another, 3.0; ties by text descending under NOCASE."""
    results = []
    for native_step in (True, False):
        con = connect(functions=["fuse_sum"], native=native_step)
        item_type = "VARCHAR COLLATE nocase" if collated == "column" else "VARCHAR"
        con.execute(f"CREATE TABLE coll (system VARCHAR, query INT, item {item_type}, "
                    "score DOUBLE)")
        con.execute("INSERT INTO coll VALUES ('a', 1, 'X', 1.0), ('b', 1, 'x', 2.0), "
                    "('b', 1, 'B', 1.0), ('a', 1, 'b', 2.0)")
        if collated == "session":
            con.execute("SET default_collation = 'nocase'")
        results.append(con.execute("SELECT query, score, rank FROM fuse_sum('coll', "
                                   "norm := 'none') ORDER BY rank").fetchall())
    assert results[0] == results[1]
    if collated == "column":
        assert results[0] == [(1, 3.0, 1), (1, 3.0, 2)]
