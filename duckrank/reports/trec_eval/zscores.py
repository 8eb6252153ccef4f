"""``-Z``: trec_eval's z-scores file, read and loaded into DuckDB, and the per-query values it
turns into z-scores (trec_eval 10's get_zscores.c and convert_zscores.c)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import duckdb

from duckrank.lazy import LazyModule
from duckrank.render.quoting import quote_literal
from duckrank.reports.trec_eval.requests import Value

pa = LazyModule("pyarrow")

# trec_eval's value where the file has no mean for a value (trec_eval.h MISSING_ZSCORE_VALUE).
MISSING_ZSCORE = -1000000


def read_zscores(path: str, shown: str,
                 file_encoding: str = "utf-8") -> list[tuple[str, str, float, float]]:
    """The lines ``qid measure mean stddev`` of the z-scores file ``path`` (``shown``: the path
    as given), fields split on blanks as trec_eval splits them. A line of another field count, a
    mean or stddev that is not a number, or a (query, measure) given twice is an error naming
    the file and the line (trec_eval: Malformed line, or one of the two used). Decoded as the
    run and qrels are (``file_encoding``), so that its query ids are theirs byte for byte."""
    rows, seen = [], {}
    with open(path, "rb") as file:
        for number, line in enumerate(file, 1):
            fields = line.decode(file_encoding, "replace").split()
            where = f"the z-scores file {shown!r}, line {number}"
            if len(fields) != 4:
                raise ValueError(f"{where}: expected 4 fields (qid measure mean stddev), got "
                                 f"{len(fields)}")
            try:
                mean, sd = float(fields[2]), float(fields[3])
            except ValueError:
                raise ValueError(f"{where}: the mean {fields[2]!r} or the standard deviation "
                                 f"{fields[3]!r} is not a number") from None
            key = (fields[0], fields[1])
            if key in seen:
                raise ValueError(f"{where}: query {key[0]!r} and measure {key[1]!r} are also on "
                                 f"line {seen[key]}; keep one")
            seen[key] = number
            rows.append((fields[0], fields[1], mean, sd))
    return rows


def load_zscores(con: duckdb.DuckDBPyConnection, table: str, path: str, shown: str,
                 file_encoding: str = "utf-8") -> None:
    """The z-scores file as the TEMP table ``table`` (query, measure, mean, sd), its values
    passed as an Arrow table, never as SQL text."""
    rows = read_zscores(path, shown, file_encoding)
    columns = list(zip(*rows, strict=True)) if rows else [(), (), (), ()]
    arrow = pa.table({"query": pa.array(columns[0], pa.string()),
                      "measure": pa.array(columns[1], pa.string()),
                      "mean": pa.array(columns[2], pa.float64()),
                      "sd": pa.array(columns[3], pa.float64())})
    view = f"duckrank_zscores_{uuid.uuid4().hex}"
    con.register(view, arrow)
    try:
        con.execute(f"CREATE TEMP TABLE {table} AS SELECT * FROM {view}")
    finally:
        con.unregister(view)


def zscored(table: str, zscores: str, values: Sequence[Value],
            reads: list[str]) -> tuple[str, list[str]]:
    """The per-query values of ``table`` as z-scores by the table ``zscores``: (value - mean) /
    stddev by the line of the query and the value's name; 0 for a value equal to a mean of
    stddev 0; -1000000 where the file has no line, or a stddev of 0 and another mean; strings
    (relstring) as they are. The relation and the expressions reading its values."""
    converted = []
    for i, (value, read) in enumerate(zip(values, reads, strict=True)):
        if value.measure.value == "string":
            converted.append(f"{read} AS z{i}")
            continue
        z = f"list_filter(duckrank_z, lambda e: e.measure = {quote_literal(value.name)})[1]"
        converted.append(
            f"list_transform([{z}], lambda z: CASE WHEN z IS NULL THEN {MISSING_ZSCORE} "
            f"WHEN z.sd <> 0 THEN ({read} - z.mean) / z.sd WHEN {read} = z.mean THEN 0 "
            f"ELSE {MISSING_ZSCORE} END)[1] AS z{i}")
    per_query = ("(SELECT query, list({'measure': measure, 'mean': mean, 'sd': sd}) AS "
                 f"duckrank_z FROM {zscores} GROUP BY query)")
    source = (f"(SELECT query, {', '.join(converted)} FROM {table} "
              f"LEFT JOIN {per_query} USING (query))")
    return source, [f"z{i}" for i in range(len(values))]
