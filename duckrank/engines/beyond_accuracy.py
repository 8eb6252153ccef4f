"""The beyond-accuracy metrics (``duckrank.metrics.beyond_accuracy``, ``duckrank.metrics.debiased``)
computed on a DuckDB connection from relations: a long run (user, item, score or rank), the
users' relevant items, a second system's run, and side tables. The one implementation behind
``duckrank.reports.beyond_accuracy`` (files and data frames in, a row out) and the ``duckrank
beyond`` command; ``duckrank.evaluate`` can call it too (it sits above the evaluation).

Requests are spelled ``name[(option=value, ...)]@k`` (``catalog_coverage@10``,
``rbo(p=0.8)@10``, ``ips_recall(gamma=1,estimator=ips)@10``); the options are the macro's own
(``docs/beyond-accuracy.md``), checked against its record. Every value reaches SQL as a query
parameter or a quoted identifier; table names are the views made here.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from duckrank.metrics.beyond_accuracy import BeyondMetric
from duckrank.render.beyond_accuracy import RECORDS, by_name
from duckrank.render.quoting import quote_identifier
from duckrank.render.spelling import PYTHON, Spelling

# The side tables a metric can read, by the name of its macro parameter.
SIDE_TABLES = ("train", "catalog", "embeddings", "categories", "propensities", "item_groups")
# Parameters filled here: the tables and the columns of the lists built here.
_WIRED = {"recs", "k", "rec", "other", "catalog_size", "truth_col", "user_col", "rec_col",
          "test", *SIDE_TABLES}
_REQUEST = re.compile(r"^\s*(?P<name>\w+)\s*(?:\((?P<options>[^()]*)\))?\s*@\s*(?P<k>\d+)\s*$")


@dataclass(frozen=True)
class Request:
    """One parsed request: the record, k, and the options as parameter name -> value."""

    text: str
    metric: BeyondMetric
    k: int
    options: Mapping[str, Any] = field(default_factory=dict)


def _value(text: str) -> Any:
    """An option value: true/false, a number, or else the text itself (a string)."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text.strip("'\"")


def parse_request(text: str) -> Request:
    """``name[(option=value, ...)]@k`` checked against the metric's record."""
    match = _REQUEST.match(text)
    if match is None:
        raise ValueError(f"beyond-accuracy metric {text!r}: write name@k or "
                         "name(option=value,...)@k, e.g. catalog_coverage@10")
    try:
        metric = by_name(match["name"])
    except KeyError as error:
        raise ValueError(error.args[0]) from None
    if metric.kind == "per_group":
        raise ValueError(f"beyond-accuracy metric {text!r}: {metric.name} gives one row per pair "
                         f"of groups, not one value; call the {metric.name} macro in SQL "
                         "(docs/beyond-accuracy.md)")
    if any(p.name == "scores_col" for p in metric.parameters):
        raise ValueError(f"beyond-accuracy metric {text!r}: {metric.name} reads the predicted "
                         "scores of each list, which the lists built here do not carry; call "
                         f"the {metric.name} macro in SQL (docs/beyond-accuracy.md)")
    if metric.truth == "map":
        raise ValueError(f"beyond-accuracy metric {text!r}: {metric.name} reads graded truth (a "
                         "MAP of item -> grade), which the lists built here do not carry; call "
                         f"the {metric.name} macro in SQL (docs/beyond-accuracy.md)")
    allowed = [p.name for p in metric.parameters if p.default is not None and p.name not in _WIRED]
    options: dict[str, Any] = {}
    for pair in filter(str.strip, (match["options"] or "").split(",")):
        name, equals, value = (part.strip() for part in pair.partition("="))
        if not equals or name not in allowed:
            raise ValueError(
                f"beyond-accuracy metric {text!r}: unknown option {pair.strip()!r}; "
                f"{metric.name} takes {', '.join(allowed) or 'no options'}"
            )
        options[name] = _value(value)
    return Request(text.strip(), metric, int(match["k"]), options)


@dataclass(frozen=True)
class RunColumns:
    """The run's (and qrels', side tables') column names; the run is ranked by ``score``
    (higher first) or, when given, by ``rank`` (1 first). With ``grade``, the qrels rows with a
    grade above 0 are the relevant ones; without it every qrels row is."""

    user: str = "user"
    item: str = "item"
    score: str = "score"
    rank: str | None = None
    grade: str | None = None


# The metrics that read the user column of train (the others count its rows by item).
_TRAIN_USERS = frozenset({"self_information", "epc", "efd", "aclt", "aplt", "pop_reo", "pop_rsp",
                          "reo", "rsp"})
