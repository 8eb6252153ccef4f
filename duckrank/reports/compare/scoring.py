"""Scoring every system on every judged query (the package's docstring), into one per-query table
on the connection that the tests and intervals read (``_scored``), and that table alone as
``Report.per_query`` (``per_query``)."""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from duckrank.evaluation import (
    ColumnNames,
    DroppedRows,
    UnrankedQueries,
    as_relation,
    evaluation,
    is_beyond,
    is_polars,
    reader_columns,
)
from duckrank.files.runs import file_format, read_file
from duckrank.render.quoting import quote_identifier
from duckrank.render.spelling import PYTHON, Spelling
from duckrank.reports.compare.options import Options, Systems, _error
from duckrank.reports.compare.report import LETTERS


@contextmanager
def _temporary(con: duckdb.DuckDBPyConnection) -> Iterator[Any]:
    """Names for temporary objects on ``con``, dropped (or unregistered) at the end."""
    made: list[tuple[str, str]] = []

    def name(kind: str) -> str:
        text = f"duckrank_compare_{uuid.uuid4().hex}"
        made.append((kind, text))
        return text

    try:
        yield name
    finally:
        for kind, text in reversed(made):
            if kind == "registered":
                con.unregister(text)
            else:
                con.execute(f"DROP {kind} IF EXISTS {quote_identifier(text)}")


def _run_table(con: duckdb.DuckDBPyConnection, run: Any, inputs: Inputs, temporary: Any,
               registered: list[str]) -> str:
    """A view or table of ``con`` holding one run (a path or a table)."""
    if not isinstance(run, str | Path):
        view = temporary("VIEW")
        as_relation(con, run, "run", inputs.names.run, registered).create_view(view)
        return quote_identifier(view)
    fmt = file_format(run) if inputs.run_format == "auto" else inputs.run_format
    relation = read_file(con, run, "run", fmt, reader_columns(inputs.names.run),
                         glob=inputs.glob)
    view = temporary("VIEW")
    relation.create_view(view)
    if fmt == "parquet":
        return quote_identifier(view)
    # The evaluation scans the run several times (checks, a sample, once per range of query
    # ids): text is parsed once, into a table (beyond memory_limit DuckDB spills it to disk).
    table = quote_identifier(temporary("TABLE"))
    con.execute(f"CREATE TEMP TABLE {table} AS SELECT * FROM {quote_identifier(view)}")
    return table


def _systems_column(con: duckdb.DuckDBPyConnection, inputs: Inputs, table: str,
                    index: str) -> tuple[str, list[str]]:
    """With ``by``: the long run's system column and its values (the systems, sorted), written
    to ``index`` as a table ``(value, idx)``."""
    spelling, by = inputs.spelling, inputs.systems.by
    columns = con.sql(f"SELECT * FROM {table}").columns
    column = next((c for c in columns if c.lower() == by.lower()), None)
    if column is None:
        raise _error(spelling, f"{spelling.argument('by', by)}: the run has no such "
                     f"column; its columns are: {', '.join(columns)}")
    con.execute(f"""CREATE TEMP TABLE {index} AS
        SELECT value, (row_number() OVER (ORDER BY value NULLS FIRST) - 1)::BIGINT AS idx
        FROM (SELECT DISTINCT {quote_identifier(column)} AS value FROM {table})""")
    values = con.execute(f"SELECT value IS NULL, value::VARCHAR FROM {index} ORDER BY idx"
                         ).fetchall()
    if values and values[0][0]:
        raise _error(spelling, f"the run's system column {column!r} has NULL values: every "
                     "row must name its system")
    return column, [text for _, text in values]


def _check_systems(systems: list[str], options: Options | None, spelling: Spelling) -> None:
    """What needs the systems' names, checked before any evaluation."""
    if len(systems) < 2:
        raise _error(spelling, f"needs at least two systems, got {len(systems)}"
                     + (f" ({systems[0]!r})" if systems else ""))
    if len(systems) > len(LETTERS):
        raise _error(spelling, f"at most {len(LETTERS)} systems get a letter each, got "
                     f"{len(systems)}")
    if options is not None:
        options.check_trials(len(options.pairs(systems, spelling)), spelling)


