"""The evaluation's inputs and their checks: which column of the run and the qrels plays which
role (``ColumnNames``), the tables as relations of the connection, the SQL expressions read from
them (``_Columns``: ids compared as typed or as text, the score or rank, the grade), and the checks
made before anything is computed (the qrels' grades profiled and checked against the requests).
The warnings the evaluation gives about its inputs are defined here.

Everything the caller supplies (paths, column names) reaches SQL as a query parameter or a quoted
identifier: never as SQL text.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb

from duckrank.evaluation.metric_requests import SUBTOPICS, MetricRequest, _number_text
from duckrank.files.runs import (  # noqa: F401 (as_relation, is_polars: re-exported)
    QUERY_COLUMNS,
    Columns,
    as_relation,
    is_number_type,
    is_polars,
    read_file,
    reader_columns,
)
from duckrank.matching.sql import INTEGER_TYPES, NATIVE_SIGNED_TYPES
from duckrank.render.quoting import quote_identifier
from duckrank.render.spelling import PYTHON, Spelling

# How ids are compared: as they are typed (the kinds must match), or both sides as text.
ID_MODES = ("typed", "varchar")

# The columns each file can name, role -> what it holds.
RUN_ROLES = ("query", "item", "score", "rank")
# The qrels' subtopic (a TREC diversity qrels file's second field) is read by the intent-aware
# measures; the other metrics read an item's largest grade over its subtopics.
QRELS_ROLES = ("query", "item", "grade", "subtopic")


class DroppedRows(UserWarning):
    """Rows of the run or qrels were left out (a NULL query, item, score or rank)."""


class UnrankedQueries(UserWarning):
    """Judged queries have no list in the run: scored as empty lists (duckrank's convention) or
    left out of the means (trec_eval's)."""


class ShortLists(UserWarning):
    """Lists shorter than a precision request's k: precision_at divided by the items returned."""


class UngradedQrels(UserWarning):
    """Qrels without a grade column (every row relevant) have number columns that are not read."""


# --- column names ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class ColumnNames:
    """Which column of each file plays which role (``RUN_ROLES``, ``QRELS_ROLES``); a role left
    out takes its default (see ``evaluate``)."""

    run: Mapping[str, str]
    qrels: Mapping[str, str]


def column_names(
    shared: Mapping[str, str | None],
    run: Mapping[str, str] | None = None,
    qrels: Mapping[str, str] | None = None,
    spelling: Spelling = PYTHON,
) -> ColumnNames:
    """Merge the names given for both files (``query_column=``, ...; None = not given) with the
    per-file ones (``run_columns=``, ``qrels_columns=``), which win."""
    files = {}
    for kind, roles, given in (("run", RUN_ROLES, run), ("qrels", QRELS_ROLES, qrels)):
        merged = {role: name for role, name in shared.items() if role in roles and name}
        for role, name in (given or {}).items():
            if role not in roles:
                raise ValueError(
                    f"{spelling.argument(kind + '_columns')}: unknown role {role!r}; the "
                    f"{kind} roles are: {', '.join(roles)}"
                )
            if not isinstance(name, str) or not name:
                raise ValueError(f"{spelling.argument(kind + '_columns')}: the {role} column "
                                 f"must be a column name, got {name!r}")
            merged[role] = name
        files[kind] = merged
    if "score" in files["run"] and "rank" in files["run"]:
        raise ValueError(
            f"the run is ranked by a score column or by a rank column, not both: got score "
            f"{files['run']['score']!r} and rank {files['run']['rank']!r} (drop "
            f"{spelling.argument('score_column')} or {spelling.argument('rank_column')})"
        )
    return ColumnNames(run=files["run"], qrels=files["qrels"])


# --- inputs ---------------------------------------------------------------------------------------




def _id_kind(sql_type: str) -> str:
    return "an integer" if sql_type in INTEGER_TYPES else sql_type


class _Table:
    """A relation and a case-insensitive view of its column names."""

    def __init__(self, relation: duckdb.DuckDBPyRelation, kind: str):
        self.relation = relation
        self.kind = kind
        self.types = {c.lower(): (c, str(t)) for c, t in zip(relation.columns, relation.types,
                                                            strict=True)}

    def has(self, name: str) -> bool:
        return name.lower() in self.types

    def column(self, name: str, role: str, hint: str) -> str:
        if not self.has(name):
            raise ValueError(
                f"the {self.kind} has no {role} column {name!r}; its columns are: "
                f"{', '.join(self.relation.columns)} ({hint})"
            )
        return self.types[name.lower()][0]

    def type_of(self, name: str) -> str:
        return self.types[name.lower()][1]


@dataclass(frozen=True)
class _Columns:
    """The SQL expressions the evaluation reads (quoted columns, casts)."""

    run_query: str
    run_item: str
    run_key: str  # what to_ordered_list sorts by, descending
    run_key_column: str  # the quoted score or rank column run_key reads
    qrels_query: str
    qrels_item: str
    grade: str
    subtopic: str | None  # the quoted subtopic column of the qrels; None: they have none
    query_type: str  # the SQL type of run_query (range boundaries are cast to it)
    item_type: str  # the SQL type of run_item (ties are broken by its text form)
    query_name: str  # the query column's name in the per-query output
    by: tuple[str, ...]  # run columns, as the run spells them
    item_name: str  # the run's item column, as the run spells it
    key_name: str  # the run's score or rank column, as the run spells it

    @property
    def by_select(self) -> str:
        """The by columns, quoted, each followed by a comma (empty without by)."""
        return "".join(f"{quote_identifier(name)}, " for name in self.by)

    @property
    def group_by(self) -> str:
        return f" GROUP BY {self.by_select[:-2]}" if self.by else ""


def _role_hint(kind: str, role: str, spelling: Spelling) -> str:
    if role == "subtopic":
        return (f"name it with {spelling.argument('subtopic_column')} "
                f"({spelling.argument('subtopic_column', 'iteration')} for a TREC diversity "
                "qrels file)")
    if role in ("query", "item"):
        return (f"name it with {spelling.argument(role + '_column')}, or "
                f"{spelling.columns(kind, role)} for the {kind} only")
    return f"name it with {spelling.argument(role + '_column')}"


def _query_names(run: _Table, qrels: _Table, names: ColumnNames,
                 spelling: Spelling) -> tuple[str, str]:
    run_given, qrels_given = names.run.get("query"), names.qrels.get("query")
    if run_given is None and qrels_given is None:
        for name in QUERY_COLUMNS:
            if run.has(name) and qrels.has(name):
                return run.column(name, "", ""), qrels.column(name, "", "")
        raise ValueError(
            "no query column: neither 'query' nor 'user' is in both tables; name it with "
            f"{spelling.argument('query_column')} (or {spelling.columns('run', 'query')} and "
            f"{spelling.columns('qrels', 'query')} when the names differ). The run has: "
            f"{', '.join(run.relation.columns)}; the qrels have: "
            f"{', '.join(qrels.relation.columns)}"
        )

    def pick(table: _Table, given: str | None, other: str | None) -> str:
        if given is not None:
            return table.column(given, "query", _role_hint(table.kind, "query", spelling))
        candidates = [n for n in (other, *QUERY_COLUMNS) if n is not None]
        found = next((n for n in candidates if table.has(n)), candidates[0])
        return table.column(found, "query", _role_hint(table.kind, "query", spelling))

    return pick(run, run_given, qrels_given), pick(qrels, qrels_given, run_given)


def _ids(run: _Table, qrels: _Table, role: str, run_name: str, qrels_name: str, ids: str,
         spelling: Spelling) -> tuple[str, str]:
    """The two sides' id expressions, cast to text with ids='varchar'; otherwise ids of
    different kinds are an error, as is UHUGEINT against a signed type, which DuckDB would
    compare as DOUBLE (two different ids could be equal)."""
    run_sql, qrels_sql = quote_identifier(run_name), quote_identifier(qrels_name)
    if ids == "varchar":
        return f"CAST({run_sql} AS VARCHAR)", f"CAST({qrels_sql} AS VARCHAR)"
    run_type, qrels_type = run.type_of(run_name), qrels.type_of(qrels_name)
    types = {run_type, qrels_type}
    inexact = "UHUGEINT" in types and bool(types & set(NATIVE_SIGNED_TYPES))
    if _id_kind(run_type) != _id_kind(qrels_type) or inexact:
        raise ValueError(
            f"the {role} ids are {run_type} in the run ({run_name!r}) but {qrels_type} in the "
            f"qrels ({qrels_name!r}): compare them as text with "
            f"{spelling.argument('ids', 'varchar')}, or cast one side"
        )
    return run_sql, qrels_sql


def _warn_ungraded(qrels: _Table, ids: Sequence[str], spelling: Spelling) -> None:
    """Qrels without a grade column count every row as relevant: say so when they have number
    columns besides the ids (a ``rating`` or ``relevance`` column is not read as a grade by its
    name alone; only ``grade``, or the one named, is)."""
    unread = [name for name, sql_type in qrels.types.values()
              if name not in ids and is_number_type(sql_type, "grade")]
    if unread:
        listed = ", ".join(map(repr, unread))
        warnings.warn(
            f"the qrels have no grade column (grade): every row counts as relevant (grade 1), "
            f"and their column{'s' if len(unread) > 1 else ''} {listed} "
            f"{'are' if len(unread) > 1 else 'is'} not read; to grade by one, name it: "
            f"{spelling.argument('grade_column', unread[0])}", UngradedQrels, stacklevel=6)


def _columns(run: _Table, qrels: _Table, names: ColumnNames, by: Sequence[str], ids: str,
             spelling: Spelling) -> _Columns:
    run_query, qrels_query = _query_names(run, qrels, names, spelling)
    run_item = run.column(names.run.get("item", "item"), "item",
                          _role_hint("run", "item", spelling))
    qrels_item = qrels.column(names.qrels.get("item", "item"), "item",
                              _role_hint("qrels", "item", spelling))
    query_sql = _ids(run, qrels, "query", run_query, qrels_query, ids, spelling)
    item_sql = _ids(run, qrels, "item", run_item, qrels_item, ids, spelling)

    role = "rank" if "rank" in names.run else "score"
    key = run.column(names.run.get(role, "score"), role, _role_hint("run", role, spelling))
    if not is_number_type(run.type_of(key), "score"):
        raise ValueError(f"the run's {role} column {key!r} is {run.type_of(key)}: it must be "
                         "numeric (ids and labels are not scores)")
    # A rank ascends (1 = best): sorting its negation descending keeps one rule for ties (by
    # item, descending) for scores and ranks alike.
    run_key = (f"-CAST({quote_identifier(key)} AS DOUBLE)" if role == "rank"
               else quote_identifier(key))

    # A column named subtopic is the subtopic; any other (a TREC file's iteration, which only
    # diversity qrels fill with subtopics) only when named.
    subtopic_name = (qrels.column(names.qrels.get("subtopic", "subtopic"), "subtopic",
                                  _role_hint("qrels", "subtopic", spelling))
                     if "subtopic" in names.qrels or qrels.has("subtopic") else None)
    if "grade" in names.qrels or qrels.has("grade"):
        grade_name = qrels.column(names.qrels.get("grade", "grade"), "grade",
                                  _role_hint("qrels", "grade", spelling))
        grade_type = qrels.type_of(grade_name)
        if not is_number_type(grade_type, "grade"):
            raise ValueError(f"the qrels' grade column {grade_name!r} is {grade_type}: it must "
                             "be numeric (or BOOLEAN: true = 1)")
        grade = quote_identifier(grade_name)
        if grade_type == "BOOLEAN":
            grade = f"CAST({grade} AS TINYINT)"
    else:
        grade = "1"
        _warn_ungraded(qrels, (qrels_query, qrels_item, subtopic_name), spelling)

    by_names = tuple(run.column(name, "by", f"{spelling.argument('by')} names a run column")
                     for name in by)
    if run_query.lower() in (name.lower() for name in by_names):
        raise ValueError(f"{spelling.argument('by', run_query)}: that is the query column; for "
                         f"one row per query use {spelling.argument('per_user', True)}")
    return _Columns(
        run_query=query_sql[0], run_item=item_sql[0], run_key=run_key,
        run_key_column=quote_identifier(key),
        qrels_query=query_sql[1], qrels_item=item_sql[1], grade=grade,
        subtopic=None if subtopic_name is None else quote_identifier(subtopic_name),
        query_type="VARCHAR" if ids == "varchar" else run.type_of(run_query),
        item_type="VARCHAR" if ids == "varchar" else run.type_of(run_item),
        query_name=run_query, by=by_names, item_name=run_item, key_name=key,
    )


# --- checks before anything is computed -----------------------------------------------------------

@dataclass(frozen=True)
class _Qrels:
    """What the qrels profile found (one streaming pass)."""

    rows: int
    dropped: int
    graded: bool
    largest: float | None
    smallest: float | None


def _kept(c: _Columns) -> str:
    return f"{c.qrels_query} IS NOT NULL AND {c.qrels_item} IS NOT NULL"


def _judgment(con: duckdb.DuckDBPyConnection, view: str, c: _Columns, condition: str,
              params: dict[str, Any] | None = None) -> str:
    """'query q, item i' of the first kept qrels row meeting ``condition``, for a message (a
    second look: building this text for every row would cost the check its speed)."""
    row = con.execute(
        f"SELECT {c.qrels_query}::VARCHAR, {c.qrels_item}::VARCHAR FROM {view} "
        f"WHERE {_kept(c)} AND {condition} LIMIT 1", params,
    ).fetchall()
    return f"query {row[0][0]}, item {row[0][1]}" if row else "?"


def _profile_qrels(con: duckdb.DuckDBPyConnection, view: str, c: _Columns) -> _Qrels:
    """Count the qrels and their dropped rows, check the grades and tell whether they are graded
    (a grade other than 0 and 1)."""
    kept = _kept(c)
    rows, dropped, null_grades, non_binary, high, low = con.execute(f"""
        SELECT count(*), count(*) FILTER (WHERE NOT ({kept})),
               count(*) FILTER (WHERE {kept} AND g IS NULL),
               count(*) FILTER (WHERE {kept} AND g NOT IN (0, 1)),
               max(g) FILTER (WHERE {kept}), min(g) FILTER (WHERE {kept})
        FROM (SELECT *, {c.grade} AS g FROM {view})""").fetchall()[0]
    if null_grades:
        first = _judgment(con, view, c, f"{c.grade} IS NULL")
        raise ValueError(f"the qrels have {null_grades} NULL grades (first: {first})")
    return _Qrels(
        rows=rows, dropped=dropped, graded=non_binary > 0,
        largest=None if high is None else float(high),
        smallest=None if low is None else float(low),
    )


def _check_subtopics(requests: Sequence[MetricRequest], c: _Columns, qrels: _Qrels,
                     spelling: Spelling) -> None:
    """An intent-aware request needs the qrels' subtopic column: without one, say how to name
    it (a TREC qrels file's iteration field cannot be told to hold subtopics)."""
    wanting = [r.label for r in requests if r.truth_form(qrels.graded) == SUBTOPICS]
    if wanting and c.subtopic is None:
        raise ValueError(
            f"metric {wanting[0]!r} reads subtopic qrels (query, subtopic, item, grade), but the "
            f"qrels have no subtopic column: {_role_hint('qrels', 'subtopic', spelling)} "
            "(ndeval's qrels format: query subtopic doc grade; docs/diversity.md)"
        )


def _check_grades(con: duckdb.DuckDBPyConnection, view: str, c: _Columns,
                  requests: Sequence[MetricRequest], qrels: _Qrels, spelling: Spelling) -> None:
    """Grades a graded metric cannot read are an error here, before any output, with the fix in
    the caller's own syntax (the SQL functions' messages speak SQL: ``max_grade := 5``)."""
    for request in requests:
        form = request.truth_form(qrels.graded)
        options = {o.name: o.default for m in request.overloads for o in m.options}
        if "max_grade" not in options or qrels.largest is None:
            continue
        limit = float(dict(request.options).get("max_grade", options["max_grade"]))
        grade = qrels.largest if form == "map" else 1.0
        if grade > limit:
            where = (f" ({_judgment(con, view, c, f'{c.grade} = $g', {'g': grade})})"
                     if form == "map" else "")
            raise ValueError(
                f"metric {request.label!r}: the qrels have grade {_number_text(grade)}{where} "
                f"above {request.name}'s max_grade {_number_text(limit)}; raise it: "
                f"{spelling.metric(request.rewritten(max_grade=_number_text(math.ceil(grade))))}"
            )
