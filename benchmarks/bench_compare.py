"""Time the whole comparison report (``duckrank.compare``) against ranx's ``compare``, end to end.

Both start from the same TREC files (``--systems`` runs of ``--users`` queries, ``--depth``
items each, and binary qrels) and end with the report: files read, every system scored on
``ndcg@10``, ``map@100``, ``mrr@100`` and ``precision@5`` per query, every pair of systems tested
(ranx tests every pair) with the same test and trials:

* the paired t-test (ranx: ``stat_test="student"``, its default);
* Fisher's randomization test, ``--trials`` trials (ranx: ``stat_test="fisher"``,
  ``n_permutations``); duckrank without intervals (the same work as ranx), then with its default
  95% bootstrap intervals of every mean (``--trials`` resamples: work ranx does not do).

ranx's numba kernels are compiled on a small warm-up comparison first (not timed); duckrank's
time includes ``duckrank.connect()``. One run each; the machine is shared, so read the ratios,
measured in the same run. Prints one line per measurement: wall and CPU seconds, the peak
resident memory above the memory before it, and the ratio to ranx's time.

    .venv/bin/python -m benchmarks.bench_compare            # 5 systems x 100,000 users
    .venv/bin/python -m benchmarks.bench_compare --quick    # 5 systems x 5,000 users
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv

import duckrank
from benchmarks.bench_stats import line, timed
from benchmarks.data import DATA_DIR

SEED = 20240612
ITEMS = 50  # each query's candidate items
RELEVANT = 3  # relevant items per query
# duckrank's names and ranx's for the same numbers on binary qrels (lists longer than 5, so
# precision divides by 5 in both).
METRICS = {"ndcg@10": "ndcg@10", "map@100": "map@100", "mrr": "mrr@100",
           "precision@5": "precision@5"}


def _write(path: Path, columns: dict[str, pa.Array]) -> None:
    options = pa_csv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
    pa_csv.write_csv(pa.table(columns), path, options)


def write_files(users: int, systems: int, depth: int) -> tuple[list[Path], Path]:
    """TREC runs (system s pushes the relevant items up by 0.15 s: later systems are better, by
    margins the tests can resolve) and binary qrels, written once under benchmarks/data/."""
    folder = DATA_DIR / f"compare_{users}_{systems}_{depth}"
    runs = [folder / f"system{s}.run" for s in range(systems)]
    qrels = folder / "qrels.txt"
    if qrels.exists() and all(run.exists() for run in runs):
        return runs, qrels
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    queries = np.arange(users).astype(str)
    relevant = np.argsort(rng.random((users, ITEMS)), axis=1)[:, :RELEVANT]
    is_relevant = np.zeros((users, ITEMS), dtype=bool)
    np.put_along_axis(is_relevant, relevant, True, axis=1)
    _write(qrels, {"q": np.repeat(queries, RELEVANT), "zero": np.zeros(users * RELEVANT, int),
                   "doc": ("d" + relevant.ravel().astype(str).astype(object)).astype(str),
                   "rel": np.ones(users * RELEVANT, int)})
    for s, path in enumerate(runs):
        score = rng.random((users, ITEMS)) + 0.15 * s * is_relevant
        order = np.argsort(-score, axis=1)[:, :depth]
        top = np.take_along_axis(score, order, axis=1)
        _write(path, {
            "q": np.repeat(queries, depth), "q0": np.full(users * depth, "Q0"),
            "doc": ("d" + order.ravel().astype(str).astype(object)).astype(str),
            "rank": np.tile(np.arange(1, depth + 1), users), "score": top.ravel(),
            "tag": np.full(users * depth, f"system{s}"),
        })
    return runs, qrels


def ranx_compare(runs: list[Path], qrels: Path, test: str, trials: int) -> object:
    from ranx import Qrels, Run, compare

    return compare(Qrels.from_file(str(qrels), kind="trec"),
                   [Run.from_file(str(run), kind="trec") for run in runs],
                   list(METRICS.values()), stat_test=test, n_permutations=trials, max_p=0.05)


def duckrank_compare(runs: list[Path], qrels: Path, test: str, trials: int,
                     level: float | None) -> duckrank.reports.compare.Report:
    return duckrank.compare(runs, str(qrels), list(METRICS), test=test, trials=trials,
                            level=level, correction=None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--systems", type=int, default=5)
    parser.add_argument("--depth", type=int, default=20, help="items per query in each run")
    parser.add_argument("--trials", type=int, default=100,
                        help="randomization trials and bootstrap resamples, the same for both "
                        "(default 100: ranx's Fisher test takes about 34 s of CPU per 100 "
                        "trials at 5 x 100,000 users, 40 tests)")
    parser.add_argument("--tests", nargs="+", choices=("t", "randomization"),
                        default=["t", "randomization"])
    parser.add_argument("--quick", action="store_true", help="5,000 users: a smoke run")
    args = parser.parse_args()
    users = 5_000 if args.quick else args.users

    runs, qrels = write_files(users, args.systems, args.depth)
    small_runs, small_qrels = write_files(100, 2, args.depth)
    for test in ("student", "fisher"):
        ranx_compare(small_runs, small_qrels, test, 10)  # numba compiles here, untimed
    print(f"{args.systems} systems x {users:,} users x {args.depth} items, "
          f"{len(METRICS)} metrics, every pair, {args.trials:,} trials (TREC files)")

    reports: dict[str, Any] = {}

    def keep(name: str, make: Callable[[], Any]) -> Callable[[], Any]:
        return lambda: reports.__setitem__(name, make())

    for test, ranx_test in (("t", "student"), ("randomization", "fisher")):
        if test not in args.tests:
            continue
        ranx = timed(keep(ranx_test, lambda t=ranx_test: ranx_compare(runs, qrels, t,
                                                                          args.trials)),
                     1, warm_up=False)
        line(f"ranx compare, {ranx_test}", ranx)
        mine = timed(keep(test, lambda t=test: duckrank_compare(runs, qrels, t, args.trials,
                                                                None)), 1, warm_up=False)
        line(f"duckrank compare, {test}", mine, ranx, "ranx's")
        if test == "randomization":
            line("  + 95% bootstrap intervals (the default)", timed(
                lambda: duckrank_compare(runs, qrels, "randomization", args.trials, 0.95), 1,
                warm_up=False), ranx, "ranx's")
        # Same means, or the timing compares different work.
        for row in reports[test].frame().itertuples():
            expected = reports[ranx_test].results[row.system][METRICS[row.metric]]
            assert abs(row.mean - expected) < 1e-9, row


if __name__ == "__main__":
    main()
