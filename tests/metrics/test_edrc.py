"""edrc and edrc_preferences through real DuckDB.

Expected values come from Ackerman & Chen (Ackerman & Chen, CEUR-WS Vol-811, paper 11, read as
docs/preference.md reads it), from hand calculations written out below, and from a plain-Python
reference written straight from the paper's definitions (``reference_edrc``) on random cases.
"""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from conftest import scalar as value

import duckrank
import duckrank.matching.preferences as match_module
import duckrank.metrics.preference as preference_module
from duckrank.matching.preferences import (
    match_preferences,
    match_system_preferences,
    run_preference_kernel,
)
from duckrank.metrics.preference import edrc_kernel

TABLE1_TRUTH = [("A", "C"), ("A", "D"), ("A", "E"), ("C", "D"), ("B", "D")]
TABLE1_PREDICTION = [("C", "A"), ("C", "B"), ("C", "D"), ("A", "E"), ("B", "E"), ("D", "E")]


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    connection = duckrank.connect()
    yield connection
    connection.close()


def pairs_sql(pairs: list[tuple[str, str]]) -> str:
    return "[" + ", ".join(f"('{a}', '{b}')" for a, b in pairs) + "]"


# --- the paper's worked examples -------------------------------------------------------------

def test_table1_as_printed_gives_2_29(con):
    # docs/preference.md: with G as printed, EP(E, B) = 0.5, so C(E) = 2.5 and EDRC = 2/29.
    sql = f"SELECT edrc_preferences({pairs_sql(TABLE1_PREDICTION)}, {pairs_sql(TABLE1_TRUTH)})"
    assert value(con, sql) == pytest.approx(2 / 29, abs=1e-12)


def test_table1_with_b_over_e_gives_the_papers_5_29(con):
    # The paper's C(E) = 3 needs EP(E, B) = 1, i.e. B > E in the truth; ranks and Z unchanged.
    truth = pairs_sql([*TABLE1_TRUTH, ("B", "E")])
    sql = f"SELECT edrc_preferences({pairs_sql(TABLE1_PREDICTION)}, {truth})"
    assert value(con, sql) == pytest.approx(5 / 29, abs=1e-12)


def test_table2_with_ap_discount_is_tau_ap_one_third(con):
    # Paper, section 3.2: truth A > B > C > D, system B, A, C, D; tau_ap = 1/3, and EDRC with
    # D(v) = R(v) - 1 equals it on complete orders.
    sql = "SELECT edrc(['B', 'A', 'C', 'D'], [('A', 'B'), ('B', 'C'), ('C', 'D')], 'ap')"
    assert value(con, sql) == pytest.approx(1 / 3, abs=1e-12)


def test_likelihood_for_pairs_the_system_leaves_unordered(con):
    # Table 1 as printed. The prediction leaves (A, D) and (B, D) unordered while the truth has
    # A > D and B > D, so C(D) = 2L + EP(D, C) + EP(D, E) = 2L + 1 + 0.5; C(C) = 1, C(E) = 2.5;
    # EDRC = (12/29) * (1/2 + (1.5 + 2L)/3 + 2.5/2) - 1. L = 0.7: 3.6/29. L = 0.5: 2/29.
    sql = (
        f"SELECT edrc_preferences({pairs_sql(TABLE1_PREDICTION)}, {pairs_sql(TABLE1_TRUTH)}, "
        "likelihood := 0.7)"
    )
    assert value(con, sql) == pytest.approx(3.6 / 29, abs=1e-12)
    sql = (
        f"SELECT edrc_preferences({pairs_sql(TABLE1_PREDICTION)}, {pairs_sql(TABLE1_TRUTH)}, "
        "'linear', 1.0)"
    )
    assert value(con, sql) == pytest.approx((12 / 29) * (0.5 + 3.5 / 3 + 1.25) - 1, abs=1e-12)


# --- hand calculations: Table 1's truth against the ranked list C, A, B, D, E ------------------
# R: A 1, B 1, C 2, E 2, D 3. W(C) = {A, B, E}, W(D) = {A, B, C, E}, W(E) = {A, B, C, D}.
# C(C) = EP(C,A) 0 (A > C, ranked after C) + 0.5 + 0.5 = 1
# C(D) = 1 (A first) + 1 (B first) + 1 (C first) + 0.5 (E unrelated) = 3.5
# C(E) = 1 (A > E, A first) + 0.5 * 3 = 2.5
# EDRC = 2 * (1/D(2) + 3.5/D(3) + 2.5/D(2)) / (3/D(2) + 4/D(3) + 4/D(2)) - 1

