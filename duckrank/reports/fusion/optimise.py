"""Choosing a fusion method's weights or parameter by a grid (ranx 0.3.21's ``optimize_fusion``,
``ranx/fusion_optimization/``), every grid point fused and scored by a duckrank metric in one
query: the fused runs of all grid points as one long relation (a ``grid`` column), scored by
``duckrank.evaluate(..., by='grid')``.

The grids are ranx's (docs/fusion.md, "Optimisation"): weights in {0, step, ..., 1} for each
system, the vectors summing to 1; RRF's k from 10 to 100 by 10; RBC's phi, logN_ISR's sigma and
CombGMNZ's gamma from 0.01 to 1 by 0.01; SlideFuse's w and ProbFuse's number of segments from 1 to
100. ranx keeps a weight vector when its float sum is exactly 1.0, which drops some whose decimal
sum is 1 (0.1 + 0.2 + 0.7 is 1.0000000000000002 in floats); ``grid='ranx'`` reproduces that
rule, the default (``grid='exact'``) keeps every vector whose steps sum to 1. The best point is
the last of those with the highest mean, in grid order (ranx's ``>=``).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np

from duckrank.fusion import FusionMethod, method, normalisation
from duckrank.render.quoting import quote_literal
from duckrank.reports.fusion.api import fusion_connection, sql_arguments
from duckrank.reports.fusion.inputs import drop, long_runs, sql_value

if TYPE_CHECKING:
    import pandas

GRID_COLUMN = "duckrank_grid"
# ranx's parameter grids: name -> (first, last, step), inclusive.
PARAMETER_GRIDS = {
    "rrf": ("k", 10, 100, 10),
    "rbc": ("phi", 0.01, 1.0, 0.01),
    "logn_isr": ("sigma", 0.01, 1.0, 0.01),
    "gmnz": ("gamma", 0.01, 1.0, 0.01),
    "slidefuse": ("w", 1, 100, 1),
    "probfuse": ("n_segments", 1, 100, 1),
}


@dataclass
class Optimisation:
    """The grid's result: the best ``params`` (ready for ``fuse``), its mean ``score`` of
    ``metric``, and ``report``: one row per grid point (its parameters as text and its mean)."""

    method: str
    metric: str
    params: dict[str, Any]
    score: float
    report: pandas.DataFrame


def _digits(step: float) -> int:
    """ranx's rounding: as many decimals as ``str(step)`` shows."""
    return str(step)[::-1].find(".")


def weight_grid(systems: int, step: float = 0.1, grid: str = "exact") -> list[tuple[float, ...]]:
    """The weight vectors of ``systems`` weights in {0, step, ..., 1} summing to 1, in ranx's
    order (``itertools.product``). ``grid='ranx'``: ranx's rule (float sum == 1.0)."""
    if not (isinstance(step, int | float) and 0 < step <= 1):
        raise ValueError(f"optimize_fusion: step must be a number in (0, 1], got {step!r}")
    if grid == "ranx":
        values = [round(x, _digits(step)) for x in np.arange(0, 1 + step, step)]
        return [seq for seq in itertools.product(values, repeat=systems) if sum(seq) == 1.0]
    if grid != "exact":
        raise ValueError(f"optimize_fusion: grid must be 'exact' or 'ranx', got {grid!r}")
    steps = round(1 / step)
    if not np.isclose(steps * step, 1.0):
        raise ValueError(f"optimize_fusion: step must divide 1 (1 / step a whole number), got "
                         f"{step!r}")
    digits = max(_digits(step), 0)
    return [tuple(round(i * step, digits) for i in seq)
            for seq in itertools.product(range(steps + 1), repeat=systems) if sum(seq) == steps]


def parameter_grid(name: str, first: float, last: float, step: float) -> list[float]:
    """ranx's grid of one parameter: ``first`` to ``last`` by ``step`` (rounded to the step's
    decimals for fractions, as ranx rounds them)."""
    if float(step).is_integer() and float(first).is_integer():
        return list(range(int(first), int(last) + 1, int(step)))
    # np.arange to last + step (ranx's call) can pass last in floats (0.5 to 0.9 by 0.2 gives
    # 1.1): such a point is left out.
    points = [float(round(x, _digits(step))) for x in np.arange(first, last + step, step)]
    return [x for x in points if x <= last]


