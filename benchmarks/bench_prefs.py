"""Time the ``prefs_*`` SQL functions (duckrank.metrics.prefs) against ``duckrank trec_eval -R
prefs`` and NIST's trec_eval 10.0 binary, in one run, on the same queries.

Generated data (seeded): per query two or three judgment groups of 8 to 16 of 40 documents with
levels 0..3, one group in two sub-groups (its preferences closed by transitivity), and a run of
25 documents with tied scores. The functions are timed on lists already in a table (built from the
files first, not timed): ``SELECT prefs_simp(rec, truth)`` alone and the 14 functions in one
query; the command and the binary read the files and print ``-q -m all_prefs`` (each a fresh
process for the binary; the command in this process, after a warm-up). The functions' values
must equal the command's per query (checked).

    .venv/bin/python -m benchmarks.bench_prefs                  # 10,000 queries
    .venv/bin/python -m benchmarks.bench_prefs --queries 1000

The binary: ``DUCKRANK_TREC_EVAL``, else ``~/.cache/trec_eval-10.0/trec_eval`` (skipped when
absent).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import subprocess
import tempfile
import time
from pathlib import Path

import duckrank
from duckrank.metrics import prefs
from duckrank.reports.trec_eval import trec_eval
from duckrank.reports.trec_eval.prefs import reader_macros

CACHED = Path.home() / ".cache" / "trec_eval-10.0" / "trec_eval"


def write_files(folder: Path, queries: int, seed: int = 0) -> tuple[Path, Path]:
    rnd = random.Random(seed)
    lines, run = [], []
    for q in range(queries):
        docs = [f"d{i}" for i in rnd.sample(range(40), 25)]
        for group in range(rnd.randint(2, 3)):
            judged = rnd.sample(docs, rnd.randint(8, 16))
            levels = {d: rnd.choice((0, 0, 1, 1, 2, 3)) for d in judged}
            subgroups = 2 if group == 0 else 1
            for sub in range(subgroups):
                shown = levels if subgroups == 1 else {
                    d: v for d, v in levels.items() if rnd.random() < 0.7}
                lines += [f"q{q} g{group} s{sub} {d} {v}" for d, v in shown.items()]
        run += [f"q{q} Q0 {d} {r} {rnd.randint(0, 30)} bench"
                for r, d in enumerate(docs, 1)]
    judgments, ranking = folder / "prefs.txt", folder / "run.txt"
    judgments.write_text("\n".join(lines) + "\n")
    ranking.write_text("\n".join(run) + "\n")
    return judgments, ranking


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _timed(call) -> tuple[float, float, object]:
    wall, cpu = time.perf_counter(), _cpu()
    result = call()
    return time.perf_counter() - wall, _cpu() - cpu, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        judgments, run = write_files(Path(folder), args.queries)
        con = duckrank.connect()
        for statement in reader_macros("prefs").values():
            con.execute(statement)
        con.execute("""CREATE TABLE eval AS
            WITH truth AS (SELECT query, list(struct_pack(jg, jsg, item, level)) AS truth
                           FROM duckrank_read_trec_prefs($j) GROUP BY query),
                 rec AS (SELECT query, list(item ORDER BY score DESC, item) AS rec
                         FROM read_trec_run($r) GROUP BY query)
            SELECT * FROM truth JOIN rec USING (query)""", {"j": str(judgments), "r": str(run)})
        lines = con.execute("SELECT sum(len(truth)), sum(len(rec)) FROM eval").fetchone()
        print(f"{args.queries:,} queries: {lines[0]:,} judgment lines, {lines[1]:,} run lines")

        calls = ", ".join(f"{m.name}(rec, truth)" for m in prefs.METRICS)
        con.execute("SELECT prefs_simp(rec, truth) FROM eval LIMIT 10").fetchall()  # warm-up
        wall, cpu, _ = _timed(lambda: con.execute(
            "SELECT sum(prefs_simp(rec, truth)) FROM eval").fetchall())
        print(f"prefs_simp(rec, truth): {wall:.2f} s wall, {cpu:.2f} s CPU, "
              f"{args.queries / wall:,.0f} queries/s")
        wall, cpu, ours = _timed(lambda: con.execute(
            f"SELECT query, {calls} FROM eval").fetchall())
        print(f"the 14 functions in one query: {wall:.2f} s wall, {cpu:.2f} s CPU")

        trec_eval(judgments, run, ["prefs_simp"], rel_info_format="prefs")  # warm-up
        wall, cpu, rows = _timed(lambda: trec_eval(
            judgments, run, ["all_prefs"], per_query=True, rel_info_format="prefs"))
        print(f"duckrank trec_eval -q -R prefs -m all_prefs: {wall:.2f} s wall, {cpu:.2f} s CPU")
        command = {(m, q): v for m, q, v in rows if q != "all" and m.startswith("prefs_")}
        functions = {(f"prefs_{field}", row[0]): value for row in ours
                     for field, value in zip(prefs.FIELDS, row[1:], strict=True)}
        print("functions == command per query:", functions == command)

        binary = os.environ.get("DUCKRANK_TREC_EVAL") or str(CACHED)
        if os.access(binary, os.X_OK):
            with tempfile.TemporaryFile() as out:
                start = time.perf_counter()
                child = subprocess.Popen([binary, "-q", "-R", "prefs", "-m", "all_prefs",
                                          str(judgments), str(run)], stdout=out)
                _, status, usage = os.wait4(child.pid, 0)
                wall = time.perf_counter() - start
                out.seek(0)
                printed = len(out.read().splitlines())
            print(f"trec_eval 10.0 (exit {os.waitstatus_to_exitcode(status)}, {printed:,} lines)"
                  f" -q -R prefs -m all_prefs: {wall:.2f} s wall, "
                  f"{usage.ru_utime + usage.ru_stime:.2f} s CPU")


if __name__ == "__main__":
    main()