def hand_table1_ranked(discount) -> float:
    d2, d3 = discount(2), discount(3)
    return 2 * (1 / d2 + 3.5 / d3 + 2.5 / d2) / (3 / d2 + 4 / d3 + 4 / d2) - 1


@pytest.mark.parametrize(
    ("name", "discount", "expected"),
    [
        ("linear", lambda r: r, 6 / 29),
        ("logarithmic", lambda r: math.log2(1 + r), 1.5 / (7 / math.log2(3) + 2)),
        ("exponential", lambda r: 2.0**r, 1 / 6),
        ("ap", lambda r: r - 1, None),
    ],
)
def test_discounts_on_a_ranked_list(con, name, discount, expected):
    hand = hand_table1_ranked(discount)
    if expected is not None:
        assert hand == pytest.approx(expected, abs=1e-12)  # the closed forms agree
    sql = f"SELECT edrc(['C', 'A', 'B', 'D', 'E'], {pairs_sql(TABLE1_TRUTH)}, discount := '{name}')"
    assert value(con, sql) == pytest.approx(hand, abs=1e-12)


def test_linear_is_the_default(con):
    sql = "SELECT edrc(['C', 'A', 'B', 'D', 'E'], {p})"
    sql += " = edrc(['C', 'A', 'B', 'D', 'E'], {p}, 'linear')"
    assert value(con, sql.format(p=pairs_sql(TABLE1_TRUTH))) is True


# --- a reference implementation straight from the paper ----------------------------------------

def reference_edrc(system_order, truth, discount="linear", system_pairs=None, likelihood=0.5):  # noqa: C901
    """EDRC from the definitions, with Fractions where possible. ``system_order`` is the ranked
    list (or None when ``system_pairs`` gives the system's preferences)."""
    if system_pairs is None:
        items = list(dict.fromkeys(x for x in system_order if x is not None))
        system_pairs = list(itertools.combinations(items, 2))
    else:
        items = list(dict.fromkeys(x for p in system_pairs for x in p))
    ranked = set(items)
    edges = {(a, b) for a, b in truth if a in ranked and b in ranked}
    v = sorted({x for e in edges for x in e}, key=str)

    def closure(pairs, nodes):
        reach = {(a, b) for a, b in pairs}
        for k in nodes:
            for i in nodes:
                for j in nodes:
                    if (i, k) in reach and (k, j) in reach:
                        reach.add((i, j))
        return reach

    g_plus = closure(edges, v)
    s_plus = closure(system_pairs, items)

    rank = {}

    def r(node):
        if node not in rank:
            parents = [a for a, b in edges if b == node]
            rank[node] = 1 if not parents else 1 + max(r(p) for p in parents)
        return rank[node]

    def d(node):
        return {"linear": r(node), "logarithmic": math.log2(1 + r(node)),
                "exponential": 2.0 ** r(node), "ap": r(node) - 1}[discount]

    total = z = 0.0
    for node in v:
        if not any(b == node for _, b in edges):
            continue  # a source
        w = [x for x in v if x != node and (node, x) not in g_plus]
        c = 0.0
        for other in w:
            if (other, node) in g_plus:
                c += 1 if (other, node) in s_plus else 0 if (node, other) in s_plus else likelihood
            else:
                c += 0.5
        total += c / d(node)
        z += len(w) / d(node)
    return None if z == 0 else 2 * total / z - 1


def test_reference_reproduces_the_paper():
    assert reference_edrc(None, TABLE1_TRUTH, system_pairs=TABLE1_PREDICTION) == pytest.approx(
        float(Fraction(2, 29)))
    assert reference_edrc(["B", "A", "C", "D"], [("A", "B"), ("B", "C"), ("C", "D")], "ap") == (
        pytest.approx(1 / 3))


def as_structs(pairs: list[tuple]) -> list[dict]:
    """Python tuples reach DuckDB as lists; preferences are structs."""
    return [{"better": a, "worse": b} for a, b in pairs]


def random_dag(rng: random.Random, pool: int, count: int) -> list[tuple[int, int]]:
    """Random preferences consistent with a hidden order of ids 0..pool-1 (so acyclic), with
    repeats."""
    hidden = list(range(pool))
    rng.shuffle(hidden)
    place = {item: i for i, item in enumerate(hidden)}
    pairs = []
    for _ in range(count):
        a, b = rng.sample(range(pool), 2)
        pairs.append((a, b) if place[a] < place[b] else (b, a))
    return pairs