def grid_points(fusion: FusionMethod, systems: list[str], step: float, grid: str,
                ranges: Mapping[str, tuple[float, float, float]]) -> list[dict[str, Any]]:
    """Each grid point as the parameters it gives the method."""
    if fusion.weighted:
        return [{"weights": dict(zip(systems, w, strict=True))}
                for w in weight_grid(len(systems), step, grid)]
    if fusion.name not in PARAMETER_GRIDS:
        raise ValueError(f"optimize_fusion: {fusion.name} has nothing to optimise (methods with "
                         "a grid: the weighted ones, " + ", ".join(PARAMETER_GRIDS) + ")")
    name, first, last, by = PARAMETER_GRIDS[fusion.name]
    first, last, by = ranges.get(name, (first, last, by))
    return [{name: value} for value in parameter_grid(name, first, last, by)]


def _shown(point: Mapping[str, Any], systems: list[str]) -> str:
    if "weights" in point:
        return str([point["weights"][s] for s in systems])
    return ", ".join(f"{k}={v}" for k, v in point.items())


def optimize_fusion(
    runs: Mapping[str, Any] | Sequence[Any] | Any,
    qrels: Any,
    method: str = "wsum",
    metric: str = "ndcg@10",
    *,
    norm: str | None = "min-max",
    step: float = 0.1,
    grid: str | Sequence[Mapping[str, Any]] = "exact",
    ranges: Mapping[str, tuple[float, float, float]] | None = None,
    params: Mapping[str, Any] | None = None,
    system_column: str | None = None,
    query_column: str | None = None,
    item_column: str = "item",
    score_column: str = "score",
    connection: duckdb.DuckDBPyConnection | None = None,
) -> Optimisation:
    """Choose ``method``'s weights (or its parameter) by the mean of ``metric`` (any request
    ``duckrank.evaluate`` takes: ``'ndcg@10'``, ``'map@100'``, ...) over the queries of
    ``qrels``: every point of the grid fused and scored in one query. ``grid``: ``'exact'``
    (every weight vector of multiples of ``step`` summing to 1), ``'ranx'`` (ranx's grid: see
    the module's docstring) or an explicit list of parameter dicts. ``ranges``: another range
    for a parameter grid, ``{'k': (first, last, step)}``. ``params``: fixed parameters (a
    supervised method's trained values; ProbFuse is trained on ``qrels`` for each number of
    segments). ``runs`` and the column options: as ``duckrank.fuse``."""
    from duckrank.evaluation import evaluate

    fusion = method if isinstance(method, FusionMethod) else _method(method)
    con = connection if connection is not None else fusion_connection()
    long = long_runs(con, runs, system_column=system_column, query_column=query_column,
                     item_column=item_column, score_column=score_column)
    try:
        points = (list(grid) if not isinstance(grid, str)
                  else grid_points(fusion, long.systems, step, grid, ranges or {}))
        if not points:
            raise ValueError("optimize_fusion: the grid is empty")
        fixed = dict(params or {})
        norm_name = normalisation(norm).name
        if fusion.name == "wsum":
            fused, ranking = _linear_grid(con, long, points, norm_name), {}
        else:
            fused, ranking = _grid(con, long, fusion, points, fixed, qrels, norm), {
                "rank_column": "rank"}
        scores = evaluate(fused, qrels, [metric], by=GRID_COLUMN, connection=con, **ranking)
    finally:
        drop(con, long)
    means = dict(zip(scores[GRID_COLUMN], scores.iloc[:, -1], strict=True))
    values = [float(means.get(i, float("nan"))) for i in range(len(points))]
    # The last of the best, in grid order (ranx's `>=`); a point no query could score (NaN)
    # never wins.
    best = max(range(len(points)),
               key=lambda i: (values[i] if values[i] == values[i] else float("-inf"), i))
    import pandas  # the report's type, as evaluate returns (pandas is needed there too)

    report = pandas.DataFrame({"params": [_shown(p, long.systems) for p in points],
                               metric: values})
    return Optimisation(fusion.name, metric, {**dict(params or {}), **points[best]},
                        values[best], report)


def _grid(con: duckdb.DuckDBPyConnection, long: Any, fusion: FusionMethod,
          points: list[dict[str, Any]], fixed: dict[str, Any], qrels: Any,
          norm: str | None) -> duckdb.DuckDBPyRelation:
    """Every grid point's fused run, one macro call each, as one relation."""
    norm_name = normalisation(norm).name
    parts = []
    for index, point in enumerate(points):
        given = {**fixed, **point}
        if fusion.name == "probfuse" and "n_segments" in given:
            given = {**fixed, **_probfuse_probs(con, long, qrels, given["n_segments"], norm)}
        parts.append(
            f"SELECT {index} AS {GRID_COLUMN}, query, item, score, rank FROM "
            f"{fusion.sql_name}({quote_literal(long.view)}"
            f"{sql_arguments(fusion, given, long.systems)}, norm := {quote_literal(norm_name)})")
    return con.sql("\nUNION ALL\n".join(parts))


