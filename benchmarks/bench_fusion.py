"""Time rank fusion (``duckrank.fuse``, issue 29) against ranx 0.3.21's ``fuse`` and
``optimize_fusion``, end to end.

* Fusing: ``--systems`` runs of ``--queries`` queries x ``--depth`` items, each a Parquet file of
  (query, item, score). ranx: ``Run.from_parquet`` for each, then ``fuse``; duckrank:
  ``duckrank.fuse`` from the files to a fused Parquet file (DuckDB reads the files in place and
  writes the result in a streaming COPY). Load included on both sides. Methods: ``wsum`` (ranx's
  default) and ``rrf``, both under ranx's default min-max normalisation.
* Optimising: the weights of ``wsum`` over a grid of weight vectors (ranx's ``optimize_fusion``
  with ``step``; duckrank's ``optimize_fusion`` over the same grid, every vector scored in one
  SQL pass) on ``ndcg@10`` against binary qrels, runs already loaded on both sides.

ranx runs with numba's JIT on (as its users run it): its kernels are compiled by a small warm-up
fusion and optimisation first, not timed. One run each; the machine is shared, so read the
ratios, measured in the same run. The fused scores of both are compared before any time is
printed (the same work, or the timing means nothing).

    .venv/bin/python -m benchmarks.bench_fusion            # 5 runs x 100,000 queries x 100 items
    .venv/bin/python -m benchmarks.bench_fusion --quick    # 5 runs x 5,000 queries x 100 items
    .venv/bin/python -m benchmarks.bench_fusion --queries 20000 --optimise-queries 1000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.bench_stats import line, timed
from benchmarks.data import DATA_DIR

SEED = 20261128
CATALOGUE = 1_000  # each query's items are drawn from this many
RELEVANT = 5


def write_runs(queries: int, systems: int, depth: int) -> tuple[list[Path], Path]:
    """One Parquet run per system (each query's ``depth`` items out of ``CATALOGUE``, scores
    uniform, relevant items pushed up a little) and binary qrels, written once."""
    folder = DATA_DIR / f"fusion_{queries}_{systems}_{depth}"
    runs = [folder / f"system{s}.parquet" for s in range(systems)]
    qrels = folder / "qrels.parquet"
    if qrels.exists() and all(run.exists() for run in runs):
        return runs, qrels
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    ids = np.array([f"q{q}" for q in range(queries)])
    relevant = rng.integers(0, CATALOGUE, (queries, RELEVANT))
    pq.write_table(pa.table({"query": np.repeat(ids, RELEVANT),
                             "item": np.char.add("d", relevant.ravel().astype(str)),
                             "grade": np.ones(queries * RELEVANT, dtype=np.int64)}), qrels)
    for path in runs:
        items = np.argsort(rng.random((queries, CATALOGUE)), axis=1)[:, :depth]
        score = rng.random((queries, depth)) + 0.3 * (items[:, :, None] == relevant[:, None, :]
                                                      ).any(axis=2)
        pq.write_table(pa.table({"query": np.repeat(ids, depth),
                                 "item": np.char.add("d", items.ravel().astype(str)),
                                 "score": score.ravel()}), path)
    return runs, qrels


def _frame(path: Path):
    """A Parquet file as ranx's ``from_df`` wants it: ids as Python strings (``object``; pandas
    reads them as its string dtype, which ranx refuses, and ranx's ``from_parquet`` cannot pass
    pandas options: it unpacks them as positional arguments)."""
    import pandas as pd

    frame = pd.read_parquet(path)
    return frame.astype({c: object for c in ("query", "item") if c in frame.columns})


def ranx_runs(paths: list[Path]) -> list:
    from ranx import Run

    return [Run.from_df(_frame(p), q_id_col="query", doc_id_col="item", score_col="score",
                        name=p.stem) for p in paths]


def ranx_fuse(paths: list[Path], method: str, params: dict) -> object:
    from ranx import fuse

    return fuse(ranx_runs(paths), norm="min-max", method=method, params=params)


def duckrank_fuse(paths: list[Path], method: str, params: dict, output: Path) -> Path:
    import duckrank

    return duckrank.fuse([str(p) for p in paths], method, "min-max", params, output=output)


def _first_queries(run, queries: int = 200) -> dict[str, dict[str, float]]:
    """ranx's fused scores of its first ``queries`` queries, for the comparison."""
    return {query: dict(items) for query, items in list(run.run.items())[:queries]}


def _same(ranx_scores: dict[str, dict[str, float]], fused: Path) -> None:
    table = pq.read_table(fused).to_pydict()
    ours = dict(zip(zip(table["query"], table["item"], strict=True), table["score"],
                    strict=True))
    checked = 0
    for query, items in ranx_scores.items():
        for item, score in items.items():
            assert abs(ours[(query, item)] - score) <= 1e-9 * max(1.0, abs(score)), (query, item)
            checked += 1
    assert checked > 0