@pytest.mark.parametrize("discount", ["linear", "logarithmic", "exponential", "ap"])
def test_random_ranked_lists_match_the_reference(con, discount):
    rng = random.Random(4 + len(discount))
    cases = []
    for _ in range(60):
        pool = rng.randint(2, 14)
        rec = rng.sample(range(pool + 3), rng.randint(0, pool + 3))
        cases.append((rec, random_dag(rng, pool + 3, rng.randint(0, 25))))
    got = con.execute(
        f"SELECT edrc(rec, truth, '{discount}') "
        "FROM (SELECT unnest($1) AS rec, unnest($2) AS truth)",
        [[c[0] for c in cases], [as_structs(c[1]) for c in cases]],
    ).fetchall()
    for (rec, truth), (result,) in zip(cases, got, strict=True):
        expected = reference_edrc(rec, truth, discount)
        if expected is None:
            assert result is None, (rec, truth)
        else:
            assert result == pytest.approx(expected, abs=1e-12), (rec, truth)


def test_random_preference_outputs_match_the_reference(con):
    rng = random.Random(11)
    cases = []
    for _ in range(60):
        pool = rng.randint(2, 12)
        system = random_dag(rng, pool, rng.randint(0, 15))
        truth = random_dag(rng, pool + 2, rng.randint(0, 20))
        cases.append((system, truth, rng.choice([0.0, 0.25, 0.5, 1.0])))
    got = con.execute(
        "SELECT edrc_preferences(s, t, 'logarithmic', l) "
        "FROM (SELECT unnest($1) AS s, unnest($2) AS t, unnest($3) AS l)",
        [
            [as_structs(c[0]) for c in cases],
            [as_structs(c[1]) for c in cases],
            [c[2] for c in cases],
        ],
    ).fetchall()
    for (system, truth, likelihood), (result,) in zip(cases, got, strict=True):
        expected = reference_edrc(
            None, truth, "logarithmic", system_pairs=system, likelihood=likelihood
        )
        if expected is None:
            assert result is None
        else:
            assert result == pytest.approx(expected, abs=1e-12), (system, truth)


def test_long_lists_in_many_rows_match_the_reference(con):
    # Rows of 70 to 140 items need several 64-bit words per bitset, and 2,500 rows span more than
    # one DuckDB vector; a few rows are checked against the reference (it is slow).
    rng = random.Random(7)
    rows = []
    for _ in range(2500):
        pool = rng.randint(70, 140)
        rec = rng.sample(range(pool), pool - 5)
        rows.append((rec, random_dag(rng, pool, rng.randint(50, 300))))
    got = con.execute(
        "SELECT edrc(rec, truth) FROM (SELECT unnest($1) AS rec, unnest($2) AS truth)",
        [[r[0] for r in rows], [as_structs(r[1]) for r in rows]],
    ).fetchall()
    for i in [0, 1, 777, 2048, 2049, 2499]:
        assert got[i][0] == pytest.approx(reference_edrc(*rows[i]), abs=1e-12)


def test_edrc_with_ap_discount_is_tau_ap_with_the_roles_swapped(con):
    # Paper, section 4: on complete orders with D(v) = R(v) - 1, EDRC is AP correlation, whose
    # positions are the reference (truth) order's. So edrc(system, truth chain, 'ap') equals
    # tau_ap computed over the truth order against the system's order; written out here.
    rng = random.Random(3)
    for _ in range(20):
        truth_order = rng.sample(range(50), rng.randint(2, 12))
        system = rng.sample(truth_order, len(truth_order))
        chain = list(itertools.pairwise(truth_order))
        sys_pos = {x: i for i, x in enumerate(system)}
        n = len(truth_order)
        tau_ap = 2 / (n - 1) * sum(
            sum(sys_pos[truth_order[j]] < sys_pos[truth_order[i]] for j in range(i)) / i
            for i in range(1, n)
        ) - 1
        got = value(con, "SELECT edrc($1, $2, 'ap')", [system, as_structs(chain)])
        assert got == pytest.approx(tau_ap, abs=1e-12)


# --- the choices the paper leaves open -------------------------------------------------------

