"""Time trec_eval's measures as DuckDB SQL (duckrank.metrics.trec_eval) over MAP truth.

A run of ``--queries`` queries x ``--docs`` retrieved documents (VARCHAR docnos, as trec_eval
reads them) and qrels of ``--judged`` judged documents per query, half of them retrieved, grades
-1..3 (negative: in the pool but unjudged), stored in a DuckDB table; each measure is summed over
all queries (``SELECT sum(f(rec, truth)) FROM runs``), through the native matching step and
through the SQL one. The reference line reads the same lists without a metric
(``sum(len(rec) + cardinality(truth))``).

    .venv/bin/python -m benchmarks.bench_trec_eval_measures            # 100,000 x 1,000
    .venv/bin/python -m benchmarks.bench_trec_eval_measures --quick    # 2,000 x 1,000
    .venv/bin/python -m benchmarks.bench_trec_eval_measures --step native   # about 3 minutes

Prints one line per measure and matching step: median wall seconds over ``--repeat`` runs after
a warm-up (none with ``--repeat 1``), CPU seconds, peak memory above the memory before, and
the ratio to the reference.
"""

from __future__ import annotations

import argparse

import duckrank
from benchmarks.bench_stats import line, timed

MEASURES = (
    "num_rel_ret", "average_precision", "r_precision", "eleven_point_ap", "bpref", "infap",
    "unjudged", "ndcg_rel", "rndcg", "normalized_gain",
)


def _load(con, queries: int, docs: int, judged: int) -> None:
    """Docnos d<n> from a pool of 10 docs per retrieved one; the judged documents of a query are
    every other retrieved one up to judged / 2, and as many unretrieved ones."""
    con.execute(f"""
        CREATE OR REPLACE TABLE runs AS
        SELECT q,
               list_transform(range({docs}), lambda i: 'd' || ((i * 7 + q) % {docs * 10})) AS rec,
               map(list_transform(range({judged}), lambda j:
                       'd' || (CASE WHEN j % 2 = 0 THEN (j * 7 + q) % {docs * 10}
                               ELSE ({docs} * 7 + j + q) % {docs * 10} END)),
                   list_transform(range({judged}), lambda j: ((j * 31 + q) % 5 - 1)::DOUBLE))
                   AS truth
        FROM range({queries}) t(q)
    """)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--docs", type=int, default=1_000)
    parser.add_argument("--judged", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="2,000 queries")
    parser.add_argument("--step", choices=("native", "sql", "both"), default="both",
                        help="the matching step(s) to time")
    args = parser.parse_args()
    queries = 2_000 if args.quick else args.queries
    print(f"trec_eval measures: {queries:,} queries x {args.docs:,} documents, "
          f"{args.judged} judged per query")
    steps = {"native": (True,), "sql": (False,), "both": (True, False)}[args.step]
    for native in steps:
        con = duckrank.connect(native=native)
        _load(con, queries, args.docs, args.judged)
        step = "native" if native else "SQL"
        reading = "SELECT sum(len(rec) + cardinality(truth)) FROM runs"
        # One run at full size: the lists are in memory already, so no warm-up is needed.
        warm_up = args.repeat > 1
        reference = timed(lambda c=con, q=reading: c.execute(q).fetchall(), args.repeat, warm_up)
        line(f"read the lists ({step})", reference)
        for name in MEASURES:
            query = f"SELECT sum({name}(rec, truth)) FROM runs"
            measured = timed(lambda c=con, q=query: c.execute(q).fetchall(), args.repeat, warm_up)
            line(f"{name} ({step})", measured, reference, "the reading")
        con.close()


if __name__ == "__main__":
    main()
