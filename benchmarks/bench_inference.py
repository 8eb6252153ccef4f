"""Time the many-system inference aggregates (duckrank.stats.anova) against their peers, in one run.

* ``tukey_hsd(x, system)`` over ``--systems`` x ``--queries`` values next to ranx's Tukey test
  (``ranx.statistical_tests.tukey_hsd_test``, which calls ``scipy.stats.tukey_hsd``) on the
  same values already in numpy, and again including fetching them from DuckDB (one array per
  system, what a DuckDB user hands it), and statsmodels' ``pairwise_tukeyhsd`` in numpy
  (duckrank's time includes reading the values from its table);
* ``tukey_hsd_blocked`` and ``anova_twoway`` over the same table (no peer at this size: an
  ``ols`` fit with one dummy column per query would need a 10^6 x 10^5 design matrix);
* ``anova_twoway`` over ``--small-queries`` queries next to statsmodels' ``anova_lm(ols("x ~
  C(system) + C(topic)"))``, and ``anova_oneway`` next to ``anova_lm(ols("x ~ C(system)"))`` on
  the big table.

    .venv/bin/python -m benchmarks.bench_inference            # 10 systems x 100,000 queries
    .venv/bin/python -m benchmarks.bench_inference --quick    # 10 x 10,000, one run

Prints one line per query as ``benchmarks.bench_stats`` does: median seconds over ``--repeat``
runs after a warm-up, CPU seconds, and the ratio of the peer's time to duckrank's.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
import pyarrow as pa

import duckrank
from benchmarks.bench_stats import SEED, line, timed


def long_table(systems: int, queries: int) -> pa.Table:
    """Metric-like values per (system, query): a query effect, a small shift per system, noise."""
    rng = np.random.default_rng([SEED, systems, queries])
    query_effect = rng.random(queries)
    system = np.repeat(np.arange(systems), queries)
    query = np.tile(np.arange(queries), systems)
    x = np.clip(query_effect[query] + 0.002 * system + rng.normal(0, 0.15, len(query)), 0, 1)
    return pa.table({"system": pa.array([f"s{s:02d}" for s in range(systems)]).take(system),
                     "query": query, "x": x})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", type=int, default=10)
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--small-queries", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="10,000 queries, 200 small, 1 run")
    args = parser.parse_args()
    if args.quick:
        args.queries, args.small_queries, args.repeat = 10_000, 200, 1

    con = duckrank.connect(config={"threads": args.threads})
    for name, queries in (("big", args.queries), ("small", args.small_queries)):
        con.register(f"generated_{name}", long_table(args.systems, queries))
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM generated_{name}")

    def sql(query: str) -> Callable[[], object]:
        return lambda: con.execute(query).fetchall()

    print(f"{args.systems} systems x {args.queries:,} queries ({args.small_queries:,} for "
          f"statsmodels' two-way fit), {args.threads} threads")
    ours = timed(sql("SELECT tukey_hsd(x, system) FROM big"), args.repeat)
    line("tukey_hsd(x, system)", ours)
    names = [f"s{s:02d}" for s in range(args.systems)]

    def fetched() -> list[np.ndarray]:  # what a DuckDB user hands ranx: one array per system
        columns = con.execute("SELECT system, list(x ORDER BY query) FROM big GROUP BY system "
                              "ORDER BY system").fetchall()
        return [np.array(values, dtype=np.float64) for _, values in columns]

    scores = fetched()
    try:
        from ranx.statistical_tests.tukey_hsd_test import tukey_hsd_test

        line("ranx tukey_hsd_test, arrays in memory",
             timed(lambda: tukey_hsd_test(names, scores, 0.05), args.repeat), ours,
             "duckrank's")
        line("ranx tukey_hsd_test, arrays fetched from DuckDB",
             timed(lambda: tukey_hsd_test(names, fetched(), 0.05), args.repeat), ours,
             "duckrank's")
    except ImportError:
        print("ranx: not installed")
    try:
        import pandas as pd
        import statsmodels.api as sm
        import statsmodels.formula.api as smf
        from statsmodels.stats.multicomp import pairwise_tukeyhsd
    except ImportError:
        print("statsmodels: not installed")
        con.close()
        return
    values = np.concatenate(scores)
    groups = np.repeat(names, [len(s) for s in scores])
    line("statsmodels pairwise_tukeyhsd",
         timed(lambda: pairwise_tukeyhsd(values, groups), args.repeat), ours, "duckrank's")
    line("tukey_hsd_blocked(x, system, query)",
         timed(sql("SELECT tukey_hsd_blocked(x, system, query) FROM big"), args.repeat))
    oneway = timed(sql("SELECT anova_oneway(x, system) FROM big"), args.repeat)
    line("anova_oneway(x, system)", oneway)
    frame = pd.DataFrame({"x": values, "system": groups})
    line("statsmodels anova_lm(ols(x ~ C(system)))",
         timed(lambda: sm.stats.anova_lm(smf.ols("x ~ C(system)", data=frame).fit()),
               args.repeat), oneway, "duckrank's")
    line("anova_twoway(x, system, query)",
         timed(sql("SELECT anova_twoway(x, system, query) FROM big"), args.repeat))
    small = timed(sql("SELECT anova_twoway(x, system, query) FROM small"), args.repeat)
    line(f"anova_twoway, {args.small_queries:,} queries", small)
    small_frame = con.execute("SELECT x, system, query AS topic FROM small").df()
    line("statsmodels anova_lm(ols(x ~ C(system) + C(topic)))",
         timed(lambda: sm.stats.anova_lm(smf.ols("x ~ C(system) + C(topic)",
                                                 data=small_frame).fit()), args.repeat),
         small, "duckrank's")
    con.close()


if __name__ == "__main__":
    main()
