"""Start-up (issue 32, part 1): what a user waits for before duckrank computes anything.

Each command runs in a fresh Python process, timed from outside: wall seconds around the child,
and its CPU seconds (user + system, the kernel's own accounting: os.wait4), the steadier figure
on a shared machine. Every row is compared, in the same run, with ``python -c "import duckdb"``
(the floor: duckrank is DuckDB plus a little), the commands taken in turn, round after round:

    .venv/bin/python -m benchmarks.bench_startup                 # 7 rounds
    .venv/bin/python -m benchmarks.bench_startup --quick         # 2 rounds
    .venv/bin/python -m benchmarks.bench_startup --head /tmp/head  # also another checkout

``--tree PATH`` runs a copy of this checkout instead (its sources fixed while it runs).
``--head PATH`` runs each command a second time with PATH first on PYTHONPATH (a copy of an
older commit's ``duckrank`` folder, e.g. ``git archive HEAD duckrank | tar -x -C PATH``, with
the native library copied in) and gives this checkout's time over that one's, pair by pair.
One warm-up round is not counted: it prepares the catalog (``duckrank/engines/catalog.py``), as
a user's first start-up does once per build. The files are the built-in sample
(``duckrank/data/sample.run``, ``sample.qrels``: 3 queries; trec_eval reads the run's bm25
system, 60 lines).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.goals import print_goal

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "duckrank" / "data"
RUN, QRELS = str(SAMPLE / "sample.run"), str(SAMPLE / "sample.qrels")
# trec_eval reads one system: the sample's bm25 lines (written by ``_one_system``).
BM25 = str(Path(tempfile.gettempdir()) / "duckrank_bench_startup_bm25.run")
# What the installed `duckrank` script runs, without the script's path (so that --head's
# PYTHONPATH decides which duckrank it is).
CLI = "import sys; from duckrank.cli import main; sys.exit(main(sys.argv[1:]))"
FLOOR = "import duckdb"
COMMANDS = {
    FLOOR: ["-c", "import duckdb"],
    "import duckrank": ["-c", "import duckrank"],
    "duckrank.connect()": ["-c", "import duckrank; duckrank.connect()"],
    "duckrank --version": ["-c", CLI, "--version"],
    "duckrank --help": ["-c", CLI, "--help"],
    "duckrank trec_eval QRELS RUN": ["-c", CLI, "trec_eval", QRELS, BM25],
    "duckrank trec_eval -m all_trec QRELS RUN": ["-c", CLI, "trec_eval", "-m", "all_trec",
                                                  QRELS, BM25],
    "duckrank evaluate RUN QRELS -m ndcg@10 -m map@100": ["-c", CLI, "evaluate", RUN, QRELS,
                                                          "-m", "ndcg@10", "-m", "map@100"],
}
# Goals of issue 32, part 1 (wall seconds, median): command -> bound.
BOUNDS = {
    "duckrank --version": 0.3,
    "duckrank --help": 0.3,
    "duckrank.connect()": 0.3,
    "duckrank trec_eval QRELS RUN": 0.35,
    "duckrank evaluate RUN QRELS -m ndcg@10 -m map@100": 0.35,
}
# "import duckrank close to import duckdb": at most this ratio of CPU seconds.
IMPORT_RATIO = 1.25


def _time(arguments: list[str], pythonpath: str | None) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``python arguments``."""
    env = {**os.environ, "PYTHONPATH": pythonpath} if pythonpath else dict(os.environ)
    # Not in the checkout: `python -c` puts the working folder first on sys.path.
    cwd = tempfile.gettempdir()
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, *arguments], cwd=cwd, env=env,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        failed = subprocess.run([sys.executable, *arguments], cwd=cwd, env=env,
                                capture_output=True, text=True)
        raise RuntimeError(f"{arguments} failed: {failed.stderr.strip()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def _one_system() -> None:
    lines = Path(RUN).read_text().splitlines(keepends=True)
    Path(BM25).write_text("".join(line for line in lines if line.split()[-1] == "bm25"))


def measure(rounds: int, head: str | None, tree: str | None = None
            ) -> dict[str, dict[str, list[float]]]:
    """Per command, its lists of wall and CPU seconds (and head's), one per round."""
    _one_system()
    variants = {"tree": tree, **({"head": head} if head else {})}
    times = {name: {f"{v}_{m}": [] for v in variants for m in ("wall", "cpu")}
             for name in COMMANDS}
    for round_number in range(rounds + 1):
        for name, arguments in COMMANDS.items():
            for variant, path in variants.items():
                wall, cpu = _time(arguments, path)
                if round_number:  # round 0 is the warm-up
                    times[name][f"{variant}_wall"].append(wall)
                    times[name][f"{variant}_cpu"].append(cpu)
    return times


def _paired(a: list[float], b: list[float]) -> float:
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


def report(times: dict[str, dict[str, list[float]]], head: bool) -> None:
    floor = times[FLOOR]
    header = "| command | wall s | CPU s | wall / import duckdb | CPU / import duckdb |"
    rule = "| --- | ---: | ---: | ---: | ---: |"
    if head:
        header += " head wall s | head CPU s | wall / head | CPU / head |"
        rule += " ---: | ---: | ---: | ---: |"
    print(header)
    print(rule)
    for name, row in times.items():
        cells = [f"{statistics.median(row['tree_wall']):.3f}",
                 f"{statistics.median(row['tree_cpu']):.3f}",
                 f"{_paired(row['tree_wall'], floor['tree_wall']):.2f}",
                 f"{_paired(row['tree_cpu'], floor['tree_cpu']):.2f}"]
        if head:
            cells += [f"{statistics.median(row['head_wall']):.3f}",
                      f"{statistics.median(row['head_cpu']):.3f}",
                      f"{_paired(row['tree_wall'], row['head_wall']):.2f}",
                      f"{_paired(row['tree_cpu'], row['head_cpu']):.2f}"]
        print(f"| {name} | {' | '.join(cells)} |")
    for name, bound in BOUNDS.items():
        wall = statistics.median(times[name]["tree_wall"])
        cpu = statistics.median(times[name]["tree_cpu"])
        print_goal(f"{name} under {bound} s wall", f"{wall:.3f} s wall ({cpu:.3f} s CPU)",
                   wall < bound)
    ratio = _paired(times["import duckrank"]["tree_cpu"], floor["tree_cpu"])
    print_goal(f"import duckrank within {IMPORT_RATIO}x import duckdb (CPU)",
               f"{ratio:.2f}x", ratio <= IMPORT_RATIO)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="2 rounds")
    parser.add_argument("--head", help="another checkout's package folder, for PYTHONPATH")
    parser.add_argument("--tree", help="a copy of this checkout's package folder to run instead "
                        "(in a tree others edit meanwhile, each edit is a new build whose "
                        "catalog is prepared again)")
    args = parser.parse_args()
    report(measure(2 if args.quick else args.rounds, args.head, args.tree), args.head is not None)


if __name__ == "__main__":
    main()
