"""The evaluation's public entry points: ``evaluation`` (the context manager the command line and
the reports run on a connection) and ``duckrank.evaluate`` (tables or files in, a DataFrame out),
which check the inputs, plan the ranges, run the SQL of each range and give the means (or the
per-query values) with the counts of ``COUNT_COLUMNS``, and warn about what the numbers hold that
their labels cannot.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import duckdb

from duckrank.evaluation.aliases import PEERS
from duckrank.evaluation.beyond import SideInputs, _beyond_table, _check_beyond
from duckrank.evaluation.inputs import (
    ID_MODES,
    ColumnNames,
    DroppedRows,
    ShortLists,
    UnrankedQueries,
    _check_grades,
    _check_subtopics,
    _Columns,
    _columns,
    _profile_qrels,
    _Table,
    as_relation,
    column_names,
    is_polars,
)
from duckrank.evaluation.metric_requests import (
    Convention,
    MetricRequest,
    convention_named,
    needed_functions,
    split_metrics,
)
from duckrank.evaluation.planning import (
    NATIVE_TOP_K_LIMIT,
    TOP_K_RATIO,
    TOP_K_ROW_WEIGHT,
    _all_relevant,
    _Bucket,
    _buckets,
    _check_conflicts,
    _Metric,
    _native_top_k_key,
    _plan_metrics,
    _top_k,
)
from duckrank.evaluation.sql import _rank_key, _scored_sql, _text_valued
from duckrank.render.quoting import quote_identifier
from duckrank.render.spelling import PYTHON, Spelling

if TYPE_CHECKING:
    import pandas
    import polars

COUNT_COLUMNS = ("scored", "unjudged", "unranked", "dropped")


@dataclass
class Result:
    """The evaluation's output: ``columns`` and its rows, computed one range of query ids at a
    time as they are read (inside the ``evaluation`` block). ``queries`` gives each range's SQL
    and parameters, in output order."""

    columns: list[str]
    connection: duckdb.DuckDBPyConnection
    queries: Callable[[], Iterator[tuple[str, dict[str, Any]]]]

    def rows(self, batch_size: int = 10_000) -> Iterator[tuple[Any, ...]]:
        for sql, params in self.queries():
            yield from self.connection.sql(sql, params=params).iter_rows(batch_size=batch_size)

    def df(self, polars: bool = False) -> pandas.DataFrame | polars.DataFrame:
        """One DataFrame (pandas, or polars with ``polars``), converted once by DuckDB
        (DataFrames of the ranges apart could differ in dtype: a text column all NULL in one
        range is ``object`` there)."""
        def convert(relation: duckdb.DuckDBPyRelation) -> Any:
            return relation.pl() if polars else relation.df()

        queries = list(self.queries())
        if len(queries) == 1:
            return convert(self.connection.sql(queries[0][0], params=queries[0][1]))
        table = quote_identifier(f"duckrank_rows_{uuid.uuid4().hex}")
        try:
            for index, (sql, params) in enumerate(queries):
                prefix = f"CREATE TEMP TABLE {table} AS" if index == 0 else f"INSERT INTO {table}"
                self.connection.execute(f"{prefix} {sql}", params)
            return convert(self.connection.table(table[1:-1]))
        finally:
            self.connection.execute(f"DROP TABLE IF EXISTS {table}")


def _warn_dropped(run_dropped: int, qrels_dropped: int, run_key: str) -> None:
    if not run_dropped and not qrels_dropped:
        return
    key = "rank" if run_key.startswith("-") else "score"
    warnings.warn(
        f"left out {run_dropped} run rows with a NULL query, item or {key} and {qrels_dropped} "
        "qrels rows with a NULL query or item (counted in the 'dropped' column)",
        DroppedRows, stacklevel=5,  # the caller of evaluate()
    )


# A group's judged queries without a list in its run: every judged query but the scored ones
# (each group is scored against all the qrels), over the partials' rows of the group.
_UNRANKED = "$judged - sum(scored)"


def _short_list_requests(metrics: Sequence[_Metric]) -> list[_Metric]:
    """The requests of precision_at with a cut-off that divide by the items returned (its
    default): a list shorter than k gives hits / len(list) there, hits / k in every peer."""
    return [m for m in metrics if m.request.name == "precision_at" and m.request.k is not None
            and dict(m.request.options).get("denominator", "returned") == "returned"]


def _warn_scoring(con: duckdb.DuckDBPyConnection, partials: str, c: _Columns, judged: int,
                  short: Sequence[_Metric], convention: Convention) -> None:
    """Say what the numbers hold that the labels cannot: judged queries without a list (how
    many, and whether they were scored or left out), and precision over lists shorter than k.
    Counted from the partials (per ``by`` group), before any row is returned."""
    names = [f"duckrank_short{j}" for j in range(len(short))]
    per_group = "".join(f", sum({name}) AS {name}" for name in names)
    totals = "".join(f", coalesce(sum({name}), 0)" for name in names)
    unranked, scored, *counts = con.execute(
        f"SELECT coalesce(sum(u), 0), coalesce(sum(s), 0){totals} FROM ("
        f"SELECT {_UNRANKED} AS u, sum(scored) AS s{per_group} FROM {partials}{c.group_by})",
        {"judged": judged}).fetchall()[0]
    groups = " (over the by groups)" if c.by else ""
    if unranked:
        if convention.score_unranked:
            done = ("each is scored as an empty list (0 where the metric is defined) and counted "
                    "in the means (convention='trec_eval' leaves them out, as trec_eval does "
                    "without -c)")
        else:
            done = ("they are left out of the means, as trec_eval does without -c (the default "
                    "convention, 'duckrank', scores them 0)")
        queries = "judged query" if unranked == 1 else "judged queries"
        verb = "has" if unranked == 1 else "have"
        warnings.warn(f"{unranked} {queries}{groups} {verb} no list in the run: {done}; the "
                      "'unranked' column counts them", UnrankedQueries, stacklevel=5)
    for metric, count in zip(short, counts, strict=True):
        if count:
            k = metric.request.k
            warnings.warn(
                f"{metric.column}: {count} of the {scored} ranked lists{groups} are shorter than "
                f"{k}, where precision divides by the items returned (denominator=returned); "
                f"trec_eval, ranx and RecTools divide by {k}: "
                f"{metric.request.rewritten(denominator='k')} gives their number",
                ShortLists, stacklevel=5)


def _with_catalog_size(requests: list[MetricRequest], catalog_size: int | None
                       ) -> list[MetricRequest]:
    """The requests with evaluate's ``catalog_size`` for the per-list metrics that count the
    catalogue (mcc, accuracy), where a request does not give its own. A library's name for one
    of them (``rectools:MCC@10``) without any catalogue size is an error: the library always
    has one, and duckrank's NULL (the function's reading of a size not given) would hide it."""
    if catalog_size is not None:
        requests = [r.with_defaults({"catalog_size": str(catalog_size)}) for r in requests]
    for r in requests:
        counts = any(o.name == "catalog_size" for m in r.overloads for o in m.options)
        if counts and r.peer in PEERS.values() and "catalog_size" not in dict(r.options):
            raise ValueError(f"metric {r.label!r}: the {r.peer} measure counts the catalogue: "
                             "give evaluate catalog_size= (the catalogue's item count), or "
                             f"write {r.name}(catalog_size=N)@k")
    return requests


@contextmanager
def evaluation(  # noqa: C901
    con: duckdb.DuckDBPyConnection,
    run: Any,
    qrels: Any,
    metrics: Sequence[str],
    by: Sequence[str] = (),
    per_user: bool = False,
    names: ColumnNames = ColumnNames({}, {}),  # noqa: B008 (a frozen dataclass)
    ids: str = "typed",
    spelling: Spelling = PYTHON,
    glob: bool = False,
    convention: str = "duckrank",
    side: SideInputs = SideInputs(),  # noqa: B008 (a frozen dataclass)
    ranked: bool = False,
) -> Iterator[Result]:
    """The evaluation on ``con`` (which must have duckrank registered), valid inside the
    ``with`` block: one row per ``by`` group (one row in all without ``by``) with the counts of
    queries scored, unjudged (in the run, not in the qrels), unranked (in the qrels, not in the
    run), the input rows dropped, and the mean of each metric over the scored queries where it
    is defined, then the beyond-accuracy requests' values (``_beyond_table``; they read
    ``side``); with ``per_user``, one row per scored query instead, ordered by query. ``run``
    and ``qrels``: file paths, relations of ``con``, or pandas, polars or Arrow tables. With
    ``per_user`` and ``ranked``, each row ends with a column ``duckrank_ranked``: whether the run
    ranked the query (False: a judged query scored as an empty list; ``compare`` counts them).
    Every check (columns, ids, grades) runs before the first row is computed. The views and
    tables it makes on ``con`` are dropped after."""
    if ids not in ID_MODES:
        raise ValueError(f"{spelling.argument('ids')} must be one of {', '.join(ID_MODES)}, got "
                         f"{ids!r}")
    rules = convention_named(convention, spelling)
    requests, beyond = split_metrics(metrics, rules)
    requests = _with_catalog_size(requests, side.catalog_size)
    if not requests and not beyond:
        raise ValueError("no metric requested: name at least one, e.g. ndcg@10")
    _check_beyond(beyond, side, per_user, spelling)
    registered: list[str] = []
    dropped_objects: list[str] = []
    try:
        views = []
        tables = []
        for table, kind, roles in ((run, "run", names.run), (qrels, "qrels", names.qrels)):
            relation = as_relation(con, table, kind, roles, registered, glob)
            view = f"duckrank_{kind}_view_{uuid.uuid4().hex}"
            relation.create_view(view)
            views.append(quote_identifier(view))
            dropped_objects.append(f"VIEW IF EXISTS {views[-1]}")
            tables.append(_Table(relation, kind))
        run_view, qrels_view = views
        c = _columns(*tables, names, by, ids, spelling)

        profile = _profile_qrels(con, qrels_view, c)
        _check_subtopics(requests, c, profile, spelling)
        _check_grades(con, qrels_view, c, requests, profile, spelling)
        metric_columns, truths = _plan_metrics(requests, profile.graded)
        text = [m.column for m in metric_columns if _text_valued(m)]
        if text and not per_user:
            raise ValueError(f"evaluate: {', '.join(text)} gives each query a text (trec_eval's "
                             "relevance string), which has no mean: pass per_user=True")
        truths = [_all_relevant(con, truth, profile, rules) for truth in truths]
        beyond_table = None
        if beyond:
            beyond_table = _beyond_table(con, beyond, side, (run_view, qrels_view), c, rules,
                                         names, (dropped_objects, registered), spelling, glob)

        # Per run group: its rows, its queries (when the top K may serve: an estimate, for the
        # lists' mean length), and in rows of their own the rows dropped (a NULL query, item,
        # score or rank): a filter of IS NULL tests goes into the scan, where Parquet's
        # statistics skip the row groups without NULLs instead of reading three columns.
        top_k = _top_k(metric_columns)
        short = _short_list_requests(metric_columns)
        queries = f"approx_count_distinct({c.run_query})" if top_k else "NULL::BIGINT"
        empty_sums = "".join(f", NULL::DOUBLE AS duckrank_s{i}, 0::BIGINT AS duckrank_n{i}"
                             for i in range(len(metric_columns)))
        empty_sums += "".join(f", 0::BIGINT AS duckrank_short{j}" for j in range(len(short)))
        partials = quote_identifier(f"duckrank_partials_{uuid.uuid4().hex}")
        dropped_objects.append(f"TABLE IF EXISTS {partials}")
        con.execute(f"""
            CREATE TEMP TABLE {partials} AS
            SELECT {c.by_select}count(*) AS duckrank_rows, {queries} AS duckrank_queries,
                   0::BIGINT AS dropped, 0::BIGINT AS scored, 0::BIGINT AS unjudged{empty_sums}
            FROM {run_view}{c.group_by}""")
        con.execute(f"""
            INSERT INTO {partials} BY NAME
            SELECT {c.by_select}count(*) AS dropped FROM {run_view}
            WHERE {c.run_query} IS NULL OR {c.run_item} IS NULL OR {c.run_key_column} IS NULL
            {c.group_by}""")
        run_rows, run_dropped, run_queries = con.execute(
            f"SELECT coalesce(sum(duckrank_rows), 0), coalesce(sum(dropped), 0), "
            f"coalesce(sum(duckrank_queries), 0) FROM {partials}"
        ).fetchall()[0]
        _warn_dropped(run_dropped, profile.dropped, c.run_key)
        groups = None
        if c.by and rules.score_unranked:
            # The run's groups (a group whose every row was dropped too): each scores the judged
            # queries it did not rank.
            groups = quote_identifier(f"duckrank_groups_{uuid.uuid4().hex}")
            dropped_objects.append(f"TABLE IF EXISTS {groups}")
            con.execute(f"CREATE TEMP TABLE {groups} AS SELECT DISTINCT {c.by_select[:-2]} "
                        f"FROM {partials}")

        if top_k:
            # No list is longer than the run: cut there, it is the whole list, and any k (the
            # metrics still read the k asked for) reaches the heaps below.
            top_k = min(top_k, max(run_rows, 1))
        native_key = (_native_top_k_key(con, run_view, c.run_item, _rank_key(c, rules))
                      if top_k and top_k <= NATIVE_TOP_K_LIMIT else None)
        if top_k and (native_key or run_rows >= TOP_K_RATIO * top_k * max(run_queries, 1)):
            state_rows = min(run_rows, run_queries * top_k * TOP_K_ROW_WEIGHT)
        else:
            top_k, native_key, state_rows = None, None, run_rows
        buckets = _buckets(con, run_view, c, state_rows + profile.rows)
        judged_queries = sum(_check_conflicts(con, qrels_view, c, b) for b in buckets)

        def scored_sql(bucket: _Bucket) -> tuple[str, dict[str, Any]]:
            return _scored_sql(run_view, qrels_view, c, metric_columns, truths, bucket, rules,
                               top_k, native_key, groups)

        # The lists shorter than each precision request's k (scored lists only).
        shorter = [f"duckrank_ranked AND duckrank_length < {int(m.request.k or 0)}"
                   for m in short]
        labels = [m.column for m in metric_columns]
        if per_user:
            # Each range's values go to a table first: the warnings (how many queries were
            # unranked, how many lists short) are known before the first row is returned.
            values = quote_identifier(f"duckrank_values_{uuid.uuid4().hex}")
            dropped_objects.append(f"TABLE IF EXISTS {values}")
            kept = "duckrank_judged" + ("" if rules.score_unranked else " AND duckrank_ranked")
            flags = "".join(f", {test} AS duckrank_short{j}" for j, test in enumerate(shorter))
            for index, bucket in enumerate(buckets):
                sql, params = scored_sql(bucket)
                head = (f"CREATE TEMP TABLE {values} AS" if index == 0
                        else f"INSERT INTO {values}")
                con.execute(f"{head} {sql}\nSELECT {index} AS duckrank_bucket, * EXCLUDE "
                            f"(duckrank_judged, duckrank_length){flags} FROM scored WHERE {kept}",
                            params)
            counts = "".join(f", count(*) FILTER (WHERE duckrank_short{j}) AS duckrank_short{j}"
                             for j in range(len(short)))
            con.execute(f"INSERT INTO {partials} BY NAME SELECT {c.by_select}count(*) FILTER "
                        f"(WHERE duckrank_ranked) AS scored{counts} FROM {values}{c.group_by}")
            _warn_scoring(con, partials, c, judged_queries, short, rules)

            query_label = quote_identifier(c.query_name)
            metric_select = ", ".join(
                f"duckrank_m{i} AS {quote_identifier(m.column)}"
                for i, m in enumerate(metric_columns)
            )
            order = ", ".join([str(len(c.by) + 1), *(str(i + 1) for i in range(len(c.by)))])
            flag = ["duckrank_ranked"] if ranked else []

            def queries() -> Iterator[tuple[str, dict[str, Any]]]:
                for index in range(len(buckets)):
                    yield (f"SELECT {c.by_select}duckrank_query AS {query_label}, "
                           f"{', '.join([metric_select, *flag])} FROM {values} "
                           f"WHERE duckrank_bucket = {index} ORDER BY {order}", {})

            yield Result([*c.by, c.query_name, *labels, *flag], con, queries)
            return

        sums = "".join(
            f", fsum(duckrank_m{i}) AS duckrank_s{i}, count(duckrank_m{i}) AS duckrank_n{i}"
            for i in range(len(metric_columns))
        )
        sums += "".join(f", count(*) FILTER (WHERE duckrank_judged AND {test}) AS "
                        f"duckrank_short{j}" for j, test in enumerate(shorter))
        for bucket in buckets:
            sql, params = scored_sql(bucket)
            con.execute(
                f"INSERT INTO {partials} BY NAME {sql}\n"
                f"SELECT {c.by_select}count(*) FILTER (WHERE duckrank_judged AND duckrank_ranked) "
                f"AS scored, count(*) FILTER (WHERE NOT duckrank_judged) AS unjudged{sums} "
                f"FROM scored{c.group_by}", params,
            )
        _warn_scoring(con, partials, c, judged_queries, short, rules)
        scored, unjudged, unranked, dropped = (quote_identifier(n) for n in COUNT_COLUMNS)
        means = "".join(
            f", fsum(duckrank_s{i}) / nullif(sum(duckrank_n{i}), 0) AS {quote_identifier(m)}"
            for i, m in enumerate(labels)
        )
        summary = (
            f"SELECT {c.by_select}sum(scored)::BIGINT AS {scored}, "
            f"sum(unjudged)::BIGINT AS {unjudged}, "
            f"({_UNRANKED})::BIGINT AS {unranked}, "
            f"(sum(dropped) + $qrels_dropped)::BIGINT AS {dropped}{means} FROM {partials}"
            f"{c.group_by}"
        )
        if beyond_table is not None:
            same_group = " AND ".join(f"s.{name} IS NOT DISTINCT FROM b.{name}"
                                      for name in map(quote_identifier, c.by)) or "true"
            appended = "".join(f", b.duckrank_b{n} AS {quote_identifier(r.text)}"
                               for n, r in enumerate(beyond))
            summary = (f"SELECT s.*{appended} FROM ({summary}) s "
                       f"LEFT JOIN {beyond_table} b ON {same_group}")
        summary += " ORDER BY ALL" if c.by else ""
        params = {"judged": judged_queries, "qrels_dropped": profile.dropped}
        columns = [*c.by, *COUNT_COLUMNS, *labels, *(r.text for r in beyond)]
        yield Result(columns, con, lambda: iter([(summary, params)]))
    finally:
        for name in dropped_objects:
            con.execute(f"DROP {name}")
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
    item_column: str | None = None,
    score_column: str | None = None,
    rank_column: str | None = None,
    grade_column: str | None = None,
    subtopic_column: str | None = None,
    run_columns: Mapping[str, str] | None = None,
    qrels_columns: Mapping[str, str] | None = None,
    ids: str = "typed",
    glob: bool = False,
    convention: str = "duckrank",
    other: Any = None,
    train: Any = None,
    catalog: Any = None,
    catalog_size: int | None = None,
    embeddings: Any = None,
    categories: Any = None,
    propensities: Any = None,
    item_groups: Any = None,
    connection: duckdb.DuckDBPyConnection | None = None,
) -> pandas.DataFrame | polars.DataFrame:
    """Score ``run`` against ``qrels`` and return a pandas DataFrame with one column per metric
    (a polars DataFrame when ``run`` or ``qrels`` is one: polars users need no pandas).

    ``run``: a table with one row per (query, item, score); ``qrels``: one row per (query, item,
    grade). Either may be a pandas or polars DataFrame, a pyarrow Table / Dataset / RecordBatch
    reader (DuckDB reads them in place; a reader is read into memory first), a DuckDB relation of
    ``connection``, or the path of a Parquet, CSV or TREC file. ``metrics``: requests such as
    ``"ndcg@10"``, ``"map@100"`` or ``"ndcg(gain=linear)@10"`` (see ``parse_metric``). ``by``:
    column(s) of the run to report one row per group of (a system, a segment). ``per_user``: one
    row per query instead of means.

    Columns default to ``query`` (or ``user``), ``item``, ``score`` and ``grade``;
    ``query_column=`` ... ``grade_column=`` name them for both files, ``run_columns=`` /
    ``qrels_columns=`` (``{'query': 'user_id'}``; roles ``RUN_ROLES`` / ``QRELS_ROLES``) for one
    file. ``rank_column=`` ranks the run by an ascending rank (1 = best) instead of a score. A
    qrels table without a grade column counts every row as relevant. ``ids='varchar'`` compares
    query and item ids as text when the two files type them differently. A path names one file
    (``*``, ``?`` and ``[`` are part of its name); ``glob=True`` reads every file matching it.

    Subtopic (diversity) qrels, one row per (query, subtopic, item, grade), feed the intent-aware
    measures (``alpha_nDCG@20``, ``ERR_IA@20``, ``alpha_ndcg@20``, ...; docs/diversity.md): the
    qrels' column ``subtopic``, or the one ``subtopic_column=`` names (``'iteration'`` for a TREC
    diversity qrels file, whose subtopic field a standard file fills with 0). The other metrics
    read each item's largest grade over its subtopics.

    Graded qrels (a grade other than 0 or 1) are passed as a MAP item -> grade to the metrics
    that take one, and the column says so (``ndcg@10`` -> ``ndcg(gain=exponential)@10``);
    ``ndcg(relevance=binary)@10`` or ``ndcg(min_grade=2)@10`` ask for the binary reading, and
    ``ndcg(gains={1:1,2:3})@10`` (ir_measures' ``nDCG(gains=...)``) maps the grades to gains
    first. Binary metrics get the items with grade > 0 (or >= ``min_grade``).

    ``convention="trec_eval"`` reads what the metrics leave open as trec_eval 10.0 does
    (``CONVENTIONS``; docs/trec_eval.md): precision divides by k, ndcg gains are the grades, a
    judged query whose value is undefined (no relevant item) scores 0 and counts in the mean,
    relevant means grade >= 1, ndcg without a cut-off ranks every relevant item in its ideal
    list, and interpolated precision rounds its recall cut-off. ``convention="pytrec_eval"`` is
    trec_eval 9.0.8's reading as pytrec-eval-terrier runs it (and ir_measures through it): the
    same, but scores tie when equal as single-precision floats and the recall cut-off is
    truncated.

    Beyond-accuracy requests (``catalog_coverage@10``, ``arp@10``, ``rbo(p=0.8)@10``,
    ``ips_recall@10``, ...; docs/beyond-accuracy.md) come after the accuracy columns, named as
    written, computed by ``duckrank.engines.beyond_accuracy.beyond_values`` (the numbers of
    ``duckrank.reports.beyond_accuracy.beyond_accuracy``) from the run's lists as ranked here
    (rows with a NULL query, item or score left out) over every user of the run, judged or not:
    catalogue metrics one value, per-user ones averaged over the users (undefined values
    skipped), list similarities over the users both runs have; ``serendipity`` and ``ips_*``
    read the qrels' relevant items (grade > 0; grade >= 1 under trec_eval's convention). With
    ``by``, one value per group, from the group's rows alone; with ``per_user=True`` they are an
    error (a per-user value is the metric's SQL table macro). What they read: ``other``, a
    second system's run with the run's columns (``overlap_at``, ``jaccard_at``, ``rbo``), and
    the side tables ``train`` (user, item), ``catalog`` (item) or ``catalog_size``,
    ``embeddings`` (item, embedding), ``categories`` (item, category), ``propensities`` (item,
    propensity; else estimated from ``train``), ``item_groups`` (item, group; ``reo``, ``rsp``,
    ``group_expected_exposure``), whose user and item columns are named as the run's; each a
    Parquet or CSV path, a relation of ``connection``, or a data frame. A request whose input
    is not given is an error naming the argument. ``catalog_size`` also reaches the per-list
    metrics that count the catalogue (``mcc``, ``accuracy``) where the request gives none.
    """
    from duckrank.engines.duckdb import connect, register

    if isinstance(metrics, str):
        metrics = [metrics]
    if isinstance(by, str):
        by = [by]
    names = column_names(
        {"query": query_column, "item": item_column, "score": score_column,
         "rank": rank_column, "grade": grade_column, "subtopic": subtopic_column},
        run_columns, qrels_columns,
    )
    con = (register(connection) if connection is not None
           else connect(functions=needed_functions(metrics, convention)))
    try:
        side = SideInputs(other, train, catalog, catalog_size, embeddings, categories,
                          propensities, item_groups)
        with evaluation(con, run, qrels, metrics, by or (), per_user, names, ids,
                        glob=glob, convention=convention, side=side) as result:
            return result.df(polars=is_polars(run) or is_polars(qrels))
    finally:
        if connection is None:
            con.close()
