"""Time edrc on long lists with many truth preferences (the preference issue's scale target).

Each user has a ``rec`` of ``--items`` distinct BIGINT ids (shuffled) drawn from ids
0 .. 1.2 * items, and ``--prefs`` truth preferences between random ids of that range (so some
involve items the system did not rank), each preferring the smaller id. The truth is acyclic by
construction and deep (random pairs over a hidden total order give long paths), the hard case for
the level-by-level closure. Users are generated in chunks of bounded memory, straight to Arrow.

    .venv/bin/python -m benchmarks.bench_edrc --users 10000            # the full target
    .venv/bin/python -m benchmarks.bench_edrc --users 200 --repeat 1   # a quick check

Prints one line per query with seconds and rows per second (median of ``--repeat`` runs).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pyarrow as pa

import duckrank

SEED = 20240610
CHUNK_USERS = 256


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


QUERIES = {
    "edrc linear": "SELECT avg(edrc(rec, truth)) FROM ev",
    "edrc ap": "SELECT avg(edrc(rec, truth, 'ap')) FROM ev",
    "scan floor": "SELECT sum(len(rec)) + sum(len(truth)) + sum(list_sum(rec)) FROM ev",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--items", type=int, default=1_000)
    parser.add_argument("--prefs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    con = duckrank.connect(config={"threads": args.threads})
    start = time.perf_counter()
    con.register("generated", make_table(args.users, args.items, args.prefs))
    con.execute("CREATE TABLE ev AS SELECT * FROM generated")
    print(f"data: {args.users} users x {args.items} items x {args.prefs} prefs, "
          f"built in {time.perf_counter() - start:.1f} s")
    for name, sql in QUERIES.items():
        con.execute(sql).fetchall()  # warm-up
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            value = con.execute(sql).fetchall()[0][0]
            times.append(time.perf_counter() - start)
        median = statistics.median(times)
        print(f"{name:12s} {median:8.3f} s  {args.users / median:12,.0f} rows/s  value {value}")
    con.close()


if __name__ == "__main__":
    main()
