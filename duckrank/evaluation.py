"""Score a run against judgments: the one implementation behind ``duckrank.evaluate`` and the
``duckrank evaluate`` command line.

A *run* is a long table with one row per (query, item, score); *qrels* (judgments) one row per
(query, item, grade). A query is whatever the lists are ranked for: a search query or a user.
Per query, the run becomes a ranked list with ``to_ordered_list(item, score, '-reverse')`` (every
tied item kept; ties in score broken by item, descending, which is trec_eval's order) and the
qrels become the truth, then each requested metric is the SQL function of the same name.

Metric requests are written ``name[(option=value, ...)][@k]`` (``ndcg@10``, ``map@100``,
``ndcg(gain=linear)@10``). Names, aliases, options and their choices come from the metric records
(``duckrank.metrics``), so every metric in the registry is available without code here.

Everything the caller supplies (paths, column names, metric names, k, option values) reaches SQL
as a query parameter, a quoted identifier, or a name checked against the registry: never as SQL
text.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa

from duckrank.files.runs import QUERY_COLUMNS, Columns, read_file
from duckrank.metrics import METRICS, by_name
from duckrank.metrics.record import Metric, Option

if TYPE_CHECKING:
    import pandas

COUNT_COLUMNS = ("scored", "unjudged", "unranked")


def quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


# --- metric requests ------------------------------------------------------------------------------

_REQUEST = re.compile(
    r"^\s*(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*(?:\((?P<options>[^()]*)\))?\s*(?:@\s*(?P<k>\S+))?\s*$"
)


# Input kinds whose untyped truth is a LIST of relevant item ids (other untyped truths are
# preferences or Hivemall's lists of grades, which qrels cannot give).
LIST_TRUTH_INPUTS = ("hits", "grades")


def _truth_form(metric: Metric) -> str | None:
    """'list' for a LIST of relevant item ids, 'map' for a MAP item -> grade, None for a truth
    that qrels cannot give."""
    if metric.truth_type == "" and metric.inputs in LIST_TRUTH_INPUTS:
        return "list"
    if metric.truth_type.upper().startswith("MAP"):
        return "map"
    return None


@dataclass(frozen=True)
class MetricRequest:
    """One metric to compute: ``label`` is the request as written (the output column's name)."""

    label: str
    name: str
    k: int | None
    options: tuple[tuple[str, str | int | float], ...]
    overloads: tuple[Metric, ...]

    def truth_form(self, graded: bool) -> str:
        """Which truth to pass: a MAP of grades for graded qrels when the function takes one, else
        the LIST of items with grade > 0 (the binary reading of the judgments)."""
        given = {name for name, _ in self.options}
        forms = {
            _truth_form(m)
            for m in self.overloads
            if given <= {o.name for o in m.options} and _truth_form(m) is not None
        }
        if "map" in forms and (graded or "list" not in forms):
            return "map"
        if "list" in forms:
            return "list"
        raise ValueError(
            f"metric {self.label!r}: no form of {self.name} takes these options with a "
            f"{'graded' if graded else 'binary'} truth"
        )


def known_metric_names() -> list[str]:
    """Every name and alias of the metrics that a run and qrels can feed, sorted."""
    usable = {m.name for m in METRICS if _truth_form(m) is not None}
    return sorted({n for m in METRICS if m.name in usable for n in m.cli_names})


def _option_value(label: str, option: Option, text: str) -> str | int | float:
    text = text.strip()
    if option.choices:
        if text not in option.choices:
            raise ValueError(
                f"metric {label!r}: option {option.name} must be one of "
                f"{', '.join(option.choices)}, got {text!r}"
            )
        return text
    if isinstance(option.default, str):
        return text
    try:
        return int(text) if re.fullmatch(r"[+-]?\d+", text) else float(text)
    except ValueError:
        raise ValueError(
            f"metric {label!r}: option {option.name} must be a number, got {text!r}"
        ) from None


def parse_metric(text: str) -> MetricRequest:
    """Parse ``name[(option=value, ...)][@k]`` against the metric records."""
    match = _REQUEST.match(text)
    if match is None:
        raise ValueError(
            f"cannot read metric {text!r}: write name[@k] or name(option=value, ...)[@k], "
            "e.g. ndcg@10 or ndcg(gain=linear)@10"
        )
    try:
        record = by_name(match["name"])
    except KeyError:
        raise ValueError(
            f"unknown metric {match['name']!r}; known metrics: {', '.join(known_metric_names())}"
        ) from None
    overloads = tuple(m for m in METRICS if m.name == record.name)
    if all(_truth_form(m) is None for m in overloads):
        kinds = ", ".join(sorted({m.inputs for m in overloads}))
        raise ValueError(
            f"metric {text!r}: {record.name} cannot be computed from a run and qrels (it takes "
            f"{kinds}, not a list or map of judged items)"
        )

    k = None
    if match["k"] is not None and not all(m.cutoff for m in overloads):
        raise ValueError(f"metric {text!r}: {record.name} takes no cut-off (@k)")
    if match["k"] is not None and match["k"].lower() != "all":
        if not re.fullmatch(r"\d+", match["k"]) or int(match["k"]) < 1:
            raise ValueError(
                f"metric {text!r}: the cut-off after @ must be a positive integer or 'all', "
                f"got {match['k']!r}"
            )
        k = int(match["k"])

    known = {o.name: o for m in overloads for o in m.options}
    options: dict[str, str | int | float] = {}
    for assignment in filter(str.strip, (match["options"] or "").split(",")):
        name, equals, value = assignment.partition("=")
        name = name.strip().lower()
        if not equals or name not in known:
            takes = ", ".join(sorted(known)) or "none"
            raise ValueError(
                f"metric {text!r}: unknown option {assignment.strip()!r}; "
                f"{record.name} takes: {takes}"
            )
        options[name] = _option_value(text, known[name], value)
    return MetricRequest(
        label=text.strip(), name=record.name, k=k, options=tuple(options.items()),
        overloads=overloads,
    )


# --- inputs ---------------------------------------------------------------------------------------

def _as_relation(
    con: duckdb.DuckDBPyConnection, table: Any, kind: str, columns: Columns, registered: list[str]
) -> duckdb.DuckDBPyRelation:
    if isinstance(table, str | Path):
        return read_file(con, table, kind, columns=columns)
    if isinstance(table, duckdb.DuckDBPyRelation):
        return table
    if kind == "qrels" and isinstance(table, pa.RecordBatchReader):
        # The qrels are scanned twice (checked, then joined); a reader can be read only once.
        table = table.read_all()
    # pandas, polars, pyarrow tables, datasets and record batch readers: DuckDB scans them in
    # place (no copy) through a registered view.
    name = f"duckrank_{kind}_{uuid.uuid4().hex}"
    con.register(name, table)
    registered.append(name)
    return con.table(name)


_INTEGER_TYPES = {
    "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT",
    "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT",
}


def _id_kind(sql_type: str) -> str:
    return "an integer" if sql_type in _INTEGER_TYPES else sql_type


class _Table:
    """A relation and a case-insensitive view of its column names."""

    def __init__(self, relation: duckdb.DuckDBPyRelation, kind: str):
        self.relation = relation
        self.kind = kind
        self.types = {c.lower(): (c, str(t)) for c, t in zip(relation.columns, relation.types,
                                                            strict=True)}

    def has(self, name: str) -> bool:
        return name.lower() in self.types

    def column(self, name: str, role: str) -> str:
        if not self.has(name):
            raise ValueError(
                f"the {self.kind} has no {role} column {name!r}; its columns are: "
                f"{', '.join(self.relation.columns)}"
            )
        return self.types[name.lower()][0]

    def type_of(self, name: str) -> str:
        return self.types[name.lower()][1]


def _query_column(columns: Columns, run: _Table, qrels: _Table) -> str:
    if columns.query is not None:
        return columns.query
    for name in QUERY_COLUMNS:
        if run.has(name) and qrels.has(name):
            return name
    raise ValueError(
        "no query column: neither 'query' nor 'user' is in both tables; name it with "
        f"query_column (--query-column). The run has: {', '.join(run.relation.columns)}; the "
        f"qrels have: {', '.join(qrels.relation.columns)}"
    )


def _same_kind(run: _Table, qrels: _Table, name: str) -> None:
    run_type, qrels_type = run.type_of(name), qrels.type_of(name)
    if _id_kind(run_type) != _id_kind(qrels_type):
        raise ValueError(
            f"the {name!r} ids are {run_type} in the run but {qrels_type} in the qrels: ids must "
            "be of one kind (cast one side)"
        )


# --- the query ------------------------------------------------------------------------------------

@dataclass
class _Plan:
    sql: str
    params: dict[str, Any]


def _profile_qrels(
    con: duckdb.DuckDBPyConnection, qrels_view: str, query: str, item: str, grade: str
) -> bool:
    """Check the judgments and tell whether they are graded (a grade other than 0 and 1)."""
    rows = con.execute(
        f"SELECT count(*) FILTER (WHERE g IS NULL), "
        f"any_value(q::VARCHAR || ', item ' || i::VARCHAR) FILTER (WHERE g IS NULL), "
        f"count(*) FILTER (WHERE g NOT IN (0, 1)) FROM "
        f"(SELECT {query} AS q, {item} AS i, {grade} AS g FROM {qrels_view} "
        f"WHERE {query} IS NOT NULL AND {item} IS NOT NULL)"
    ).fetchall()
    null_grades, example, non_binary = rows[0]
    if null_grades:
        raise ValueError(f"the qrels have {null_grades} NULL grades (first: query {example})")
    conflicts = con.execute(
        f"SELECT q::VARCHAR || ', item ' || i::VARCHAR FROM (SELECT DISTINCT {query} AS q, "
        f"{item} AS i, {grade} AS g FROM {qrels_view} WHERE {query} IS NOT NULL AND {item} IS NOT "
        f"NULL) GROUP BY q, i HAVING count(*) > 1 LIMIT 1"
    ).fetchall()
    if conflicts:
        raise ValueError(f"the qrels give two different grades to query {conflicts[0][0]}")
    return non_binary > 0


def _plan(
    con: duckdb.DuckDBPyConnection, run_view: str, qrels_view: str, run: _Table, qrels: _Table,
    requests: Sequence[MetricRequest], by: Sequence[str], per_user: bool, columns: Columns,
) -> _Plan:
    query_name = _query_column(columns, run, qrels)
    query_run = quote_identifier(run.column(query_name, "query"))
    query_qrels = quote_identifier(qrels.column(query_name, "query"))
    item_run = quote_identifier(run.column(columns.item, "item"))
    item_qrels = quote_identifier(qrels.column(columns.item, "item"))
    score = quote_identifier(run.column(columns.score, "score"))
    _same_kind(run, qrels, query_name)
    _same_kind(run, qrels, columns.item)
    if columns.grade is not None or qrels.has("grade"):
        grade = quote_identifier(qrels.column(columns.grade or "grade", "grade"))
    else:
        grade = "1"
    by_names = [run.column(name, "--by") for name in by]
    if query_name.lower() in (name.lower() for name in by_names):
        raise ValueError(f"by={query_name!r} is the query column: use per_user instead")

    graded = _profile_qrels(con, qrels_view, query_qrels, item_qrels, grade)

    params: dict[str, Any] = {}
    calls = []
    for request in requests:
        arguments = ["duckrank_rec", f"duckrank_truth_{request.truth_form(graded)}"]
        named = ([("k", request.k)] if request.k is not None else []) + list(request.options)
        for name, value in named:
            parameter = f"p{len(params)}"
            params[parameter] = value
            arguments.append(f"{quote_identifier(name)} := ${parameter}")
        call = f"{quote_identifier(request.name)}({', '.join(arguments)})"
        label = quote_identifier(request.label)
        calls.append(f"CASE WHEN duckrank_judged THEN {call} END AS {label}")

    by_select = "".join(f"{quote_identifier(n)}, " for n in by_names)
    keep = f"{query_run} IS NOT NULL AND {item_run} IS NOT NULL"
    sql = f"""
WITH ranked AS (
  SELECT {by_select}{query_run} AS duckrank_query,
         to_ordered_list({item_run}, {score}, '-reverse') AS duckrank_rec
  FROM {run_view} WHERE {keep} GROUP BY ALL
),
judged AS (
  SELECT q AS duckrank_query,
         coalesce(list(i) FILTER (WHERE g > 0), list(i)[1:0]) AS duckrank_truth_list,
         map_from_entries(list({{'key': i, 'value': g::DOUBLE}})) AS duckrank_truth_map
  FROM (SELECT DISTINCT {query_qrels} AS q, {item_qrels} AS i, {grade} AS g FROM {qrels_view}
        WHERE {query_qrels} IS NOT NULL AND {item_qrels} IS NOT NULL)
  GROUP BY q
),
scored AS (
  SELECT {by_select}duckrank_query, duckrank_truth_list IS NOT NULL AS duckrank_judged,
         {', '.join(calls)}
  FROM ranked LEFT JOIN judged USING (duckrank_query)
)"""
    labels = [quote_identifier(r.label) for r in requests]
    if per_user:
        sql += (
            f"\nSELECT {by_select}duckrank_query AS {quote_identifier(query_name)}, "
            f"{', '.join(labels)} FROM scored WHERE duckrank_judged ORDER BY ALL"
        )
    else:
        scored, unjudged, unranked = (quote_identifier(c) for c in COUNT_COLUMNS)
        means = ", ".join(f"favg({label}) AS {label}" for label in labels)
        sql += (
            f"\nSELECT {by_select}count(*) FILTER (WHERE duckrank_judged) AS {scored}, "
            f"count(*) FILTER (WHERE NOT duckrank_judged) AS {unjudged}, "
            f"(SELECT count(*) FROM judged) - count(*) FILTER (WHERE duckrank_judged) "
            f"AS {unranked}, {means} FROM scored"
            + (" GROUP BY ALL ORDER BY ALL" if by_names else "")
        )
    return _Plan(sql, params)


@contextmanager
def evaluation(
    con: duckdb.DuckDBPyConnection,
    run: Any,
    qrels: Any,
    metrics: Sequence[str],
    by: Sequence[str] = (),
    per_user: bool = False,
    columns: Columns = Columns(),
) -> Iterator[duckdb.DuckDBPyRelation]:
    """The evaluation as a relation of ``con`` (which must have duckrank registered), valid inside
    the ``with`` block: one row per ``by`` group (one row in all without ``by``) with the counts of
    queries scored, unjudged (in the run, not in the qrels) and unranked (in the qrels, not in the
    run) and the mean of each metric over the scored queries where it is defined; with
    ``per_user``, one row per scored query instead. ``run`` and ``qrels``: file paths, relations of
    ``con``, or pandas, polars or Arrow tables. The views it makes on ``con`` are dropped after."""
    requests = list({r.label: r for r in map(parse_metric, metrics)}.values())
    if not requests:
        raise ValueError("no metric requested: name at least one, e.g. ndcg@10")
    registered: list[str] = []
    views: list[str] = []
    try:
        tables = []
        for table, kind in ((run, "run"), (qrels, "qrels")):
            relation = _as_relation(con, table, kind, columns, registered)
            views.append(f"duckrank_{kind}_view_{uuid.uuid4().hex}")
            relation.create_view(views[-1])
            tables.append(_Table(relation, kind))
        plan = _plan(con, *views, *tables, requests, by, per_user, columns)
        yield con.sql(plan.sql, params=plan.params)
    finally:
        for view in views:
            con.execute(f"DROP VIEW IF EXISTS {quote_identifier(view)}")
        for name in registered:
            con.unregister(name)


def evaluate(
    run: Any,
    qrels: Any,
    metrics: Sequence[str] | str,
    by: str | Sequence[str] | None = None,
    *,
    per_user: bool = False,
    query_column: str | None = None,
    item_column: str = "item",
    score_column: str = "score",
    grade_column: str | None = None,
    connection: duckdb.DuckDBPyConnection | None = None,
) -> pandas.DataFrame:
    """Score ``run`` against ``qrels`` and return a pandas DataFrame with one column per metric.

    ``run``: a table with one row per (query, item, score); ``qrels``: one row per (query, item,
    grade). Either may be a pandas or polars DataFrame, a pyarrow Table / Dataset / RecordBatch
    reader (DuckDB reads them in place), a DuckDB relation of ``connection``, or the path of a
    Parquet, CSV or TREC file. ``metrics``: requests such as ``"ndcg@10"``, ``"map@100"`` or
    ``"ndcg(gain=linear)@10"`` (see ``parse_metric``). ``by``: column(s) of the run to report
    one row per group of (a system, a segment). ``per_user``: one row per query instead of means.

    Columns default to ``query`` (or ``user``), ``item``, ``score`` and ``grade``; a qrels table
    without a grade column counts every row as relevant. Graded qrels (a grade other than 0 or 1)
    are passed as a MAP item -> grade to the metrics that take one; binary metrics get the items
    with grade > 0.
    """
    from duckrank.engines.duckdb import connect, register

    con = register(connection) if connection is not None else connect()
    if isinstance(metrics, str):
        metrics = [metrics]
    if isinstance(by, str):
        by = [by]
    columns = Columns(query=query_column, item=item_column, score=score_column, grade=grade_column)
    try:
        with evaluation(con, run, qrels, metrics, by or (), per_user, columns) as result:
            return result.df()
    finally:
        if connection is None:
            con.close()
