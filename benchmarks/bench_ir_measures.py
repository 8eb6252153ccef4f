"""Time ir_measures' measures in duckrank against the tools that compute them, in one run.

Three families on one generated collection of ``--queries`` queries x ``--docs`` retrieved
documents (VARCHAR ids, distinct scores) with about 30 judged documents per query (grades
-1..3, some retrieved, some not) and, for the diversity measures, 1..4 subtopics per query:

* ir_measures' names through ``duckrank.evaluate(convention='ir_measures')`` against
  ``ir_measures.calc_aggregate`` (pytrec_eval, judged and compat providers) on the same rows;
* the intent-aware measures as SQL over (rec, subtopic qrels) lists against pyndeval
  (``pyndeval.ndeval``, ndeval's C code) on the same rows;
* the C/W/L measures as SQL over (rec, MAP truth) against cwl-eval through ir_measures.

Each line: median wall seconds over ``--repeat`` runs (after a warm-up), CPU seconds of this
process, peak memory above the memory before, and the ratio of duckrank's time to the peer's
(below 1: duckrank is faster). The peers read Python dicts or tuples built once before timing;
duckrank reads pandas frames (evaluate: ranking, truth building and checks included) or a
DuckDB table of lists (SQL).

    .venv/bin/python -m benchmarks.bench_ir_measures            # 5,000 queries x 100 docs
    .venv/bin/python -m benchmarks.bench_ir_measures --quick    # 300 queries x 50 docs
"""

from __future__ import annotations

import argparse
import logging
import random

import pandas as pd
import pyarrow as pa

import duckrank
from benchmarks.bench_stats import line, timed

NAMES = ["nDCG@10", "P@10", "AP", "RR", "Judged@10", "Compat", "Bpref", "R@100"]
DIVERSITY = {"alpha_ndcg": "alpha-nDCG@20", "err_ia": "ERR-IA@20", "nrbp": "NRBP",
             "ap_ia": "MAP-IA", "subtopic_recall": "strec@20"}
CWL = {"bpm": "BPM(max_rel=3)@10", "sdcg": "SDCG(max_rel=3)@10", "nerr10": "NERR10(max_rel=3)",
       "inst": "INST(max_rel=3)", "insq": "INSQ(max_rel=3)"}


def _collection(queries: int, docs: int, seed: int = 20261128):
    rng = random.Random(seed)
    run, qrels, subtopics = {}, {}, []
    for q in range(queries):
        query = f"q{q}"
        pool = [f"d{i}" for i in range(docs * 2)]
        retrieved = rng.sample(pool, docs)
        run[query] = {d: float(s) for d, s in zip(retrieved, rng.sample(range(10 * docs), docs),
                                                  strict=True)}
        judged = rng.sample(retrieved[: docs // 2], 15) + rng.sample(pool, 15)
        qrels[query] = {d: rng.randint(-1, 3) for d in judged}
        for subtopic in range(1, rng.randint(1, 4) + 1):
            for d in rng.sample(judged, 8):
                subtopics.append((query, str(subtopic), d, rng.randint(0, 1)))
    return run, qrels, subtopics


def _frames(run: dict, qrels: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    return (pd.DataFrame([(q, d, s) for q, docs in run.items() for d, s in docs.items()],
                         columns=["query", "item", "score"]),
            pd.DataFrame([(q, d, g) for q, docs in qrels.items() for d, g in docs.items()],
                         columns=["query", "item", "grade"]))


def _lists(run: dict, qrels: dict, subtopics: list) -> pa.Table:
    queries = sorted(run)
    ranked = [[d for d, _ in sorted(run[q].items(), key=lambda x: (-x[1], x[0]))]
              for q in queries]
    by_query: dict[str, list] = {}
    for q, s, d, g in subtopics:
        by_query.setdefault(q, []).append({"subtopic": s, "item": d, "grade": g})
    return pa.table({
        "query": queries, "rec": ranked,
        "truth": pa.array([list(qrels[q].items()) for q in queries],
                          pa.map_(pa.string(), pa.float64())),
        "subtopics": [by_query.get(q, []) for q in queries],
    })


def _names(run: dict, qrels: dict, repeat: int) -> None:
    import ir_measures

    run_frame, qrels_frame = _frames(run, qrels)
    con = duckrank.connect()
    ours = timed(lambda: duckrank.evaluate(run_frame, qrels_frame, NAMES,
                                           convention="ir_measures", connection=con), repeat)
    measures = [ir_measures.parse_measure(m) for m in NAMES]
    theirs = timed(lambda: ir_measures.calc_aggregate(measures, qrels, run), repeat)
    line("ir_measures: calc_aggregate, 8 names", theirs)
    line("duckrank: evaluate, the same 8 names", ours, theirs, "ir_measures' time")
    con.close()


def _family(name: str, con, columns: dict[str, str], truth: str, peer, repeat: int) -> None:
    calls = ", ".join(f"sum({f}(rec, {truth}{', 20' if '@20' in m else ''}"
                      f"{', 10' if '@10' in m else ''}"
                      f"{', max_rel := 3' if 'max_rel' in m else ''}))"
                      for f, m in columns.items())
    theirs = timed(peer, repeat)
    ours = timed(lambda: con.execute(f"SELECT {calls} FROM lists").fetchall(), repeat)
    line(f"{name}: the peer, {len(columns)} measures", theirs)
    line(f"{name}: duckrank SQL, the same", ours, theirs, "the peer's time")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=5_000)
    parser.add_argument("--docs", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="300 queries x 50 documents")
    args = parser.parse_args()
    queries, docs = (300, 50) if args.quick else (args.queries, args.docs)
    logging.getLogger("ir_measures").setLevel(logging.ERROR)
    run, qrels, subtopics = _collection(queries, docs)
    print(f"ir_measures' measures: {queries:,} queries x {docs} documents, 30 judged per "
          f"query, {len(subtopics):,} subtopic judgments")
    _names(run, qrels, args.repeat)

    import ir_measures
    import pyndeval

    con = duckrank.connect()
    lists = _lists(run, qrels, subtopics)  # noqa: F841 (read by DuckDB below)
    con.execute("CREATE TABLE lists AS SELECT * FROM lists")
    run_tuples = [(q, d, s) for q, docs_ in run.items() for d, s in docs_.items()]
    _family("diversity (pyndeval)", con, DIVERSITY, "subtopics",
            lambda: pyndeval.ndeval(subtopics, run_tuples, list(DIVERSITY.values())),
            args.repeat)
    cwl_measures = [ir_measures.parse_measure(m) for m in CWL.values()]
    _family("C/W/L (cwl-eval via ir_measures)", con, CWL, "truth",
            lambda: ir_measures.calc_aggregate(cwl_measures, qrels, run), args.repeat)
    con.close()


if __name__ == "__main__":
    main()
