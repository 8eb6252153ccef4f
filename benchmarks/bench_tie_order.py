"""What breaking score ties by the item id's text costs ``duckrank.evaluate`` on integer ids.

``evaluate`` orders a query's rows by score, descending, then by the item id's TEXT form,
descending (trec_eval's strcmp order), whatever the id's type, so a file read with integer ids
(Parquet) and with text ids (CSV) give the same numbers (duckrank/evaluation/sql.py,
``_ranked_sql``). This times that order against the order it replaced, ties broken by the
integer's value (the same SQL with the value in place of the text: ``value`` below, patched into
the child), on the same
Parquet files with BIGINT ids, in one run, alternating the variants, each evaluation in a fresh
process (a registered connection is passed; import and registration are not timed):

    .venv/bin/python -m benchmarks.bench_tie_order               # 40,000 users x 100 items
    .venv/bin/python -m benchmarks.bench_tie_order --quick       # 5,000 users, 1 repeat
    .venv/bin/python -m benchmarks.bench_tie_order --head /tmp/head   # also another checkout

The files: bench_long's (``long_files``), ids cast to BIGINT. Three ranking paths: ``ndcg@10``
through the native top-K aggregate (``duckrank_top_k``), the same with
``duckrank.connect(native=False)`` (DuckDB's ``max(struct, k)``), and ``ndcg`` without a cut-off
(``to_ordered_list`` of the whole list). Two score columns: ``rare`` ties (bench_long's hash
scores, 1,000,000 values) and ``often`` (11 values per 100 items). ``--head PATH`` adds a third
variant, the package at PATH (PYTHONPATH), e.g. a git worktree of an older commit. The
ratios are medians of the pairs' ratios (text / value order, and text / head), wall and CPU (the
steadier figure on a shared machine).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import duckdb

from benchmarks.bench_long import long_files
from benchmarks.data import DATA_DIR
from benchmarks.goals import print_goal

ROOT = Path(__file__).resolve().parent.parent
PATHS = {  # name -> (metric, native)
    "native top-K, ndcg@10": ("ndcg@10", True),
    "SQL top-K (max), ndcg@10": ("ndcg@10", False),
    "whole list, ndcg": ("ndcg", True),
}

# The child: evaluate once to warm up (file metadata, the page cache), then time one evaluation.
# With "value" it ranks as evaluate did before the text order: ties by the id's value.
CHILD = """
import importlib, json, sys, time
import duckrank
from duckrank import evaluation
# _ranked_sql's home: duckrank/evaluation/sql.py (a module, evaluation.py, in older checkouts)
home = (importlib.import_module("duckrank.evaluation.sql") if hasattr(evaluation, "__path__")
        else evaluation)

run, qrels, metric, native, variant = sys.argv[1:6]
if variant == "value":
    def value_order(item, item_type, key, top_k, native_key):
        if top_k is None:
            return f"to_ordered_list({item}, {key}, '-reverse')"
        if native_key is not None:
            return f"duckrank_top_k({item}, CAST({key} AS {native_key}), {int(top_k)})"
        return f"list_transform(max({{'k': {key}, 'v': {item}}}, {int(top_k)}), lambda e: e.v)"
    home._ranked_sql = value_order
