"""The top of each system's ranking for a few queries, and their judgments: what the HTML report
shows side by side for a chosen query (in the spirit of diffir, which compares two runs query by
query: MacAvaney et al., "ABNIRML"/"diffir", https://github.com/capreolus-ir/diffir).

The runs are read as ``duckrank.compare`` reads them (``Inputs``: paths or tables, one per system
or one with a system column) and ranked as the evaluation ranks them: by score, descending (or
by rank, ascending), ties by the item's text, descending (trec_eval's order; see
``duckrank.evaluation.sql``), so the list shown is the list scored. Only the chosen queries' rows
leave DuckDB.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from duckrank.evaluation import as_relation, reader_columns
from duckrank.evaluation.inputs import _columns, _Table
from duckrank.files.runs import file_format, read_file
from duckrank.render.quoting import quote_identifier
from duckrank.reports.compare import Inputs

# The ranks read per system and query when the metrics name no cut-off, and at most.
DEPTH, MAX_DEPTH = 10, 100


@dataclass(frozen=True)
class Rankings:
    """``lists``: system -> query -> [(item, score), ...] in rank order (ids as text, the score
    or rank column's value); ``judgments``: query -> item -> grade, for the queries read;
    ``depth``: the ranks read per list."""

    depth: int
    lists: dict[str, dict[str, list[tuple[str, float]]]] = field(default_factory=dict)
    judgments: dict[str, dict[str, float]] = field(default_factory=dict)


def read_rankings(con: duckdb.DuckDBPyConnection, inputs: Inputs, queries: Sequence[str],
                  depth: int = DEPTH) -> Rankings:
    """The first ``depth`` items of every system's list for each of ``queries`` (ids as text),
    and the qrels' grades of those queries."""
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_DEPTH:
        raise ValueError(f"read_rankings: depth must be a whole number from 1 to {MAX_DEPTH}, "
                         f"got {depth!r}")
    registered: list[str] = []
    chosen = f"duckrank_chosen_{uuid.uuid4().hex}"
    con.register(chosen, pa.table({"query": pa.array([str(q) for q in queries], pa.string())}))
    registered.append(chosen)
    try:
        qrels = as_relation(con, inputs.qrels, "qrels", inputs.names.qrels, registered,
                            inputs.glob)
        rankings = Rankings(depth)
        runs = (inputs.systems.runs if inputs.systems.by is None
                else [(None, inputs.systems.long)])
        for name, run in runs:
            columns = _read_lists(con, inputs, _run(con, run, inputs, registered), qrels,
                                  chosen, rankings, name)
        _read_judgments(qrels, columns, chosen, rankings)
        return rankings
    finally:
        for name in registered:
            con.unregister(name)


def _run(con: duckdb.DuckDBPyConnection, run: Any, inputs: Inputs,
         registered: list[str]) -> duckdb.DuckDBPyRelation:
    if isinstance(run, str | Path):
        fmt = file_format(run) if inputs.run_format == "auto" else inputs.run_format
        return read_file(con, run, "run", fmt, reader_columns(inputs.names.run),
                         glob=inputs.glob)
    return as_relation(con, run, "run", inputs.names.run, registered)


def _resolved(inputs: Inputs, run: duckdb.DuckDBPyRelation, qrels: duckdb.DuckDBPyRelation
              ) -> Any:
    """The evaluation's column expressions for this run and the qrels (its warnings were
    given by the comparison already)."""
    by = [inputs.systems.by] if inputs.systems.by is not None else []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _columns(_Table(run, "run"), _Table(qrels, "qrels"), inputs.names, by,
                        inputs.ids, inputs.spelling)


def _read_lists(con: duckdb.DuckDBPyConnection, inputs: Inputs, run: duckdb.DuckDBPyRelation,
                qrels: duckdb.DuckDBPyRelation, chosen: str, rankings: Rankings,
                system: str | None) -> Any:
    """Add ``run``'s lists of the chosen queries to ``rankings`` (``system``: its name, or
    None to read it from the ``by`` column); returns the columns resolved."""
    c = _resolved(inputs, run, qrels)
    name = (f"CAST({quote_identifier(c.by[0])} AS VARCHAR)" if system is None
            else "NULL::VARCHAR")
    item_text = f"CAST({c.run_item} AS VARCHAR)"
    rows = run.query("duckrank_run", f"""
        SELECT {name} AS system, CAST({c.run_query} AS VARCHAR) AS query, {item_text} AS item,
               CAST({c.run_key_column} AS DOUBLE) AS score
        FROM duckrank_run
        WHERE CAST({c.run_query} AS VARCHAR) IN (SELECT query FROM {quote_identifier(chosen)})
          AND {c.run_item} IS NOT NULL AND {c.run_key} IS NOT NULL
        QUALIFY row_number() OVER (PARTITION BY system, query
                                   ORDER BY {c.run_key} DESC, {item_text} DESC)
              <= {rankings.depth}
        ORDER BY system, query, {c.run_key} DESC, {item_text} DESC""").fetchall()
    for by_value, query, item, score in rows:
        key = system if system is not None else by_value
        rankings.lists.setdefault(key, {}).setdefault(query, []).append((item, score))
    return c


def _read_judgments(qrels: duckdb.DuckDBPyRelation, c: Any, chosen: str,
                    rankings: Rankings) -> None:
    """The grades of the chosen queries' judged items (``c``: the columns resolved)."""
    rows = qrels.query("duckrank_qrels", f"""
        SELECT CAST({c.qrels_query} AS VARCHAR), CAST({c.qrels_item} AS VARCHAR),
               max(CAST({c.grade} AS DOUBLE))
        FROM duckrank_qrels
        WHERE CAST({c.qrels_query} AS VARCHAR) IN (SELECT query FROM {quote_identifier(chosen)})
          AND {c.qrels_item} IS NOT NULL
        GROUP BY ALL""").fetchall()
    for query, item, grade in rows:
        rankings.judgments.setdefault(query, {})[item] = grade
