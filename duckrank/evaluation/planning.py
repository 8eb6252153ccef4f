"""The evaluation's plan: how the work is cut so that memory stays flat, and what each query reads.

Memory stays flat in the number of queries: the query ids are split into ranges of about
``ROWS_PER_BUCKET`` input rows (from a sample of the run; a query ranked by its top K counts as
``TOP_K_ROW_WEIGHT`` * K rows) and the lists are built, matched and summed one range at a time;
the run and qrels are scanned once per range instead of being held whole (Parquet sorted by query
skips the row groups outside a range). Each range's qrels are checked for an item given two
grades (``_check_conflicts``) as the ranges are planned.

The plan also picks the output columns and the truth forms they read (``_plan_metrics``), and
whether each query's whole list is ranked or only its top K (``_top_k``, ``_native_top_k_key``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import duckdb

from duckrank.evaluation.inputs import _Columns, _kept, _Qrels
from duckrank.evaluation.metric_requests import SUBTOPICS, Convention, MetricRequest
from duckrank.matching.sql import INTEGER_TYPES

# Input rows (run + qrels) per range of query ids: each range's lists are built and scored in one
# query, so this bounds the memory. At 3,000,000 the peak is about 310 to 360 MB from 1,000,000
# to 10,000,000 users of 13 rows each, where DuckDB's plain scan of the same Parquet file takes
# 190 MB (benchmarks/bench_long_memory.py); half as many rows take 60 MB less and one more scan
# of the inputs per range.
ROWS_PER_BUCKET = 3_000_000
# Run rows sampled to place the range boundaries (a reservoir: constant memory).
SAMPLE_ROWS = 20_000


# --- ranges of query ids --------------------------------------------------------------------------

@dataclass(frozen=True)
class _Bucket:
    """One range of query ids: lo < id <= hi (no bound = open)."""

    lo: str | None
    hi: str | None

    @property
    def params(self) -> dict[str, str]:
        bounds = {"duckrank_lo": self.lo, "duckrank_hi": self.hi}
        return {name: value for name, value in bounds.items() if value is not None}

    def where(self, expression: str, sql_type: str) -> str:
        # The bounds travel as text and are cast back to the ids' type: exact for every id
        # type DuckDB can cast to and from VARCHAR.
        parts = ["true"]
        if self.lo is not None:
            parts.append(f"{expression} > CAST($duckrank_lo AS {sql_type})")
        if self.hi is not None:
            parts.append(f"{expression} <= CAST($duckrank_hi AS {sql_type})")
        return " AND ".join(parts)


def _buckets(con: duckdb.DuckDBPyConnection, view: str, c: _Columns, rows: int) -> list[_Bucket]:
    """Ranges of query ids holding about ROWS_PER_BUCKET rows each, their bounds taken from a
    sample of the run's query ids in the ids' own order."""
    count = math.ceil(rows / ROWS_PER_BUCKET)
    if count <= 1:
        return [_Bucket(None, None)]
    sample = con.execute(f"""
        SELECT CAST(q AS VARCHAR) FROM (
          SELECT q FROM (SELECT {c.run_query} AS q FROM {view} WHERE {c.run_query} IS NOT NULL)
          USING SAMPLE reservoir({SAMPLE_ROWS} ROWS) REPEATABLE (20240609))
        ORDER BY q""").fetchall()
    bounds: list[str] = []
    for j in range(1, count):
        value = sample[j * len(sample) // count][0] if sample else None
        if value is not None and (not bounds or bounds[-1] != value):
            bounds.append(value)
    edges: list[str | None] = [None, *bounds, None]
    return [_Bucket(lo, hi) for lo, hi in zip(edges, edges[1:], strict=False)]


def _check_conflicts(con: duckdb.DuckDBPyConnection, view: str, c: _Columns,
                     bucket: _Bucket) -> int:
    """Raise when one (query, item), or (query, subtopic, item) in subtopic qrels, has two
    grades in this range; return its judged queries."""
    where = f"{_kept(c)} AND {bucket.where(c.qrels_query, c.query_type)}"
    # In subtopic qrels an item has a grade per subtopic (the other metrics read the largest).
    item = c.qrels_item if c.subtopic is None else f"{c.subtopic}, {c.qrels_item}"
    shown = (f"{c.qrels_item}::VARCHAR" if c.subtopic is None
             else f"concat({c.qrels_item}, ', subtopic ', {c.subtopic})")
    # Only a query with two different grades can give them to one item: grouping by query alone
    # costs a tenth of grouping every (query, item), which then reads only those queries (none
    # for qrels of one grade).
    per_query = (f"SELECT {c.qrels_query} AS q, min({c.grade}) AS low, max({c.grade}) AS high "
                 f"FROM {view} WHERE {where} GROUP BY q")
    judged, mixed_queries = con.execute(
        f"SELECT count(*), count(*) FILTER (WHERE low <> high) FROM ({per_query})",
        bucket.params).fetchall()[0]
    if not mixed_queries:
        return judged
    where += f" AND {c.qrels_query} IN (SELECT q FROM ({per_query}) WHERE low <> high)"
    conflicts = con.execute(f"""
        SELECT count(*) FROM (
          SELECT {c.qrels_query} AS q FROM {view} WHERE {where}
          GROUP BY q, {item} HAVING min({c.grade}) <> max({c.grade}))""",
        bucket.params).fetchall()[0][0]
    if conflicts:
        example = con.execute(f"""
            SELECT q::VARCHAR, i FROM (
              SELECT {c.qrels_query} AS q, {shown} AS i FROM {view} WHERE {where}
              GROUP BY q, {item} HAVING min({c.grade}) <> max({c.grade}) LIMIT 1)""",
            bucket.params).fetchall()[0]
        # The usual cause: a TREC diversity qrels file read without its subtopic column.
        hint = ("" if c.subtopic is not None else "; if these are subtopic qrels (one grade per "
                "subtopic), name their subtopic column (docs/diversity.md)")
        raise ValueError(f"the qrels give two different grades to query {example[0]}, item "
                         f"{example[1]}{hint}")
    return judged


# --- the query ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Metric:
    request: MetricRequest
    column: str  # the output column's name
    truth: str  # the judged CTE's column it reads


@dataclass(frozen=True)
class _Truth:
    """One truth column of the judged CTE: the MAP of grades (``gains``: with a negative grade
    as 0, for the gain functions, which refuse one), the LIST of the items with grade > 0
    (``min_grade`` None) or grade >= min_grade, or (``subtopics``) the LIST of STRUCT(subtopic,
    item, grade) of every judgment. ``grade_gains``: (grade, gain) pairs the MAP's grades are
    mapped by first (a request's ``gains``)."""

    name: str
    graded: bool
    min_grade: int | float | None = None
    gains: bool = False
    subtopics: bool = False
    grade_gains: tuple[tuple[float, float], ...] = ()
    # Every kept qrels row passes the relevance test: the LIST is every judged item, built
    # without the test's FILTER (which costs the truth lists about a third more).
    all_relevant: bool = False


def _plan_metrics(
    requests: Sequence[MetricRequest], graded: bool
) -> tuple[list[_Metric], list[_Truth]]:
    """The output columns (one per distinct name) and only the truth forms they read: a MAP of
    every judgment costs memory for nothing when no metric takes grades."""
    truths: dict[tuple[bool, int | float | None, bool, bool, tuple], _Truth] = {}
    metrics: dict[str, _Metric] = {}
    for request in requests:
        form = request.truth_form(graded)
        is_map, subtopics = form == "map", form == SUBTOPICS
        # The subtopic list is one truth whatever the options (min_grade is the function's).
        key = (is_map, None if is_map or subtopics else request.min_grade,
               is_map and request.reads_gains(), subtopics, request.gains)
        truth = truths.setdefault(key, _Truth(f"duckrank_truth{len(truths)}", *key))
        column = request.column(graded)
        metrics.setdefault(column, _Metric(request, column, truth.name))
    return list(metrics.values()), list(truths.values())


# --- ranking: whole lists or the top K ------------------------------------------------------------

# Metrics with a cut-off read only rec[1:k] (and K = min(k, len(rec)), the same on the list cut at
# the largest k), so when every requested metric has one, each query needs only its top K. The
# native step's aggregate duckrank_top_k (matching/native/topk.c) keeps those in a heap of at most
# K pairs per query, grown as rows arrive: at K = 10 over 100-row lists half the CPU of DuckDB's
# max(x, n) and a quarter of to_ordered_list's, and no slower on short lists. Without it (not
# loaded, or item or key types it does not take exactly), DuckDB's max(x, n) keeps the heap: half
# the CPU of to_ordered_list at K = 10, level at K = 50, and slower with more memory (the heap
# reserves its n places per query) when the lists are not much longer than K (measured in one run,
# benchmarks/bench_long.py); hence that heap only where the lists average at least TOP_K_RATIO * K
# rows.
TOP_K_RATIO = 4
# The item types duckrank_top_k takes, and the key types it reads exactly through a cast to BIGINT
# or DOUBLE (a key of any other type, DECIMAL or HUGEINT, could tie or order differently there).
NATIVE_TOP_K_ITEMS = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT",
                      "UINTEGER", "UBIGINT", "FLOAT", "DOUBLE", "VARCHAR")
