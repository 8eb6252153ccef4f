"""Time ``duckrank trec_eval -m all_trec`` against NIST's trec_eval 10.0 binary, in one run.

Both commands read the same run and qrels files (``bench_trec_eval.write_files``: 1,000 documents
per query, scores with ties, 200 judgments per query with grades 0..3) and print trec_eval's
``all_trec`` summary; each runs as a fresh process, and the script reports its wall time and CPU
time (its own and its children's, from ``getrusage``), their ratio, and whether the printed lines
are the same (they must be: the benchmark is also a differential check at scale).

    .venv/bin/python -m benchmarks.bench_trec_eval_c            # 1,000,000 and 10,000,000 lines
    .venv/bin/python -m benchmarks.bench_trec_eval_c --quick    # 100,000 lines
    .venv/bin/python -m benchmarks.bench_trec_eval_c --queries 1000 --rounds 3

The binary: ``DUCKRANK_TREC_EVAL``, else ``~/.cache/trec_eval-10.0/trec_eval`` (built from
usnistgov/trec_eval 10.0's source with its Makefile: no optimisation flags, as NIST ships it).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_trec_eval import DOCS, JUDGED, write_files

CACHED = Path.home() / ".cache" / "trec_eval-10.0" / "trec_eval"


def _binary() -> str:
    path = os.environ.get("DUCKRANK_TREC_EVAL") or str(CACHED)
    if not os.access(path, os.X_OK):
        sys.exit(f"no trec_eval 10.0 binary at {path} (set DUCKRANK_TREC_EVAL)")
    return path


def _timed(command: list[str]) -> tuple[float, float, list[str]]:
    """Wall seconds, CPU seconds (user + system of the child) and printed lines of a command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{command[0]} failed: {done.stderr.decode()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout.decode("latin-1").splitlines()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, action="append",
                        help="queries of 1,000 lines each (repeatable; default 1,000 and 10,000)")
    parser.add_argument("--quick", action="store_true", help="100 queries: a smoke run")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each command (ABAB)")
    args = parser.parse_args()
    binary = _binary()
    sizes = [100] if args.quick else (args.queries or [1_000, 10_000])
    duckrank = [sys.executable, "-m", "duckrank.cli", "trec_eval", "-m", "all_trec"]
    with tempfile.TemporaryDirectory() as folder:
        for queries in sizes:
            run, qrels = write_files(Path(folder), queries)
            print(f"{queries * DOCS:,} run lines ({queries:,} queries x {DOCS:,}), "
                  f"{queries * JUDGED:,} qrels lines; -m all_trec, summary; files read included")
            times: dict[str, list[tuple[float, float]]] = {"trec_eval": [], "duckrank": []}
            outputs = {}
            for _ in range(args.rounds):
                for tool, command in (("trec_eval", [binary, "-m", "all_trec"]),
                                      ("duckrank", duckrank)):
                    wall, cpu, lines = _timed([*command, str(qrels), str(run)])
                    times[tool].append((wall, cpu))
                    outputs[tool] = lines
            best = {tool: min(t) for tool, t in times.items()}
            for tool, (wall, cpu) in best.items():
                print(f"  {tool:10s} wall {wall:7.2f} s  CPU {cpu:7.2f} s")
            print(f"  trec_eval / duckrank: wall {best['trec_eval'][0] / best['duckrank'][0]:.2f}x"
                  f", CPU {best['trec_eval'][1] / best['duckrank'][1]:.2f}x; "
                  f"same {len(outputs['trec_eval'])} lines: "
                  f"{outputs['trec_eval'] == outputs['duckrank']}")


if __name__ == "__main__":
    main()
