"""Beyond-accuracy requests in an evaluation (``arp@10``, ``catalog_coverage@10``;
docs/beyond-accuracy.md): the side inputs they read (``SideInputs``), the checks that those are
given, and their values per ``by`` group, computed by
``duckrank.engines.beyond_accuracy.beyond_values`` from the run's lists as the evaluation ranks
them (``_beyond_table``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from duckrank.engines.beyond_accuracy import (
    SIDE_TABLES,
    Request,
    RunColumns,
    beyond_values,
)
from duckrank.evaluation.inputs import ColumnNames, _Columns, _kept, _Table, as_relation
from duckrank.evaluation.metric_requests import Convention
from duckrank.evaluation.sql import _rank_key
from duckrank.files.runs import file_format, literal_patterns
from duckrank.files.trec import file_paths
from duckrank.render.quoting import quote_identifier
from duckrank.render.spelling import PYTHON, Spelling

# --- beyond-accuracy metrics ----------------------------------------------------------------------

@dataclass(frozen=True)
class SideInputs:
    """What beyond-accuracy requests read besides the run and the qrels (docs/beyond-accuracy.md):
    ``other``, a second system's run (``overlap_at``, ``jaccard_at``, ``rbo``), read with the
    run's columns; the side tables ``SIDE_TABLES``, each a Parquet or CSV path, a relation of the
    connection, or a pandas / polars / Arrow table, with the user and item columns named as the
    run's; and ``catalog_size``. None: not given. ``item_groups`` (item, group) is read by
    ``reo``, ``rsp`` and ``group_expected_exposure``."""

    other: Any = None
    train: Any = None
    catalog: Any = None
    catalog_size: int | None = None
    embeddings: Any = None
    categories: Any = None
    propensities: Any = None
    item_groups: Any = None

    def given(self, name: str) -> bool:
        return getattr(self, name) is not None


# Inputs of which a metric needs one when its record takes both as options (its macro refuses
# a call without either).
_ONE_OF = (("catalog", "catalog_size"), ("propensities", "train"))


def side_relation(con: duckdb.DuckDBPyConnection, table: Any, name: str, ids: Sequence[str],
                  registered: list[str], spelling: Spelling = PYTHON) -> duckdb.DuckDBPyRelation:
    """The side table given as argument ``name``: a Parquet or CSV path, a DuckDB relation, or
    anything DuckDB scans (``as_relation``). In CSV files the ``ids`` columns (user, item) are
    text, as ``duckrank.files`` reads run and qrels CSVs."""
    if not isinstance(table, str | Path):
        return as_relation(con, table, "side", {}, registered)
    fmt = file_format(table)
    if fmt not in ("parquet", "csv"):
        raise ValueError(f"{spelling.argument(name, str(table))}: give a Parquet or CSV file")
    try:
        files = file_paths(con, table, name)
    except ValueError as error:
        raise ValueError(f"{spelling.argument(name, str(table))}: {error}") from None
    # the one file of that name (DuckDB's readers would take `*`, `?` and `[` as a pattern)
    path = literal_patterns(con, files)
    if fmt == "parquet":
        return con.read_parquet(path)
    text = {name: "VARCHAR" for name in con.read_csv(path).columns if name in ids}
    return con.read_csv(path, dtype=text)


def _evaluate_error(spelling: Spelling, message: str) -> ValueError:
    """A ValueError naming ``evaluate`` from Python (the command line names its command)."""
    return ValueError(message if spelling.cli else f"evaluate: {message}")


def _check_beyond(requests: Sequence[Request], side: SideInputs, per_user: bool,
                  spelling: Spelling) -> None:
    """Before anything is read: beyond-accuracy values are means (over the run, or a ``by``
    group), and every input a request reads is given."""
    for request in requests:
        metric = request.metric
        if per_user:
            refused = f"it cannot be given {spelling.argument('per_user', True)}"
            raise _evaluate_error(spelling, (
                f"{request.text!r} is one value for the whole run; {refused}"
                if metric.kind == "catalogue" else
                f"{request.text!r} is given as a mean over the run's users; {refused} (one "
                f"value per user: the {metric.name} macro in SQL, docs/beyond-accuracy.md)"))
        optional = {p.name for p in metric.parameters if p.default is not None}
        needed = [(p.name,) for p in metric.parameters
                  if p.default is None and p.name in SIDE_TABLES]
        needed += [group for group in _ONE_OF if set(group) <= optional]
        if metric.kind == "pair":
            needed.append(("other",))
        for group in needed:
            if not any(side.given(name) for name in group):
                wanted = " or ".join(spelling.argument(name) for name in group)
                raise _evaluate_error(spelling, f"{request.text!r}: {metric.name} needs {wanted}, "
                                      "which is not given")


def _beyond_table(
    con: duckdb.DuckDBPyConnection, requests: Sequence[Request], side: SideInputs,
    views: tuple[str, str], c: _Columns, convention: Convention, names: ColumnNames,
    objects: tuple[list[str], list[str]], spelling: Spelling, glob: bool,
) -> str:
    """A temp table of the beyond-accuracy values: one row per ``by`` group of the run (one row
    without ``by``), the ``by`` columns then ``duckrank_b0``, ``duckrank_b1``, ... in the order of
    ``requests``. Each group's values are ``beyond_values`` of its rows, ranked as the evaluation
    ranks them (the same key and ties; the rows the evaluation drops left out), with the qrels'
    relevant items (as the binary reading has them) and ``side``. ``objects``: the lists of
    objects to drop and views to unregister after the evaluation."""
    run_view, qrels_view = views
    dropped, registered = objects
    query, item = quote_identifier(c.query_name), quote_identifier(c.item_name)
    key = _rank_key(c, convention)
    columns = RunColumns(c.query_name, c.item_name, "duckrank_score", grade="duckrank_grade")

    def lists_input(view: str) -> str:
        return (f"SELECT {c.run_query} AS {query}, {c.run_item} AS {item}, {key} AS "
                f"duckrank_score FROM {view} WHERE {c.run_query} IS NOT NULL AND "
                f"{c.run_item} IS NOT NULL AND {c.run_key_column} IS NOT NULL")

    def view_of(relation: duckdb.DuckDBPyRelation, kind: str) -> str:
        name = quote_identifier(f"duckrank_{kind}_view_{uuid.uuid4().hex}")
        dropped.append(f"VIEW IF EXISTS {name}")
        relation.create_view(name[1:-1])
        return name

    other = None
    if side.given("other"):
        relation = as_relation(con, side.other, "run", names.run, registered, glob)
        table = _Table(relation, "other run")
        for name, role in ((c.query_name, "query"), (c.item_name, "item"),
                           (c.key_name, "rank" if "rank" in names.run else "score")):
            table.column(name, role, f"{spelling.argument('other')} is read with the run's "
                         "columns")
        other = con.sql(lists_input(view_of(relation, "other")))
    qrels = None
    # The qrels give serendipity's and the ips_* metrics' truth, and user_coverage's users.
    if any(p.name in ("truth_col", "test") for r in requests for p in r.metric.parameters):
        qrels = con.sql(
            f"SELECT {c.qrels_query} AS {query}, {c.qrels_item} AS {item}, "
            f"CAST(({convention.relevant}) AS TINYINT) AS duckrank_grade "
            f"FROM (SELECT *, {c.grade} AS g FROM {qrels_view}) WHERE {_kept(c)}")
    tables = {
        name: side_relation(con, getattr(side, name), name, (c.query_name, c.item_name),
                            registered, spelling)
        for name in SIDE_TABLES if side.given(name)
    }

    groups = quote_identifier(f"duckrank_groups_{uuid.uuid4().hex}")
    values = quote_identifier(f"duckrank_beyond_{uuid.uuid4().hex}")
    dropped += [f"TABLE IF EXISTS {groups}", f"TABLE IF EXISTS {values}"]
    con.execute(f"CREATE TEMP TABLE {groups} AS " + (
        f"SELECT row_number() OVER () AS duckrank_group, * FROM (SELECT DISTINCT "
        f"{c.by_select[:-2]} FROM {run_view})" if c.by else "SELECT 1 AS duckrank_group"))
    nulls = ", ".join(f"NULL::DOUBLE AS duckrank_b{n}" for n in range(len(requests)))
    casts = ", ".join(f"CAST($b{n} AS DOUBLE)" for n in range(len(requests)))
    con.execute(f"CREATE TEMP TABLE {values} AS SELECT {c.by_select}{nulls} FROM {groups} "
                "LIMIT 0")
    count = con.execute(f"SELECT count(*) FROM {groups}").fetchall()[0][0]
    for group in range(1, count + 1):
        # NULL is a group of its own, as in the evaluation's GROUP BY.
        match = "".join(f" AND {name} IS NOT DISTINCT FROM (SELECT {name} FROM {groups} "
                        f"WHERE duckrank_group = {group})"
                        for name in map(quote_identifier, c.by))
        found = beyond_values(con, con.sql(lists_input(run_view) + match),
                              [r.text for r in requests], qrels=qrels, other=other,
                              tables=tables, catalog_size=side.catalog_size, columns=columns,
                              spelling=spelling)
        con.execute(f"INSERT INTO {values} SELECT {c.by_select}{casts} FROM {groups} "
                    f"WHERE duckrank_group = {group}",
                    {f"b{n}": found[r.text] for n, r in enumerate(requests)})
    return values