# The side tables' own columns, named by a metric option: (table, option).
_OPTION_COLUMNS = (("embeddings", "vector_col"), ("categories", "category_col"),
                   ("propensities", "propensity_col"), ("item_groups", "group_col"))


def _missing_column(columns: Sequence[str], name: str, exact: bool) -> bool:
    if exact:
        return name not in columns
    return name.lower() not in {c.lower() for c in columns}


def check_columns(  # noqa: C901
    requests: Sequence[Request], run: duckdb.DuckDBPyRelation,
    qrels: duckdb.DuckDBPyRelation | None, other: duckdb.DuckDBPyRelation | None,
    tables: Mapping[str, duckdb.DuckDBPyRelation], columns: RunColumns,
    spelling: Spelling | None = None,
) -> None:
    """Raise naming the input, the column and the option that names it when an input lacks a
    column the requests read (DuckDB's own message is a Binder Error about an alias or an empty
    COLUMNS(...) in a macro's text). The run, other run and qrels are read by quoted identifiers
    (matched case-insensitively); the side tables by the macros' ``COLUMNS(lambda c: c = ...)``,
    which matches the name exactly."""
    spelling = spelling or PYTHON
    order = ("rank", columns.rank, "rank_column") if columns.rank else ("score", columns.score,
                                                                         "score_column")
    ids = [("user", columns.user, "user_column"), ("item", columns.item, "item_column")]
    inputs: list[tuple[str, duckdb.DuckDBPyRelation, list[tuple[str, str, str]], bool]] = [
        ("the run", run, [*ids, order], False)]
    if other is not None:
        inputs.append((f"the other run ({spelling.argument('other')})", other, [*ids, order],
                       False))
    if qrels is not None:
        grade = [("grade", columns.grade, "grade_column")] if columns.grade else []
        inputs.append((f"the qrels ({spelling.argument('qrels')})", qrels, [*ids, *grade],
                       False))
    for name, table in tables.items():
        wanted = [p.name for r in requests for p in r.metric.parameters]
        if name not in wanted:
            continue
        needed = [("item", columns.item, "item_column")]
        if name == "train" and any(r.metric.name in _TRAIN_USERS for r in requests):
            # Renamed to "user" when the table has the run's user column (beyond_values).
            needed.append(("user", columns.user, "user_column"))
        for r in requests:
            for table_name, option in _OPTION_COLUMNS:
                parameter = next((p for p in r.metric.parameters if p.name == option), None)
                if table_name == name and parameter is not None:
                    column = str(r.options.get(option, parameter.default.strip("'")))
                    needed.append((option.removesuffix("_col"), column,
                                   f"the option {option} of {r.metric.name} "
                                   f"({r.metric.name}({option}=NAME)@{r.k})"))
        inputs.append((f"the {name} table ({spelling.argument(name)})", table, needed, True))
    for what, relation, needed, exact in inputs:
        present = relation.columns
        for role, column, option in needed:
            if role == "user" and exact and "user" in present:
                continue
            if not _missing_column(present, column, exact):
                continue
            named = option if option.startswith("the option") else spelling.argument(option)
            case = (" (names are matched exactly, case included)"
                    if exact and not _missing_column(present, column, False) else "")
            raise ValueError(
                f"{what} has no {role} column {column!r}{case}; its columns are: "
                f"{', '.join(present)}; name the {role} column with {named}"
            )


def _lists_sql(run: str, qrels: str | None, c: RunColumns) -> str:
    """One row per user of the run: user, rec (ranked with to_ordered_list: every tied item
    kept, ties broken as in the evaluation) and truth (the user's qrels items; NULL without
    qrels or for a user absent from them)."""
    u, i = quote_identifier(c.user), quote_identifier(c.item)
    order = f"-{quote_identifier(c.rank)}" if c.rank else quote_identifier(c.score)
    relevant = f" FILTER (WHERE {quote_identifier(c.grade)} > 0)" if c.grade else ""
    truth = (f"(SELECT {u} AS \"user\", list({i}){relevant} AS truth FROM {qrels} "
             f"GROUP BY {u})" if qrels else "(SELECT NULL AS \"user\", NULL AS truth LIMIT 0)")
    return (
        f"SELECT r.\"user\", r.rec, t.truth FROM (SELECT {u} AS \"user\", "
        f"to_ordered_list({i}, {order}, '-reverse') AS rec FROM {run} GROUP BY {u}) r "
        f"LEFT JOIN {truth} t ON r.\"user\" = t.\"user\""
    )


