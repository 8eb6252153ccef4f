"""The supervised methods against ranx 0.3.21 (the oracle): what ``train_fusion`` learns from
qrels equals ranx's ``*_train`` (``posfuse_train``, ``probfuse_train``, ``segfuse_train``,
``slidefuse_train``, ``bayesfuse_train``, ``mapfuse_train``) to 1e-12, and fusing with it gives
ranx's fused scores. Seeded random runs with tied scores (ranx keeps duckrank's tie order on
them: conftest.ranx_runs checks it) and qrels graded 0 to 2 (relevant: grade >= 1)."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

from duckrank.reports.fusion import fuse
from duckrank.reports.fusion.training import train_fusion

from .conftest import random_runs, ranx_runs

ranx = pytest.importorskip("ranx")
from ranx import fusion as ranx_fusion  # noqa: E402


def random_qrels(seed: int, queries: int = 5, pool: int = 14) -> pa.Table:
    rng = np.random.default_rng(seed)
    rows = {"query": [], "item": [], "grade": []}
    for q in range(queries):
        for item in rng.choice(pool, int(rng.integers(1, pool)), replace=False):
            rows["query"].append(f"q{q}")
            rows["item"].append(f"d{item:02d}")
            rows["grade"].append(int(rng.integers(0, 3)))
    return pa.table(rows)


def _long_runs(table: pa.Table) -> dict[str, pa.Table]:
    systems = sorted(set(table.column("system").to_pylist()))
    return {s: table.filter(pa.compute.equal(table.column("system"), s)) for s in systems}


def _ranx_qrels(qrels: pa.Table):
    judged = {}
    for r in qrels.to_pylist():
        judged.setdefault(r["query"], {})[r["item"]] = r["grade"]
    return ranx.Qrels(judged)


def _close(ours, theirs) -> None:
    ours, theirs = np.asarray(ours, dtype=float), np.asarray(theirs, dtype=float)
    assert ours.shape == theirs.shape, (ours, theirs)
    assert np.allclose(ours, theirs, rtol=1e-12, atol=1e-12), (ours, theirs)


TRAINERS = {
    "posfuse": (lambda q, r: ranx_fusion.posfuse_train(q, r), "probs"),
    "slidefuse": (lambda q, r: ranx_fusion.slidefuse_train(q, r), "probs"),
    "segfuse": (lambda q, r: ranx_fusion.segfuse_train(q, r), "probs"),
    "bayesfuse": (lambda q, r: ranx_fusion.bayesfuse_train(q, r), "log_odds"),
    "mapfuse": (lambda q, r: ranx_fusion.mapfuse_train(q, r), "map_scores"),
    "probfuse": (lambda q, r: ranx_fusion.probfuse_train(q, r, 3), "probs"),
}


@pytest.mark.parametrize("name", sorted(TRAINERS))
def test_training_and_fusion_same_as_ranx(fusion_con, name) -> None:
    seed = sum(map(ord, name))
    systems = 2 + seed % 4
    table = random_runs(seed, systems)
    qrels = random_qrels(seed)
    runs = ranx_runs(table)
    trainer, key = TRAINERS[name]
    theirs = trainer(_ranx_qrels(qrels), runs)
    extra = {"n_segments": 3} if name == "probfuse" else {}
    training = train_fusion(_long_runs(table), qrels, name, connection=fusion_con, **extra)
    ours = training.params[key]
    assert training.queries == [f"q{q}" for q in range(5)]
    for i, system in enumerate(sorted(ours)):
        if name == "mapfuse":
            assert math.isclose(ours[system], theirs[i], rel_tol=1e-12, abs_tol=1e-12)
        else:
            _close(ours[system], theirs[i])
    params = {key: theirs}
    ours_params = dict(training.params)
    if name == "slidefuse":
        params["w"] = ours_params["w"] = 2
    for norm in ("min-max", "rank"):
        expected = ranx.fuse(runs, norm=norm, method=name, params=params)
        fused = fuse(_long_runs(table), name, norm, ours_params, connection=fusion_con)
        got = {(r["query"], r["item"]): r["score"] for r in fused.to_pylist()}
        want = {(q, d): float(s) for q, items in expected.run.items() for d, s in items.items()}
        assert got.keys() == want.keys()
        for k, v in want.items():
            assert math.isclose(got[k], v, rel_tol=1e-12, abs_tol=1e-12), (k, got[k], v)


def test_posfuse_hand_calculation(fusion_con) -> None:
    # Hand calculation. System a: q1 lists x (relevant), y; q2 lists y, z (z relevant), w.
    # Position 1: relevant in q1, not in q2 -> 1/2; position 2: q1 no, q2 yes -> 1/2;
    # position 3: only q2 reaches it, not relevant -> 0. System b: q1 lists y only -> 0; no list
    # for q2 -> position 1 over one query: 0.
    table = pa.table({
        "system": ["a", "a", "a", "a", "a", "b"],
        "query": ["q1", "q1", "q2", "q2", "q2", "q1"],
        "item": ["x", "y", "y", "z", "w", "y"],
        "score": [2.0, 1.0, 3.0, 2.0, 1.0, 1.0],
    })
    qrels = pa.table({"query": ["q1", "q2", "q3"], "item": ["x", "z", "x"], "grade": [1, 2, 1]})
    training = train_fusion(table, qrels, "posfuse", system_column="system",
                            connection=fusion_con)
    assert training.params == {"probs": {"a": [0.5, 0.5, 0.0], "b": [0.0]}}
    assert training.queries == ["q1", "q2"]  # q3 is in no run: not a training query
