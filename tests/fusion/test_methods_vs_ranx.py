"""Every unsupervised fusion macro against ranx 0.3.21 (``ranx.fuse``, the oracle, installed as a
test dependency), under every normalisation, on seeded random runs of 2 to 5 systems with tied
scores, items some systems did not return and queries a system has no list for: the same fused
score for every (query, item), to 1e-12.

ranx's order among tied scores is its sort's; ``conftest.ranx_runs`` gives ranx the lists in
duckrank's tie order and checks that ranx keeps it, so the methods that read positions are
compared with ties too, except after the min-max-inverted normalisation, where ranx sorts each
list again (numpy's argsort, not stable: tied items come out in no defined order) and the lists
are drawn without ties. Excluded, as docs/fusion.md says:
the methods that read positions after the Borda normalisation (ranx then orders the candidates a
system did not return in Python's set order) and Condorcet where the majority relation is not a
strict order (tested on the queries where it is).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from duckrank.fusion import METHODS, NORMALISATIONS
from duckrank.reports.fusion.inputs import sql_value

from .conftest import list_order, random_runs, ranx_runs

ranx = pytest.importorskip("ranx")

UNSUPERVISED = [m for m in METHODS if not m.supervised]
PARAMETERS = {"gmnz": {"gamma": 0.7}, "logn_isr": {"sigma": 0.25}, "rrf": {"k": 5},
              "rbc": {"phi": 0.8}}


def _reads_positions(method) -> bool:
    return "position" in method.value or method.form == "pairwise"


def _weights(systems: int) -> list[float]:
    return [round(0.15 + 0.1 * i, 2) for i in range(systems)]


def _fused(con, table, method, norm: str, params: dict) -> dict[tuple[str, str], float]:
    con.register("fusion_input", table)
    arguments = "".join(f", {k} := {sql_value(v)}" for k, v in params.items())
    rows = con.execute(
        f"SELECT query, item, score FROM {method.sql_name}('fusion_input'{arguments}, "
        f"norm := {sql_value(norm)})").fetchall()
    return {(q, i): s for q, i, s in rows}


def _ranx_fused(table, method, norm: str, params: dict) -> dict[tuple[str, str], float]:
    runs = ranx_runs(table)
    ranx_norm = None if norm == "none" else norm
    fused = ranx.fuse(runs, norm=ranx_norm, method=method.name, params=params)
    return {(q, d): float(s) for q, items in fused.run.items() for d, s in items.items()}


def _assert_same(ours: dict, theirs: dict) -> None:
    assert ours.keys() == theirs.keys()
    for key, value in theirs.items():
        assert math.isclose(ours[key], value, rel_tol=1e-12, abs_tol=1e-12), (key, value)


CASES = [
    (method, norm.name)
    for method, norm in itertools.product(UNSUPERVISED, NORMALISATIONS)
    if method.form != "pairwise" and not (norm.adds_candidates and _reads_positions(method))
]


# ranx's z-score of an empty list (a query a system has no list for) warns in numpy.
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize(("method", "norm"), CASES,
                         ids=[f"{m.name}-{n}" for m, n in CASES])
def test_same_fused_scores_as_ranx(fusion_con, method, norm) -> None:
    seed = sum(map(ord, method.name + norm))
    systems = 2 + seed % 4
    table = random_runs(seed, systems,
                        distinct=_reads_positions(method) and norm == "min-max-inverted")
    params = dict(PARAMETERS.get(method.name, {}))
    if method.weighted:
        params["weights"] = _weights(systems)
    ours_params = dict(params)
    if "weights" in ours_params:
        ours_params["weights"] = {f"s{i}": w for i, w in enumerate(params["weights"])}
    _assert_same(_fused(fusion_con, table, method, norm, ours_params),
                 _ranx_fused(table, method, norm, params))


def _strict_majority_queries(table, weights: list[float] | None) -> set[str]:
    """The queries on which ranx's Condorcet comparison is a strict order: for every pair, one
    item's votes exceed the other's plus the votes of systems that returned neither (ranx counts
    those for the second item), and the relation is transitive."""
    data = table.to_pylist()
    systems = sorted({r["system"] for r in data})
    weight = dict(zip(systems, weights or [1.0] * len(systems), strict=True))
    good = set()
    for query in sorted({r["query"] for r in data}):
        position = {s: {} for s in systems}
        for s in systems:
            rows = [(r["item"], r["score"]) for r in data
                    if r["system"] == s and r["query"] == query]
            position[s] = {d: i for i, (d, _) in enumerate(list_order(rows))}
        items = sorted({d for p in position.values() for d in p})
        beats = {}
        consistent = True
        for x, y in itertools.combinations(items, 2):
            big = 1_000_000
            px = {s: position[s].get(x, big) for s in systems}
            py = {s: position[s].get(y, big) for s in systems}
            wx = sum(weight[s] for s in systems if px[s] < py[s])
            wy = sum(weight[s] for s in systems if py[s] < px[s])
            neither = sum(weight[s] for s in systems if px[s] == py[s] == big)
            x_first, y_first = wx >= wy + neither, wy >= wx + neither
            if x_first == y_first:
                consistent = False
                break
            beats[x, y], beats[y, x] = x_first, y_first
        if consistent and all(
            not (beats[a, b] and beats[b, c]) or beats[a, c]
            for a, b, c in itertools.permutations(items, 3)
        ):
            good.add(query)
    return good


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("systems", [3, 5])
def test_condorcet_same_as_ranx_where_the_majority_is_a_strict_order(
        fusion_con, weighted, systems) -> None:
    method = next(m for m in METHODS if m.name == ("w_condorcet" if weighted else "condorcet"))
    checked = 0
    for seed in range(40, 70):
        table = random_runs(seed, systems, queries=4, pool=5, longest=4)
        weights = _weights(systems) if weighted else None
        params = {"weights": weights} if weighted else {}
        ours_params = {"weights": {f"s{i}": w for i, w in enumerate(weights)}} if weighted else {}
        ours = _fused(fusion_con, table, method, "none", ours_params)
        theirs = _ranx_fused(table, method, "none", params)
        for query in _strict_majority_queries(table, weights):
            _assert_same({k: v for k, v in ours.items() if k[0] == query},
                         {k: v for k, v in theirs.items() if k[0] == query})
            checked += 1
    assert checked >= 2, checked


def test_condorcet_scores_are_copeland_counts(fusion_con) -> None:
    # Hand calculation. Query q0: s0 ranks a > b > c, s1 ranks b > a (no c), s2 ranks c > a.
    # a vs b: s0 a, s1 b, s2 a (a returned, b not) -> a beats b. a vs c: s0 a, s1 a, s2 c ->
    # a beats c. b vs c: s0 b, s1 b (c not returned), s2 c -> b beats c. Scores: a 1 + 2 = 3,
    # b 1 + 1 = 2, c 1 + 0 = 1. Query q1: s0 ranks x only, s1 ranks y only: x vs y one vote
    # each (s2 returned neither: no vote) -> a tie: x 1.5, y 1.5; equal fused scores are ranked
    # by item text descending: y first.
    import pyarrow as pa
    table = pa.table({
        "system": ["s0", "s0", "s0", "s1", "s1", "s2", "s2", "s0", "s1"],
        "query": ["q0"] * 7 + ["q1"] * 2,
        "item": ["a", "b", "c", "b", "a", "c", "a", "x", "y"],
        "score": [3.0, 2.0, 1.0, 5.0, 4.0, 0.9, 0.1, 1.0, 1.0],
    })
    fusion_con.register("fusion_input", table)
    rows = fusion_con.execute(
        "SELECT query, item, score, rank FROM fuse_condorcet('fusion_input', norm := 'none') "
        "ORDER BY query, rank").fetchall()
    assert rows == [("q0", "a", 3.0, 1), ("q0", "b", 2.0, 2), ("q0", "c", 1.0, 3),
                    ("q1", "y", 1.5, 1), ("q1", "x", 1.5, 2)]


def test_seeded_runs_have_what_the_comparison_needs() -> None:
    # Ties within a list, items some systems miss, and queries without a list for some system.
    table = random_runs(3, 4).to_pylist()
    lists = {}
    for r in table:
        lists.setdefault((r["system"], r["query"]), []).append(r["score"])
    assert any(len(set(s)) < len(s) for s in lists.values())
    assert len(lists) < 4 * 5
    by_query = {}
    for r in table:
        by_query.setdefault(r["query"], {}).setdefault(r["item"], set()).add(r["system"])
    assert any(len(s) < 4 for items in by_query.values() for s in items.values())
    assert np.isfinite([r["score"] for r in table]).all()
