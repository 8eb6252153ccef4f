"""Time the default path of the metrics with peer-convention options against the macros before them.

Issue 17 gave ``precision_at``, ``recall_at`` and ``average_precision`` a ``denominator`` option
and ``ndcg`` an ``ideal`` option (docs/conventions.md). The goal: a call that leaves them at
their defaults is within 1.05x of the same call before the options existed. "Before" is the four
macros as ``duckrank.connect()`` registered them at the last commit without the options
(benchmarks/pre_options_macros.sql, generated at that commit), created here as TEMP macros
``pre_<name>`` on the same connection, next to today's macros: one process, one table, the
native matching step for both.

The workload of the main grid (benchmarks/data.py): ``--users`` users, a ``rec`` of 100 distinct
BIGINT ids, a truth of 1 to 30 ids (about 40% of them in rec), k = 10, each query
``SELECT avg(<metric>(rec, truth, 10)) FROM ev`` (planning included: it is what a query costs).

    .venv/bin/python -m benchmarks.bench_option_cost            # 300,000 users, 15 rounds
    .venv/bin/python -m benchmarks.bench_option_cost --quick    # 20,000 users, 2 rounds

The two forms run alternately, ``--repeat`` rounds after a warm-up of each (which runs first
alternates too), so that a busy machine slows both alike. Prints one line per metric and form:
median wall and CPU seconds, the peak resident memory above that before the runs, and the
ratios (wall and CPU) of today's form to the pre-options one; the same for the query over an
empty table (its planning, which a query pays whatever its size); then the goal on the worst
CPU ratio.
"""

from __future__ import annotations

import argparse
import re
import statistics
from pathlib import Path

import duckdb

import duckrank
from benchmarks.bench_stats import line, timed
from benchmarks.data import dataset
from benchmarks.goals import print_goal
from duckrank.matching.native import status as native_status

PRE_OPTIONS_SQL = Path(__file__).resolve().parent / "pre_options_macros.sql"
METRICS = ("ndcg", "average_precision", "recall_at", "precision_at")
GOAL = 1.05


def _create_pre_options(con: duckdb.DuckDBPyConnection) -> None:
    """The pre-options macros as TEMP macros pre_<name> (their helpers are today's, unchanged)."""
    text = "\n".join(row for row in PRE_OPTIONS_SQL.read_text().splitlines()
                     if not row.startswith("--"))
    created = set()
    for statement in filter(str.strip, text.split(";\n")):
        name = re.match(r"\s*CREATE OR REPLACE MACRO ([a-z_]+)\(", statement).group(1)
        con.execute(statement.replace(f"CREATE OR REPLACE MACRO {name}(",
                                      f"CREATE OR REPLACE TEMP MACRO pre_{name}(", 1))
        created.add(name)
    if created != set(METRICS):
        raise ValueError(f"{PRE_OPTIONS_SQL} defines {sorted(created)}, not {sorted(METRICS)}")


def _median(runs: list[tuple[float, float, float]]) -> tuple[float, float, float]:
    return tuple(statistics.median(column) for column in zip(*runs, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=300_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="20,000 users, 2 rounds")
    args = parser.parse_args()
    if args.quick:
        args.users, args.repeat = 20_000, 2

    con = duckrank.connect(config={"threads": args.threads})
    status = native_status(con)
    print(f"{args.users:,} users x top 100, BIGINT ids, k = {args.k}, "
          f"{args.threads} threads, median of {args.repeat} alternating rounds; native step: "
          f"{'in use' if status.active else 'not in use: ' + status.reason}")
    _create_pre_options(con)
    con.execute(f"CREATE TABLE ev AS SELECT rec, truth FROM read_parquet("
                f"'{dataset(args.users, 'bigint')}')")
    con.execute("CREATE TABLE ev_empty AS SELECT * FROM ev LIMIT 0")

    cpu_ratios = {}
    for name in METRICS:
        queries = {form: f"SELECT avg({form}{name}(rec, truth, {args.k})) FROM ev"
                   for form in ("pre_", "")}
        # The values, which also warm both forms up.
        values = {form: con.execute(query).fetchone()[0] for form, query in queries.items()}
        if abs(values["pre_"] - values[""]) > 1e-12:
            raise AssertionError(f"{name}: {values['']!r} today, {values['pre_']!r} before")
        runs: dict[str, list] = {form: [] for form in queries}
        plans: dict[str, list] = {form: [] for form in queries}
        for round_ in range(args.repeat):
            # Which form runs first alternates too: the second of two runs can gain from the
            # first (caches) or lose to it (a busy neighbour), and both should alike.
            for form, query in list(queries.items())[::1 if round_ % 2 else -1]:
                runs[form].append(timed(lambda q=query: con.execute(q).fetchall(), 1,
                                        warm_up=False))
                empty = query.replace("FROM ev", "FROM ev_empty")
                plans[form].append(timed(lambda q=empty: con.execute(q).fetchall(), 1,
                                         warm_up=False))
        before, after = _median(runs["pre_"]), _median(runs[""])
        line(f"{name}@{args.k} before the options", before)
        line(f"{name}@{args.k} default, today", after, before, "before")
        line(f"{name}@{args.k} planning (0 rows), before", _median(plans["pre_"]))
        line(f"{name}@{args.k} planning (0 rows), today", _median(plans[""]),
             _median(plans["pre_"]), "before")
        cpu_ratios[name] = after[1] / before[1]
    worst = max(cpu_ratios, key=cpu_ratios.get)
    print_goal(f"the options' defaults within {GOAL}x of the pre-options macros "
               f"({args.users:,} users x top 100 BIGINT, k = {args.k}, native step; CPU)",
               f"worst {worst}@{args.k} {cpu_ratios[worst]:.3f}x; "
               + ", ".join(f"{n} {r:.3f}x" for n, r in cpu_ratios.items()),
               cpu_ratios[worst] <= GOAL)
    con.close()


if __name__ == "__main__":
    main()
