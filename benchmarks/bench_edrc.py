"""Time edrc on long lists with many truth preferences, and the rank correlations at 1M users.

edrc: each user has a ``rec`` of ``--items`` distinct BIGINT ids (shuffled) drawn from ids
0 .. 1.2 * items, and ``--prefs`` truth preferences between random ids of that range (so some
involve items the system did not rank), each preferring the smaller id. The truth is acyclic by
construction and deep (random pairs over a hidden total order give long paths), the hard case for
the closure. Users are generated in chunks of bounded memory, straight to Arrow. ``edrc`` runs
the native step (duckrank/matching/native/edrc.c) when it is loaded; the reference line is
the Python UDF the macro called before it (and still calls without it) for these integer ids,
``duckrank_edrc_int``, called with the macro's arguments.

Rank correlations: ``--corr-users`` users with a ``rec`` of 100 distinct BIGINT ids from a
catalogue of 10,000 and a truth MAP(BIGINT, DOUBLE) of 20 items graded 1..5 (12 of them in rec,
so ties), next to binary ``ndcg(rec, truth ids, 100)`` on the same lists, the issue's yardstick,
and spearman through the Python UDF (``duckrank_spearman_int``, the macro's path without the
native step).

    .venv/bin/python -m benchmarks.bench_edrc                 # the full target (a few minutes)
    .venv/bin/python -m benchmarks.bench_edrc --quick         # a smoke run, seconds
    .venv/bin/python -m benchmarks.bench_edrc --users 200 --corr-users 0 --repeat 1
    .venv/bin/python -m benchmarks.bench_edrc --users 10000 --corr-users 0 --repeat 1 \
        --no-warm-up --only "edrc, Python UDF" "edrc linear" "scan floor"

Prints one line per query: median seconds over ``--repeat`` runs after a warm-up, rows per
second, the peak resident memory above that before the runs, the ratio to the reference line of
its section (``edrc, Python UDF``, ``ndcg@100``), the same for the process's CPU time (steadier
on a shared machine) and the value; then one ``goal`` line per issue 19 goal (edrc at least 10x
faster than the Python UDF; each correlation within 3x of ndcg@100), judged on wall time.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

import duckrank
from duckrank.matching import native

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
          ) -> tuple[float, float, float, object]:
    """(median wall seconds, median CPU seconds of the process, peak MB above the resident memory
    before the timed runs, value). On a shared machine the CPU time is the steadier ratio."""
    if warm_up:
        run()
    Path("/proc/self/clear_refs").write_text("5")  # reset the high-water mark
    before = _status_mb("VmRSS")
    walls, cpus, value = [], [], None
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        value = run()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), _status_mb("VmHWM") - before, value


_INTEGER_IDS = ("rec::BIGINT[]"
                " || list_transform(truth, lambda p: struct_extract_at(p, 1))::BIGINT[]"
                " || list_transform(truth, lambda p: struct_extract_at(p, 2))::BIGINT[]")
EDRC_QUERIES = {
    "edrc, Python UDF": f"SELECT avg(duckrank_edrc_int({_INTEGER_IDS}, len(rec), len(truth), "
    "typeof(truth), 'linear')) FROM ev",
    "edrc linear": "SELECT avg(edrc(rec, truth)) FROM ev",
    "edrc ap": "SELECT avg(edrc(rec, truth, 'ap')) FROM ev",
    # Reads every list element (the last preference's item forces its whole list to be read).
    "scan floor": "SELECT sum(list_sum(rec)) + sum(truth[-1].better) FROM ev",
}
CORRELATIONS = ("spearman", "kendall_tau", "ap_correlation", "fcp")
CORRELATION_QUERIES = {
    "ndcg@100": "SELECT avg(ndcg(rec, truth_ids, 100)) FROM graded",
    **{name: f"SELECT avg({name}(rec, truth)) FROM graded" for name in CORRELATIONS},
    "spearman, Python UDF": "SELECT avg(duckrank_spearman_int(rec || map_keys(truth), len(rec), "
    "map_values(truth)::DOUBLE[])) FROM graded",
    "scan floor": "SELECT sum(list_sum(rec)) + sum(list_sum(map_values(truth))) FROM graded",
}


def _section(con: duckdb.DuckDBPyConnection, users: int, queries: dict[str, str],
             args: argparse.Namespace) -> dict[str, float]:
    """Runs and prints the section's queries; returns their (wall, CPU) seconds by name."""
    reference, seconds_of = None, {}
    for name, sql in queries.items():
        if args.only and name not in args.only:
            continue
        wall, cpu, peak, value = timed(lambda sql=sql: con.execute(sql).fetchall()[0][0],
                                       args.repeat, not args.no_warm_up)
        reference = reference or (wall, cpu)
        seconds_of[name] = (wall, cpu)
        print(f"{name:26s} {wall:8.3f} s {users / wall:12,.0f} rows/s  peak +{peak:5.0f} MB"
              f"  {wall / reference[0]:6.2f}x (CPU {cpu:7.3f} s, {cpu / reference[1]:5.2f}x)"
              f"  value {value}", flush=True)
    return seconds_of


def _goal(text: str, ratios: tuple[float, float], met: Callable[[float], bool]) -> None:
    wall, cpu = ratios
    print(f"goal: {text:44s} {wall:6.2f}x (CPU {cpu:5.2f}x)  "
          f"{'met' if met(wall) else 'NOT MET'}", flush=True)


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
    print(f"native step: {native.status(con).reason}")
    if args.users:
        start = time.perf_counter()
        con.register("generated", make_table(args.users, args.items, args.prefs))
        con.execute("CREATE TABLE ev AS SELECT * FROM generated")
        con.unregister("generated")
        print(f"edrc: {args.users:,} users x {args.items:,} items x {args.prefs:,} prefs, built in "
              f"{time.perf_counter() - start:.1f} s, {args.threads} threads")
        seconds = _section(con, args.users, EDRC_QUERIES, args)
        if {"edrc, Python UDF", "edrc linear"} <= seconds.keys():
            speed_up = tuple(p / n for p, n in zip(seconds["edrc, Python UDF"],
                                                   seconds["edrc linear"], strict=True))
            _goal("edrc linear faster than the Python UDF by", speed_up, lambda r: r >= 10)
    if args.corr_users:
        start = time.perf_counter()
        con.register("generated_grades", graded_table(args.corr_users))
        con.execute("CREATE TABLE graded AS SELECT * FROM generated_grades")
        con.unregister("generated_grades")
        print(f"rank correlations: {args.corr_users:,} users x 100 items, 20 graded, built in "
              f"{time.perf_counter() - start:.1f} s")
        seconds = _section(con, args.corr_users, CORRELATION_QUERIES, args)
        for name in CORRELATIONS:
            if {name, "ndcg@100"} <= seconds.keys():
                ratio = tuple(c / n for c, n in zip(seconds[name], seconds["ndcg@100"],
                                                    strict=True))
                _goal(f"{name} over ndcg@100 at most 3x", ratio, lambda r: r <= 3)
    con.close()


if __name__ == "__main__":
    main()