def fuse_one(side: str, method: str, queries: int, systems: int, depth: int) -> None:
    """One side's fusion, timed in this process (``--fuse-one``): each side runs in a process of
    its own, so that neither pays for the other's garbage (ranx leaves millions of Python
    objects, and numba's threads) and each peak is its own. Imports and compilation are done by
    a warm-up on small runs first, untimed: the timed run is the loading and the fusing. Prints
    one JSON line: wall, CPU, peak MB, and ranx's first fused scores (for the comparison)."""
    paths, _ = write_runs(queries, systems, depth)
    small, _ = write_runs(50, systems, 10)
    out = paths[0].parent / "fused.parquet"
    params = CASES[method](systems)
    fuse = ranx_fuse if side == "ranx" else lambda p, m, q: duckrank_fuse(p, m, q, out)
    fuse(small, method, params)
    result: dict[str, object] = {}
    measured = timed(lambda: result.__setitem__("run", fuse(paths, method, params)), 1,
                     warm_up=False)
    scores = _first_queries(result["run"]) if side == "ranx" else None
    print(json.dumps({"measured": measured, "scores": scores}))


CASES = {"wsum": lambda systems: {"weights": [1 / systems] * systems},
         "rrf": lambda systems: {"k": 60}}


def _fused_in_process(side: str, method: str, args: argparse.Namespace, queries: int) -> dict:
    command = [sys.executable, "-m", "benchmarks.bench_fusion", "--fuse-one", side, method,
               "--queries", str(queries), "--systems", str(args.systems), "--depth",
               str(args.depth)]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--systems", type=int, default=5)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--step", type=float, default=0.2,
                        help="the weight grid's step (0.2 over 5 systems: ranx's grid of the "
                        "vectors whose float sum is 1)")
    parser.add_argument("--quick", action="store_true", help="5,000 queries: a smoke run")
    parser.add_argument("--skip-optimise", action="store_true")
    parser.add_argument("--skip-fuse", action="store_true")
    parser.add_argument("--fuse-one", nargs=2, metavar=("SIDE", "METHOD"),
                        help="(internal) time one side's fusion in this process: ranx or "
                        "duckrank, wsum or rrf")
    parser.add_argument("--optimise-queries", type=int, default=None,
                        help="the optimiser's queries (default: --queries; ranx's grid search "
                        "takes about 80 s of CPU per 1,000 queries on this machine)")
    args = parser.parse_args()
    queries = 5_000 if args.quick else args.queries
    os.environ.pop("NUMBA_DISABLE_JIT", None)

    paths, qrels = write_runs(queries, args.systems, args.depth)
    small, small_qrels = write_runs(50, args.systems, 10)
    if args.fuse_one:
        fuse_one(*args.fuse_one, queries, args.systems, args.depth)
        return
    out = paths[0].parent / "fused.parquet"
    print(f"{args.systems} runs x {queries:,} queries x {args.depth} items (Parquet), "
          "min-max normalisation, load included; each side in a process of its own")
    for method in ({} if args.skip_fuse else CASES):
        mine = _fused_in_process("duckrank", method, args, queries)
        ranx = _fused_in_process("ranx", method, args, queries)
        _same(ranx["scores"], out)
        line(f"ranx fuse, {method}", tuple(ranx["measured"]))
        line(f"duckrank fuse, {method}", tuple(mine["measured"]), tuple(ranx["measured"]),
             "ranx's")
    if not args.skip_optimise:
        if args.optimise_queries not in (None, queries):
            paths, qrels = write_runs(args.optimise_queries, args.systems, args.depth)
            print(f"optimising: {args.systems} runs x {args.optimise_queries:,} queries x "
                  f"{args.depth} items")
        optimise(paths, qrels, small, small_qrels, args.step)


def optimise(paths: list[Path], qrels: Path, small: list[Path], small_qrels: Path,
             step: float) -> None:
    from ranx import Qrels, optimize_fusion

    import duckrank
    from duckrank.reports.fusion.optimise import optimize_fusion as duckrank_optimise

    def ranx_qrels(path: Path) -> Qrels:
        return Qrels.from_df(_frame(path), q_id_col="query", doc_id_col="item",
                             score_col="grade")

    optimize_fusion(ranx_qrels(small_qrels), ranx_runs(small), norm="min-max", method="wsum",
                    metric="ndcg@10", step=step, show_progress=False)  # numba compiles here
    runs, judged = ranx_runs(paths), ranx_qrels(qrels)
    con = duckrank.connect()
    best = {}
    ranx = timed(lambda: best.__setitem__("ranx", optimize_fusion(
        judged, runs, norm="min-max", method="wsum", metric="ndcg@10", step=step,
        show_progress=False)), 1, warm_up=False)
    named = {p.stem: con.read_parquet(str(p)) for p in paths}
    mine = timed(lambda: best.__setitem__("duckrank", duckrank_optimise(
        named, con.read_parquet(str(qrels)), "wsum", "ndcg@10", step=step, grid="ranx",
        connection=con)), 1, warm_up=False)
    grid = len(best["duckrank"].report)
    line(f"ranx optimize_fusion, wsum, {grid} vectors", ranx)
    line(f"duckrank optimize_fusion, {grid} vectors", mine, ranx, "ranx's")
    ours = [best["duckrank"].params["weights"][p.stem] for p in paths]
    print(f"best weights: ranx {list(best['ranx']['weights'])}, duckrank {ours}")


if __name__ == "__main__":
    main()
