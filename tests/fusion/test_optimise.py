"""The grid optimiser against ranx 0.3.21's ``optimize_fusion`` (the oracle): the same grid
(``grid='ranx'``), the same mean metric at every point and the same best weights, on seeded
random runs where no fused scores tie (every system scores every candidate of a query with a
positive random score, the ``max`` normalisation: ranx orders tied fused scores in no defined
order) and binary qrels with a relevant item in every query (ranx counts a query without one as
0, duckrank leaves it out of the mean). RRF's fused scores tie by construction; its grid is
checked point by point against ranx's ``evaluate`` of duckrank's fused run in duckrank's order.
Grids by hand for the exact rule."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

from duckrank.reports.fusion import fuse
from duckrank.reports.fusion.optimise import optimize_fusion, weight_grid

from .conftest import ranx_runs

ranx = pytest.importorskip("ranx")


def _runs(seed: int, systems: int, queries: int = 6) -> pa.Table:
    rng = np.random.default_rng(seed)
    rows = {"system": [], "query": [], "item": [], "score": []}
    candidates = [rng.choice(12, int(rng.integers(4, 10)), replace=False) for _ in range(queries)]
    for s in range(systems):
        for q in range(queries):
            for item in candidates[q]:
                rows["system"].append(f"s{s}")
                rows["query"].append(f"q{q}")
                rows["item"].append(f"d{item:02d}")
                rows["score"].append(0.5 + float(rng.random()))
    return pa.table(rows)


def _qrels(seed: int, queries: int = 6) -> pa.Table:
    rng = np.random.default_rng(seed + 1)
    rows = {"query": [], "item": [], "grade": []}
    for q in range(queries):
        for item in rng.choice(12, 3, replace=False):
            rows["query"].append(f"q{q}")
            rows["item"].append(f"d{item:02d}")
            rows["grade"].append(1)
    return pa.table(rows)


def _ranx_qrels(qrels: pa.Table):
    judged = {}
    for r in qrels.to_pylist():
        judged.setdefault(r["query"], {})[r["item"]] = r["grade"]
    return ranx.Qrels(judged)


@pytest.mark.parametrize(("method", "step"), [("wsum", 0.25), ("mixed", 0.5), ("wmnz", 0.5)])
def test_same_grid_scores_and_best_weights_as_ranx(fusion_con, method, step) -> None:
    table, qrels = _runs(11, 3), _qrels(11)
    best, report = ranx.optimize_fusion(
        _ranx_qrels(qrels), ranx_runs(table), norm="max", method=method, metric="ndcg@10",
        step=step, show_progress=False, return_optimization_report=True)
    ours = optimize_fusion(table, qrels, method, "ndcg@10", norm="max", step=step, grid="ranx",
                           system_column="system", connection=fusion_con)
    assert len(ours.report) == len(report.results)
    for mine, theirs in zip(ours.report["ndcg@10"], report.results, strict=True):
        assert math.isclose(mine, theirs, rel_tol=1e-12, abs_tol=1e-12)
    assert [ours.params["weights"][s] for s in ("s0", "s1", "s2")] == list(best["weights"])


def test_rrf_grid_point_by_point(fusion_con) -> None:
    table, qrels = _runs(12, 2), _qrels(12)
    ours = optimize_fusion(table, qrels, "rrf", "map@100", ranges={"k": (0, 40, 20)},
                           system_column="system", connection=fusion_con)
    assert list(ours.report["params"]) == ["k=0", "k=20", "k=40"]
    for k, mean in zip((0, 20, 40), ours.report["map@100"], strict=True):
        fused = fuse(table, "rrf", "min-max", {"k": k}, system_column="system",
                     connection=fusion_con).to_pylist()
        run = {}
        for r in fused:  # duckrank's order, as distinct scores for ranx
            run.setdefault(r["query"], {})[r["item"]] = 1.0 / r["rank"]
        assert math.isclose(mean, ranx.evaluate(_ranx_qrels(qrels), ranx.Run(run), "map@100"),
                            rel_tol=1e-12)
    best = max(range(3), key=lambda i: (ours.report["map@100"][i], i))
    assert ours.params == {"k": (0, 20, 40)[best]}


def test_weight_grids() -> None:
    # By hand: 2 systems, step 0.5 -> (0, 1), (0.5, 0.5), (1, 0), in itertools.product order.
    assert weight_grid(2, 0.5) == [(0.0, 1.0), (0.5, 0.5), (1.0, 0.0)]
    # 3 systems, step 0.1: the compositions of 10 into 3 parts, C(12, 2) = 66 vectors; ranx's
    # float rule drops the 4 whose float sum is not exactly 1.0: 0.2 + 0.7 + 0.1 is
    # 0.9999999999999999 in Python (and (0.3, 0.6, 0.1), (0.6, 0.3, 0.1), (0.7, 0.2, 0.1)).
    exact, ranx_rule = weight_grid(3, 0.1), weight_grid(3, 0.1, "ranx")
    assert len(exact) == 66 and len(ranx_rule) == 62
    assert 0.2 + 0.7 + 0.1 != 1.0
    assert (0.2, 0.7, 0.1) in exact and (0.2, 0.7, 0.1) not in ranx_rule
    assert set(ranx_rule) < set(exact)
    with pytest.raises(ValueError, match="step must divide 1"):
        weight_grid(2, 0.3)