def _evaluate_into(con: duckdb.DuckDBPyConnection, inputs: Inputs, run: str,
                   by: str | None, system: int | None, wide: str, first: bool) -> list[str]:
    """Score ``run`` per query into the table ``wide`` (s, q, m0, m1, ..., ranked; created
    when ``first``): ``s`` is the ``by`` column's value, or the constant ``system``; a row per
    judged query and system, ``ranked`` false where the run has no list for it (evaluate's
    empty list). Returns the metrics' labels. The rows go from DuckDB to DuckDB, never through
    Python. The evaluation's own UnrankedQueries warning is not shown: ``_warn_unranked`` says
    it per system, by name (with ``by`` the evaluation counts every system together)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnrankedQueries)
        return _evaluate_rows(con, inputs, run, by, system, wide, first)


def _evaluate_rows(con: duckdb.DuckDBPyConnection, inputs: Inputs, run: str,
                   by: str | None, system: int | None, wide: str, first: bool) -> list[str]:
    with evaluation(con, con.sql(f"SELECT * FROM {run}"), inputs.qrels, inputs.metrics,
                    [by] if by is not None else [], True, inputs.names, inputs.ids,
                    inputs.spelling, inputs.glob, ranked=True) as result:
        labels = result.columns[(by is not None) + 1:-1]  # the last is duckrank_ranked
        names = ["q", *(f"m{i}" for i in range(len(labels))), "ranked"]
        if by is None:
            select, aliases = f"SELECT {system} AS s, *", ", ".join(names)
        else:
            select, aliases = "SELECT *", ", ".join(["s", *names])
        for sql, params in result.queries():
            query = f"{select} FROM ({sql}) AS scored({aliases})"
            con.execute(f"CREATE TEMP TABLE {wide} AS {query}" if first
                        else f"INSERT INTO {wide} {query}", params)
            first = False
        return labels


@dataclass(frozen=True)
class Inputs:
    """What is scored: the runs as ``Systems``, the qrels, the metric requests, and how the
    tables are read (as ``duckrank.evaluate`` reads them); errors are spelled for Python or the
    command line."""

    systems: Systems
    qrels: Any
    metrics: Sequence[str]
    names: ColumnNames
    ids: str = "typed"
    glob: bool = False
    spelling: Spelling = PYTHON
    run_format: str = "auto"  # how run paths are read (``duckrank.files.runs.FILE_FORMATS``)

    @property
    def polars(self) -> bool:
        runs = [run for _, run in self.systems.runs] + [self.systems.long, self.qrels]
        return any(map(is_polars, runs))


@dataclass(frozen=True)
class _Scored:
    """The per-query values on the connection: ``table`` (system, query, metric, value,
    filled: a value of a judged query the system did not rank; systems and metrics as indexes
    into ``systems`` and ``labels``)."""

    table: str
    systems: list[str]
    labels: list[str]
    temporary: Any


@contextmanager
def _scored(con: duckdb.DuckDBPyConnection, inputs: Inputs,
            options: Options | None = None) -> Iterator[_Scored]:
    """Score every system (``_per_query_table``), every judged query for each (the package's
    docstring); ``options``' checks that need the systems' names run before any
    evaluation. Only the per-query table outlives the scoring: the runs parsed into tables and
    the evaluation's results are dropped before the tests and intervals run."""
    with _temporary(con) as temporary:
        per_query, systems, labels = _per_query_table(con, inputs, options, temporary)
        yield _Scored(per_query, systems, labels, temporary)


