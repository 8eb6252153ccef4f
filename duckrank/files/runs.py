"""Run and qrels files in any format duckrank reads (Parquet, CSV/TSV, TREC), as relations of a
DuckDB connection, and the column names the evaluation looks for in them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

from duckrank.files import trec

# The default column names; a query column called ``user`` is found too (see ``Columns``).
QUERY_COLUMNS = ("query", "user")


@dataclass(frozen=True)
class Columns:
    """Column names. ``query=None`` takes ``query``, or ``user`` when the tables have no query
    column; ``grade=None`` takes ``grade``, or counts every qrels row as relevant (grade 1) when
    the qrels have no grade column."""

    query: str | None = None
    item: str = "item"
    score: str = "score"
    grade: str | None = None


FILE_FORMATS = ("auto", "parquet", "csv", "trec")


def file_format(path: str | Path) -> str:
    """The format ``auto`` picks: Parquet and CSV/TSV by extension (also compressed), else TREC."""
    name = Path(path).name.lower()
    for suffix in (".gz", ".zst"):
        name = name.removesuffix(suffix)
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    if name.endswith((".csv", ".tsv")):
        return "csv"
    return "trec"


def read_file(
    con: duckdb.DuckDBPyConnection, path: str | Path, kind: str, fmt: str = "auto",
    columns: Columns = Columns(),
) -> duckdb.DuckDBPyRelation:
    """A run (``kind='run'``) or qrels file as a relation of ``con``. In CSV files the query and
    item columns are read as VARCHAR: ids are labels (``007`` stays ``007``) and then match the ids
    of TREC files."""
    path = str(path)
    if fmt == "auto":
        fmt = file_format(path)
    if fmt == "parquet":
        return con.read_parquet(path)
    if fmt == "trec":
        return trec.read_run(path, con) if kind == "run" else trec.read_qrels(path, con)
    if fmt == "csv":
        header = con.read_csv(path).columns
        ids = [columns.query] if columns.query else list(QUERY_COLUMNS)
        ids.append(columns.item)
        wanted = {name.lower() for name in ids}
        return con.read_csv(path, dtype={c: "VARCHAR" for c in header if c.lower() in wanted})
    raise ValueError(f"unknown file format {fmt!r}; known formats: {', '.join(FILE_FORMATS)}")
