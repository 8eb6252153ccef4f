"""The native preference step (duckrank/matching/native/edrc.c, correlation.c) in real DuckDB.

With the native step loaded, the macros of edrc, edrc_preferences and the rank correlations call
its functions for integer ids BIGINT holds and for VARCHAR ids, and the Python UDFs otherwise.
The expected values here are the Python path's (``duckrank.connect(native=False)``), which
tests/metrics/test_edrc.py and test_correlation.py check against the papers' examples, a
plain-Python reference and scipy; the expected errors are the Python path's messages.
"""

from __future__ import annotations

import random
import re
import threading

import duckdb
import pytest

import duckrank


@pytest.fixture(scope="module")
def both() -> tuple[duckdb.DuckDBPyConnection, duckdb.DuckDBPyConnection]:
    """A connection with the native step and one with the Python path only."""
    with_native, python_only = duckrank.connect(), duckrank.connect(native=False)
    assert duckrank.matching.native.status(with_native).active
    yield with_native, python_only
    with_native.close()
    python_only.close()


def random_dag(rng: random.Random, pool: list, count: int) -> list[dict]:
    """Preferences consistent with a hidden order of ``pool`` (so acyclic), repeats included."""
    hidden = rng.sample(pool, len(pool))
    place = {item: i for i, item in enumerate(hidden)}
    pairs = []
    for _ in range(count):
        a, b = rng.sample(pool, 2)
        better, worse = (a, b) if place[a] < place[b] else (b, a)
        pairs.append({"better": better, "worse": worse})
    return pairs


def values(con: duckdb.DuckDBPyConnection, sql: str, params: list) -> list:
    return [row[0] for row in con.execute(sql, params).fetchall()]


def assert_same(got: list, expected: list) -> None:
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert (g is None and e is None) or g == pytest.approx(e, abs=1e-12), (g, e)


def plan(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> str:
    return con.execute(f"EXPLAIN {sql}", params or []).fetchall()[0][1]


# --- which path runs -------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("sql", "native_function"),
    [
        ("SELECT edrc(rec, prefs) FROM t", "duckrank_native_edrc"),
        ("SELECT edrc(rec::VARCHAR[], [('1', '2')]) FROM t", "duckrank_native_edrc"),
        ("SELECT edrc_preferences(prefs, [(1, 2)], likelihood := 0.3) FROM t",
         "duckrank_native_edrc_preferences"),
        ("SELECT kendall_tau(rec, MAP {1: 2.0, 2: 1.0}) FROM t", "duckrank_native_correlation"),
    ],
)
def test_handled_ids_go_to_the_native_step(both, sql, native_function):
    # Before, every call went to the Python UDFs (duckrank_edrc, duckrank_kendall_tau, ...).
    with_native, python_only = both
    for con in both:
        con.execute("CREATE OR REPLACE TABLE t AS SELECT [1, 2, 3] AS rec, [(1, 2)] AS prefs")
    assert native_function in plan(with_native, sql)
    assert "duckrank_native" not in plan(python_only, sql)
    assert values(with_native, sql, []) == values(python_only, sql, [])


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT edrc([1, 2]::UBIGINT[], [(1::UBIGINT, 2::UBIGINT)])",
        "SELECT edrc([1, 2]::HUGEINT[], [(1::HUGEINT, 2::HUGEINT)])",
        "SELECT spearman(['1', '2', '3'], MAP {1: 1.0, 2: 2.0, 3: 0.5})",  # ids matched as text
    ],
)
def test_other_ids_keep_the_python_udfs(both, sql):
    with_native, python_only = both
    assert "duckrank_native" not in plan(with_native, sql)
    assert values(with_native, sql, []) == values(python_only, sql, [])


# --- same values as the Python path -----------------------------------------------------------