def _query(request: Request, recs: str, other: str | None, tables: Mapping[str, str],  # noqa: C901
           catalog_size: int | None, item: str, test: str | None = None) -> tuple[str, list[Any]]:
    """The SQL of one request and its parameters; ``test``: the view of the qrels' users
    (``user_coverage``'s users to cover), None without qrels."""
    metric, fn = request.metric, request.metric.name
    if metric.kind == "pair":
        if other is None:
            raise ValueError(f"{request.text}: {fn} compares two systems; give the other run")
        named = "".join(f", {name} := ?" for name in request.options)
        return (f"SELECT avg({fn}(r.rec, o.rec, ?{named})) FROM {recs} r JOIN {other} o "
                "USING (\"user\")", [request.k, *request.options.values()])
    positional, named_parts, params = [], [], []
    for parameter in metric.parameters:
        name = parameter.name
        if parameter.default is None:
            if name == "recs":
                value: Any = recs
            elif name == "k":
                value = request.k
            elif name in tables:
                value = tables[name]
            else:
                raise ValueError(f"{request.text}: {fn} needs the {name} table")
            positional.append("?")
            params.append(value)
            continue
        if name == "test" and test is not None:
            value = test
        elif name == "catalog_size" and catalog_size is not None:
            value = catalog_size
        elif name == "catalog" and catalog_size is None and "catalog" in tables:
            value = tables["catalog"]
        # A propensity table wins over the estimate from train.
        elif name in ("train", "propensities") and name in tables and not (
                name == "train" and "propensities" in tables):
            value = tables[name]
        elif name in request.options:
            value = request.options[name]
        elif name == "item_col":
            value = item
        else:
            continue
        named_parts.append(f"{name} := ?")
        params.append(value)
    call = f"{fn}({', '.join([*positional, *named_parts])})"
    select = fn if metric.kind == "catalogue" else f"avg({fn})"
    return f"SELECT {select} FROM {call}", params


def beyond_values(
    con: duckdb.DuckDBPyConnection,
    run: duckdb.DuckDBPyRelation,
    requests: Sequence[str],
    *,
    qrels: duckdb.DuckDBPyRelation | None = None,
    other: duckdb.DuckDBPyRelation | None = None,
    tables: Mapping[str, duckdb.DuckDBPyRelation] | None = None,
    catalog_size: int | None = None,
    columns: RunColumns = RunColumns(),
    spelling: Spelling | None = None,
) -> dict[str, Any]:
    """The requested metrics of ``run`` (relations of ``con``, which has duckrank registered):
    ``users`` (the users with a list) and one value per request, named as written. ``tables``:
    side tables by name (``SIDE_TABLES``), in the columns the macros read, a user column named
    as the run's. ``spelling``: how errors name the caller's arguments (``duckrank.evaluation``'s
    ``PYTHON``, the default, or ``COMMAND_LINE``)."""
    parsed = [parse_request(text) for text in requests]
    unknown = set(tables or {}) - set(SIDE_TABLES)
    if unknown:
        raise ValueError(f"unknown side table {sorted(unknown)[0]!r}; the side tables are: "
                         f"{', '.join(SIDE_TABLES)}")
    check_columns(parsed, run, qrels, other, tables or {}, columns, spelling)
    views: list[str] = []

    def view(relation: duckdb.DuckDBPyRelation) -> str:
        name = f"duckrank_beyond_{uuid.uuid4().hex}"
        relation.create_view(name, replace=False)
        views.append(name)
        return name

    def renamed(relation: duckdb.DuckDBPyRelation) -> duckdb.DuckDBPyRelation:
        # The macros read one user column name from the lists and from train.
        if columns.user != "user" and columns.user in relation.columns:
            return relation.project(f"* RENAME ({quote_identifier(columns.user)} AS \"user\")")
        return relation

    try:
        truth = view(qrels) if qrels is not None else None
        recs = view(con.sql(_lists_sql(view(run), truth, columns)))
        second = view(con.sql(_lists_sql(view(other), None, columns))) if other else None
        # user_coverage's users to cover: every user of the qrels.
        test = None
        if truth is not None and any(p.name == "test" for r in parsed
                                     for p in r.metric.parameters):
            test = view(con.sql(f"SELECT {quote_identifier(columns.user)} AS \"user\" "
                                f"FROM {truth}"))
        side = {name: view(renamed(table)) for name, table in (tables or {}).items()}
        values: dict[str, Any] = {
            "users": con.execute(f"SELECT count(*) FROM {recs}").fetchall()[0][0]
        }
        for request in parsed:
            sql, params = _query(request, recs, second, side, catalog_size, columns.item, test)
            values[request.text] = con.execute(sql, params).fetchall()[0][0]
        return values
    finally:
        for name in reversed(views):
            con.execute(f"DROP VIEW IF EXISTS {name}")


def known() -> str:
    """The metric names, for help texts."""
    return ", ".join(m.name for m in RECORDS)
