"""What ``fuse`` reads and writes: the runs (a mapping name -> run, a list of files or tables, or
one long table with a system column) as one long view of (system, query, item, score), the
parameters as SQL text, and the fused table in the type the runs came in."""

from __future__ import annotations

import math
import numbers
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from duckrank.files.runs import as_relation, is_arrow, is_polars
from duckrank.render.quoting import quote_identifier, quote_literal

QUERY_COLUMNS = ("query", "user")


def sql_value(value: Any) -> str:
    """A parameter's value as SQL text: a whole number, a DOUBLE, a string literal, a LIST of
    DOUBLE or a MAP with text keys, each element quoted by ``quote_literal`` or written by
    ``repr`` of a finite float; anything else is an error (no value reaches SQL unquoted)."""
    if isinstance(value, str):
        return quote_literal(value)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(f"parameters must be finite numbers, got {value!r}")
        if isinstance(value, numbers.Integral):
            return str(int(value))
        # With an exponent DuckDB reads the literal as a DOUBLE (without one, as a DECIMAL,
        # whose conversion can round twice); 17 digits give the float back exactly.
        return f"{number:.17e}"
    if isinstance(value, Mapping):
        entries = ", ".join(f"{quote_literal(str(k))}: {sql_value(v)}" for k, v in value.items())
        return f"MAP {{{entries}}}"
    if hasattr(value, "tolist"):  # a numpy array
        value = value.tolist()
    if isinstance(value, Sequence) and not isinstance(value, bytes):
        return f"CAST([{', '.join(sql_value(float(v)) for v in value)}] AS DOUBLE[])"
    raise TypeError(f"cannot pass {value!r} ({type(value).__name__}) as a fusion parameter")


@dataclass
class LongRuns:
    """The runs as one view of ``con`` with columns system, query, item, score (``view``), the
    system names in the order given, the input's own column names, and the kind of table the
    result is returned as."""

    view: str
    systems: list[str]
    query_column: str
    item_column: str
    score_column: str
    kind: str  # 'pandas', 'polars', 'arrow' or 'path'
    registered: list[str]  # tables registered with ``con.register`` (``as_relation``'s)
    views: list[str]  # the views made here


def _kind(table: Any) -> str:
    if isinstance(table, str | Path):
        return "path"
    if is_polars(table):
        return "polars"
    if is_arrow(table):
        return "arrow"
    return "pandas"


def _named(runs: Any) -> list[tuple[str, Any]]:
    """(name, run) pairs: a mapping's keys, a list's file stems, or run1, run2, ... for a list of
    tables."""
    if isinstance(runs, Mapping):
        return [(str(name), run) for name, run in runs.items()]
    named = [
        (Path(run).stem if isinstance(run, str | Path) else f"run{i}", run)
        for i, run in enumerate(runs, start=1)
    ]
    names = [name for name, _ in named]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"fuse: two runs are named {twice[0]!r} (by their files' stems): pass "
                         "runs as a mapping name -> run to name them")
    return named


def _query_column(relation: duckdb.DuckDBPyRelation, given: str | None) -> str:
    if given is not None:
        return given
    return next((c for c in QUERY_COLUMNS if c in relation.columns), "query")


def _check_columns(relation: duckdb.DuckDBPyRelation, needed: list[str], shown: str) -> None:
    missing = [c for c in needed if c not in relation.columns]
    if missing:
        raise ValueError(f"fuse: {shown} has no column {missing[0]!r} (its columns: "
                         f"{', '.join(relation.columns)})")


def long_runs(
    con: duckdb.DuckDBPyConnection, runs: Any, *, system_column: str | None,
    query_column: str | None, item_column: str, score_column: str,
) -> LongRuns:
    """``runs`` as one long view (see ``LongRuns``). With ``system_column``, ``runs`` is one
    table holding every system; otherwise a mapping or a list of runs."""
    registered: list[str] = []
    view = f"duckrank_fusion_{uuid.uuid4().hex}"
    if system_column is not None:
        relation = as_relation(con, runs, "run", {}, registered)
        query = _query_column(relation, query_column)
        _check_columns(relation, [system_column, query, item_column, score_column], "runs")
        relation.project(
            f"CAST({quote_identifier(system_column)} AS VARCHAR) AS system, "
            f"{quote_identifier(query)} AS query, {quote_identifier(item_column)} AS item, "
            f"{quote_identifier(score_column)} AS score").create_view(view)
        systems = [r[0] for r in con.execute(
            f"SELECT DISTINCT system FROM {view} ORDER BY system").fetchall()]
        return LongRuns(view, systems, query, item_column, score_column, _kind(runs), registered,
                        [view])
    named = _named(runs)
    if len(named) < 2:
        raise ValueError(f"fuse: runs must hold at least two runs, got {len(named)}")
    parts, kinds, query, views = [], set(), None, [view]
    for name, run in named:
        relation = as_relation(con, run, "run", {}, registered)
        query = _query_column(relation, query_column)
        _check_columns(relation, [query, item_column, score_column], f"run {name!r}")
        part = f"duckrank_fusion_{uuid.uuid4().hex}"
        relation.create_view(part)
        views.append(part)
        parts.append(
            f"SELECT {quote_literal(name)} AS system, {quote_identifier(query)} AS query, "
            f"{quote_identifier(item_column)} AS item, {quote_identifier(score_column)} AS score "
            f"FROM {part}")
        kinds.add(_kind(run))
    con.execute(f"CREATE OR REPLACE TEMP VIEW {view} AS " + "\nUNION ALL ".join(parts))
    kind = kinds.pop() if len(kinds) == 1 else "pandas"
    return LongRuns(view, [n for n, _ in named], query or "query", item_column, score_column,
                    kind, registered, views)


def drop(con: duckdb.DuckDBPyConnection, runs: LongRuns) -> None:
    """Remove the views ``long_runs`` made and the tables it registered."""
    for name in runs.views:
        con.execute(f"DROP VIEW IF EXISTS {name}")
    for name in runs.registered:
        con.unregister(name)


def converted(relation: duckdb.DuckDBPyRelation, kind: str) -> Any:
    """The fused relation as the runs' kind of table (pandas for files)."""
    if kind == "polars":
        return relation.pl()
    if kind == "arrow":
        return relation.to_arrow_table()
    return relation.df()