def edrc_cases(rng: random.Random, make_id) -> tuple[list, list]:
    recs, truths = [], []
    for _ in range(60):
        pool = rng.randint(2, 90)
        ranked = rng.sample(range(pool + 5), rng.randint(0, pool + 5))
        rec = [make_id(x) for x in ranked]
        if rec and rng.random() < 0.2:  # repeats and NULL elements
            rec.insert(rng.randint(0, len(rec)), rng.choice([None, rec[0]]))
        truth = random_dag(rng, [make_id(x) for x in range(pool + 5)], rng.randint(0, 200))
        if truth and rng.random() < 0.2:
            truth.append(None)
            truth.append({"better": None, "worse": truth[0]["worse"]})
        recs.append(rec)
        truths.append(truth)
    recs.append(None)
    truths.append([{"better": make_id(1), "worse": make_id(2)}])
    return recs, truths


@pytest.mark.parametrize(
    "make_id",
    [
        int,
        lambda x: x * 10**12 - 7,  # a range too wide for the direct-address table: hashed
        str,
        lambda x: f"a long item name, past twelve bytes {x}",  # strings not stored inline
    ],
    ids=["small integers", "wide integers", "short strings", "long strings"],
)
@pytest.mark.parametrize("discount", ["linear", "logarithmic", "exponential", "ap"])
def test_edrc_equals_the_python_path(both, make_id, discount):
    recs, truths = edrc_cases(random.Random(len(discount)), make_id)
    sql = (f"SELECT edrc(rec, truth, '{discount}') "
           "FROM (SELECT unnest($1) AS rec, unnest($2) AS truth)")
    with_native, python_only = both
    assert "duckrank_native_edrc" in plan(with_native, sql, [recs, truths])
    assert_same(values(with_native, sql, [recs, truths]),
                values(python_only, sql, [recs, truths]))


@pytest.mark.parametrize("make_id", [int, str], ids=["integers", "strings"])
def test_edrc_preferences_equals_the_python_path(both, make_id):
    rng = random.Random(5)
    systems, truths, likelihoods = [], [], []
    for _ in range(150):
        pool = [make_id(x) for x in range(rng.randint(2, 60))]
        systems.append(random_dag(rng, pool, rng.randint(0, 120)))
        truths.append(random_dag(rng, pool + [make_id(-1), make_id(-2)], rng.randint(0, 200)))
        # NULL likelihoods: before, the Python path kept those rows' edges and laid them on the
        # nodes of the rows after them (a wrong value or a cycle error that is not there).
        likelihoods.append(rng.choice([0.0, 0.25, 0.5, 1.0, None]))
    sql = ("SELECT edrc_preferences(s, t, 'logarithmic', l) "
           "FROM (SELECT unnest($1) AS s, unnest($2) AS t, unnest($3) AS l)")
    with_native, python_only = both
    params = [systems, truths, likelihoods]
    assert "duckrank_native_edrc_preferences" in plan(with_native, sql, params)
    assert_same(values(with_native, sql, params), values(python_only, sql, params))


@pytest.mark.parametrize("correlation", ["spearman", "kendall_tau", "ap_correlation", "fcp"])
@pytest.mark.parametrize("make_id", [int, str], ids=["integers", "strings"])
def test_correlations_equal_the_python_path(both, correlation, make_id):
    # Rows of up to 300 graded items: the Python path's sorted counting (past 128 items) and its
    # all-pairs counting, ties, repeats and NULL elements in rec.
    rng = random.Random(9)
    recs, keys, grades = [], [], []
    for _ in range(150):
        pool = rng.randint(0, 300)
        rec = [make_id(x) for x in rng.sample(range(pool + 10), pool)]
        if rec and rng.random() < 0.3:
            rec += [None, rec[0]]
        graded = rng.sample(range(pool + 10), rng.randint(0, pool + 10))
        recs.append(rec)
        keys.append([make_id(x) for x in graded])
        grades.append([float(rng.randint(-2, 4)) for _ in graded])
    recs.append(None)
    keys.append([make_id(1)])
    grades.append([1.0])
    sql = (f"SELECT {correlation}(rec, map_from_entries(list_zip(k, g))) "
           "FROM (SELECT unnest($1) AS rec, unnest($2) AS k, unnest($3) AS g)")
    with_native, python_only = both
    params = [recs, keys, grades]
    assert "duckrank_native_correlation" in plan(with_native, sql, params)
    assert_same(values(with_native, sql, params), values(python_only, sql, params))