NATIVE_TOP_K_KEYS = {
    **dict.fromkeys(("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT",
                     "UINTEGER"), "BIGINT"),
    "FLOAT": "DOUBLE", "DOUBLE": "DOUBLE",
}
# Memory of a query's heap, in input rows (ranges are sized in rows, ROWS_PER_BUCKET).
TOP_K_ROW_WEIGHT = 4
# The largest K duckrank_top_k takes (its heap counts in 32 bits).
NATIVE_TOP_K_LIMIT = 2**32 - 1


def _all_relevant(con: duckdb.DuckDBPyConnection, truth: _Truth, qrels: _Qrels,
                  convention: Convention) -> _Truth:
    """``truth`` marked all_relevant when every kept qrels row passes its binary relevance test:
    each test is a lower bound on the grade (``g > 0``, ``g >= 1``, ``g >= min_grade``), so the
    smallest grade decides, tested by the same SQL."""
    if truth.graded or truth.subtopics or qrels.smallest is None:
        return truth
    test, params = convention.relevant, {"g": qrels.smallest}
    if truth.min_grade is not None:
        test, params["m"] = "g >= $m", truth.min_grade
    passes = con.execute(f"SELECT {test} FROM (SELECT $g AS g)", params).fetchall()[0][0]
    return replace(truth, all_relevant=bool(passes))


