"""Time the statistical tests (duckrank.stats, registered by duckrank.engines.stats).

* ``paired_ttest(x, y)`` over ``--pairs`` pairs (one group) next to ``avg(x - y)`` over the same
  table, the goal being within 2x of it, and next to the same aggregates with Welford's
  ``stddev_samp`` in place of the one-pass sums (the robust form it does not use);
* ``randomization_test(x, y, trials := --trials)`` over ``--users`` pairs, with its peak memory;
* ``wilcoxon``, ``bootstrap_ci`` and ``paired_bootstrap_ci`` over the same users;
* with ``--ranx``: ranx's Fisher randomization test (the numba kernel its ``compare`` calls) on the
  same values and trials, for the ratio (its first call compiles; that call is not timed).

    .venv/bin/python -m benchmarks.bench_stats    # 1,000,000 pairs, 100,000 users
    .venv/bin/python -m benchmarks.bench_stats --pairs 100000 --users 10000 --repeat 1  # quick

Values are per-user metric-like numbers (system b = a plus a small shift and noise, so that the
difference is borderline significant; 5% of users NULL on one side). Prints one line per query:
median seconds over ``--repeat`` runs after a warm-up, the ratio to ``avg(x - y)`` or to
duckrank's randomization test, and the peak resident memory during the runs above the memory
before them.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa

import duckrank

SEED = 20240611


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise KeyError(field)


def timed(run: Callable[[], object], repeat: int, warm_up: bool = True
          ) -> tuple[float, float, float]:
    """(median wall seconds, median CPU seconds of this process, peak MB above the resident
    memory before the timed runs). On a shared machine the CPU time is the steadier ratio."""
    if warm_up:
        run()
    Path("/proc/self/clear_refs").write_text("5")  # reset the high-water mark
    before = _status_mb("VmRSS")
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        run()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), _status_mb("VmHWM") - before


def line(name: str, measured: tuple[float, float, float], reference: tuple[float, float, float]
         | None = None, label: str = "") -> None:
    wall, cpu, peak = measured
    ratio = f"{wall / reference[0]:6.2f}x {label} (CPU {cpu / reference[1]:.2f}x)" if reference \
        else ""
    print(f"{name:44s} {wall:8.4f} s  CPU {cpu:8.4f} s  peak +{peak:4.0f} MB  {ratio}")


def pairs_table(n: int) -> pa.Table:
    """Per-user values a in [0, 1] and b = a + shift + noise (sd 0.1), shift = 0.2 / sqrt(n): a
    t statistic near 2, where Student's t distribution takes the most work."""
    rng = np.random.default_rng([SEED, n])
    a = rng.random(n)
    b = a + rng.normal(0.2 / np.sqrt(n), 0.1, n)
    missing = rng.random(n) < 0.05
    return pa.table({"uid": np.arange(n), "a": a, "b": pa.array(b, mask=missing)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1_000_000)
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ranx", action="store_true")
    args = parser.parse_args()

    con = duckrank.connect(config={"threads": args.threads})
    con.register("generated_pairs", pairs_table(args.pairs))
    con.execute("CREATE TABLE pairs AS SELECT * FROM generated_pairs")
    con.register("generated_users", pairs_table(args.users))
    con.execute("CREATE TABLE users AS SELECT * FROM generated_users")

    def sql(query: str) -> Callable[[], object]:
        return lambda: con.execute(query).fetchall()

    trials = f"trials := {args.trials}"
    print(f"{args.pairs:,} pairs, {args.users:,} users, {args.trials:,} trials, "
          f"{args.threads} threads")
    floor = timed(sql("SELECT avg(b - a) FROM pairs"), args.repeat)
    line("avg(b - a)", floor)
    line("paired_ttest(b, a)", timed(sql("SELECT paired_ttest(b, a) FROM pairs"), args.repeat),
         floor, "avg")
    welford = ("SELECT count(b - a), avg(b - a), stddev_samp(b - a), "
               "sum(b) FILTER (WHERE a IS NOT NULL) FROM pairs")
    line("its SQL with stddev_samp (not used)", timed(sql(welford), args.repeat), floor, "avg")
    randomization = timed(sql(f"SELECT randomization_test(b, a, {trials}) FROM users"),
                          args.repeat)
    line(f"randomization_test(b, a, {trials})", randomization)
    for query in ("wilcoxon(b, a)", f"bootstrap_ci(b, {trials})",
                  f"paired_bootstrap_ci(b, a, {trials})"):
        line(query, timed(sql(f"SELECT {query} FROM users"), args.repeat))
    if args.ranx:
        from ranx.statistical_tests.fisher_randomization_test import fisher_randomization_test

        a, b = (np.array(c, dtype=np.float64) for c in zip(
            *con.execute("SELECT a, b FROM users WHERE b IS NOT NULL").fetchall(), strict=True
        ))
        fisher_randomization_test(a[:10], b[:10], 10, 0.05, 42)  # numba compiles here
        ranx = timed(lambda: fisher_randomization_test(a, b, args.trials, 0.05, 42), 1,
                     warm_up=False)
        line("ranx fisher_randomization_test", ranx, randomization, "duckrank's")
    con.close()


if __name__ == "__main__":
    main()