def test_a_truth_cycle_is_an_error_naming_its_items(con):
    with pytest.raises(duckdb.Error, match="edrc: truth preferences have a cycle") as error:
        value(con, "SELECT edrc(['x', 'y', 'z', 'w'], "
                   "[('w', 'x'), ('x', 'y'), ('y', 'z'), ('z', 'x')])")
    message = str(error.value)
    assert all(f"'{item}'" in message for item in "xyz") and "'w'" not in message
    with pytest.raises(duckdb.Error, match="cycle: (1 > 2 > 1|2 > 1 > 2)"):
        value(con, "SELECT edrc([1, 2], [(1, 2), (2, 1)])")


def test_a_system_cycle_is_an_error(con):
    with pytest.raises(duckdb.Error, match="edrc_preferences: system preferences have a cycle"):
        value(con, "SELECT edrc_preferences([(1, 2), (2, 3), (3, 1)], [(1, 2)])")


def test_an_item_preferred_to_itself_is_an_error(con):
    with pytest.raises(duckdb.Error, match="edrc: truth prefers item 'b' to itself"):
        value(con, "SELECT edrc(['a', 'b'], [('a', 'b'), ('b', 'b')])")
    with pytest.raises(duckdb.Error, match="edrc_preferences: system prefers item 3 to itself"):
        value(con, "SELECT edrc_preferences([(3, 3)], [(1, 2)])")


def test_preferences_about_unranked_items_are_left_out(con):
    # Only preferences between two ranked items count (paper, section 4), so a cycle or a
    # self-preference through an unranked item is no error, and transitivity through an
    # unranked item (a > x > b) is not used: nothing relates a and b, so the value is NULL.
    assert value(con, "SELECT edrc(['b', 'a'], [('a', 'x'), ('x', 'b')])") is None
    sql = "SELECT edrc(['a', 'b'], [('a', 'b'), ('x', 'y'), ('y', 'x'), ('x', 'x')])"
    assert value(con, sql) == 1.0


def test_duplicate_preferences_count_once(con):
    once = value(con, f"SELECT edrc(['C', 'A', 'B', 'D', 'E'], {pairs_sql(TABLE1_TRUTH)})")
    twice = value(con, f"SELECT edrc(['C', 'A', 'B', 'D', 'E'], {pairs_sql(TABLE1_TRUTH * 2)})")
    assert once == twice == pytest.approx(6 / 29, abs=1e-12)


def test_ranked_items_the_truth_never_mentions_do_not_count(con):
    # V holds the items of the considered preferences; other ranked items are not "unknown"
    # pairs for everyone (which would pull every value towards 0).
    base = value(con, f"SELECT edrc(['C', 'A', 'B', 'D', 'E'], {pairs_sql(TABLE1_TRUTH)})")
    padded = value(
        con, f"SELECT edrc(['q', 'C', 'r', 'A', 'B', 'D', 's', 'E'], {pairs_sql(TABLE1_TRUTH)})"
    )
    assert padded == pytest.approx(base, abs=1e-12)


def test_a_repeated_or_null_rec_item_counts_at_its_first_position(con):
    assert value(con, "SELECT edrc([2, NULL, 1, 2], [(1, 2)])") == -1.0
    assert value(con, "SELECT edrc([1, NULL, 2, 1], [(1, 2)])") == 1.0


def test_null_items_in_preferences_are_ignored(con):
    assert value(con, "SELECT edrc([1, 2, 3], [(1, 2), (NULL, 3), NULL])") == 1.0


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT edrc([1, 2], [])",
        "SELECT edrc([1, 2], [(3, 4)])",
        "SELECT edrc([]::INT[], [(1, 2)])",
        "SELECT edrc(NULL::INT[], [(1, 2)])",
        "SELECT edrc([1, 2], NULL)",
        "SELECT edrc([1, 2], [(1, 2)], NULL)",
        "SELECT edrc_preferences([(1, 2)], [(2, 3)])",
        "SELECT edrc_preferences([(1, 2)], [(1, 2)], 'linear', NULL)",
    ],
)
def test_undefined_values_are_null(con, sql):
    # Z = 0 (no truth preference between two ranked items) or a NULL argument.
    assert value(con, sql) is None


U = "'00000000-0000-0000-0000-00000000000"  # + digit + quote: a UUID literal