def _top_k(metrics: Sequence[_Metric]) -> int | None:
    """The largest cut-off when every metric has one; None when some metric reads the whole
    list."""
    cutoffs = [m.request.k for m in metrics]
    if not cutoffs or None in cutoffs:
        return None
    return max(k for k in cutoffs if k is not None)


def _native_top_k_key(con: duckdb.DuckDBPyConnection, run_view: str, item: str,
                      key: str) -> str | None:
    """The type to cast the keys to for duckrank_top_k, or None when it cannot rank these rows:
    not loaded in ``con``'s database (asked of DuckDB's aggregates: a macro of that name is not
    it), or an item or key type it does not take exactly."""
    item_type, key_type = (str(t) for t in con.sql(f"SELECT {item}, {key} FROM {run_view}").types)
    if item_type not in NATIVE_TOP_K_ITEMS:
        return None
    # Integer ids rank with its overloads of four arguments (ties by the id's text, see
    # _ranked_sql), the others with those of three.
    arguments = 4 if item_type in INTEGER_TYPES else 3
    loaded = con.execute(
        "SELECT count(*) FROM duckdb_functions() WHERE function_name = 'duckrank_top_k' "
        "AND function_type = 'aggregate' AND len(parameters) = $arguments",
        {"arguments": arguments}).fetchall()
    if loaded == [(0,)]:
        return None
    return NATIVE_TOP_K_KEYS.get(key_type)
