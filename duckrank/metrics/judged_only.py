"""trec_eval's -J (ir_measures' ``judged_only=True``) for the binary measures: each record's
formula over the ranking with its unjudged items removed first, derived from the record (never
written twice): ``precision_at_judged_only(rec, truth, depth := 10)`` is ``precision_at`` over
the judged items of rec, cut at 10.

"Judged" is trec_eval's: an item of truth with a grade >= 0 (a negative grade is "in the pool
but unjudged", an item not in truth unjudged); a repeat in rec is dropped as it is everywhere.
The measure's cut-off is the ``depth`` option, applied after the removal; NULL: the whole judged
list. ``k`` cuts rec before the removal, as trec_eval's -M does (omit it for ir_measures').
Relevant means grade >= ``min_grade`` (NULL: grade > 0), as in the MAP-truth forms of the binary
measures. The relevant items of truth (n) are all of them, judged by definition.

Source: trec_eval's -J ("Calculate all values only over the judged (either relevant or
nonrelevant) documents. All unjudged documents are removed from the retrieved set before any
calculations", usnistgov/trec_eval, trec_eval.c), checked against pytrec-eval-terrier's
``judged_docs_only_flag`` through ir_measures' ``judged_only=True``.
"""

from __future__ import annotations

import math
from dataclasses import replace

from duckrank.lazy import LazyModule
from duckrank.matching.arrays import Grades, Hits, Judged, relevant_grades, row_cumsum
from duckrank.metrics import binary, graded, trec_eval
from duckrank.metrics.graded import GRADED_TRUTH
from duckrank.metrics.record import Bounds, Metric, Option, check_options

np = LazyModule("numpy")

DEPTH = Option("depth", None, "the measure's cut-off over the judged items (ir_measures' @k); "
               "NULL: all of them", bounds=Bounds(1, nullable=True, whole=True))

# The binary measures ir_measures lets take judged_only (through pytrec_eval).
BINARY_BASES = ("precision_at", "recall_at", "average_precision", "mrr", "hitrate",
                "r_precision", "iprec_at_recall", "set_precision", "set_relative_precision",
                "set_f", "set_map")
BASES = (*BINARY_BASES, "ndcg")  # ndcg: the graded record


def _judged_only_sql(base: Metric) -> str:
    """The base's SQL over the judged kind's ranks of the whole list: an item's rank among the
    judged ones is its place in {judged} (the ascending ranks of the items of grade >= 0), and
    the relevant ones ({pos}) are judged."""
    # Struct fields are case-insensitive in DuckDB: K and k go by other names.
    value = base.sql.format(pos="jm.pos", K="jm.returned", k="jm.cut", n="jm.n")
    return (
        "list_transform([struct_pack(judged := {judged}, cut := coalesce(try_cast(depth AS "
        "BIGINT), len({judged})))], lambda jo: list_transform([struct_pack(pos := list_filter("
        "list_transform({pos}, lambda q: list_position(jo.judged, q)), lambda r: r <= jo.cut), "
        "returned := least(jo.cut, len(jo.judged)), cut := jo.cut, n := {n})], "
        f"lambda jm: {value})[1])[1]"
    )


def _judged_hits(j: Judged, depth: float | None, min_grade: float | None) -> Hits:
    """The ``Hits`` of each row's judged items (grade >= 0, in rank order) cut at depth."""
    with np.errstate(invalid="ignore"):
        judged = j.top >= 0
    counts = judged.astype(np.int64)
    rank = row_cumsum(counts, j.top_offsets)  # the rank among the row's judged items
    length = j.row_sum(counts.astype(np.float64)).astype(np.int64)
    cut = length if depth is None else np.full(len(length), int(depth))
    hit = judged & relevant_grades(j.top, min_grade) & (rank <= cut[j.rows])
    offsets = np.concatenate(([0], np.cumsum(np.bincount(j.rows[hit], minlength=len(length)))))
    return Hits(positions=rank[hit], offsets=offsets, K=np.minimum(cut, length), k=cut,
                n=j.n, valid=j.valid)


def judged_only(base: Metric) -> Metric:
    """``base`` (a binary record) over the judged items of rec: ``<name>_judged_only``."""
    kernel = base.kernel

    def on_judged_items(j: Judged, *, depth: float | None = None,
                        min_grade: float | None = None, **options) -> np.ndarray:
        name = f"{base.name}_judged_only"
        given = {"depth": None if depth is None or math.isnan(depth) else depth,
                 "min_grade": None if min_grade is None or math.isnan(min_grade) else min_grade}
        check_options(name, (DEPTH, binary.MIN_GRADE), given)
        depth, min_grade = given["depth"], given["min_grade"]
        return kernel(_judged_hits(j, depth, min_grade), **options)

    return replace(
        base, name=f"{base.name}_judged_only", aliases=(),
        summary=f"{base.summary.rstrip('.')}, over the judged items of rec only (trec_eval's "
        "-J, ir_measures' judged_only=True).",
        formula=f"{base.formula}; over rec without its unjudged items (not in truth, or of "
        "negative grade), cut at depth (K = min(depth, judged items), k = depth)",
        sql=_judged_only_sql(base), kernel=on_judged_items, inputs="judged",
        truth_type=GRADED_TRUTH, options=(*base.options, DEPTH, binary.MIN_GRADE), choice=None,
        peers=f"ir_measures' judged_only=True of {base.name}'s measure (pytrec_eval's "
        "judged_docs_only_flag; trec_eval -J).",
    )