@pytest.mark.parametrize(
    ("rec", "truth"),
    [
        ("[3, 1, 2]", "[(1, 2), (2, 3)]"),
        ("[3, 1, 2]::BIGINT[]", "[(1::TINYINT, 2::TINYINT), (2, 3)]"),
        ("[3, 1, 2]::UBIGINT[]", "[(1::UBIGINT, 2::UBIGINT), (2, 3)]"),
        ("[3, 1, 2]::HUGEINT[]", "[(1::HUGEINT, 2::HUGEINT), (2, 3)]"),
        ("['3', '1', '2']", "[{'hi': '1', 'lo': '2'}, {'hi': '2', 'lo': '3'}]"),
        (
            f"[{U}3'::UUID, {U}1', {U}2']",
            f"[({U}1'::UUID, {U}2'::UUID), ({U}2'::UUID, {U}3'::UUID)]",
        ),
    ],
)
def test_item_id_types(con, rec, truth):
    # 1 > 2 > 3 ranked 3, 1, 2: C(2) = 1 (1 first), C(3) = 0 + 0; Z = 1/2 + 2/3.
    # EDRC = 2 * (1/2) / (7/6) - 1 = -1/7.
    assert value(con, f"SELECT edrc({rec}, {truth})") == pytest.approx(-1 / 7, abs=1e-12)


def test_struct_field_names_do_not_matter_but_the_count_does(con):
    assert value(con, "SELECT edrc([1, 2], [{'worse_first_name': 1, 'x': 2}])") == 1.0
    with pytest.raises(duckdb.Error, match="edrc: truth must be a list of two-field structs"):
        value(con, "SELECT edrc([1, 2], [{'user': 9, 'a': 1, 'b': 2}])")


def test_bad_options_are_errors_naming_the_function(con):
    with pytest.raises(duckdb.Error, match="edrc: discount must be one of linear, logarithmic, "
                       "exponential, ap; got 'log'"):
        value(con, "SELECT edrc([1, 2], [(1, 2)], 'log')")
    message = r"edrc_preferences: likelihood must lie in \[0, 1\]; got 1.5"
    with pytest.raises(duckdb.Error, match=message):
        value(con, "SELECT edrc_preferences([(1, 2)], [(1, 2)], likelihood := 1.5)")


def test_every_cursor_that_calls_register_gets_the_functions():
    connection = duckrank.connect()
    cursor = connection.cursor()
    with pytest.raises(duckdb.Error):  # TEMP macros are private to the registering connection
        cursor.execute("SELECT edrc([1, 2], [(1, 2)])").fetchall()
    duckrank.register(cursor)
    assert cursor.execute("SELECT edrc([1, 2], [(1, 2)])").fetchall() == [(1.0,)]
    connection.close()


def test_options_may_vary_per_row(con):
    rows = con.execute(
        "SELECT d, edrc(['C', 'A', 'B', 'D', 'E'], "
        f"{pairs_sql(TABLE1_TRUTH)}, d) FROM (SELECT unnest(['linear', 'exponential', 'ap']) AS d)"
    ).fetchall()
    assert dict(rows) == pytest.approx({
        "linear": 6 / 29, "exponential": 1 / 6, "ap": hand_table1_ranked(lambda r: r - 1)})


# --- the fast paths agree with the reference ------------------------------------------------------
# Expected values: reference_edrc above. The matching step numbers ids without hashing when they
# are integers of a small range and looks them up in a direct-address table, in groups of rows
# when the table would be large, and through Arrow's hash tables when even one row's would be;
# the kernel works in chunks of rows and sorts 16-bit node ids while a chunk has few nodes. The
# limits are lowered here so that small cases take every path.

ID_KINDS = {
    "small integers": (pa.int64(), lambda x: x),
    "wide integers": (pa.int64(), lambda x: x * 10**12 - 5 * 10**12),  # dictionary-encoded
    "UBIGINT above int64": (pa.uint64(), lambda x: 2**63 + x),
    "text": (pa.string(), lambda x: f"item {x}"),
}


def arrow_pairs(rows: list[list[tuple]], id_type: pa.DataType) -> pa.Array:
    struct = pa.struct([("better", id_type), ("worse", id_type)])
    return pa.array([[{"better": a, "worse": b} for a, b in r] for r in rows],
                    type=pa.list_(struct))


