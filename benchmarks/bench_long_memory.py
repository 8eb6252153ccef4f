"""Peak memory of ``duckrank evaluate`` on long-format Parquet (one row per query, item), as the
number of queries grows: it must stay flat (issue 13, item 14).

    .venv/bin/python -m benchmarks.bench_long_memory --users 1000000 3000000

Each user has 10 run rows (distinct items, scores from a hash) and 3 qrels rows (grade 1, the
run's items at ranks 1, 4 and 7 before sorting by score), written once to benchmarks/data/ by
DuckDB from ``range()`` (deterministic, bounded memory). Each measurement runs the command line
in a fresh process (``duckrank evaluate RUN QRELS -m ndcg@10 -m map@100 --format csv``, with
DuckDB's default threads: one per core), means and, in a second process, ``--per-user`` rows
written as CSV to /dev/null; the peak resident memory is the child's VmHWM (what
``/usr/bin/time -v`` calls "Maximum resident set size"), which includes the interpreter and
DuckDB's own buffers.
``benchmarks.run --only long_memory`` prints the same rows in the suite's report.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb

from benchmarks.data import DATA_DIR

ROOT = Path(__file__).resolve().parent.parent
ITEMS = 10  # run rows per user
JUDGED = (0, 3, 6)  # the run positions (before sorting) whose items the qrels judge relevant
HEADER = "| users | run rows | s | peak RSS MB | per-query rows: peak RSS MB |"


def long_files(users: int) -> tuple[Path, Path]:
    """The run and qrels Parquet files of ``users`` users, written on first use."""
    run = DATA_DIR / f"long_{users}_run.parquet"
    qrels = DATA_DIR / f"long_{users}_qrels.parquet"
    if run.exists() and qrels.exists():
        return run, qrels
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    con.execute("SET threads = 2")
    item = "j * 1000003 + hash(u, j) % 1000003"
    con.execute(f"""
        COPY (SELECT u AS user, {item} AS item, (hash(u, j, 's') % 100000) / 1000.0 AS score
              FROM range({users}) a(u), range({ITEMS}) b(j) ORDER BY u, j)
        TO '{run}' (FORMAT parquet)""")
    con.execute(f"""
        COPY (SELECT u AS user, {item} AS item, 1 AS grade
              FROM range({users}) a(u), (SELECT unnest({list(JUDGED)}) AS j) ORDER BY u, j)
        TO '{qrels}' (FORMAT parquet)""")
    return run, qrels


# The child runs the command line, then reports its own high-water mark: VmHWM belongs to the
# process image, where a child's ru_maxrss (wait4, /usr/bin/time from this process) would keep
# this process's peak from before exec (here the data generation's).
CHILD = """
import sys
from pathlib import Path
from duckrank.cli import main
code = main(sys.argv[1:])
peak = next(line for line in Path("/proc/self/status").read_text().splitlines()
            if line.startswith("VmHWM:"))
sys.stderr.write(f"\\n{peak.split()[1]}\\n")
sys.exit(code)
"""


def measure(users: int, per_user: bool = False, timeout: float = 1800) -> dict[str, Any]:
    """Run the command line on the files of ``users`` users in a fresh process: its wall time
    and peak RSS (MB)."""
    run, qrels = long_files(users)
    argv = ["evaluate", str(run), str(qrels), "-m", "ndcg@10", "-m", "map@100", "--format", "csv"]
    if per_user:
        argv.append("--per-user")
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, *argv], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"users": users, "per_user": per_user, "error": f"timed out after {timeout} s"}
    seconds = time.perf_counter() - start
    lines = done.stderr.strip().splitlines() or ["no output"]
    if done.returncode != 0:
        return {"users": users, "per_user": per_user, "error": lines[-2 if len(lines) > 1 else -1]}
    return {"users": users, "per_user": per_user, "seconds": seconds,
            "rss_mb": int(lines[-1]) / 1024}


def long_memory(report: Any, user_counts: list[int]) -> None:
    """The suite's section (``report``: benchmarks.run.Report)."""
    report.section("Long-format evaluate: duckrank evaluate RUN.parquet QRELS.parquet -m ndcg@10 "
                   "-m map@100 (benchmarks/bench_long_memory.py)", HEADER)
    for users in user_counts:
        means, rows = measure(users), measure(users, per_user=True)
        failed = [r for r in (means, rows) if "error" in r]
        if failed:
            report.add({"section": "long_memory", "users": users, **failed[0]},
                       f"| {users:,} | error: {failed[0]['error']} |")
            continue
        report.add(
            {"section": "long_memory", "users": users, "seconds": means["seconds"],
             "rss_mb": means["rss_mb"], "per_user_rss_mb": rows["rss_mb"]},
            f"| {users:,} | {users * ITEMS:,} | {means['seconds']:.1f} | {means['rss_mb']:.0f} | "
            f"{rows['rss_mb']:.0f} |",
        )


class _Print:
    def section(self, title: str, header: str) -> None:
        print(f"### {title}\n\n{header}\n|---|---|---|---|---|", flush=True)

    def add(self, row: dict[str, Any], line: str) -> None:
        print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, nargs="*", default=[1_000_000, 3_000_000])
    long_memory(_Print(), parser.parse_args().users)


if __name__ == "__main__":
    main()