# --- nDCG over graded truth -------------------------------------------------------------------

def _judged_only_graded_sql(base: Metric) -> str:
    """The graded base's SQL over the judged items: the positive grades among them (from the
    judged kind's {gains}, the grades of the top K, 0 outside truth) at their ranks among the
    judged items, and the ideal list of every positive grade of truth, cut at depth."""
    value = base.sql.format(pos="jm.pos", grades="jm.grades", ideal="jm.ideal", n="jm.n",
                            K="jm.returned", k="jm.cut")
    positive = "list_filter(jo.judged, lambda q: {gains}[q] > 0)"
    return (
        "list_transform([struct_pack(judged := {judged}, cut := coalesce(try_cast(depth AS "
        "BIGINT), len({judged})))], lambda jo: list_transform([struct_pack(pos := list_filter("
        f"list_transform({positive}, lambda q: list_position(jo.judged, q)), lambda r: "
        f"r <= jo.cut), grades := list_transform(list_filter({positive}, lambda q: "
        "list_position(jo.judged, q) <= jo.cut), lambda q: {gains}[q]), ideal := "
        "list_slice({ideal}, 1, CASE WHEN depth IS NULL THEN len({ideal}) ELSE jo.cut END), "
        "n := len({ideal}), returned := least(jo.cut, len(jo.judged)), cut := jo.cut)], "
        f"lambda jm: {value})[1])[1]"
    )


def _judged_grades(j: Judged, depth: float | None) -> Grades:
    """The ``Grades`` of each row's judged items (grade >= 0, in rank order) cut at depth, with
    every positive grade of truth in the ideal list when depth is None (trec_eval's ndcg)."""
    with np.errstate(invalid="ignore"):
        judged = j.top >= 0
    counts = judged.astype(np.int64)
    rank = row_cumsum(counts, j.top_offsets)
    length = j.row_sum(counts.astype(np.float64)).astype(np.int64)
    cut = length if depth is None else np.full(len(length), int(depth))
    kept = judged & (rank <= cut[j.rows])
    top_offsets = np.concatenate(([0], np.cumsum(np.bincount(j.rows[kept],
                                                             minlength=len(length)))))
    positive = np.diff(j.ideal_offsets)
    ideal_cut = positive if depth is None else np.minimum(positive, cut)
    ideal_rank = Grades.ranks(j.ideal_offsets)
    ideal_rows = np.repeat(np.arange(len(length)), positive)
    in_ideal = ideal_rank <= ideal_cut[ideal_rows]
    return Grades(top=j.top[kept], top_offsets=top_offsets, ideal=j.ideal[in_ideal],
                  ideal_offsets=np.concatenate(([0], np.cumsum(ideal_cut))),
                  K=np.minimum(cut, length), k=cut, n=positive, valid=j.valid)


def judged_only_graded(base: Metric) -> Metric:
    """The graded ndcg over the judged items of rec: ``ndcg_judged_only``."""
    kernel = base.kernel
    name = f"{base.name}_judged_only"

    def on_judged_items(j: Judged, *, depth: float | None = None, **options) -> np.ndarray:
        given = {"depth": None if depth is None or math.isnan(depth) else depth}
        check_options(name, (DEPTH,), given)
        return kernel(_judged_grades(j, given["depth"]), **options)

    return replace(
        base, name=name, aliases=(),
        summary="nDCG over graded truth, over the judged items of rec only (trec_eval's -J, "
        "ir_measures' nDCG(judged_only=True)).",
        formula=f"{base.formula}; over rec without its unjudged items (not in truth, or of "
        "negative grade), cut at depth; without depth the ideal list holds every positive grade "
        "of truth (trec_eval's ndcg)",
        sql=_judged_only_graded_sql(base), kernel=on_judged_items, inputs="judged",
        options=(*base.options, DEPTH), choice=None,
        peers="ir_measures' nDCG(judged_only=True) (pytrec_eval's judged_docs_only_flag; "
        "trec_eval -J ndcg and ndcg_cut) with gain := 'linear'.",
    )


_RECORDS = {m.name: m for m in (*binary.METRICS, *trec_eval.BINARY)}
_NDCG = next(m for m in graded.METRICS if m.name == "ndcg" and m.truth_type)
METRICS = (*(judged_only(_RECORDS[name]) for name in BINARY_BASES), judged_only_graded(_NDCG))