def test_rows_of_many_vectors_and_long_lists(both):
    # 2,100 rows (more than one DuckDB vector) of 130-item lists: nodes past 64 bits, scratch
    # reused from row to row.
    rng = random.Random(3)
    recs = [rng.sample(range(150), 130) for _ in range(2100)]
    truths = [random_dag(rng, list(range(150)), 150) for _ in range(2100)]
    sql = "SELECT edrc(rec, truth, 'ap') FROM (SELECT unnest($1) AS rec, unnest($2) AS truth)"
    with_native, python_only = both
    assert_same(values(with_native, sql, [recs, truths]),
                values(python_only, sql, [recs, truths]))


def test_truths_of_more_than_2048_nodes(both):
    # Ancestor rows of more than 8 lanes (2,048 bits) take the other closure (rows over their own
    # span, parents already held skipped, lanes zeroed when a child first reads them): rows of
    # 2,100 to 2,700 ranked items, deep truths (a hidden order).
    rng = random.Random(11)
    recs, truths = [], []
    for size in (2100, 2700):
        pool = list(range(size + 100))
        recs.append(rng.sample(pool, size))
        truths.append(random_dag(rng, pool, 4 * size))
    for discount in ("linear", "ap"):
        sql = (f"SELECT edrc(rec, truth, '{discount}') "
               "FROM (SELECT unnest($1) AS rec, unnest($2) AS truth)")
        with_native, python_only = both
        assert_same(values(with_native, sql, [recs, truths]),
                    values(python_only, sql, [recs, truths]))


# --- errors, worded as the Python path words them ------------------------------------------

@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT edrc(['x', 'y', 'z', 'w'], [('w', 'x'), ('x', 'y'), ('y', 'z'), ('z', 'x')])",
         r"edrc: truth preferences have a cycle: '[xyz]' > '[xyz]' > '[xyz]' > '[xyz]'$"),
        ("SELECT edrc(['a', 'it''s'], [('a', 'it''s'), ('it''s', 'it''s')])",
         r"""edrc: truth prefers item "it's" to itself \(a cycle of one item\)$"""),
        ("SELECT edrc([1, 2], [(1, 2)], 'log')",
         r"edrc: discount must be one of linear, logarithmic, exponential, ap; got 'log'$"),
        ("SELECT edrc([1, 2], [{'user': 9, 'a': 1, 'b': 2}])",
         r"edrc: truth must be a list of two-field structs \(preferred item, other item\); "
         r"got STRUCT\(\"user\" INTEGER, a INTEGER, b INTEGER\)\[\]$"),
        ("SELECT edrc_preferences([(1, 2), (2, 3), (3, 1)], [(1, 2)])",
         r"edrc_preferences: system preferences have a cycle: [123] > [123] > [123] > [123]$"),
        ("SELECT edrc_preferences([(3, 3)], [(1, 2)])",
         r"edrc_preferences: system prefers item 3 to itself \(a cycle of one item\)$"),
        ("SELECT edrc_preferences([(1, 2)], [(1, 2)], likelihood := 2)",
         r"edrc_preferences: likelihood must lie in \[0, 1\]; got 2\.0$"),
        ("SELECT fcp([1, 2], MAP {1: 1.0, 2: 'nan'::DOUBLE})",
         r"fcp: the grade of item '2' in truth must be a finite number, got NULL or NaN$"),
        ("SELECT spearman(['a', 'b'], MAP {'a': 1.0, 'b': -'inf'::DOUBLE})",
         r"spearman: the grade of item 'b' in truth must be a finite number, got -inf$"),
    ],
)
def test_errors_are_the_python_paths(both, sql, message):
    for con in both:
        with pytest.raises(duckdb.Error, match=message):
            con.execute(sql).fetchall()


def test_a_system_cycle_is_an_error_without_a_considered_truth_preference(both):
    # The truth's only preference is about an item the system never mentions. Before, the
    # Python path returned NULL (Z = 0) without looking at the system's cycle.
    for con in both:
        with pytest.raises(duckdb.Error, match="edrc_preferences: system preferences have a "
                           "cycle"):
            con.execute("SELECT edrc_preferences([(1, 2), (2, 1)], [(1, 9)])").fetchall()


