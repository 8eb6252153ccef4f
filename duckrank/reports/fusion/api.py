"""``duckrank.fuse``: several runs in, one fused run out, by the SQL table macros of
``duckrank.render.fusion`` (docs/fusion.md)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb

from duckrank.fusion import FusionMethod, method, normalisation
from duckrank.render.quoting import quote_identifier as _identifier
from duckrank.render.quoting import quote_literal
from duckrank.reports.command_line import connect_within, opened_here
from duckrank.reports.fusion.inputs import LongRuns, converted, drop, long_runs, sql_value


def _per_system(name: str, parameter: str, value: Any, systems: list[str]) -> dict[str, Any]:
    """A per-system parameter as a mapping system -> value: a mapping is taken as it is (the
    macro checks its names), a list is read in the order of the runs (as ranx reads weights)."""
    if isinstance(value, Mapping):
        return {str(k): v for k, v in value.items()}
    if hasattr(value, "tolist"):  # a numpy array
        value = value.tolist()
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ValueError(f"fuse: {name}'s {parameter} must be a mapping system -> value or a "
                         f"list in the order of the runs, got {value!r}")
    if len(value) != len(systems):
        raise ValueError(f"fuse: {name}'s {parameter} has {len(value)} values for "
                         f"{len(systems)} runs ({', '.join(systems)})")
    return dict(zip(systems, value, strict=True))


def sql_arguments(fusion: FusionMethod, params: Mapping[str, Any], systems: list[str]) -> str:
    """``, k := 60`` for the macro call: every parameter checked by name and domain (the macro
    checks again, with the same words)."""
    unknown = sorted(set(params) - {p.name for p in fusion.parameters})
    if unknown:
        known = ", ".join(p.name for p in fusion.parameters) or "none"
        raise ValueError(f"fuse: {fusion.name} has no parameter {unknown[0]!r} (its parameters: "
                         f"{known})")
    parts = []
    for parameter in fusion.parameters:
        if parameter.name not in params:
            if parameter.default is None:
                raise ValueError(f"fuse: {fusion.name} needs params={{{parameter.name!r}: ...}} "
                                 f"({parameter.doc})")
            continue
        value = params[parameter.name]
        if parameter.per_system:
            value = _per_system(fusion.name, parameter.name, value, systems)
        elif not parameter.accepts(value):
            raise ValueError(f"fuse: {fusion.name}'s {parameter.name} must be "
                             f"{parameter.domain()}, got {value!r}")
        parts.append(f", {parameter.name} := {sql_value(value)}")
    return "".join(parts)


def fused_relation(
    con: duckdb.DuckDBPyConnection, runs: LongRuns, fusion: FusionMethod, norm: str | None,
    params: Mapping[str, Any], ordered: bool = True,
) -> duckdb.DuckDBPyRelation:
    """The macro's result over ``runs`` (``ordered``: by query and rank), with the input's
    column names for the query, the item and the score."""
    arguments = sql_arguments(fusion, params, runs.systems)
    try:
        norm_name = normalisation(norm).name
    except ValueError as error:
        raise ValueError(f"fuse: {error}") from None
    return con.sql(
        f"SELECT query AS {_identifier(runs.query_column)}, "
        f"item AS {_identifier(runs.item_column)}, score AS {_identifier(runs.score_column)}, "
        f"rank FROM {fusion.sql_name}({quote_literal(runs.view)}{arguments}, "
        f"norm := {quote_literal(norm_name)})" + (" ORDER BY query, rank" if ordered else ""))


def fuse(
    runs: Mapping[str, Any] | Sequence[Any] | Any,
    method: str = "wsum",
    norm: str | None = "min-max",
    params: Mapping[str, Any] | None = None,
    *,
    system_column: str | None = None,
    query_column: str | None = None,
    item_column: str = "item",
    score_column: str = "score",
    output: str | Path | None = None,
    connection: duckdb.DuckDBPyConnection | None = None,
    memory_limit: str | None = None,
) -> Any:
    """Fuse several runs into one: one row per (query, item) any run returned, with the fused
    ``score`` and its ``rank`` (1 = best; equal scores by item text descending), ordered by query
    and rank. ranx's ``fuse(runs, norm, method, params)`` with the same names and defaults
    (``method='wsum'``, ``norm='min-max'``): docs/fusion.md lists the methods (``'rrf'``,
    ``'combsum'``... as ranx spells them: ``'sum'``, ``'mnz'``, ``'rrf'``, ``'bordafuse'``, ...),
    their parameters and the normalisations (``'min-max'``, ``'max'``, ``'sum'``, ``'zmuv'``,
    ``'rank'``, ``'borda'``, ``'min-max-inverted'``, or None).

    ``runs``: a mapping name -> run, a list of runs (files are named by their stems, tables
    ``run1``, ``run2``, ...), or with ``system_column`` one table holding every system. A run is
    a pandas or polars DataFrame, a pyarrow Table, a DuckDB relation, or a Parquet, CSV or TREC
    file, with columns ``query`` (or ``user``), ``item`` and ``score`` (``query_column=`` ...
    rename them). ``params``: the method's parameters (``{'k': 60}``; weights as a list in the
    order of the runs, or a mapping name -> weight); the supervised methods take what
    ``train_fusion`` learnt. The result is of the runs' type (pandas for files); ``output=``
    writes it to a Parquet file (``.parquet``) or a TREC run file instead and returns the path.
    ``memory_limit`` (DuckDB's size, ``'2GB'``) bounds the memory of the connection ``fuse``
    opens (DuckDB spills what does not fit; without it, about 1 GB per 10,000 queries of 5 runs
    x 100 items); with ``connection``, set it on that connection instead.
    """
    fusion = method if isinstance(method, FusionMethod) else _method(method)
    opened_here("fuse", connection, memory_limit)
    con = connection if connection is not None else fusion_connection(fusion, memory_limit)
    long = long_runs(con, runs, system_column=system_column, query_column=query_column,
                     item_column=item_column, score_column=score_column)
    try:
        # A Parquet file is written as the rows come (its rank column holds the order): no sort
        # of the whole result, which would hold it all in memory; a TREC file is sorted when
        # written.
        relation = fused_relation(con, long, fusion, norm, dict(params or {}), output is None)
        if output is not None:
            return write(con, relation, output, fusion.name)
        return converted(relation, long.kind)
    finally:
        drop(con, long)


def _method(name: str) -> FusionMethod:
    try:
        return method(name)
    except ValueError as error:
        raise ValueError(f"fuse: {error}") from None


def fusion_connection(fusion: FusionMethod | None = None,
                      memory_limit: str | None = None) -> duckdb.DuckDBPyConnection:
    """A connection with the fusion macros (only ``fusion``'s when given: registering every
    duckrank function costs about a second), under ``memory_limit`` when given."""
    if fusion is None:
        return connect_within("fuse", memory_limit)
    # The TREC readers too: run files may be TREC.
    return connect_within("fuse", memory_limit,
                          functions=[fusion.sql_name, "read_trec_run", "read_trec_qrels"])


def _is_parquet(path: Path) -> bool:
    return path.suffix.lower() in (".parquet", ".pq")


def write(con: duckdb.DuckDBPyConnection, relation: duckdb.DuckDBPyRelation, path: str | Path,
          tag: str) -> Path:
    """Write the fused run to ``path``: Parquet for ``.parquet``/``.pq``, otherwise a TREC run
    (query Q0 item rank score tag, space-separated)."""
    path = Path(path)
    target = quote_literal(str(path))
    if _is_parquet(path):
        con.execute(f"COPY ({relation.sql_query()}) TO {target} (FORMAT parquet)")
        return path
    query, item, score = relation.columns[:3]
    # Fused once into a table (a TREC file is written sorted, so the rows are held anyway),
    # then checked and written.
    table = f"duckrank_fusion_{uuid.uuid4().hex}"
    relation.to_table(table)
    try:
        _write_trec(con, table, (query, item, score), target, tag)
    finally:
        con.execute(f"DROP TABLE IF EXISTS {table}")
    return path


def _write_trec(con: duckdb.DuckDBPyConnection, table: str, columns: tuple[str, str, str],
                target: str, tag: str) -> None:
    query, item, score = columns
    spaced = con.execute(
        f"SELECT {_identifier(query)}, {_identifier(item)} FROM {table} "
        f"WHERE regexp_matches(CAST({_identifier(query)} AS VARCHAR) || ' ' || "
        f"CAST({_identifier(item)} AS VARCHAR), '\\s.*\\s') LIMIT 1").fetchall()
    if spaced:
        raise ValueError(f"fuse: a TREC run cannot hold the id {spaced[0]!r} (it has white "
                         "space): write Parquet (output='....parquet') instead")
    con.execute(
        f"COPY (SELECT {_identifier(query)}, 'Q0', {_identifier(item)}, rank, "
        f"{_identifier(score)}, {quote_literal(tag)} FROM {table} ORDER BY {_identifier(query)}, "
        f"rank) TO {target} (FORMAT csv, DELIMITER ' ', HEADER false, QUOTE '')")
