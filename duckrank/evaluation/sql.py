"""The evaluation's SQL: the query that ranks each query's rows (``_ranked_sql``: the whole list,
or its top K), builds its truth from the qrels and calls each requested metric's SQL function
(``_scored_sql``), one range of query ids at a time.

Per query, the run becomes a ranked list with ``to_ordered_list(item, score, '-reverse')`` (every
tied item kept; ties in score broken by item, descending, which is trec_eval's order) and the
qrels become the truth, then each requested metric is the SQL function of the same name. Option
values reach SQL as query parameters, names as quoted identifiers checked against the registry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from duckrank.evaluation.inputs import _Columns
from duckrank.evaluation.metric_requests import Convention, float_score_sql
from duckrank.evaluation.planning import _Bucket, _Metric, _Truth
from duckrank.matching.sql import INTEGER_TYPES
from duckrank.render.quoting import quote_identifier


def _ranked_sql(item: str, item_type: str, key: str, top_k: int | None,
                native_key: str | None) -> str:
    """The aggregate that ranks a query's rows: ``to_ordered_list``, or its first ``top_k``
    items: duckrank_top_k's where ``native_key`` names the cast its keys need, else ``max`` over
    structs. Each orders by key, descending, then by the item's text form, descending (byte
    order, trec_eval's), and keeps tied and repeated rows, so the top K is the whole list cut
    at K (tests/test_evaluate.py checks it row by row). Ties go by the text form whatever the
    id's type: a file read with integer ids (Parquet) and the same file read with text ids (CSV)
    give one order (between integers, 9 comes before 10: '9' > '10'). Integer ids rank natively
    with ``duckrank_top_k(item, key, k, 'text')``, which compares two ids' decimal texts only
    when their keys tie (without writing them out); the other ids of NATIVE_TOP_K_ITEMS (floats)
    rank as their text, cast back."""
    if item_type == "VARCHAR":
        text, order = item, key
    else:
        text = f"CAST({item} AS VARCHAR)"
        order = f"{{'k': {key}, 't': {text}}}"
    if top_k is None:
        return f"to_ordered_list({item}, {order}, '-reverse')"
    if native_key is not None:
        if item_type in INTEGER_TYPES:
            return f"duckrank_top_k({item}, CAST({key} AS {native_key}), {int(top_k)}, 'text')"
        ranked = f"duckrank_top_k({text}, CAST({key} AS {native_key}), {int(top_k)})"
        # The text of an id of NATIVE_TOP_K_ITEMS casts back to that id.
        return (ranked if item_type == "VARCHAR"
                else f"list_transform({ranked}, lambda e: CAST(e AS {item_type}))")
    fields = f"'k': {key}, 'v': {item}" if item_type == "VARCHAR" else (
        f"'k': {key}, 't': {text}, 'v': {item}")
    return f"list_transform(max({{{fields}}}, {int(top_k)}), lambda e: e.v)"


def _rank_key(c: _Columns, convention: Convention) -> str:
    """What the run's rows are ranked by, descending: the score (a C float under trec_eval's
    convention) or the negated rank."""
    if convention.float_scores and not c.run_key.startswith("-"):
        return float_score_sql(c.run_key)
    return c.run_key



def _text_valued(metric: _Metric) -> bool:
    """A metric whose value is text (trec_eval's relstring), not a number."""
    return any(m.result_type == "VARCHAR" for m in metric.request.overloads)


# The judged CTE's column of each item's subtopic judgments (subtopic qrels).
_JUDGMENTS = "duckrank_judgments"


def _judgments_sql(qrels_view: str, c: _Columns, where: str, distinct: bool,
                   subtopics: bool) -> str:
    """The qrels rows the judged CTE groups by query (q, i, g): as they are (``distinct``: each
    once), or for subtopic qrels one per item with its largest grade over its subtopics (relevant
    to the query when relevant to one of them: docs/diversity.md says how the peers differ) and,
    with ``subtopics``, its judgments as STRUCT(subtopic, item, grade) in ``_JUDGMENTS``."""
    kept = f"{c.qrels_query} IS NOT NULL AND {c.qrels_item} IS NOT NULL AND {where}"
    if c.subtopic is None:
        return (f"SELECT {'DISTINCT ' if distinct else ''}{c.qrels_query} AS q, "
                f"{c.qrels_item} AS i, {c.grade} AS g FROM {qrels_view} WHERE {kept}")
    judgments = (f", list({{'subtopic': s, 'item': i, 'grade': g}}) AS {_JUDGMENTS}"
                 if subtopics else "")
    # A judgment repeated (the same grade twice: _check_conflicts refused two) counts once.
    return (f"SELECT q, i, max(g) AS g{judgments} FROM (SELECT DISTINCT {c.qrels_query} AS q, "
            f"{c.subtopic} AS s, {c.qrels_item} AS i, {c.grade} AS g FROM {qrels_view} "
            f"WHERE {kept}) GROUP BY q, i")


def _scored_sql(run_view: str, qrels_view: str, c: _Columns, metrics: Sequence[_Metric],  # noqa: C901
                truths: Sequence[_Truth], bucket: _Bucket, convention: Convention,
                top_k: int | None, native_key: str | None,
                groups: str | None) -> tuple[str, dict[str, Any]]:
    """The CTEs ranked, judged and scored of one range of query ids, and their parameters
    (``top_k``: rank only each query's top K, with duckrank_top_k where ``native_key`` is set;
    see ``_ranked_sql``). ``scored`` has a row per ranked query and, when the convention scores
    unranked queries, per judged query the run did not rank (per ``by`` group: ``groups``, the
    table of the run's groups), with ``duckrank_judged``, ``duckrank_ranked``, the list and the
    metrics ``duckrank_m0``, ``duckrank_m1``, ... (NULL for unjudged queries)."""
    params: dict[str, Any] = dict(bucket.params)

    def parameter(value: Any) -> str:
        name = f"p{len(params)}"
        params[name] = value
        return f"${name}"

    judged = []
    for truth in truths:
        # A request's gains map grades to gains (each pair two parameters); others stay.
        gain_sql = ("CASE g " + "".join(f"WHEN {parameter(grade)} THEN {parameter(gain)} "
                                        for grade, gain in truth.grade_gains) + "ELSE g END"
                    if truth.grade_gains else "g")
        if truth.subtopics:
            sql = f"flatten(list({_JUDGMENTS}))"
        elif truth.gains:
            # The gain functions refuse a negative grade (TREC's -2 for spam): gain 0, as in
            # trec_eval's ndcg.
            sql = f"map_from_entries(list({{'key': i, 'value': greatest({gain_sql}, 0)::DOUBLE}}))"
        elif truth.graded:
            # As given: trec_eval's measures read a negative grade as in the pool but unjudged.
            sql = f"map_from_entries(list({{'key': i, 'value': ({gain_sql})::DOUBLE}}))"
        elif truth.all_relevant:
            sql = "list(i)"
        else:
            relevant = (convention.relevant if truth.min_grade is None
                        else f"g >= {parameter(truth.min_grade)}")
            sql = f"coalesce(list(i) FILTER (WHERE {relevant}), list(i)[1:0])"
        judged.append(f",\n         {sql} AS {truth.name}")
    if convention.score_unranked:
        judged.append(",\n         list(i) AS duckrank_items")
    graded = {truth.name: truth.graded for truth in truths}
    # A MAP takes each item once; a LIST truth is read as a set, so a repeated judgment (the
    # same grade twice: _check_conflicts refused two grades) needs no hash of every qrels row.
    judgments = _judgments_sql(qrels_view, c, bucket.where(c.qrels_query, c.query_type),
                               any(graded.values()), any(t.subtopics for t in truths))
    calls = []
    for index, metric in enumerate(metrics):
        request = metric.request
        named = ([("k", request.k)] if request.k is not None else []) + list(request.options)
        options = [f"{quote_identifier(name)} := {parameter(value)}" for name, value in named]

        def call(rec: str, metric: _Metric = metric, options: list[str] = options) -> str:
            arguments = [rec, metric.truth, *options]
            if metric.request.k is None and metric.request.name in convention.full_ideal:
                size = "cardinality" if graded[metric.truth] else "len"
                arguments.append(f"k := greatest(len({rec}), {size}({metric.truth}))")
            sql = f"{quote_identifier(metric.request.name)}({', '.join(arguments)})"
            if not convention.undefined_as_zero or _text_valued(metric):
                return sql  # relstring: text, which has no 0 (and is never undefined)
            return f"coalesce({sql}, 0)"

        value = call("duckrank_rec")
        if convention.score_unranked:
            # An unranked query is an empty list: its value, or 0 where the empty list leaves
            # the metric undefined but a list could not (precision's 0 / 0); a metric that the
            # query's judged items, ranked, leave undefined (no relevant item) stays NULL, as
            # it is for a query the run ranks.
            unranked = call("duckrank_items[1:0]")
            if not _text_valued(metric):
                unranked = (f"coalesce({unranked}, "
                            f"CASE WHEN {call('duckrank_items')} IS NOT NULL THEN 0 END)")
            value = f"CASE WHEN duckrank_ranked THEN {value} ELSE {unranked} END"
        calls.append(f"CASE WHEN duckrank_judged THEN {value} END AS duckrank_m{index}")

    by = [quote_identifier(name) for name in c.by]
    if convention.score_unranked:
        # Every judged query of the range, in every group of the run.
        judged_side = (f"(SELECT * FROM {groups} CROSS JOIN judged)" if c.by else "judged")
        join = "FULL JOIN"
        by_select = "".join(f"coalesce(r.{name}, j.{name}) AS {name}, " for name in by)
    else:
        judged_side, join = "judged", "LEFT JOIN"
        by_select = "".join(f"r.{name}, " for name in by)
    same_group = "".join(f" AND r.{name} IS NOT DISTINCT FROM j.{name}" for name in by
                         if convention.score_unranked)
    ranked = _ranked_sql(c.run_item, c.item_type, _rank_key(c, convention), top_k, native_key)
    sql = f"""
WITH ranked AS (
  SELECT {c.by_select}{c.run_query} AS duckrank_query, {ranked} AS duckrank_rec
  FROM {run_view}
  WHERE {c.run_query} IS NOT NULL AND {c.run_item} IS NOT NULL AND {c.run_key} IS NOT NULL
    AND {bucket.where(c.run_query, c.query_type)}
  GROUP BY ALL
),
judged AS (
  SELECT q AS duckrank_query, true AS duckrank_in_qrels{''.join(judged)}
  FROM ({judgments})
  GROUP BY q
),
scored AS (
  SELECT {by_select}coalesce(r.duckrank_query, j.duckrank_query) AS duckrank_query,
         j.duckrank_in_qrels IS NOT NULL AS duckrank_judged,
         r.duckrank_query IS NOT NULL AS duckrank_ranked, len(duckrank_rec) AS duckrank_length,
         {', '.join(calls)}
  FROM ranked r {join} {judged_side} j
    ON r.duckrank_query = j.duckrank_query{same_group}
)"""
    return sql, params
