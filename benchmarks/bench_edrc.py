"""Time edrc on long lists with many truth preferences, and the rank correlations at 1M users.

edrc: each user has a ``rec`` of ``--items`` distinct BIGINT ids (shuffled) drawn from ids
0 .. 1.2 * items, and ``--prefs`` truth preferences between random ids of that range (so some
involve items the system did not rank), each preferring the smaller id. The truth is acyclic by
construction and deep (random pairs over a hidden total order give long paths), the hard case for
the level-by-level closure. Users are generated in chunks of bounded memory, straight to Arrow.
Next to ``edrc`` it times what its arguments cost before the kernel runs (a UDF that returns
zeros, given the macro's arguments) and the same UDF given the ids as ``BIGINT[]`` rather than
the UNION of list types the macro passes (DuckDB's Arrow export of a UNION is slow).

Rank correlations: ``--corr-users`` users with a ``rec`` of 100 distinct BIGINT ids from a
catalogue of 10,000 and a truth MAP(BIGINT, DOUBLE) of 20 items graded 1..5 (12 of them in rec,
so ties), next to binary ``ndcg(rec, truth ids, 100)`` on the same lists, the issue's yardstick.

    .venv/bin/python -m benchmarks.bench_edrc                 # the full target (a few minutes)
    .venv/bin/python -m benchmarks.bench_edrc --quick         # a smoke run, seconds
    .venv/bin/python -m benchmarks.bench_edrc --users 200 --corr-users 0 --repeat 1
    .venv/bin/python -m benchmarks.bench_edrc --users 10000 --corr-users 0 --repeat 1 \
        --no-warm-up --only "edrc linear" "edrc, ids as BIGINT[]" "arguments only" "scan floor"

Prints one line per query: median seconds over ``--repeat`` runs after a warm-up, rows per
second, the peak resident memory above that before the runs, the ratio to the reference line of
its section (``edrc linear``, ``ndcg@100``) and the value.
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

import duckrank
from duckrank.engines.python_udfs import UDFS, PythonUDF

SEED = 20240610
CHUNK_USERS = 256
CORR_CHUNK_USERS = 65_536
CATALOGUE = 10_000


def _chunk(first_user: int, users: int, items: int, prefs: int) -> pa.RecordBatch:
    rng = np.random.default_rng([SEED, first_user, items, prefs])
    pool = int(items * 1.2)
    rec = np.argsort(rng.random((users, pool)), axis=1)[:, :items].astype(np.int64)
    a = rng.integers(0, pool, (users, prefs))
    b = (a + rng.integers(1, pool, (users, prefs))) % pool  # never equal to a
    pairs = pa.StructArray.from_arrays(
        [pa.array(np.minimum(a, b).ravel()), pa.array(np.maximum(a, b).ravel())],
        names=["better", "worse"],
    )
    return pa.RecordBatch.from_pydict({
        "uid": pa.array(np.arange(first_user, first_user + users, dtype=np.int64)),
        "rec": pa.ListArray.from_arrays(
            pa.array((np.arange(users + 1) * items).astype(np.int32)), pa.array(rec.ravel())),
        "truth": pa.ListArray.from_arrays(
            pa.array((np.arange(users + 1) * prefs).astype(np.int32)), pairs),
    })


def make_table(users: int, items: int, prefs: int) -> pa.Table:
    batches = [
        _chunk(first, min(CHUNK_USERS, users - first), items, prefs)
        for first in range(0, users, CHUNK_USERS)
    ]
    return pa.Table.from_batches(batches)


def _graded_chunk(first_user: int, users: int) -> pa.RecordBatch:
    """rec: 100 distinct ids; truth: 12 of them plus 8 others, graded 1..5."""
    rng = np.random.default_rng([SEED, first_user, 1])
    # Distinct ids per user: a random start and stride through the catalogue (a prime).
    start = rng.integers(0, CATALOGUE, (users, 1))
    ids = (start + np.arange(120) * 7919) % CATALOGUE
    ids = np.take_along_axis(ids, np.argsort(rng.random((users, 120)), axis=1), axis=1)
    rec = ids[:, :100]
    graded = np.concatenate([ids[:, :12], ids[:, 100:108]], axis=1)
    grades = rng.integers(1, 6, graded.shape).astype(np.float64)

    def lists(values: np.ndarray) -> pa.ListArray:
        width = values.shape[1]
        offsets = pa.array((np.arange(users + 1) * width).astype(np.int32))
        return pa.ListArray.from_arrays(offsets, pa.array(values.ravel()))

    offsets = pa.array((np.arange(users + 1) * graded.shape[1]).astype(np.int32))
    return pa.RecordBatch.from_pydict({
        "rec": lists(rec),
        "truth": pa.MapArray.from_arrays(offsets, pa.array(graded.ravel()),
                                         pa.array(grades.ravel())),
        "truth_ids": lists(graded),
    })


def graded_table(users: int) -> pa.Table:
    return pa.Table.from_batches([
        _graded_chunk(first, min(CORR_CHUNK_USERS, users - first))
        for first in range(0, users, CORR_CHUNK_USERS)
    ])


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise KeyError(field)


def timed(run: Callable[[], object], repeat: int, warm_up: bool
          ) -> tuple[float, float, object]:
    """(median seconds, peak MB above the resident memory before the timed runs, value)."""
    if warm_up:
        run()
    Path("/proc/self/clear_refs").write_text("5")  # reset the high-water mark
    before = _status_mb("VmRSS")
    times, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = run()
        times.append(time.perf_counter() - start)
    return statistics.median(times), _status_mb("VmHWM") - before, value


def _zeros(arguments: int) -> Callable:
    def zeros(ids, *rest):
        return pa.array(np.zeros(len(ids)))

    zeros.__signature__ = inspect.Signature([
        inspect.Parameter(f"arg{i}", inspect.Parameter.POSITIONAL_ONLY) for i in range(arguments)
    ])
    return zeros


def _register_variants(con: duckdb.DuckDBPyConnection, udf: str) -> None:
    """``<udf>_bigint_ids``: duckrank's own UDF function, given the ids as BIGINT[]; and
    ``<udf>_arguments`` / ``<udf>_arguments_bigint``: UDFs that return zeros, given the same."""
    own = next(u for u in UDFS if u.name == udf)
    bigint = ("BIGINT[]", *own.parameters[1:])
    PythonUDF(f"{udf}_bigint_ids", own.function, bigint, "DOUBLE").register(con)
    zeros = _zeros(len(own.parameters))
    PythonUDF(f"{udf}_arguments", zeros, own.parameters, "DOUBLE").register(con)
    PythonUDF(f"{udf}_arguments_bigint", zeros, bigint, "DOUBLE").register(con)


_IDS = ("rec || list_transform(truth, lambda p: struct_extract_at(p, 1)) "
        "|| list_transform(truth, lambda p: struct_extract_at(p, 2))")
_REST = "len(rec), len(truth), typeof(truth), 'linear'"
EDRC_QUERIES = {
    "edrc linear": "SELECT avg(edrc(rec, truth)) FROM ev",
    "edrc ap": "SELECT avg(edrc(rec, truth, 'ap')) FROM ev",
    "edrc, ids as BIGINT[]": f"SELECT avg(duckrank_edrc_bigint_ids({_IDS}, {_REST})) FROM ev",
    "arguments only": f"SELECT avg(duckrank_edrc_arguments({_IDS}, {_REST})) FROM ev",
    "arguments only, BIGINT[]":
        f"SELECT avg(duckrank_edrc_arguments_bigint({_IDS}, {_REST})) FROM ev",
    "scan floor": "SELECT sum(len(rec)) + sum(len(truth)) + sum(list_sum(rec)) FROM ev",
}
CORRELATION_QUERIES = {
    "ndcg@100": "SELECT avg(ndcg(rec, truth_ids, 100)) FROM graded",
    **{name: f"SELECT avg({name}(rec, truth)) FROM graded"
       for name in ("spearman", "kendall_tau", "ap_correlation", "fcp")},
    "spearman, ids as BIGINT[]": "SELECT avg(duckrank_spearman_bigint_ids(rec || "
    "map_keys(truth), len(rec), map_values(truth))) FROM graded",
    "arguments only": "SELECT avg(duckrank_spearman_arguments(list_transform(rec, lambda x: "
    "x::VARCHAR) || map_keys(truth)::VARCHAR[], len(rec), map_values(truth))) FROM graded",
    "arguments only, BIGINT[]": "SELECT avg(duckrank_spearman_arguments_bigint(rec || "
    "map_keys(truth), len(rec), map_values(truth))) FROM graded",
    "scan floor": "SELECT sum(list_sum(rec)) + sum(list_sum(map_values(truth))) FROM graded",
}


def _section(con: duckdb.DuckDBPyConnection, users: int, queries: dict[str, str],
             args: argparse.Namespace) -> None:
    reference = None
    for name, sql in queries.items():
        if args.only and name not in args.only:
            continue
        seconds, peak, value = timed(lambda sql=sql: con.execute(sql).fetchall()[0][0],
                                     args.repeat, not args.no_warm_up)
        reference = reference or seconds
        print(f"{name:26s} {seconds:8.3f} s {users / seconds:12,.0f} rows/s  peak +{peak:5.0f} MB"
              f"  {seconds / reference:6.2f}x  value {value}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--items", type=int, default=1_000)
    parser.add_argument("--prefs", type=int, default=10_000)
    parser.add_argument("--corr-users", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-warm-up", action="store_true", help="time the first run")
    parser.add_argument("--only", nargs="+", help="these query names only (the first one of "
                        "each section is its ratios' reference)")
    parser.add_argument("--quick", action="store_true", help="200 and 20,000 users, one run")
    args = parser.parse_args()
    if args.quick:
        args.users, args.corr_users, args.repeat = 200, 20_000, 1

    con = duckrank.connect(config={"threads": args.threads})
    if args.users:
        start = time.perf_counter()
        con.register("generated", make_table(args.users, args.items, args.prefs))
        con.execute("CREATE TABLE ev AS SELECT * FROM generated")
        con.unregister("generated")
        print(f"edrc: {args.users:,} users x {args.items:,} items x {args.prefs:,} prefs, built in "
              f"{time.perf_counter() - start:.1f} s, {args.threads} threads")
        _register_variants(con, "duckrank_edrc")
        _section(con, args.users, EDRC_QUERIES, args)
    if args.corr_users:
        start = time.perf_counter()
        con.register("generated_grades", graded_table(args.corr_users))
        con.execute("CREATE TABLE graded AS SELECT * FROM generated_grades")
        con.unregister("generated_grades")
        _register_variants(con, "duckrank_spearman")
        print(f"rank correlations: {args.corr_users:,} users x 100 items, 20 graded, built in "
              f"{time.perf_counter() - start:.1f} s")
        _section(con, args.corr_users, CORRELATION_QUERIES, args)
    con.close()


if __name__ == "__main__":
    main()
