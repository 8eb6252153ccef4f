"""Time the graded metrics over MAP truth against binary ndcg on the same ids (issue 19, item 1).

The workload of the main grid (benchmarks/data.py): ``--users`` users, a ``rec`` of 100 distinct
ids, a truth of 1 to 30 ids (about 40% of them in rec). The graded truth is the same items as a
MAP with grades 1..3 by position in truth, as the graded section of benchmarks/run.py builds it:
``MAP(BIGINT, DOUBLE)`` for the BIGINT ids and ``MAP(VARCHAR, DOUBLE)`` for the VARCHAR ids
('item_<id>'). For each id type and k in 10 and 100: binary ``ndcg(rec, truth list, k)``, then
graded ``ndcg``, ``dcg`` and ``err`` over the MAP, each as ``SELECT avg(...)`` over a table in
memory, with their ratio to binary ndcg (the goal: at most 1.3x).

    .venv/bin/python -m benchmarks.bench_graded            # 300,000 users, best of 3
    .venv/bin/python -m benchmarks.bench_graded --quick    # 20,000 users, one run: seconds
    .venv/bin/python -m benchmarks.bench_graded --sql-step # also the SQL matching step
    .venv/bin/python -m benchmarks.bench_graded --breakdown # where graded ndcg's time goes

Prints one line per query: median wall seconds over ``--repeat`` runs after a warm-up, CPU
seconds, the peak resident memory above that before the runs, and the ratios (wall and CPU) to
binary ndcg at the same k and ids.
"""

from __future__ import annotations

import argparse

import duckdb

import duckrank
from benchmarks.bench_stats import line, timed
from benchmarks.data import dataset
from benchmarks.goals import print_goal
from duckrank.matching.native import status as native_status
from duckrank.metrics import graded

GRADED = ("ndcg", "dcg", "err")


def _load(con: duckdb.DuckDBPyConnection, users: int, ids: str) -> None:
    """Table ev: rec, truth_list (LIST) and truth (MAP with the ids' key type)."""
    path = dataset(users, ids)
    con.execute(f"""CREATE OR REPLACE TABLE ev AS SELECT uid, rec, truth AS truth_list,
                      map(truth, grades) AS truth
                    FROM (SELECT *, list_transform(truth, lambda t, j: (1 + j % 3)::DOUBLE)
                            AS grades FROM read_parquet('{path}'))""")


def _run(con: duckdb.DuckDBPyConnection, label: str, ks: list[int], repeat: int) -> None:
    def sql(call: str) -> tuple[float, float, float]:
        return _timed_query(con, f"SELECT avg({call}) FROM ev", repeat)

    truth_type = con.execute("SELECT typeof(truth) FROM ev LIMIT 1").fetchone()[0]
    for k in ks:
        binary = sql(f"ndcg(rec, truth_list, {k})")
        line(f"{label} binary ndcg@{k}", binary)
        cpu_ratios = {}
        for name in GRADED:
            graded = sql(f"{name}(rec, truth, {k})")
            line(f"{label} {name}@{k} {truth_type}", graded, binary, "binary ndcg")
            cpu_ratios[name] = graded[1] / binary[1]
        worst = max(cpu_ratios, key=cpu_ratios.get)
        print_goal(f"graded ndcg/dcg/err within 1.3x of binary ndcg ({label} ids, {truth_type} "
                   f"truth, k = {k}; CPU)", f"worst {worst} {cpu_ratios[worst]:.2f}x",
                   cpu_ratios[worst] <= 1.3)


# The parts of graded ndcg, each read from the native step's struct g: the record's sums over the
# hits and over the ideal list (the same SQL text the macros hold) and the step alone.
_PARTS = {
    "DCG (hits)": graded.hits_sum_sql(graded._gained_sql),
    "IDCG (ideal list)": graded.ranked_sum_sql("{ideal}", graded._gained_sql),
    "step alone": "len({ideal})",
}


def _breakdown(con: duckdb.DuckDBPyConnection, label: str, ks: list[int], repeat: int) -> None:
    """Where graded ndcg's time goes: the binary and graded matching steps alone, then each sum
    of the record over the graded step, bound as the macros bind it, against binary ndcg."""
    for number, sql in enumerate(_PARTS.values()):
        value = sql.format(pos="g.pos", grades="g.grades", ideal="g.ideal", n="g.n", K="g.K")
        con.execute(f"CREATE OR REPLACE TEMP MACRO bench_part_{number}(rec, truth, k, "
                    "gain := 'exponential', discount := 'log2', base := 2) AS "
                    "list_transform([duckrank_graded(rec, truth, k, "
                    f"current_setting('memory_limit'))], lambda g: {value})[1]")
    for k in ks:
        binary = _timed_query(con, f"SELECT avg(ndcg(rec, truth_list, {k})) FROM ev", repeat)
        line(f"{label} binary ndcg@{k}", binary)
        step = _timed_query(con, "SELECT avg(len(duckrank_match('ndcg', rec, truth_list, "
                            f"{k}, current_setting('memory_limit')).pos)) FROM ev", repeat)
        line(f"{label} binary step alone@{k}", step, binary, "binary ndcg")
        for number, name in enumerate(_PARTS):
            part = _timed_query(
                con, f"SELECT avg(bench_part_{number}(rec, truth, {k})) FROM ev", repeat)
            line(f"{label} graded {name}@{k}", part, binary, "binary ndcg")


def _timed_query(con: duckdb.DuckDBPyConnection, sql: str, repeat: int
                 ) -> tuple[float, float, float]:
    return timed(lambda: con.execute(sql).fetchall(), repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=300_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ids", nargs="*", default=["bigint", "varchar"],
                        choices=("bigint", "varchar"))
    parser.add_argument("--k", type=int, nargs="*", default=[10, 100])
    parser.add_argument("--sql-step", action="store_true",
                        help="also time the SQL matching step (duckrank.connect(native=False))")
    parser.add_argument("--breakdown", action="store_true",
                        help="where graded ndcg's time goes (native step only): the steps alone, "
                        "the DCG and the IDCG sums")
    parser.add_argument("--quick", action="store_true", help="20,000 users, one run")
    args = parser.parse_args()
    if args.quick:
        args.users, args.repeat = 20_000, 1

    print(f"{args.users:,} users x top 100, grades 1..3, {args.threads} threads, "
          f"median of {args.repeat}")
    steps = [("native", True)] + ([("sql", False)] if args.sql_step else [])
    for step, native in steps:
        con = duckrank.connect(native=native, config={"threads": args.threads})
        status = native_status(con)
        if native and not status.active:
            print(f"native step not in use: {status.reason}")
        for ids in args.ids:
            _load(con, args.users, ids)
            _run(con, f"{ids} {step}", args.k, args.repeat)
            if args.breakdown and native and status.active:
                _breakdown(con, f"{ids} {step}", args.k, args.repeat)
        con.close()


if __name__ == "__main__":
    main()
