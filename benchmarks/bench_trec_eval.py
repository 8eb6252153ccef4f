"""Time ``duckrank trec_eval`` against pytrec_eval and ir_measures, from the files to the numbers.

Each tool reads the same TREC run and qrels files and computes trec_eval's default (``official``)
measures, summary only, in a fresh process of its own (``--tool``), which prints its wall time,
its CPU time (the steadier figure on a shared machine) and its peak resident memory (VmHWM):

* duckrank: ``duckrank.reports.trec_eval.trec_eval_lines`` (what ``duckrank trec_eval`` prints),
  on a new connection with the functions it needs registered, as the command does; the time
  includes that registration, also shown apart as ``connect``;
* pytrec_eval (trec_eval 9.0.8's C code): its own file parsers ``parse_run`` / ``parse_qrel``,
  ``RelevanceEvaluator(qrels, {'official'})``, ``evaluate``, and the summary over queries;
* ir_measures: ``read_trec_run`` / ``read_trec_qrels`` and ``calc_aggregate`` of the same
  measures (its pytrec_eval provider).

    .venv/bin/python -m benchmarks.bench_trec_eval            # 1,000,000 and 10,000,000 lines
    .venv/bin/python -m benchmarks.bench_trec_eval --quick    # 100,000 lines, seconds

Runs: ``--queries`` x 1,000 documents (1,000 x 1,000 = 1,000,000 lines; 10,000 x 1,000 =
10,000,000), scores with ties (3 decimals), qrels of 200 judgments per query (grades 0 to 3, a
fifth of them not retrieved). The files are written once to a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SEED = 20261123
DOCS = 1_000
JUDGED = 200
TOOLS = ("duckrank", "pytrec_eval", "ir_measures")


def write_files(folder: Path, queries: int) -> tuple[Path, Path]:
    """The run and qrels files of ``queries`` x DOCS lines, written in blocks by numpy."""
    rng = np.random.default_rng([SEED, queries])
    run, qrels = folder / f"run_{queries}.txt", folder / f"qrels_{queries}.txt"
    with run.open("w") as out_run, qrels.open("w") as out_qrels:
        for q in range(queries):
            docs = rng.choice(DOCS * 5, DOCS, replace=False)
            scores = np.round(rng.random(DOCS) * 20, 3)
            ranked = enumerate(zip(docs, scores, strict=True), 1)
            out_run.write("".join(f"{q} Q0 D{d} {r} {s} bench\n" for r, (d, s) in ranked))
            judged = np.concatenate([docs[:JUDGED * 4 // 5],
                                     DOCS * 5 + rng.choice(DOCS, JUDGED // 5, replace=False)])
            grades = rng.choice([0, 0, 0, 1, 1, 2, 3], len(judged))
            pairs = zip(judged, grades, strict=True)
            out_qrels.write("".join(f"{q} 0 D{d} {g}\n" for d, g in pairs))
    return run, qrels


def _peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _official_ir_measures() -> list:
    import ir_measures

    names = ["NumQ", "NumRet", "NumRel", "NumRelRet", "AP", "Rprec", "Bpref", "RR",
             *(f"IPrec@{level / 10:.1f}" for level in range(11)),
             *(f"P@{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000))]
    return [ir_measures.parse_measure(name) for name in names]


def measure_tool(tool: str, run: str, qrels: str, threads: int) -> dict[str, float]:
    """Run one tool on the files in this process: its seconds and peak memory."""
    result: dict[str, float] = {}
    # Each tool's clocks start after its imports.
    if tool == "duckrank":
        import duckrank
        from duckrank.reports.trec_eval import needed_functions, requested_values, trec_eval_lines

        start, cpu = time.perf_counter(), time.process_time()
        con = duckrank.connect(functions=needed_functions(requested_values([])),
                               config={"threads": threads})
        result["connect"] = time.perf_counter() - start
        lines = trec_eval_lines(qrels, run, connection=con)
        result["map"] = float(next(x for x in lines if x.startswith("map ")).split("\t")[2])
    elif tool == "pytrec_eval":
        import pytrec_eval

        start, cpu = time.perf_counter(), time.process_time()
        with open(run) as file:
            ranking = pytrec_eval.parse_run(file)
        with open(qrels) as file:
            judged = pytrec_eval.parse_qrel(file)
        per_query = pytrec_eval.RelevanceEvaluator(judged, {"official"}).evaluate(ranking)
        names = next(iter(per_query.values()))
        summary = {name: pytrec_eval.compute_aggregated_measure(
            name, [row[name] for row in per_query.values()]) for name in names}
        result["map"] = summary["map"]
    else:
        import ir_measures

        start, cpu = time.perf_counter(), time.process_time()
        summary = ir_measures.calc_aggregate(
            _official_ir_measures(), ir_measures.read_trec_qrels(qrels),
            ir_measures.read_trec_run(run))
        result["map"] = summary[ir_measures.AP]
    result["seconds"] = time.perf_counter() - start
    result["cpu"] = time.process_time() - cpu
    result["peak_mb"] = _peak_mb()
    return result


def _in_child(tool: str, run: Path, qrels: Path, threads: int) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_trec_eval", "--tool", tool, "--run", str(run),
         "--qrels", str(qrels), "--threads", str(threads)],
        capture_output=True, text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{tool} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, action="append",
                        help="queries of 1,000 lines each (repeatable; default 1,000 and 10,000)")
    parser.add_argument("--quick", action="store_true", help="100 queries: a smoke run")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--skip", action="append", default=[], choices=TOOLS,
                        help="leave a tool out")
    parser.add_argument("--tool", choices=TOOLS, help=argparse.SUPPRESS)
    parser.add_argument("--run", help=argparse.SUPPRESS)
    parser.add_argument("--qrels", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.tool:
        print(json.dumps(measure_tool(args.tool, args.run, args.qrels, args.threads)))
        return
    sizes = [100] if args.quick else (args.queries or [1_000, 10_000])
    with tempfile.TemporaryDirectory() as folder:
        for queries in sizes:
            run, qrels = write_files(Path(folder), queries)
            print(f"{queries * DOCS:,} run lines ({queries:,} queries x {DOCS:,}), "
                  f"{queries * JUDGED:,} qrels lines; trec_eval's official measures, files "
                  f"read included, {args.threads} threads")
            results = {tool: _in_child(tool, run, qrels, args.threads)
                       for tool in TOOLS if tool not in args.skip}
            base = results.get("duckrank")
            for tool, result in results.items():
                ratio = (f"  {result['seconds'] / base['seconds']:5.2f}x duckrank's time"
                         if base and tool != "duckrank" else "")
                extra = f" (connect {result['connect']:.2f} s)" if "connect" in result else ""
                print(f"  {tool:12s} {result['seconds']:8.2f} s{extra}  CPU {result['cpu']:7.2f} s"
                      f"  peak {result['peak_mb']:6.0f} MB  map {result['map']:.4f}{ratio}")


if __name__ == "__main__":
    main()
