"""Run and qrels files in any format duckrank reads (Parquet, CSV/TSV, TREC), as relations of a
DuckDB connection, the column names the evaluation looks for in them, and the check that scores
and grades are numbers."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from duckrank.files import trec
from duckrank.matching.sql import INTEGER_TYPES
from duckrank.render.trec import LITERAL_PATH, QUOTED_LENGTH

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

_NUMERIC_TYPES = {*INTEGER_TYPES, "FLOAT", "DOUBLE"}


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


def _quote(text: str) -> str:
    """``text`` in an error message: at most 100 characters (a line may be megabytes long; DuckDB
    keeps 10,000 characters of a rejected line, so no length is given)."""
    if len(text) <= QUOTED_LENGTH:
        return repr(text)
    return f"{text[:QUOTED_LENGTH]!r}..."


def _number_column(
    relation: duckdb.DuckDBPyRelation, kind: str, columns: Columns
) -> str | None:
    """The column that must hold numbers, as the relation spells it: the score of a run, the grade
    of qrels; ``None`` when the relation has no such column (the evaluation then says which
    columns it has, or counts every qrels row as relevant)."""
    wanted = columns.score if kind == "run" else (columns.grade or "grade")
    return next((c for c in relation.columns if c.lower() == wanted.lower()), None)


def _role(kind: str) -> str:
    return "score" if kind == "run" else "grade"


def _type_of(relation: duckdb.DuckDBPyRelation, column: str) -> str:
    return next(str(t) for c, t in zip(relation.columns, relation.types, strict=True)
                if c == column)


def is_number_type(sql_type: str, role: str) -> bool:
    """A score ranks, a grade weighs: both must be numbers (a VARCHAR score ranks '9' above
    '10'); a BOOLEAN grade is 0 or 1."""
    return (sql_type in _NUMERIC_TYPES or sql_type.startswith("DECIMAL(")
            or (role == "grade" and sql_type == "BOOLEAN"))


def check_numbers(
    relation: duckdb.DuckDBPyRelation, kind: str, columns: Columns, source: str
) -> None:
    """Raise unless the score column of a run (``kind='run'``), or the grade column of qrels, is
    of a numeric type (or BOOLEAN, for a grade). ``source`` names the relation in the message:
    ``"the run file 'r.parquet'"``, ``"the argument run"``. A missing column passes: the caller
    says which columns there are."""
    column = _number_column(relation, kind, columns)
    if column is None:
        return
    sql_type = _type_of(relation, column)
    if not is_number_type(sql_type, _role(kind)):
        raise ValueError(
            f"{source}: the {_role(kind)} column {column!r} is {sql_type}, not a number; "
            f"{_role(kind)}s must be numbers (cast the column, e.g. CAST({column} AS DOUBLE))"
        )


def literal_patterns(con: duckdb.DuckDBPyConnection, files: list[str]) -> list[str]:
    """The files as patterns of DuckDB's readers that match each file only (see LITERAL_PATH)."""
    rows = con.execute(f"SELECT {LITERAL_PATH} FROM unnest($files) AS t(path)",
                       {"files": files}).fetchall()
    return [path for (path,) in rows]


def _first_non_number(
    con: duckdb.DuckDBPyConnection, csv_file: str, dtype: dict[str, str], column: str
) -> tuple[int, str, str] | None:
    """The first value of ``column`` in ``csv_file`` that DuckDB cannot read as a number: its line
    number (DuckDB's, which counts every line of the file), the value and the line."""
    rejects, scans = (f"duckrank_rejects_{uuid.uuid4().hex}" for _ in range(2))
    # Reading the column makes DuckDB convert it (a count(*) would not), recording each value it
    # cannot convert, with its line, in the rejects table instead of failing.
    counted = duckdb.FunctionExpression("count", duckdb.ColumnExpression(column))
    try:
        con.read_csv(
            literal_patterns(con, [csv_file]), dtype={**dtype, column: "DOUBLE"},
            store_rejects=True, rejects_table=rejects, rejects_scan=scans,
        ).aggregate([counted]).fetchall()
        rows = con.execute(
            f"SELECT e.line, e.byte_position - e.line_byte_position, e.csv_line, s.delimiter, "
            f"s.quote "
            f"FROM {rejects} e JOIN {scans} s USING (scan_id, file_id) "
            "WHERE e.error_type = 'CAST' AND lower(e.column_name) = lower($c) "
            "ORDER BY e.line LIMIT 1", {"c": column},
        ).fetchall()
    finally:
        con.execute(f"DROP TABLE IF EXISTS {rejects}; DROP TABLE IF EXISTS {scans}")
    if not rows:
        return None
    line, offset, text, delimiter, quote = rows[0]
    # The field starts at the byte offset DuckDB gives and ends at the next delimiter, or at its
    # closing quote (DuckDB shows no quote character as '(empty)').
    value = text.encode()[offset:].decode(errors="replace")
    if len(quote) == 1 and value.startswith(quote):
        return line, value[1:].split(quote, 1)[0], text
    return line, value.split(delimiter, 1)[0], text


