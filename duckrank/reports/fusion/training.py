"""The supervised fusion methods' training (PosFuse, ProbFuse, SegFuse, SlideFuse, BayesFuse,
MAPFuse), as ranx 0.3.21 trains them (``ranx/fusion/common.py`` ``estimate_probs``, and each
method's ``*_train``), in one DuckDB query per method over all systems.

Definitions (docs/fusion.md, "Training"): an item is relevant when the qrels give it a grade of
at least 1 (ranx's ``rel_lvl``; qrels without a grade column: every row), ids are matched as
text. The training queries are the queries of the qrels that some run returned items for (ranx
requires the two sets to be equal); a system with no list for one of them has an empty list
there. A system's list is ordered as the fusion orders it before normalising: score descending,
ties by item text descending (ascending scores under ``min-max-inverted``). Every estimate is
over the training queries only, and ``Training.queries`` names them.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import duckdb

from duckrank.fusion import method as fusion_method
from duckrank.fusion.methods import SEGMENT_ENDS
from duckrank.render.quoting import quote_identifier
from duckrank.reports.fusion.inputs import LongRuns, drop, long_runs

# BayesFuse's segments of positions (ranx's cut-offs 0, 5, 10, 15, 20, 30, 100, 200, 500, 1000).
BAYES_CUT_OFFS = (0, 5, 10, 15, 20, 30, 100, 200, 500, 1000)


@dataclass
class Training:
    """What a supervised method learnt: ``params`` for ``fuse`` (a mapping system -> list or
    value under the method's parameter name) and the training ``queries``."""

    method: str
    params: dict[str, Any]
    queries: list[str] = field(default_factory=list)

    def description(self) -> str:
        shown = ", ".join(self.queries[:10]) + (", ..." if len(self.queries) > 10 else "")
        return f"{len(self.queries)} queries ({shown})"


def _lists_sql(runs: LongRuns, qrels: str, grade: str | None, norm: str | None) -> str:
    """Each system's list on each training query: position, list length n, hit (0/1)."""
    order = "score ASC" if norm == "min-max-inverted" else "score DESC"
    relevant = f"WHERE {quote_identifier(grade)} >= 1" if grade else ""
    return f"""
WITH duckrank_runs AS (
  SELECT system, CAST(query AS VARCHAR) AS q, CAST(item AS VARCHAR) AS i, score FROM {runs.view}
), duckrank_train AS (
  SELECT DISTINCT CAST(query AS VARCHAR) AS q FROM {qrels}
  WHERE CAST(query AS VARCHAR) IN (SELECT q FROM duckrank_runs)
), duckrank_relevant AS (
  SELECT DISTINCT CAST(query AS VARCHAR) AS q, CAST(item AS VARCHAR) AS i FROM {qrels} {relevant}
), duckrank_lists AS (
  SELECT r.system, r.q,
    row_number() OVER (PARTITION BY r.system, r.q ORDER BY r.{order}, r.i DESC) AS position,
    count(*) OVER (PARTITION BY r.system, r.q) AS n,
    CASE WHEN v.i IS NULL THEN 0 ELSE 1 END AS hit
  FROM duckrank_runs r JOIN duckrank_train t ON t.q = r.q
  LEFT JOIN duckrank_relevant v ON v.q = r.q AND v.i = r.i
), duckrank_systems AS (SELECT DISTINCT system FROM duckrank_runs),
duckrank_queries AS (SELECT count(*) AS queries FROM duckrank_train)"""


def _segments_sql(per_segment: str, segments: int) -> str:
    """Per system, a LIST of ``segments`` values: ``per_segment`` (system, k, value) summed over
    the training queries and divided by their number, 0 where no query reached segment k."""
    return f"""
SELECT s.system, list(coalesce(v.total, 0) / greatest(queries, 1) ORDER BY k.k) AS probs
FROM duckrank_systems s CROSS JOIN range({segments}) k(k) CROSS JOIN duckrank_queries
LEFT JOIN (SELECT system, k, sum(value) AS total FROM ({per_segment}) GROUP BY ALL) v
  ON v.system = s.system AND v.k = k.k
GROUP BY s.system, queries"""


def _posfuse() -> str:
    # estimate_probs: at each position, the share of the training queries whose list reaches it
    # that have a relevant item there; the list is as long as the system's longest list.
    return """
SELECT s.system, coalesce(list(p.share ORDER BY p.position) FILTER (WHERE p.position IS NOT NULL),
  []::DOUBLE[]) AS probs
FROM duckrank_systems s LEFT JOIN (
  SELECT system, position, avg(hit) AS share FROM duckrank_lists GROUP BY ALL) p USING (system)
GROUP BY s.system"""


def _probfuse(n_segments: int) -> str:
    # Each query's list cut into segments of ceil(n / x) items; a segment adds its share of
    # relevant items (over its own length: the last one may be shorter).
    size = f"CAST(ceil(n / {n_segments}) AS BIGINT)"
    per_segment = f"""
SELECT system, (position - 1) // {size} AS k,
  hit / least({size}, n - ((position - 1) // {size}) * {size}) AS value
FROM duckrank_lists"""
    return _segments_sql(per_segment, n_segments)


def _segfuse() -> str:
    # Fixed segments ending at 5, 15, 35, ... 5115; a segment's hits over its full size.
    ends = ", ".join(map(str, SEGMENT_ENDS))
    starts = ", ".join(map(str, (0, *SEGMENT_ENDS[:-1])))
    k = f"len(list_filter([{ends}], lambda e: e <= position - 1))"
    per_segment = f"""
SELECT system, {k} AS k, hit / ([{ends}][{k} + 1] - [{starts}][{k} + 1]) AS value
FROM duckrank_lists WHERE position <= {SEGMENT_ENDS[-1]}"""
    return _segments_sql(per_segment, len(SEGMENT_ENDS))


def _bayesfuse() -> str:
    # The mean precision P of each segment of positions, read as log-odds ln(P / (1 - P)), with
    # ranx's guards: P = 0 becomes 0.001 (then 1 - P = 0.999), and 1 - P = 0 becomes 0.001; one
    # value per position 1..1000.
    ends = ", ".join(map(str, BAYES_CUT_OFFS[1:]))
    starts = ", ".join(map(str, BAYES_CUT_OFFS[:-1]))
    k = f"len(list_filter([{ends}], lambda e: e <= position - 1))"
    per_segment = f"""
SELECT system, {k} AS k, hit / ([{ends}][{k} + 1] - [{starts}][{k} + 1]) AS value
FROM duckrank_lists WHERE position <= {BAYES_CUT_OFFS[-1]}"""
    odds = ("list_transform(list_transform(probs, lambda p: CASE WHEN p = 0 THEN 0.001 ELSE p "
            "END), lambda p: ln(p / CASE WHEN 1 - p = 0 THEN 0.001 ELSE 1 - p END))")
    position_segment = f"len(list_filter([{ends}], lambda e: e <= i))"
    return f"""
SELECT system, list_transform(range({BAYES_CUT_OFFS[-1]}),
  lambda i: odds[{position_segment} + 1]) AS probs
FROM (SELECT system, {odds} AS odds FROM ({_segments_sql(per_segment, len(BAYES_CUT_OFFS) - 1)}))"""


def _mapfuse() -> str:
    # ranx's MAP: per query, the precision at each relevant item's position summed and divided
    # by the query's relevant items (0 without any), averaged over the training queries (a
    # system without a list for one counts 0 there).
    return """
SELECT s.system, coalesce(sum(a.ap), 0) / greatest(queries, 1) AS probs
FROM duckrank_systems s CROSS JOIN duckrank_queries LEFT JOIN (
  SELECT system, q, sum(hit * hits_so_far / position) / any_value(relevant) AS ap
  FROM (
    SELECT l.*, sum(hit) OVER (PARTITION BY system, q ORDER BY position) AS hits_so_far,
      (SELECT count(*) FROM duckrank_relevant v WHERE v.q = l.q) AS relevant
    FROM duckrank_lists l)
  WHERE relevant > 0 GROUP BY ALL) a USING (system)
GROUP BY s.system, queries"""


def _estimates(name: str, n_segments: int | None) -> str:
    if name == "probfuse":
        if n_segments is None or isinstance(n_segments, bool) or not isinstance(
                n_segments, int) or n_segments < 1:
            raise ValueError(f"train_fusion: probfuse needs n_segments, a whole number >= 1, "
                             f"got {n_segments!r}")
        return _probfuse(n_segments)
    return {"posfuse": _posfuse, "slidefuse": _posfuse, "segfuse": _segfuse,
            "bayesfuse": _bayesfuse, "mapfuse": _mapfuse}[name]()


def _qrels_view(con: duckdb.DuckDBPyConnection, qrels: Any, query_column: str | None,
                item_column: str, grade_column: str | None, registered: list[str],
                views: list[str]) -> tuple[str, str | None]:
    from duckrank.evaluation.inputs import as_relation

    relation = as_relation(con, qrels, "qrels", {}, registered)
    query = query_column or next((c for c in ("query", "user") if c in relation.columns), "query")
    grade = grade_column or ("grade" if "grade" in relation.columns else None)
    for column in (query, item_column, *([grade] if grade else [])):
        if column not in relation.columns:
            raise ValueError(f"train_fusion: qrels has no column {column!r} (its columns: "
                             f"{', '.join(relation.columns)})")
    view = f"duckrank_fusion_qrels_{uuid.uuid4().hex}"
    relation.project(
        f"{quote_identifier(query)} AS query, {quote_identifier(item_column)} AS item"
        + (f", {quote_identifier(grade)} AS grade" if grade else "")).create_view(view)
    views.append(view)
    return view, "grade" if grade else None


def train_fusion(
    runs: Any, qrels: Any, method: str, *, norm: str | None = "min-max",
    n_segments: int | None = None, system_column: str | None = None,
    query_column: str | None = None, item_column: str = "item", score_column: str = "score",
    grade_column: str | None = None, connection: duckdb.DuckDBPyConnection | None = None,
) -> Training:
    """Train a supervised fusion method (``'posfuse'``, ``'probfuse'`` (with ``n_segments``),
    ``'segfuse'``, ``'slidefuse'``, ``'bayesfuse'``, ``'mapfuse'``) on ``qrels``: what it
    learnt per system, ready for ``fuse(..., params=training.params)`` (SlideFuse also needs
    ``w``), and the training queries. ``runs`` and the column options: as ``fuse``."""
    fusion = fusion_method(method)
    if not fusion.supervised:
        raise ValueError(f"train_fusion: {method} is not a supervised method (those are: "
                         "posfuse, probfuse, segfuse, slidefuse, bayesfuse, mapfuse)")
    from duckrank.reports.fusion.api import fusion_connection

    con = connection if connection is not None else fusion_connection()
    long = long_runs(con, runs, system_column=system_column, query_column=query_column,
                     item_column=item_column, score_column=score_column)
    views: list[str] = []
    try:
        qrels_view, grade = _qrels_view(con, qrels, query_column, item_column, grade_column,
                                        long.registered, views)
        lists = _lists_sql(long, qrels_view, grade, norm)
        rows = con.execute(lists + "\n" + _estimates(fusion.name, n_segments)).fetchall()
        queries = [r[0] for r in con.execute(
            lists + "\nSELECT q FROM duckrank_train ORDER BY q").fetchall()]
    finally:
        long.views.extend(views)
        drop(con, long)
    learnt = {system: value for system, value in rows}
    return Training(fusion.name, {fusion.trained: learnt}, queries)