def _per_query_table(con: duckdb.DuckDBPyConnection, inputs: Inputs, options: Options | None,
                     kept: Any) -> tuple[str, list[str], list[str]]:
    """The per-query table (named by ``kept``, the caller's temporary names), the systems and
    the metric labels; everything else made on the way is dropped on return.

    One run file per system: each is read, scored and dropped in turn, so memory holds one
    run at a time (the qrels are read once per system). One long run with ``by``: one
    evaluation with the system column as its ``by`` column. Either way the evaluation scores
    every judged query for every system (an unranked one as an empty list), and its rows are
    the per-query values as they are: the report's means are ``duckrank.evaluate``'s."""
    systems_in, spelling = inputs.systems, inputs.spelling
    beyond = [text for text in inputs.metrics if is_beyond(text)]
    if beyond:  # before any file is read
        raise _error(spelling, f"{beyond[0]!r} is a beyond-accuracy metric, which is not "
                     "compared query by query; duckrank.evaluate gives it per system")
    registered: list[str] = []
    try:
        with _temporary(con) as temporary:
            index = quote_identifier(temporary("TABLE"))
            wide = quote_identifier(temporary("TABLE"))
            if systems_in.by is None:
                systems = [name for name, _ in systems_in.runs]
                _check_systems(systems, options, spelling)
                con.execute(f"CREATE TEMP TABLE {index} AS SELECT range AS value, range AS idx "
                            f"FROM range({len(systems)})")
                for i, (name, run) in enumerate(systems_in.runs):
                    with _temporary(con) as each, warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always", DroppedRows)
                        table = _run_table(con, run, inputs, each, registered)
                        labels = _evaluate_into(con, inputs, table, None, i, wide, i == 0)
                    for warning in caught:  # each system is its own evaluation: say which
                        warnings.warn(f"system {name!r}: {warning.message}", warning.category,
                                      stacklevel=5)
            else:
                table = _run_table(con, systems_in.long, inputs, temporary, registered)
                column, systems = _systems_column(con, inputs, table, index)
                _check_systems(systems, options, spelling)
                labels = _evaluate_into(con, inputs, table, column, None, wide, True)
            _warn_unranked(con, wide, index, systems)
            per_query = quote_identifier(kept("TABLE"))
            values = ", ".join(f"m{i}" for i in range(len(labels)))
            con.execute(f"""
                CREATE TEMP TABLE {per_query} AS
                SELECT system, query, metric, value,
                       NOT ranked AND value IS NOT NULL AS filled
                FROM (SELECT i.idx AS system, w.q AS query, w.ranked,
                             unnest(range({len(labels)})) AS metric, unnest([{values}]) AS value
                      FROM {wide} w JOIN {index} i ON w.s = i.value)""")
            return per_query, systems, labels
    finally:
        for name in registered:
            con.unregister(name)


def _warn_unranked(con: duckdb.DuckDBPyConnection, wide: str, index: str,
                   systems: list[str]) -> None:
    """One UnrankedQueries warning per system that has judged queries without a list, naming
    it (in the systems' order)."""
    counts = con.execute(f"""
        SELECT i.idx, count(*) FROM {wide} w JOIN {index} i ON w.s = i.value
        WHERE NOT w.ranked GROUP BY i.idx ORDER BY i.idx""").fetchall()
    for idx, count in counts:
        warnings.warn(
            f"system {systems[idx]!r}: {count} judged "
            f"{'query has' if count == 1 else 'queries have'} no list in the run: "
            f"{'it is' if count == 1 else 'each is'} scored as an empty list (0 where the metric "
            "is defined) and counted in the means and the tests, as trec_eval -c counts it",
            UnrankedQueries, stacklevel=6)


def _long(con: duckdb.DuckDBPyConnection, scored: _Scored) -> pa.Table:
    """The per-query values with the systems' and metrics' names, as ``Report.per_query``."""
    return con.sql(f"""
        SELECT $systems[p.system + 1] AS system, p.query, $labels[p.metric + 1] AS metric,
               p.value
        FROM {scored.table} p ORDER BY p.system, p.metric, p.query""",
        params={"systems": scored.systems, "labels": scored.labels}).to_arrow_table()


def per_query(con: duckdb.DuckDBPyConnection, inputs: Inputs,
              baseline: str | None = None) -> pa.Table:
    """The tidy per-query table alone (``Report.per_query``), without tests or intervals;
    ``baseline``, when given, must name a system (checked before the evaluation)."""
    checks = None if baseline is None else Options(baseline=baseline, correction=None)
    with _scored(con, inputs, checks) as scored:
        return _long(con, scored)