def _read_csv(
    con: duckdb.DuckDBPyConnection, files: list[str], kind: str, columns: Columns
) -> duckdb.DuckDBPyRelation:
    """CSV/TSV files (exact names) with the query and item columns as VARCHAR: ids are labels
    (``007`` stays ``007``) and then match the ids of TREC files. A score or grade column that
    DuckDB's sniffer reads as text is an error naming the file, the line and the value."""
    literal = literal_patterns(con, files)
    sniffed = con.read_csv(literal)
    ids = [columns.query] if columns.query else list(QUERY_COLUMNS)
    ids.append(columns.item)
    wanted = {name.lower() for name in ids}
    dtype = {c: "VARCHAR" for c in sniffed.columns if c.lower() in wanted}
    relation = con.read_csv(literal, dtype=dtype)
    number = _number_column(relation, kind, columns)
    if number is None or is_number_type(_type_of(relation, number), _role(kind)):
        return relation
    for csv_file in files:
        found = _first_non_number(con, csv_file, dtype, number)
        if found is not None:
            line, value, text = found
            raise ValueError(
                f"the {kind} file {csv_file!r}, line {line}: {_role(kind)} {_quote(value)} is not "
                f"a number (column {number!r}) in {_quote(text)}"
            )
    # Text only because of values DuckDB reads as numbers once told to (e.g. all NULL).
    return con.read_csv(literal, dtype={**dtype, number: "DOUBLE"})


def read_file(
    con: duckdb.DuckDBPyConnection, path: str | Path, kind: str, fmt: str = "auto",
    columns: Columns = Columns(), *, glob: bool = False,
) -> duckdb.DuckDBPyRelation:
    """A run (``kind='run'``) or qrels file as a relation of ``con``. ``path`` names one file:
    ``*``, ``?`` and ``[`` are part of its name (``run[1].csv`` is never ``run1.csv``) and a
    missing file is an error; ``glob=True`` reads every file matching the pattern instead (DuckDB's
    glob syntax). The run's score and the qrels' grade must be numbers: a text column is an error
    naming the file (and for CSV the line and the value). In CSV files the query and item columns
    are read as VARCHAR (see ``_read_csv``)."""
    if fmt == "auto":
        fmt = file_format(path)
    if fmt not in FILE_FORMATS:
        raise ValueError(f"unknown file format {fmt!r}; known formats: {', '.join(FILE_FORMATS)}")
    files = trec.file_paths(con, path, kind, glob=glob)
    shown = f"the {kind} {'pattern' if glob else 'file'} {str(path)!r}"
    if fmt == "trec":
        return trec.read_files(con, files, kind)
    if fmt == "csv":
        return _read_csv(con, files, kind, columns)
    relation = con.read_parquet(literal_patterns(con, files))
    check_numbers(relation, kind, columns, shown)
    return relation


# --- tables of any kind as relations ---------------------------------------------------------

def reader_columns(roles: Mapping[str, str]) -> Columns:
    """What ``read_file`` needs to know of a file's columns: its query and item columns (read as
    text from CSV) and the column that must hold numbers (the run's rank or score, the grade)."""
    return Columns(query=roles.get("query"), item=roles.get("item", "item"),
                   score=roles.get("rank", roles.get("score", "score")), grade=roles.get("grade"))


def as_relation(
    con: duckdb.DuckDBPyConnection, table: Any, kind: str, roles: Mapping[str, str],
    registered: list[str], glob: bool = False,
) -> duckdb.DuckDBPyRelation:
    """``table`` (a path, a DuckDB relation, or a pandas / polars / Arrow table or reader) as a
    relation of ``con``. ``kind`` ('run' or 'qrels') and ``roles`` (role -> column) tell a file's
    reader what to read; views registered for in-memory tables are appended to ``registered``
    (the caller unregisters them)."""
    if isinstance(table, str | Path):
        return read_file(con, table, kind, columns=reader_columns(roles), glob=glob)
    if isinstance(table, duckdb.DuckDBPyRelation):
        return table
    if is_arrow(table):
        import pyarrow as pa  # only for Arrow input: a file's reading does not import it

        if isinstance(table, pa.RecordBatchReader):
            # The evaluation scans its inputs several times (checks, then once per range of
            # query ids); a reader can be read only once.
            table = table.read_all()
    # pandas, polars, pyarrow tables and datasets: DuckDB scans them in place (no copy) through a
    # registered view.
    name = f"duckrank_{kind}_{uuid.uuid4().hex}"
    con.register(name, table)
    registered.append(name)
    return con.table(name)


def is_polars(table: Any) -> bool:
    """Whether ``table`` is a polars object (told without importing polars)."""
    return type(table).__module__.split(".")[0] == "polars"


def is_arrow(table: Any) -> bool:
    """Whether ``table`` is a pyarrow object (told without importing pyarrow)."""
    return type(table).__module__.split(".")[0] == "pyarrow"