def test_a_row_over_memory_limit_fails_with_an_out_of_memory_error():
    # A chain of 30,000 ranked items: its ancestor bitsets alone take 30,000 x 469 words x 8
    # bytes = 112.6 MB (reserved as 128 MiB), past memory_limit '64MB' (61.0 MiB).
    con = duckrank.connect(config={"memory_limit": "64MB"})
    # (Arguments from a column: constant arguments would be folded, the Python branch too.)
    sql = ("SELECT edrc(r, list_transform(r[2:], lambda i: (i - 1, i))) "
           "FROM (SELECT range(30000) AS r)")
    with pytest.raises(duckdb.Error, match=r"edrc: Out of Memory Error: the native preference "
                       r"step could not allocate 128\.0 MiB for a row of 59999 items \(.* used by "
                       r"it\): that would exceed memory_limit"):
        con.execute(sql).fetchall()
    # A short chain in the same database: ranked as the truth says, so EDRC = 1.
    assert con.execute(sql.replace("30000", "100")).fetchall() == [(1.0,)]
    con.close()


def test_the_matching_and_preference_steps_share_one_memory_budget():
    # memory_limit '64MB' is 61.0 MiB. An edrc call over rows of a 16,000-item chain holds 32 MiB
    # for as long as it runs (its ancestor bitsets: 16,000 rows x 252 words x 8 bytes = 32.3 MB,
    # reserved as 32 MiB); ndcg's matching of a 300,000-item truth needs another 32 MiB (its
    # hash table), which fits alone but not next to the edrc call: 64 MiB > 61.0 MiB. Before, the
    # two steps kept an account each, so together they could hold twice memory_limit.
    con = duckrank.connect(config={"memory_limit": "64MB"})
    preferences, matching = duckrank.register(con.cursor()), duckrank.register(con.cursor())
    edrc = ("SELECT sum(edrc(r, list_transform(r[2:], lambda i: (i - 1, i)))) "
            "FROM (SELECT range(16000 + x - x) AS r FROM range(150) t(x))")  # x: not folded
    ndcg = ("SELECT ndcg(r, t, 10) FROM (SELECT range(10) AS r, range(300000 + x - x) AS t "
            "FROM range(1) t(x))")
    assert matching.execute(ndcg).fetchall() == [(1.0,)]  # alone, each fits
    assert preferences.execute(edrc.replace("150", "1")).fetchall() == [(1.0,)]
    refusals: list[str] = []

    def run(cursor: duckdb.DuckDBPyConnection, sql: str) -> None:
        try:
            cursor.execute(sql).fetchall()
        except duckdb.Error as error:
            refusals.append(str(error))

    running = threading.Thread(target=run, args=(preferences, edrc))
    running.start()
    while running.is_alive():  # whichever step comes second is refused
        run(matching, ndcg)
    running.join()
    assert refusals, "neither step saw the other's memory"
    assert re.search(r"(ndcg|edrc): Out of Memory Error: the native (matching|preference) step "
                     r"could not allocate 32\.0 MiB for a row of \d+ (truth )?items "
                     r"\(3\d\.\d MiB/61\.0 MiB used by it\)", refusals[0]), refusals[0]
    con.close()


def test_nulls_give_null(both):
    sql = """SELECT edrc(NULL::INT[], [(1, 2)]), edrc([1, 2], [(1, 2)], NULL),
                    edrc([1, 2], [(3, 4)]), edrc_preferences([(1, 2)], [(1, 2)], 'ap', NULL),
                    spearman(NULL::INT[], MAP {1: 1.0}), spearman([1, 2], MAP {1: 1.0, 2: 1.0}),
                    fcp([1], MAP {1: 2.0})"""
    with_native, _ = both
    assert with_native.execute(sql).fetchall() == [(None,) * 7]


def test_a_cursor_registered_again_gets_the_native_step():
    connection = duckrank.connect()
    cursor = duckrank.register(connection.cursor())
    sql = "SELECT edrc(rec, [(1, 2)]) FROM (SELECT unnest([[1, 2]]) AS rec)"
    assert "duckrank_native_edrc" in plan(cursor, sql)
    assert cursor.execute(sql).fetchall() == [(1.0,)]
    connection.close()