def _linear_grid(con: duckdb.DuckDBPyConnection, long: Any, points: list[dict[str, Any]],
                 norm_name: str) -> duckdb.DuckDBPyRelation:
    """The weighted sum's grid without fusing once per point: its score is linear in the
    weights, so each system's normalised scores are computed once (``_pivot``: every candidate,
    0 where the system did not return it; one fuse for all systems, where the five fuses of
    ``_one_hot_pivot`` cost about twice the CPU of the whole grid search at 1,000 queries) and
    each point's score is the sum of weight x score over the systems in their names' order,
    the order (and so the rounding) of the macro's ordered sum. Ranked by score, equal scores by
    item text descending: the macro's rank."""
    systems = sorted(long.systems)
    if normalisation(norm_name).adds_candidates:
        pivot = _one_hot_pivot(long, systems, norm_name)
    else:
        pivot = _pivot(con, long, systems, norm_name)
    weights = ", ".join(
        f"({i}, " + ", ".join(repr(float(p["weights"][s])) for s in systems) + ")"
        for i, p in enumerate(points))
    columns = ", ".join(f"w{i}" for i in range(len(systems)))
    total = "0.0"
    for i in range(len(systems)):
        total = f"({total} + w{i} * v{i})"
    return con.sql(
        f"SELECT g.{GRID_COLUMN}, query, item, {total} AS score\n"
        f"FROM ({pivot}) CROSS JOIN "
        f"(VALUES {weights}) g({GRID_COLUMN}, {columns})")


def _pivot(con: duckdb.DuckDBPyConnection, long: Any, systems: list[str], norm_name: str
           ) -> str:
    """Every system's normalised score of every candidate (0 where it did not return it), one
    column each, from one ``fuse_wsum`` call: each system's lists are made queries of their own
    (the query is the pair (system, query)) and weighted 1, so each fused score is that system's
    normalised score (0 + 1 x s, the number the one-hot weights give), then pivoted per (query,
    item). Not for a normalisation that adds the query's candidates (Borda): it reads the other
    systems' lists."""
    split = f"{long.view}_split"
    # A NULL query stays NULL, so that the macro refuses it as it refuses it in ``long.view``.
    con.execute(f"CREATE OR REPLACE TEMP VIEW {split} AS SELECT system, CASE WHEN query IS NOT "
                f"NULL THEN {{'s': system, 'q': query}} END AS query, item, score "
                f"FROM {long.view}")
    long.views.insert(0, split)  # dropped with the others (before the view it reads)
    ones = sql_value(dict.fromkeys(systems, 1))
    columns = ", ".join(
        f"coalesce(any_value(score) FILTER (WHERE query.s = {quote_literal(s)}), 0.0) AS v{i}"
        for i, s in enumerate(systems))
    return (f"SELECT query.q AS query, item, {columns}\n"
            f"FROM fuse_wsum({quote_literal(split)}, {ones}, norm := {quote_literal(norm_name)})"
            f"\nGROUP BY query.q, item")


def _one_hot_pivot(long: Any, systems: list[str], norm_name: str) -> str:
    """The pivot of ``_pivot`` by one ``fuse_wsum`` per system (its weight 1, the others' 0):
    the Borda normalisation gives an item a system did not return a score of its own."""
    parts = []
    for index, system in enumerate(systems):
        one_hot = {s: (1 if s == system else 0) for s in systems}
        parts.append(
            f"(SELECT query, item, score AS v{index} FROM fuse_wsum("
            f"{quote_literal(long.view)}, {sql_value(one_hot)}, "
            f"norm := {quote_literal(norm_name)}))")
    return "SELECT * FROM " + parts[0] + " p0" + "".join(
        f"\n  JOIN {part} p{i} USING (query, item)" for i, part in enumerate(parts[1:], 1))


def _probfuse_probs(con: duckdb.DuckDBPyConnection, long: Any, qrels: Any, n_segments: int,
                    norm: str | None) -> dict[str, Any]:
    from duckrank.reports.fusion.training import train_fusion

    return train_fusion({s: con.sql(f"SELECT * FROM {long.view} WHERE system = "
                                    f"{quote_literal(s)}") for s in long.systems},
                        qrels, "probfuse", n_segments=n_segments, norm=norm,
                        connection=con).params


def _method(name: str) -> FusionMethod:
    try:
        return method(name)
    except ValueError as error:
        raise ValueError(f"optimize_fusion: {error}") from None
