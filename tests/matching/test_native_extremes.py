"""The native functions (duckrank/matching/native/*.c) on the inputs that break careless C: ids at
the ends of BIGINT (a span high - low + 1 that wraps to 0), NULLs, empty and long lists, internal
functions called from SQL with inconsistent arguments, and duckrank_top_k as a window aggregate
(DuckDB's segment tree combines one state into many).

Expected values: hand calculations written in each test, and the SQL/Python path
(``duckrank.connect(native=False)``, which has no native step and is checked against the papers,
scipy and trec_eval in tests/metrics) on the same rows; for the window, DuckDB's own top-K
aggregate ``max({'k': key, 'v': item}, k)`` over the same window, and a plain-Python running top K.

The fuzz cases (``fuzz``) also run under AddressSanitizer and UndefinedBehaviorSanitizer:
``test_the_fuzz_cases_pass_under_asan_and_ubsan`` builds the library with ``scripts/build-native
--sanitize`` into a temporary directory and runs this file as a script in a subprocess with the
sanitizer runtime preloaded (``python tests/matching/test_native_extremes.py LIBRARY``); a finding
ends that process with the sanitizer's report, which the test shows.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

import duckrank
from duckrank.matching import native

MIN, MAX = -(2**63), 2**63 - 1
# The awkward ids: both ends of BIGINT and their neighbours, 0, -1, and ids far apart.
EXTREME = [MIN, MAX, MIN + 1, MAX - 1, 0, -1, 1, 10**12, -(10**12), 2**32, 2**31 - 1]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def both() -> tuple[duckdb.DuckDBPyConnection, duckdb.DuckDBPyConnection]:
    with_native, sql_only = duckrank.connect(), duckrank.connect(native=False)
    assert native.status(with_native).active
    yield with_native, sql_only
    with_native.close()
    sql_only.close()


def test_the_library_is_built_from_these_sources() -> None:
    """A library older than a C source would test old code: rebuild with scripts/build-native (or
    pip install -e . / python setup.py build_ext --inplace)."""
    library = native.library_path()
    assert library is not None
    sources = sorted(library.parent.glob("*.[ch]"))
    if not sources:
        pytest.skip("an installed library, away from its sources")
    stale = [s.name for s in sources if s.stat().st_mtime > library.stat().st_mtime]
    assert not stale, f"{library.name} is older than {stale}: run scripts/build-native"


# --- item 1: ids spanning the whole BIGINT range ----------------------------------------------

def test_edrc_with_ids_at_both_ends_of_bigint(both) -> None:
    """The issue's reproduction: a normal row, then a row whose ids span INT64_MIN..INT64_MAX
    (the direct-address table's span wrapped to 0: a segfault, or a NULL). By hand: truth prefers
    MIN to MAX; rec ranking MIN first agrees with the one preference (edrc 1.0), MAX first
    disagrees (-1.0)."""
    sql = ("SELECT edrc(r, t) FROM (VALUES (1, [1, 2, 3], [(1, 2)]), "
           "(2, [?::BIGINT, ?, 1000000000000], [(?::BIGINT, ?::BIGINT)]), "
           "(3, [?::BIGINT, ?, 5], [(?::BIGINT, ?::BIGINT)])) v(i, r, t) ORDER BY i")
    params = [MIN, MAX, MIN, MAX, MAX, MIN, MIN, MAX]
    for con in both:
        assert con.execute(sql, params).fetchall() == [(1.0,), (1.0,), (-1.0,)]


def test_edrc_preferences_with_ids_at_both_ends_of_bigint(both) -> None:
    """By hand: the system states the truth's one preference (agreement, 1.0), or its reverse
    (-1.0)."""
    for system, expected in (((MIN, MAX), 1.0), ((MAX, MIN), -1.0)):
        for con in both:
            got = con.execute("SELECT edrc_preferences([(?::BIGINT, ?::BIGINT)], "
                              "[(?::BIGINT, ?::BIGINT)])", [*system, MIN, MAX]).fetchone()[0]
            assert got == expected


@pytest.mark.parametrize("function", ["spearman", "kendall_tau", "ap_correlation", "fcp"])
def test_correlations_over_map_keys_at_both_ends_of_bigint(both, function) -> None:
    """rec ranks MIN, 0, MAX; the grades rank them MAX (3), 0 (2), MIN (1): the exact reverse,
    so by hand spearman = kendall_tau = ap_correlation = -1 and fcp (the concordant share) = 0.
    Ranked in grade order instead: 1, 1, 1 and 1. Both after a normal row, so that a stale table
    from it would show."""
    expected = {"spearman": -1.0, "kendall_tau": -1.0, "ap_correlation": -1.0, "fcp": 0.0}[function]
    sql = (f"SELECT {function}(r, MAP {{?::BIGINT: 1.0, 0: 2.0, ?::BIGINT: 3.0}}) FROM (VALUES "
           "(1, [7, 8, 9]), (2, [?::BIGINT, 0, ?]), (3, [?::BIGINT, 0, ?])) v(i, r) ORDER BY i")
    for con in both:
        rows = con.execute(sql, [MIN, MAX, MIN, MAX, MAX, MIN]).fetchall()
        assert rows == [(None,), (expected,), (1.0,)], con


def test_matching_with_ids_at_both_ends_of_bigint(both) -> None:
    """duckrank_match and duckrank_graded (hash tables, no span) on the same ids. By hand:
    precision@3 of [MIN, 5, MAX] against {MIN, MAX} = 2/3; graded MAP {MIN: 1, MAX: 3} with rec
    [MAX, 5, MIN] (exponential gain): dcg = 7 / log2(2) + 1 / log2(4) = 7.5 over the ideal
    7 + 1 / log2(3)."""
    for con in both:
        got = con.execute("SELECT precision_at([?::BIGINT, 5, ?], [?::BIGINT, ?], 3), "
                          "ndcg([?::BIGINT, 5, ?], MAP {?::BIGINT: 1.0, ?::BIGINT: 3.0})",
                          [MIN, MAX, MIN, MAX, MAX, MIN, MIN, MAX]).fetchone()
        assert got[0] == pytest.approx(2 / 3, abs=1e-15)
        assert got[1] == pytest.approx(7.5 / (7 + 1 / math.log2(3)), rel=1e-14)


# --- item 2: internal functions check what they are given --------------------------------------

@pytest.mark.parametrize("keys", [3, 1_000_000])
def test_native_correlation_refuses_fewer_grades_than_keys(both, keys) -> None:
    """The issue's reproduction: 3 keys and 1 grade read past the grade list (0.5 or 0.866 from
    whatever lay there; 1,000,000 keys sometimes a SIGSEGV). Now an error naming the function and
    both lengths."""
    con = both[0]
    with pytest.raises(duckdb.Error, match=rf"duckrank_native_correlation: spearman needs one "
                                           rf"grade per key, got {keys} keys and 1 grades"):
        con.execute("SELECT duckrank_native_correlation('spearman', range(?), range(?), [1.0])",
                    [keys, keys]).fetchall()
    with pytest.raises(duckdb.Error, match="got 1 keys and 2 grades"):
        con.execute("SELECT duckrank_native_correlation('fcp', [1], [1], [1.0, 2.0])").fetchall()


def test_native_correlation_checks_its_other_arguments(both) -> None:
    """Not lists, a NULL grade list (the row is NULL, as for a NULL rec or keys), a NULL function.
    By hand, keys [3, 2, 1] graded 1, 2, 3 with rec [1, 2, 3]: rec is in grade order, spearman 1."""
    con = both[0]
    with pytest.raises(duckdb.Error,
                       match="duckrank_native_correlation: rec and keys must be lists"):
        con.execute("SELECT duckrank_native_correlation('spearman', 1, 2, [1.0])").fetchall()
    with pytest.raises(duckdb.Error, match="function must be spearman"):
        con.execute("SELECT duckrank_native_correlation(NULL, [1], [1], [1.0])").fetchall()
    assert con.execute("SELECT duckrank_native_correlation('spearman', [1, 2], [1, 2], NULL)"
                       ).fetchall() == [(None,)]
    assert con.execute("SELECT duckrank_native_correlation('spearman', [1, 2, 3], [3, 2, 1], "
                       "[1.0, 2.0, 3.0])").fetchall() == [(1.0,)]


def test_duckrank_match_with_a_null_function_name(both) -> None:
    """The name is read for errors only; a NULL one (a column, so not folded away) is not read as
    a string. By hand: [1] against [1] at k = 1 is one hit at position 1."""
    rows = both[0].execute("SELECT duckrank_match(n, [1], [1], 1) FROM (VALUES (NULL::VARCHAR), "
                           "(repeat('x', 40))) t(n)").fetchall()
    assert [row[0]["pos"] for row in rows] == [[1], [1]]


# --- item 5: duckrank_top_k as a window aggregate ----------------------------------------------

def _running_top_k(items: list, keys: list, k: int, width: int | None) -> list:
    """Plain Python: per row, the items of the k largest (key, item) pairs among the rows of the
    window (all rows so far, or the last `width`), largest first; None when there are none."""
    out = []
    for i in range(len(items)):
        first = 0 if width is None else max(0, i - width + 1)
        window = list(zip(keys, items, strict=True))[first:i + 1]
        best = sorted(window, reverse=True)[:k]
        out.append([item for _, item in best] or None)
    return out


@pytest.mark.parametrize("item_type", ["BIGINT", "VARCHAR", "DOUBLE"])
@pytest.mark.parametrize("frame", ["", "ROWS BETWEEN 9 PRECEDING AND CURRENT ROW"])
def test_top_k_as_a_running_window(both, item_type, frame) -> None:
    """duckrank_top_k(...) OVER (ORDER BY i) gave NULL or too few items: its combine moved the
    pairs out of segment-tree states DuckDB combines again for later rows. Now each row's list
    equals DuckDB's max({'k': key, 'v': item}, 3) over the same window and a plain-Python running
    top 3 (strings longer than 12 bytes: the copies a kept string needs)."""
    con = both[0]
    item = {"BIGINT": "i % 17 - 8", "VARCHAR": "repeat('x', 13) || (i % 17)::VARCHAR",
            "DOUBLE": "(i % 17) / 4"}[item_type]
    rows = con.execute(f"""
        SELECT {item} AS item, (i * 7919) % 101 AS key,
               duckrank_top_k({item}, (i * 7919) % 101, 3) OVER w,
               list_transform(max({{'k': (i * 7919) % 101, 'v': {item}}}, 3) OVER w, lambda e: e.v)
        FROM range(2500) t(i) WINDOW w AS (ORDER BY i {frame}) ORDER BY i""").fetchall()
    items, keys, got, by_max = (list(column) for column in zip(*rows, strict=True))
    assert got == by_max
    assert got == _running_top_k(items, keys, 3, 10 if frame else None)


def test_top_k_window_partitions_and_group_by_still_agree(both) -> None:
    """Partitioned windows and the GROUP BY that evaluate uses, against max(struct, k), with two
    threads (combine from several partial states)."""
    con = both[0]
    con.execute("SET threads = 2")
    rows = con.execute("""
        SELECT duckrank_top_k(v, key, 4) OVER (PARTITION BY g ORDER BY i),
               list_transform(max({'k': key, 'v': v}, 4) OVER (PARTITION BY g ORDER BY i),
                              lambda e: e.v)
        FROM (SELECT i, i % 7 AS g, (i * 31) % 53 AS key, repeat('y', i % 20) || i::VARCHAR AS v
              FROM range(20000) t(i))""").fetchall()
    assert all(a == b for a, b in rows)
    grouped = con.execute("""
        SELECT duckrank_top_k(v, key, 4), list_transform(max({'k': key, 'v': v}, 4), lambda e: e.v)
        FROM (SELECT i % 7 AS g, (i * 31) % 53 AS key, repeat('y', i % 20) || i::VARCHAR AS v
              FROM range(200000) t(i)) GROUP BY g""").fetchall()
    assert len(grouped) == 7 and all(a == b for a, b in grouped)


# --- the fuzz cases: every native function, native against the SQL path ------------------------

def _rows(seed: int, count: int) -> list[dict]:
    """Random rows over ids drawn mostly from EXTREME: rec with NULL elements and repeats, a truth
    list, acyclic truth and system preferences (a hidden order: the metrics refuse a cycle), a
    graded map (unique keys, finite grades); NULL and empty lists; one long row."""
    rng = random.Random(seed)
    rows = []
    for index in range(count):
        pool = rng.sample(EXTREME, rng.randint(1, len(EXTREME)))
        pool += [rng.randint(MIN, MAX) for _ in range(rng.randint(0, 3))]
        length = 20_000 if index == count - 1 else rng.choice([0, 1, 2, 3, 5, 8, 13])
        if length > 100:
            pool = rng.sample(range(MIN, MAX, 2**40), 5000) + EXTREME
        order = rng.sample(pool, len(pool))

        def preferences(n: int, pool: list = pool, order: list = order) -> list:
            out = []
            for _ in range(n if len(pool) > 1 else 0):
                a, b = rng.sample(pool, 2)
                a, b = (a, b) if order.index(a) < order.index(b) else (b, a)
                out.append({"a": a, "b": b})
            return out

        keys = rng.sample(pool, rng.randint(0, len(pool)))
        rows.append({
            "rec": None if rng.random() < 0.05 else
            [None if rng.random() < 0.05 else rng.choice(pool) for _ in range(length)],
            "truth": None if rng.random() < 0.05 else rng.sample(pool, rng.randint(0, len(pool))),
            "prefs": preferences(rng.choice([0, 1, 2, 5, 20, 200 if length > 100 else 3])),
            "system": preferences(rng.choice([0, 1, 3, 8])),
            "keys": keys,
            "grades": [float(rng.choice([0, 1, 2, 3, 0.5])) for _ in keys],
        })
    return rows


# (what the SQL computes, per row of table f)
FUZZ_METRICS = {
    "edrc": "edrc(rec, prefs)",
    "edrc_exponential": "edrc(rec, prefs, discount := 'exponential')",
    "edrc_preferences": "edrc_preferences(system, prefs)",
    "spearman": "spearman(rec, graded)",
    "kendall_tau": "kendall_tau(rec, graded)",
    "ap_correlation": "ap_correlation(rec, graded)",
    "fcp": "fcp(rec, graded)",
    "precision_at_5": "precision_at(rec, truth, 5)",
    "ndcg": "ndcg(rec, truth)",
    "graded_ndcg": "ndcg(rec, graded)",
    "graded_err_3": "err(rec, graded, 3)",
}


def _table(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    con.execute("CREATE OR REPLACE TEMP TABLE raw (i BIGINT, rec BIGINT[], truth BIGINT[], "
                "prefs STRUCT(a BIGINT, b BIGINT)[], system STRUCT(a BIGINT, b BIGINT)[], "
                "keys BIGINT[], grades DOUBLE[])")
    con.executemany("INSERT INTO raw VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [[i, r["rec"], r["truth"], r["prefs"], r["system"], r["keys"], r["grades"]]
                     for i, r in enumerate(rows)])
    con.execute("CREATE OR REPLACE TEMP TABLE f AS SELECT i, rec, truth, prefs, system, "
                "map(keys, grades) AS graded FROM raw")


def _outcome(con: duckdb.DuckDBPyConnection, sql: str) -> list:
    try:
        return con.execute(f"SELECT {sql} FROM f ORDER BY i").fetchall()
    except duckdb.Error as error:
        return [("error", str(error).split("\n")[0])]


def fuzz(with_native: duckdb.DuckDBPyConnection, sql_only: duckdb.DuckDBPyConnection,
         seeds: range = range(3), count: int = 60) -> list[str]:
    """Every fuzz case through both connections; the cases where they differ."""
    problems = []
    for seed in seeds:
        rows = _rows(seed, count)
        for con in (with_native, sql_only):
            _table(con, rows)
        for name, sql in FUZZ_METRICS.items():
            got, expected = _outcome(with_native, sql), _outcome(sql_only, sql)
            same = len(got) == len(expected) and all(
                g == e or (isinstance(g[0], float) and isinstance(e[0], float)
                           and g[0] == pytest.approx(e[0], abs=1e-12))
                for g, e in zip(got, expected, strict=True))
            if not same:
                problems.append(f"seed {seed}, {name}: native {got[:4]}... SQL {expected[:4]}...")
        # duckrank_top_k over every id of the rows, grouped, against DuckDB's max(struct, k)
        top = with_native.execute("""
            SELECT g, duckrank_top_k(id, key, 5), list_transform(max({'k': key, 'v': id}, 5)
                   FILTER (WHERE id IS NOT NULL), lambda e: e.v)
            FROM (SELECT i % 4 AS g, unnest(rec) AS id, hash(i) % 7 AS key FROM f)
            GROUP BY g""").fetchall()
        problems += [f"seed {seed}, top_k group {g}: {a} != {b}" for g, a, b in top if a != b]
    problems += _fused_differences(with_native, sql_only)
    # the extremes of the internal functions' own checks
    for sql in ("duckrank_native_fusion_layout([0, 70000]::INTEGER[], ['a', 'b'], [1.0, 2.0], "
                "[], 1023)",
                "duckrank_native_fusion_layout([]::INTEGER[], []::VARCHAR[], []::DOUBLE[], [], 0)",
                "duckrank_native_fusion_split([1.0, 2.0], [3, -1])",
                "duckrank_native_fusion_order([1.0, 2.0], ['a'], [1, 2])",
                "duckrank_native_correlation('spearman', [1, 2, 3], [1, 2, 3], [1.0])",
                "duckrank_native_correlation('kendall_tau', [], [], [])",
                "duckrank_native_correlation('fcp', [NULL, 1], [1, NULL], [1.0, 2.0])",
                "duckrank_match('x', [-9223372036854775808, 9223372036854775807], "
                "[9223372036854775807], 9223372036854775807)",
                "duckrank_grades([-1, 0], MAP {-1: 1.0}, 2)",
                "duckrank_top_k(-9223372036854775808, 9223372036854775807, 4294967295)"):
        # a clear error is fine here; a crash or a sanitizer report is not
        with contextlib.suppress(duckdb.Error):
            with_native.execute(f"SELECT {sql}").fetchall()
    return problems


def _fused_differences(with_native: duckdb.DuckDBPyConnection,
                       sql_only: duckdb.DuckDBPyConnection) -> list[str]:
    """Rank fusion's native form (fusion.c) against its SQL form on random runs: 1 to 6 systems,
    lists of 0 to 300 items from a small catalogue (shared items), tied scores, long and short
    texts, one query of 20,000 rows."""
    rng = random.Random(7)
    rows = []
    for query in range(40):
        for system in range(rng.randint(1, 6)):
            length = 20_000 if query == 39 and system == 0 else rng.choice([0, 1, 2, 7, 30, 300])
            catalogue = max(length * 2, 1)
            items = rng.sample(range(catalogue), length)
            rows += [(f"s{system}", f"q{query}", ("long-item-text-" if i % 3 else "d") + str(i),
                      float(rng.randint(0, 9))) for i in items]
    problems = []
    for con in (with_native, sql_only):
        con.execute("CREATE OR REPLACE TEMP TABLE fusion_runs (system VARCHAR, query VARCHAR, "
                    "item VARCHAR, score DOUBLE)")
        con.executemany("INSERT INTO fusion_runs VALUES (?, ?, ?, ?)", rows)
    for call in ("fuse_wsum('fusion_runs', weights := (SELECT map(list(system), "
                 "list(1.0 / (1 + ascii(system[2:])))) FROM (SELECT DISTINCT system FROM "
                 "fusion_runs)))", "fuse_rrf('fusion_runs', norm := 'rank')",
                 "fuse_mnz('fusion_runs', norm := 'zmuv')", "fuse_med('fusion_runs')"):
        sql = f"SELECT query, item, score, rank FROM {call} ORDER BY query, rank"
        got, expected = _outcome_of(with_native, sql), _outcome_of(sql_only, sql)
        same = len(got) == len(expected) and all(
            g[:2] == e[:2] and g[3] == e[3] and g[2] == pytest.approx(e[2], rel=1e-12, abs=1e-12)
            for g, e in zip(got, expected, strict=True))
        if not same:
            problems.append(f"fusion {call[:20]}: native {got[:3]}... SQL {expected[:3]}...")
    return problems


def _outcome_of(con: duckdb.DuckDBPyConnection, sql: str) -> list:
    try:
        return con.execute(sql).fetchall()
    except duckdb.Error as error:
        return [("error", str(error).split("\n")[0], None, None)]


def test_fuzz_cases_equal_the_sql_path(both) -> None:
    """The fuzz cases against the normal build: every metric equals the SQL path, row by row."""
    assert fuzz(*both) == []


def _sanitizer_runtime() -> list[str] | None:
    """The libraries to preload for an ASan build in Python (libstdc++ too: ASan intercepts
    __cxa_throw, which DuckDB's errors use, and must find it when it starts), or None."""
    compiler = shutil.which(os.environ.get("CC", "gcc"))
    if compiler is None:
        return None
    found = []
    for name in ("libasan.so", "libstdc++.so"):
        path = subprocess.run([compiler, f"-print-file-name={name}"], capture_output=True,
                              text=True).stdout.strip()
        if not os.path.isabs(path) or not os.path.exists(path):
            return None
        found.append(path)
    return found


def test_the_fuzz_cases_pass_under_asan_and_ubsan(tmp_path) -> None:
    """The same cases with the library built with -fsanitize=address,undefined (about 20 s: the
    build, and DuckDB under ASan's allocator): an out-of-bounds read or write, a use after free or
    an undefined operation ends the subprocess with a report."""
    runtime = _sanitizer_runtime()
    if runtime is None:
        pytest.skip("no gcc with libasan here")
    library = tmp_path / "_match_sanitized.so"
    subprocess.run([str(ROOT / "scripts" / "build-native"), "--sanitize", "-o", str(library)],
                   check=True, cwd=ROOT, capture_output=True)
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    env = dict(os.environ, LD_PRELOAD=" ".join(runtime), XDG_CACHE_HOME=str(cache),
               ASAN_OPTIONS="detect_leaks=0:abort_on_error=0",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    result = subprocess.run([sys.executable, __file__, str(library)], env=env, cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    report = result.stdout + result.stderr[-6000:]
    assert result.returncode == 0 and "fuzz: ok" in result.stdout, report


if __name__ == "__main__":  # the subprocess of the test above
    native.library_path = lambda: Path(sys.argv[1])
    fast, slow = duckrank.connect(), duckrank.connect(native=False)
    assert native.status(fast).active, native.status(fast)
    fast.execute("SET threads = 2")
    differences = fuzz(fast, slow)
    for problem in differences:
        print(problem)
    # the reproductions, and the window
    fast.execute("SELECT edrc(r, t) FROM (VALUES ([1, 2, 3], [(1, 2)]), "
                 "([?::BIGINT, ?, 1000000000000], [(?::BIGINT, ?::BIGINT)])) v(r, t)",
                 [MIN, MAX, MIN, MAX]).fetchall()
    for keys in (3, 1_000_000):
        with contextlib.suppress(duckdb.Error):
            fast.execute("SELECT duckrank_native_correlation('spearman', range(?), range(?), "
                         "[1.0])", [keys, keys]).fetchall()
    fast.execute("SELECT duckrank_top_k(repeat('x', 13) || i::VARCHAR, i % 101, 3) "
                 "OVER (ORDER BY i) FROM range(3000) t(i)").fetchall()
    print("fuzz: ok" if not differences else "fuzz: differences")
    sys.exit(1 if differences else 0)
