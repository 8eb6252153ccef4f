"""Time ``duckrank trec_eval`` against NIST's trec_eval 10.0 binary, in one run.

Both commands read the same run and qrels files (``bench_trec_eval.write_files``: 1,000 documents
per query, scores with ties, 200 judgments per query with grades 0..3) and print trec_eval's
``all_trec`` or ``official`` measures, the summary alone or with ``-q`` every query's values too;
each runs as a fresh process, and the script reports its wall time, CPU time (user + system of
the child) and peak resident memory (the child's, from ``wait4``), the binary's over duckrank's,
and whether the printed lines are the same (they must be: the benchmark is also a differential
check at scale).

    .venv/bin/python -m benchmarks.bench_trec_eval_c            # 1,000,000 and 10,000,000 lines
    .venv/bin/python -m benchmarks.bench_trec_eval_c --quick    # 100,000 lines
    .venv/bin/python -m benchmarks.bench_trec_eval_c --queries 1000 --rounds 3 --set all_trec
    .venv/bin/python -m benchmarks.bench_trec_eval_c --queries 10000 --memory-limit 600MB

The binary: ``DUCKRANK_TREC_EVAL``, else ``~/.cache/trec_eval-10.0/trec_eval`` (built from
usnistgov/trec_eval 10.0's source with its Makefile: no optimisation flags, as NIST ships it).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_trec_eval import DOCS, JUDGED, write_files

CACHED = Path.home() / ".cache" / "trec_eval-10.0" / "trec_eval"
# The measure sets timed: -m all_trec and -m official, each without and with -q.
SETS = {"all_trec": ["-m", "all_trec"], "all_trec -q": ["-q", "-m", "all_trec"],
        "official": ["-m", "official"], "official -q": ["-q", "-m", "official"]}


def _binary() -> str:
    path = os.environ.get("DUCKRANK_TREC_EVAL") or str(CACHED)
    if not os.access(path, os.X_OK):
        sys.exit(f"no trec_eval 10.0 binary at {path} (set DUCKRANK_TREC_EVAL)")
    return path


def _timed(command: list[str]) -> tuple[float, float, float, bytes]:
    """Wall seconds, CPU seconds (user + system), peak resident MB of the child (its own
    rusage, from wait4) and the printed bytes of a command."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=out, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            err.seek(0)
            raise RuntimeError(f"{command[0]} failed: {err.read().decode()[-500:]}")
        out.seek(0)
        return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out.read()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, action="append",
                        help="queries of 1,000 lines each (repeatable; default 1,000 and 10,000)")
    parser.add_argument("--quick", action="store_true", help="100 queries: a smoke run")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each command (ABAB)")
    parser.add_argument("--set", action="append", choices=SETS, dest="sets",
                        help="measure sets to time (repeatable; default all four)")
    parser.add_argument("--memory-limit", metavar="SIZE",
                        help="duckrank trec_eval's --memory-limit (e.g. 600MB)")
    args = parser.parse_args()
    binary = _binary()
    sizes = [100] if args.quick else (args.queries or [1_000, 10_000])
    duckrank = [sys.executable, "-m", "duckrank.cli", "trec_eval"]
    if args.memory_limit is not None:
        duckrank += ["--memory-limit", args.memory_limit]
    with tempfile.TemporaryDirectory() as folder:
        for queries in sizes:
            run, qrels = write_files(Path(folder), queries)
            print(f"{queries * DOCS:,} run lines ({queries:,} queries x {DOCS:,}), "
                  f"{queries * JUDGED:,} qrels lines; files read included; best of "
                  f"{args.rounds}")
            for name in args.sets or SETS:
                times: dict[str, list[tuple[float, float, float]]] = {"trec_eval": [],
                                                                      "duckrank": []}
                outputs = {}
                for _ in range(args.rounds):
                    for tool, command in (("trec_eval", [binary]), ("duckrank", duckrank)):
                        *measured, printed = _timed([*command, *SETS[name], str(qrels),
                                                     str(run)])
                        times[tool].append(tuple(measured))
                        outputs[tool] = printed
                # The lowest CPU of the rounds (with its wall), the highest peak.
                best = {tool: (*min(t, key=lambda x: x[1])[:2], max(x[2] for x in t))
                        for tool, t in times.items()}
                c, d = best["trec_eval"], best["duckrank"]
                same = outputs["trec_eval"] == outputs["duckrank"]
                lines = outputs["trec_eval"].count(b"\n")
                print(f"  -m {name:12s} trec_eval CPU {c[1]:6.2f} s wall {c[0]:6.2f} s "
                      f"{c[2]:6.0f} MB | duckrank CPU {d[1]:6.2f} s wall {d[0]:6.2f} s "
                      f"{d[2]:6.0f} MB | trec_eval / duckrank CPU {c[1] / d[1]:.2f}x, "
                      f"memory {c[2] / d[2]:.2f}x; same {lines} lines: {same}")


if __name__ == "__main__":
    main()