@pytest.mark.parametrize("entries", [1 << 21, 64, 4], ids=["one table", "groups", "hashed"])
@pytest.mark.parametrize("kind", list(ID_KINDS))
def test_every_matching_path_gives_the_reference(monkeypatch, entries, kind):
    monkeypatch.setattr(match_module, "_TABLE_ENTRIES", entries)
    id_type, to_id = ID_KINDS[kind]
    rng = random.Random(entries + len(kind))
    recs, truths, systems = [], [], []
    for _ in range(40):
        pool = rng.randint(2, 12)
        rec = rng.sample(range(pool + 3), rng.randint(0, pool + 3))
        recs.append([to_id(x) for x in rec] + ([to_id(rec[0])] if rec else []))  # a repeat
        truths.append([(to_id(a), to_id(b)) for a, b in random_dag(rng, pool + 3, 20)])
        systems.append([(to_id(a), to_id(b)) for a, b in random_dag(rng, pool + 3, 12)])
    rec_arrow = pa.array(recs, type=pa.list_(id_type))
    truth_arrow, system_arrow = arrow_pairs(truths, id_type), arrow_pairs(systems, id_type)
    ranked = run_preference_kernel(
        "edrc", edrc_kernel, match_preferences(rec_arrow, truth_arrow, "edrc"))
    given = run_preference_kernel(
        "edrc_preferences", edrc_kernel,
        match_system_preferences(system_arrow, truth_arrow, "edrc_preferences"))
    for i, (rec, truth, system) in enumerate(zip(recs, truths, systems, strict=True)):
        for got, expected in ((ranked[i], reference_edrc(rec, truth)),
                              (given[i], reference_edrc(None, truth, system_pairs=system))):
            if expected is None:
                assert math.isnan(got), (rec, truth, system)
            else:
                assert got == pytest.approx(expected, abs=1e-12), (rec, truth, system)


def test_small_chunks_and_wide_node_ids_give_the_reference(monkeypatch):
    # A chunk of one row with more nodes than _CHUNK_NODES sorts its node ids as int64.
    monkeypatch.setattr(preference_module, "_CHUNK_NODES", 8)
    monkeypatch.setattr(preference_module, "_CHUNK_WORDS", 2)
    rng = random.Random(21)
    cases = []
    for _ in range(30):
        pool = rng.randint(2, 90)
        cases.append((rng.sample(range(pool), pool), random_dag(rng, pool, rng.randint(0, 120))))
    got = run_preference_kernel("edrc", edrc_kernel, match_preferences(
        pa.array([c[0] for c in cases]), arrow_pairs([c[1] for c in cases], pa.int64()), "edrc"))
    for (rec, truth), result in zip(cases, got, strict=True):
        expected = reference_edrc(rec, truth, "linear")
        if expected is None:
            assert math.isnan(result)
        else:
            assert result == pytest.approx(expected, abs=1e-12), (rec, truth)


def test_a_cycle_found_in_a_later_chunk_names_its_own_row(monkeypatch):
    monkeypatch.setattr(preference_module, "_CHUNK_WORDS", 1)  # a chunk per row
    rec = pa.array([["a", "b"], ["p", "q", "r"], ["x", "y"]])
    truth = arrow_pairs([[("a", "b")], [("p", "q"), ("q", "r")],
                         [("x", "y"), ("y", "x")]], pa.string())
    with pytest.raises(ValueError, match="edrc: truth preferences have a cycle: '(x' > 'y|y' > "
                                         "'x)'"):
        run_preference_kernel("edrc", edrc_kernel, match_preferences(rec, truth, "edrc"))


def test_rows_matched_in_slices_give_the_reference(monkeypatch):
    # Batches are matched and scored slice by slice of rows (memory stays bounded); per-row
    # options follow their rows, and Arrow arrays that are themselves slices work.
    monkeypatch.setattr(match_module, "_SLICE_IDS", 16)
    rng = random.Random(31)
    cases = []
    for _ in range(40):
        pool = rng.randint(2, 10)
        cases.append((rng.sample(range(pool), pool), random_dag(rng, pool, rng.randint(0, 12))))
    discounts = [rng.choice(["linear", "ap", "exponential"]) for _ in cases]
    rec = pa.array([[99]] + [c[0] for c in cases])[1:]
    truth = arrow_pairs([[(98, 99)]] + [c[1] for c in cases], pa.int64())[1:]
    got = run_preference_kernel("edrc", edrc_kernel, match_preferences(rec, truth, "edrc"),
                                discount=np.array(discounts, dtype=object))
    for (ranked, truth_pairs), discount, result in zip(cases, discounts, got, strict=True):
        expected = reference_edrc(ranked, truth_pairs, discount)
        if expected is None:
            assert math.isnan(result)
        else:
            assert result == pytest.approx(expected, abs=1e-12), (ranked, truth_pairs, discount)