con = duckrank.connect(native=native == "1", config={"threads": 2})
duckrank.evaluate(run, qrels, [metric], connection=con)
wall, cpu = time.perf_counter(), time.process_time()
frame = duckrank.evaluate(run, qrels, [metric], connection=con)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
print(json.dumps({"wall": wall, "cpu": cpu, "value": float(frame[metric][0])}))
"""


def tie_files(users: int, items: int) -> dict[str, tuple[Path, Path]]:
    """bench_long's run and qrels with the ids cast to BIGINT (its ids come out DOUBLE), with
    its hash scores (ties rare) and with them cut to 11 values (ties often), written on first
    use."""
    run, qrels = long_files(users, items)
    files = {"rare": DATA_DIR / f"ties_{users}x{items}_run_rare.parquet",
             "often": DATA_DIR / f"ties_{users}x{items}_run_often.parquet",
             "qrels": DATA_DIR / f"ties_{users}x{items}_qrels.parquet"}
    scores = {"rare": "score", "often": "round(score / 100)"}
    con = duckdb.connect()
    for name, path in files.items():
        if path.exists():
            continue
        source, score = (qrels, "grade") if name == "qrels" else (run, scores[name])
        con.execute(f"COPY (SELECT user, CAST(item AS BIGINT) AS item, {score} AS "
                    f"{'grade' if name == 'qrels' else 'score'} FROM '{source}' ORDER BY user) "
                    f"TO '{path}' (FORMAT parquet)")
    con.close()
    return {"rare": (files["rare"], files["qrels"]), "often": (files["often"], files["qrels"])}


def evaluate_in_child(run: Path, qrels: Path, metric: str, native: bool, variant: str,
                      head: str | None) -> dict[str, float]:
    env = dict(os.environ)
    if variant == "head":
        env["PYTHONPATH"] = head or ""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(run), str(qrels), metric, "1" if native else "0",
         variant], cwd=head if variant == "head" else ROOT, env=env, capture_output=True,
        text=True, timeout=900, check=False)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def _ratio(measured: dict[str, list[dict[str, float]]], variant: str, other: str,
           field: str) -> str:
    """The median of the pairs' ratios (the rounds ran alternating)."""
    pairs = zip(measured[variant], measured[other], strict=True)
    return f"{statistics.median(a[field] / b[field] for a, b in pairs):.2f}x"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5,000 users, 1 repeat")
    parser.add_argument("--users", type=int, help="users (default 40,000)")
    parser.add_argument("--items", type=int, default=100, help="run rows per user")
    parser.add_argument("--repeat", type=int, help="alternating rounds (default 3)")
    parser.add_argument("--head", help="a checkout of duckrank to time as a third variant")
    parser.add_argument("--paths", nargs="*", choices=list(PATHS), help="ranking paths to time")
    args = parser.parse_args(argv)
    users = args.users or (5_000 if args.quick else 40_000)
    repeat = args.repeat or (1 if args.quick else 3)
    variants = ["text", "value", *(["head"] if args.head else [])]
    files = tie_files(users, args.items)
    print(f"{users:,} users x {args.items} items ({users * args.items:,} run rows, BIGINT ids), "
          f"2 threads, {repeat} alternating rounds; text: ties by the id's text (this checkout), "
          f"value: by its value" + (f", head: {args.head}" if args.head else ""), flush=True)
    print("| path | ties | variant | wall s | CPU s | ×value wall | ×value CPU |"
          + (" ×head wall | ×head CPU |" if args.head else "") + " value |", flush=True)
    print("|---" * (9 if args.head else 7) + "|", flush=True)
    goals: list[tuple[str, str, bool]] = []
    for path, (metric, native) in PATHS.items():
        if args.paths and path not in args.paths:
            continue
        for ties, (run, qrels) in files.items():
            measured: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
            for _ in range(repeat):
                for variant in variants:
                    measured[variant].append(
                        evaluate_in_child(run, qrels, metric, native, variant, args.head))

            for variant in variants:
                rows = measured[variant]
                against = [_ratio(measured, variant, "value", f) for f in ("wall", "cpu")]
                if args.head:
                    against += [_ratio(measured, variant, "head", f) for f in ("wall", "cpu")]
                print(f"| {path} | {ties} | {variant} | "
                      f"{statistics.median(r['wall'] for r in rows):.3f} | "
                      f"{statistics.median(r['cpu'] for r in rows):.3f} | "
                      f"{' | '.join(against)} | {rows[0]['value']:.6f} |", flush=True)
            if native and metric != "ndcg":
                cost = statistics.median(a["cpu"] / b["cpu"] for a, b in
                                         zip(measured["text"], measured["value"], strict=True))
                goals.append((f"native top-K, ties {ties}: ties by the text within 1.1x of ties "
                              "by the value (CPU)", f"{cost:.2f}x", cost <= 1.1))
    for goal in goals:
        print_goal(*goal)


if __name__ == "__main__":
    main()
