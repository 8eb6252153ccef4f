"""trec_eval's measures that duckrank lacked, one record each, as trec_eval computes them (its
measure descriptions and code, usnistgov/trec_eval m_*.c, and the papers each cites): trec_eval
9's (the one pytrec-eval-terrier 0.5 bundles) and trec_eval 10's (yaap, rbp, rbp_resid, unj;
iprec_at_recall's and eleven_point_ap's ``rounding := 'nearest'``; rbp on graded qrels is
``duckrank.metrics.peers``' graded_rbp).

Two kinds of record:

* binary measures over the hit positions (``inputs="hits"``, LIST truth): num_ret, num_rel,
  num_rel_ret, r_precision, iprec_at_recall, eleven_point_ap, set_*, relative_precision,
  utility, r_precision_mult, bing, rbp, yaap. Like every binary metric they also take a MAP truth
  (``duckrank.metrics.binary.graded_truth_overload``): relevant means grade >= ``min_grade``
  (NULL: grade > 0).
* measures that need the judged non-relevant and unjudged documents, or the grades
  (``inputs="judged"``, MAP truth only): bpref, infap, num_nonrel_judged_ret, unjudged,
  rbp_resid, relstring, ndcg_rel, rndcg, normalized_gain (trec_eval's G). Their matched row
  (``duckrank.metrics.record.Metric``, ``duckrank.render.macros``) holds the ranks of the top
  K's relevant, judged non-relevant and negative-grade items and the grades of the top K; a
  negative grade is trec_eval's "in the pool but unjudged", an item not in truth "not in the
  pool" (duckrank.matching.sql, judged truth).

Conventions: rec is the ranking in trec_eval's order (score descending, then docno descending),
K = min(k, len(rec)) is trec_eval's num_ret (``-M`` is k). Unlike duckrank's own metrics these
give trec_eval's number where trec_eval divides by a count that is 0 (no relevant item, an empty
rec): 0, as trec_eval prints for such a query (so avg() averages them in, as trec_eval does).
NULL only for a NULL rec, truth or k. gm_map and gm_bpref are not functions of one row: they are
``trec_geomean(average_precision(rec, truth))`` and ``trec_geomean(bpref(rec, truth))`` (the
aggregate macro of ``duckrank.render.macros``).
"""

from __future__ import annotations

from collections.abc import Callable

from duckrank.lazy import LazyModule
from duckrank.matching.arrays import Grades, Hits, Judged, row_cumsum
from duckrank.metrics.binary import MIN_GRADE
from duckrank.metrics.graded import GRADED_TRUTH, chosen_sql
from duckrank.metrics.record import Bounds, Metric, Option, check_options

np = LazyModule("numpy")
pa = LazyModule("pyarrow")
pc = LazyModule("pyarrow.compute")

SOURCE = (
    "trec_eval (usnistgov/trec_eval, m_{}.c: the measure's description and code), checked "
    "against the trec_eval 9 that pytrec-eval-terrier 0.5 bundles"
)

RECALL = Option("recall", 0.0, "the recall level, in [0, 1]", bounds=Bounds(0, 1))
MULTIPLIER = Option("multiplier", 1.0, "the multiple of R (num_rel)", bounds=Bounds(0))
BETA = Option("beta", 1.0, "recall's weight against precision", bounds=Bounds(0))
PERSISTENCE = Option(
    "persistence", 0.9, "the chance p that the user goes on to the next rank (trec_eval's "
    "rbp.p; 0.9 by default as in trec_eval)", bounds=Bounds(0, 1, open_low=True, open_high=True),
)
UTILITY_OPTIONS = (
    Option("a", 1.0, "worth of a relevant retrieved item", bounds=Bounds()),
    Option("b", -1.0, "worth of a non-relevant (or unjudged) retrieved item", bounds=Bounds()),
    Option("c", 0.0, "worth of a relevant item not retrieved", bounds=Bounds()),
    Option("d", 0.0, "worth of a non-relevant item not retrieved (needs num_docs)",
           bounds=Bounds()),
    Option("num_docs", 0, "the number of documents in the collection (trec_eval's -N)",
           bounds=Bounds(0)),
)

_ZERO = "0 when truth has no relevant item or rec is empty (trec_eval's value); NULL only for a " \
    "NULL rec, truth or k."


# --- SQL helpers ---------------------------------------------------------------------------------
# Record ``sql`` strings pass through str.format: literal braces are doubled, placeholders are
# the matched row's fields (``duckrank.metrics.record.Metric``).

def _ratio(numerator: str, denominator: str) -> str:
    """numerator / denominator, 0 when the denominator is 0 (trec_eval's value)."""
    return f"(CASE WHEN ({denominator}) = 0 THEN 0.0 ELSE ({numerator}) / ({denominator}) END)"


def _hits_up_to(positions: str, rank: str) -> str:
    return f"len(list_filter({positions}, lambda q: q <= {rank}))"


def _before(positions: str, others: str) -> str:
    """For each of ``positions`` (ascending), how many of ``others`` (distinct from them) rank
    above it: one sort of both, positions tagged odd; an item's index in the merged list less
    its rank among ``positions`` is the count of others above it."""
    merged = (
        f"list_sort(list_concat(list_transform({positions}, lambda q: 2 * q + 1), "
        f"list_transform({others}, lambda q: 2 * q)))"
    )
    return (
        f"list_transform(list_filter(list_transform({merged}, lambda x, m: "
        "CASE WHEN x % 2 = 1 THEN m END), lambda m: m IS NOT NULL), lambda m, j: m - j)"
    )


def _prefix_sums(terms: str) -> str:
    """The running sums of a DOUBLE[] (quadratic: used on lists of relevant items only). The
    list is bound once: an expression read inside a lambda is evaluated again per element."""
    return (
        f"list_transform([{terms}], lambda ts: list_transform(ts, "
        "lambda t, i: list_sum(list_slice(ts, 1, i))))[1]"
    )


# How trec_eval turns a recall level x into a count of relevant items (m_iprec_at_recall.c,
# m_11pt_avg.c): trec_eval 10 rounds x * num_rel to the nearest integer, halves away from zero
# (C's lround); trec_eval 9 (and pytrec_eval, which bundles it) took trunc(x * num_rel + 0.9).
_RECALL_CUTS = {
    "nearest": "round({level} * {{n}})::BIGINT",
    "trunc_plus_0.9": "trunc({level} * {{n}} + 0.9)::BIGINT",
}
ROUNDING = Option(
    "rounding", "trunc_plus_0.9", "how recall * num_rel becomes the number of relevant items "
    "reached: 'trunc_plus_0.9' (trec_eval 9 and pytrec_eval: trunc(recall * num_rel + 0.9); the "
    "default, these functions' value before trec_eval 10) or 'nearest' (trec_eval 10, which "
    "duckrank trec_eval reproduces: rounded, halves away from zero)", choices=tuple(_RECALL_CUTS),
)


# The precision at each hit, j / p_j (p_j the rank of the j-th hit), bound once: 11pt_avg's
# levels share one sort of the hits.
_PRECISIONS = "list_transform(list_sort({pos}), lambda q, j: j / q)"


def _iprec_over(precisions: str, cut: str, hits: str) -> str:
    """iprec_at_recall with the cut c (a ``_RECALL_CUTS`` form over the level, as SQL) from the
    precisions at the ``hits`` hits (``_PRECISIONS``, read once): the max of those of the hits
    j >= max(c, 1), trec_eval's interpolated precision (precision only falls between hits);
    c = 0 reads every hit, c beyond the hits is 0 (and the precisions are not computed)."""
    return (
        f"CASE WHEN {cut} > {hits} THEN 0.0 ELSE coalesce(list_max(list_slice({precisions}, "
        f"greatest({cut}, 1), {hits})), 0.0) END"
    )


def _iprec_sql(cut: str) -> str:
    """``_iprec_over`` the match's hits ``{pos}``."""
    return _iprec_over(_PRECISIONS, cut, "len({pos})")


def _recall_cut_sql(level: str, formula: Callable[[str], str]) -> dict:
    """A record's ``sql`` and ``choice`` (``chosen_sql``) for the rounding option: the cut's
    form chosen once, ``formula`` over it."""
    forms = {choice: form.format(level=level) for choice, form in _RECALL_CUTS.items()}
    return chosen_sql(ROUNDING, forms, formula)


# --- binary measures over hit positions ----------------------------------------------------------

def _safe_ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    return np.where(denominator == 0, 0.0, numerator / np.where(denominator == 0, 1, denominator))


def _defined(h: Hits | Judged, values: np.ndarray) -> np.ndarray:
    return np.where(h.valid, values, np.nan)


def _hits_within(h: Hits, rank: np.ndarray) -> np.ndarray:
    return h.row_sum((h.positions <= np.repeat(rank, h.counts)).astype(np.float64))


def _num_ret(h: Hits) -> np.ndarray:
    return _defined(h, h.K.astype(np.float64))


def _num_rel(h: Hits) -> np.ndarray:
    return _defined(h, h.n.astype(np.float64))


def _num_rel_ret(h: Hits) -> np.ndarray:
    return _defined(h, h.counts.astype(np.float64))


def _r_precision(h: Hits) -> np.ndarray:
    return _defined(h, _safe_ratio(_hits_within(h, h.n), h.n))


def _interpolated(h: Hits, first: np.ndarray) -> np.ndarray:
    """Per row: max over hits of rank j >= first of j / p_j (0 when there is none)."""
    ratio = h.rank_of_hit / h.positions
    keep = h.rank_of_hit >= np.repeat(first, h.counts)
    best = np.zeros(len(h.K))
    np.maximum.at(best, h.row_of_hit[keep], ratio[keep])
    return best


def _recall_cut(level: float, n: np.ndarray, rounding: str) -> np.ndarray:
    """``_RECALL_CUTS`` in numpy (C's lround: halves away from zero; x >= 0 here)."""
    x = level * n
    if rounding == "nearest":
        return np.where(x - np.floor(x) >= 0.5, np.ceil(x), np.floor(x)).astype(np.int64)
    return np.trunc(x + 0.9).astype(np.int64)


def _iprec(h: Hits, level: float, rounding: str = "trunc_plus_0.9") -> np.ndarray:
    cut = _recall_cut(level, h.n, rounding)
    value = np.where(cut > h.counts, 0.0, _interpolated(h, np.maximum(cut, 1)))
    return _defined(h, value)


def _iprec_at_recall(h: Hits, *, recall: float = 0.0,
                     rounding: str = "trunc_plus_0.9") -> np.ndarray:
    check_options("iprec_at_recall", (RECALL, ROUNDING), {"recall": recall, "rounding": rounding})
    return _iprec(h, recall, rounding)


ELEVEN_LEVELS = tuple(i / 10 for i in range(11))


def _eleven_point_ap(h: Hits, *, rounding: str = "trunc_plus_0.9") -> np.ndarray:
    check_options("eleven_point_ap", (ROUNDING,), {"rounding": rounding})
    # Summed from 1.0 down, in trec_eval's order (m_11pt_avg.c): the same double.
    return sum(_iprec(h, level, rounding) for level in ELEVEN_LEVELS[::-1]) / 11


def _set_precision(h: Hits) -> np.ndarray:
    return _defined(h, _safe_ratio(h.counts, h.K))


def _set_recall(h: Hits) -> np.ndarray:
    return _defined(h, _safe_ratio(h.counts, h.n))


def _set_map(h: Hits) -> np.ndarray:
    # One division, as m_set_map.c: the product of two quotients differs in the last bit.
    return _defined(h, _safe_ratio(h.counts * h.counts, h.K * h.n))


def _set_f(h: Hits, *, beta: float = 1.0) -> np.ndarray:
    check_options("set_f", (BETA,), {"beta": beta})
    precision, recall = _safe_ratio(h.counts, h.K), _safe_ratio(h.counts, h.n)
    return _defined(h, _safe_ratio((beta + 1) * precision * recall, beta * precision + recall))


def _relative_precision(h: Hits) -> np.ndarray:
    return _defined(h, _safe_ratio(h.counts, np.minimum(h.k, h.n)))


def _set_relative_precision(h: Hits) -> np.ndarray:
    return _defined(h, _safe_ratio(h.counts, np.minimum(h.K, h.n)))


def _utility(h: Hits, *, a: float = 1.0, b: float = -1.0, c: float = 0.0, d: float = 0.0,
             num_docs: float = 0) -> np.ndarray:
    check_options("utility", UTILITY_OPTIONS,
                          {"a": a, "b": b, "c": c, "d": d, "num_docs": num_docs})
    hits = h.counts
    value = a * hits + b * (h.K - hits) + c * (h.n - hits) + d * (num_docs + hits - h.K - h.n)
    return _defined(h, value.astype(np.float64))


def _r_precision_mult(h: Hits, *, multiplier: float = 1.0) -> np.ndarray:
    check_options("r_precision_mult", (MULTIPLIER,), {"multiplier": multiplier})
    cut = np.trunc(multiplier * h.n + 0.9).astype(np.int64)
    return _defined(h, _safe_ratio(_hits_within(h, cut), cut))


def _bing(h: Hits) -> np.ndarray:
    terms = 1.0 / np.log2(2.0 + h.positions - h.rank_of_hit)
    return _defined(h, _safe_ratio(h.row_sum(terms), h.n))


def _rbp(h: Hits, *, persistence: float = 0.9) -> np.ndarray:
    check_options("rbp", (PERSISTENCE,), {"persistence": persistence})
    return _defined(h, (1 - persistence) * h.row_sum(np.power(persistence, h.positions - 1.0)))


def _yaap(h: Hits) -> np.ndarray:
    precision_sum = h.row_sum(h.rank_of_hit / h.positions)
    return _defined(h, np.log((1.0 + precision_sum) / (1.0 + h.n - precision_sum)))


def _record(name: str, summary: str, formula: str, sql: str, kernel, source: str,
            undefined: str = _ZERO, **more) -> Metric:
    return Metric(name=name, summary=summary, formula=formula, undefined=undefined, sql=sql,
                  kernel=kernel, source=SOURCE.format(source), **more)


_NEVER = "NULL only for a NULL rec, truth or k."

NUM_RET = _record(
    "num_ret", "trec_eval's num_ret: the number of items retrieved.", "K = min(k, len(rec))",
    "{K}::DOUBLE", _num_ret, "num_ret", undefined=_NEVER,
)
NUM_REL = _record(
    "num_rel", "trec_eval's num_rel: the number of relevant items in truth.", "n",
    "{n}::DOUBLE", _num_rel, "num_rel", undefined=_NEVER,
)
NUM_REL_RET = _record(
    "num_rel_ret", "trec_eval's num_rel_ret: the number of relevant items retrieved.",
    "hits in the top K", "len({pos})::DOUBLE", _num_rel_ret, "num_rel_ret", undefined=_NEVER,
)
R_PRECISION = _record(
    "r_precision", "R-precision (trec_eval's Rprec): precision after R = num_rel items.",
    "hits at ranks <= n, divided by n (rec shorter than n: all its hits / n)",
    _ratio(_hits_up_to("{pos}", "{n}"), "{n}"), _r_precision, "Rprec", aliases=("rprec",),
)
_CUT_FORMULA = (
    "c = trunc(recall * n + 0.9) (rounding := 'trunc_plus_0.9', the default: trec_eval 9 and "
    "pytrec_eval), or round(recall * n), halves away from zero (rounding := 'nearest', "
    "trec_eval 10)"
)
IPREC_AT_RECALL = _record(
    "iprec_at_recall",
    "Interpolated precision at a recall level (trec_eval's iprec_at_recall): the highest "
    "precision at any rank at or after the one where that share of the relevant items is found.",
    f"{_CUT_FORMULA}; the max over hits j >= max(c, 1) of j / p_j, p_j the rank of the j-th "
    "hit; 0 when c > hits",
    kernel=_iprec_at_recall, source="iprec_at_recall", options=(RECALL, ROUNDING),
    **_recall_cut_sql("try_cast(recall AS DOUBLE)",
                      _iprec_sql),
)
ELEVEN_POINT_AP = _record(
    "eleven_point_ap",
    "11-point interpolated average precision (trec_eval's 11pt_avg): the mean of "
    "iprec_at_recall at 0.0, 0.1, ..., 1.0.",
    "(sum over recall levels l in 1.0, 0.9, ..., 0.0 of iprec_at_recall(l)) / 11, summed in "
    f"that order as trec_eval sums; {_CUT_FORMULA}",
    kernel=_eleven_point_ap, source="11pt_avg", options=(ROUNDING,),
    **_recall_cut_sql("level", lambda cut: (
        "list_transform([" + _PRECISIONS + "], lambda prec: list_reduce(list_transform(["
        + ", ".join(f"{level!r}" for level in ELEVEN_LEVELS[::-1]) + "]::DOUBLE[], lambda level: "
        + _iprec_over("prec", cut, "len(prec)") + "), lambda a, b: a + b) / 11)[1]"
    )),
)
SET_PRECISION = _record(
    "set_precision", "Precision of the whole retrieved set (trec_eval's set_P).",
    "hits / K", _ratio("len({pos})", "{K}"), _set_precision, "set_P", aliases=("set_p",),
)
SET_RECALL = _record(
    "set_recall", "Recall of the whole retrieved set (trec_eval's set_recall).",
    "hits / n", _ratio("len({pos})", "{n}"), _set_recall, "set_recall",
)
SET_MAP = _record(
    "set_map", "trec_eval's set_map: set precision times set recall.",
    "hits^2 / (K n), divided once (m_set_map.c); 0 when K or n is 0",
    _ratio("len({pos}) * len({pos})", "{K} * {n}"), _set_map, "set_map",
)
SET_F = _record(
    "set_f", "F-measure of the retrieved set (trec_eval's set_F).",
    "(beta + 1) P R / (beta P + R), P = hits / K, R = hits / n; 0 when P + R = 0. As "
    "trec_eval's m_set_F.c, beta weighs recall directly: set_f(beta := b) is the usual F "
    "measure of parameter sqrt(b) (beta := 4 gives the textbook F2)",
    "list_transform([struct_pack(sp := " + _ratio("len({pos})", "{K}") + ", sr := "
    + _ratio("len({pos})", "{n}") + ", w := try_cast(beta AS DOUBLE))], lambda f: "
    + _ratio("(f.w + 1) * f.sp * f.sr", "f.w * f.sp + f.sr") + ")[1]",
    _set_f, "set_F", options=(BETA,),
)
RELATIVE_PRECISION = _record(
    "relative_precision",
    "Relative precision at k (trec_eval's relative_P): precision at k over the best possible.",
    "hits / min(k, n)", _ratio("len({pos})", "least({k}, {n})"), _relative_precision,
    "rel_P", aliases=("relative_p",),
)
SET_RELATIVE_PRECISION = _record(
    "set_relative_precision",
    "Relative precision of the retrieved set (trec_eval's set_relative_P).",
    "hits / min(K, n)", _ratio("len({pos})", "least({K}, {n})"), _set_relative_precision,
    "set_rel_P", aliases=("set_relative_p",),
)
UTILITY = _record(
    "utility", "trec_eval's set utility: a weighted count of the contingency table.",
    "a hits + b (K - hits) + c (n - hits) + d (num_docs + hits - K - n)",
    "(try_cast(a AS DOUBLE) * len({pos}) + try_cast(b AS DOUBLE) * ({K} - len({pos})) "
    "+ try_cast(c AS DOUBLE) * ({n} - len({pos})) "
    "+ try_cast(d AS DOUBLE) * (try_cast(num_docs AS DOUBLE) + len({pos}) - {K} - {n}))",
    _utility, "utility", options=UTILITY_OPTIONS, undefined=_NEVER,
)
R_PRECISION_MULT = _record(
    "r_precision_mult",
    "Precision at a multiple of R = num_rel (trec_eval's Rprec_mult).",
    "c = trunc(multiplier * n + 0.9) (trec_eval's cast); hits at ranks <= c, divided by c",
    "list_transform([trunc(try_cast(multiplier AS DOUBLE) * {n} + 0.9)::BIGINT], lambda cut_at: "
    + _ratio(_hits_up_to("{pos}", "cut_at"), "cut_at") + ")[1]",
    _r_precision_mult, "Rprec_mult", options=(MULTIPLIER,), aliases=("rprec_mult",),
)
BING = _record(
    "bing",
    "trec_eval's binG (experimental): the mean over relevant items of 1 / log2(2 + the "
    "non-relevant items ranked above it).",
    "sum over hits j at rank p_j of 1 / log2(2 + p_j - j), divided by n",
    _ratio("coalesce(list_sum(list_transform(list_sort({pos}), "
           "lambda q, j: 1.0 / log2(2 + q - j))), 0.0)", "{n}"),
    _bing, "binG",
)
RBP = _record(
    "rbp",
    "Rank-biased precision (Moffat and Zobel, TOIS 27(1), 2008) with binary gains.",
    "(1 - p) sum over hits at rank i of p^(i - 1), p = persistence",
    "(1 - try_cast(persistence AS DOUBLE)) * coalesce(list_sum(list_transform({pos}, "
    "lambda q: pow(try_cast(persistence AS DOUBLE), q - 1))), 0.0)",
    _rbp, "rbp", options=(PERSISTENCE,),
    peers="trec_eval's rbp agrees on binary qrels; on graded qrels it rescales its gains by "
    "a minimum and maximum that its code leaves uninitialised (m_rbp.c), so duckrank keeps "
    "the paper's binary form. Not in pytrec_eval.",
)
YAAP = _record(
    "yaap",
    "Yet another average precision (Robertson, 'On Smoothing Average Precision', ECIR 2012; "
    "trec_eval 10's yaap): a log-odds form of average precision, better averaged over queries.",
    "ln((1 + S) / (1 + n - S)), S = the sum over hits j at rank p_j of j / p_j (n times "
    "average precision); 0 when n = 0 and nothing is found",
    "list_transform([coalesce(list_sum(list_transform(list_sort({pos}), lambda p, j: j / p)), "
    "0.0)], lambda s: ln((1.0 + s) / (1.0 + {n} - s)))[1]",
    _yaap, "yaap", undefined=_NEVER,
)

BINARY = (
    NUM_RET, NUM_REL, NUM_REL_RET, R_PRECISION, IPREC_AT_RECALL, ELEVEN_POINT_AP, SET_PRECISION,
    SET_RECALL, SET_MAP, SET_F, RELATIVE_PRECISION, SET_RELATIVE_PRECISION, UTILITY,
    R_PRECISION_MULT, BING, RBP, YAAP,
)


# --- measures over judged truth ------------------------------------------------------------------
# Placeholders (``inputs="judged"``, see ``duckrank.metrics.record.Metric``): {gains} the grades
# of the top K in rec order (0: not in truth), {pos} / {nonrel} / {judged} / {pool} the
# ascending ranks of its relevant, judged non-relevant (0 <= grade, not relevant), judged
# (grade >= 0) and negative-grade items, {n} / {nn} the relevant / judged non-relevant items of
# truth, {ideal} truth's positive grades, largest first, {K}, {k}.

INFAP_EPSILON = 0.00001  # trec_eval's INFAP_EPSILON (trec_eval.h)


def _ideal_dcg_to(rank: str) -> str:
    """The ideal DCG of the top ``rank`` (linear gain, log2(i + 1) discount)."""
    return (
        f"coalesce(list_sum(list_transform(list_slice({{ideal}}, 1, {rank}), "
        "lambda x, i: x / log2(i + 1))), 0.0)"
    )


# The kernels' twins, over ``duckrank.matching.arrays.Judged``: one value per element of
# ``top`` (its row, rank, grade), summed per row.

def _judged_parts(j: Judged) -> tuple:
    """(row, rank, relevant, judged non-relevant, negative grade, unjudged) per element."""
    rows, ranks = j.rows, Grades.ranks(j.top_offsets)
    with np.errstate(invalid="ignore"):
        judged = j.top >= 0
        pool = j.top < 0
    return rows, ranks, j.relevant, judged & ~j.relevant, pool, ~judged


def _bpref(j: Judged, *, min_grade: float | None = None) -> np.ndarray:
    rows, _, relevant, non, _, _ = _judged_parts(j)
    above, n = j.running_count(non), j.n[rows]
    share = _safe_ratio(np.minimum(above, n), np.minimum(j.nn[rows], n))
    terms = np.where(above > 0, 1.0 - share, 1.0)
    return _defined(j, _safe_ratio(j.row_sum(np.where(relevant, terms, 0.0)), j.n))


def _infap(j: Judged, *, min_grade: float | None = None) -> np.ndarray:
    _, ranks, relevant, non, pool, _ = _judged_parts(j)
    rel_above, non_above = j.running_count(relevant), j.running_count(non)
    judged_above = rel_above + non_above + j.running_count(pool)
    q = ranks.astype(np.float64)
    earlier = np.where(q > 1, q - 1, 1.0)
    terms = 1.0 / q + ((q - 1.0) / q) * (judged_above / earlier) * (
        (rel_above + INFAP_EPSILON) / (rel_above + non_above + 2 * INFAP_EPSILON))
    terms = np.where(q == 1, 1.0, terms)
    return _defined(j, _safe_ratio(j.row_sum(np.where(relevant, terms, 0.0)), j.n))


def _num_nonrel_judged_ret(j: Judged, *, min_grade: float | None = None) -> np.ndarray:
    return _defined(j, j.row_sum(_judged_parts(j)[3].astype(np.float64)))


def _unjudged(j: Judged) -> np.ndarray:
    return _defined(j, _safe_ratio(j.row_sum(_judged_parts(j)[5].astype(np.float64)), j.k))


def _rbp_resid(j: Judged, *, persistence: float = 0.9) -> np.ndarray:
    check_options("rbp_resid", (PERSISTENCE,), {"persistence": persistence})
    _, ranks, _, _, _, unjudged = _judged_parts(j)
    weight = j.row_sum(np.where(unjudged, np.power(persistence, ranks - 1.0), 0.0))
    value = np.power(persistence, j.K) + (1 - persistence) * weight
    return _defined(j, np.where(j.row_sum(unjudged.astype(np.float64)) > 0, value, 0.0))


def _relstring(j: Judged) -> np.ndarray:
    grade = np.nan_to_num(j.top, nan=0.0)
    digit = np.floor(np.clip(grade, 0, 9)).astype(np.int64).astype(str)
    with np.errstate(invalid="ignore"):
        chars = np.where(np.isnan(j.top), "-", np.where(j.top < 0, ".",
                                                        np.where(j.top > 9, ">", digit)))
    lists = pa.ListArray.from_arrays(pa.array(j.top_offsets, pa.int64()).cast(pa.int32()),
                                     pa.array(chars.tolist(), pa.string()))
    joined = pc.binary_join(lists, "").to_numpy(zero_copy_only=False)
    return np.where(j.valid, joined, None)


def _gains(j: Judged) -> tuple:
    """trec_eval's gains of the top K (the grade, 0 unjudged), their DCG terms and running DCG,
    the running ideal DCG per ideal element, and R (positive grades of truth) per row."""
    gain = np.maximum(np.nan_to_num(j.top, nan=0.0), 0.0)
    ranks = Grades.ranks(j.top_offsets)
    dcg = row_cumsum(gain / np.log2(ranks + 1.0), j.top_offsets)
    ideal_ranks = Grades.ranks(j.ideal_offsets)
    ideal_dcg = row_cumsum(j.ideal / np.log2(ideal_ranks + 1.0), j.ideal_offsets)
    return gain, ranks, dcg, ideal_dcg, np.diff(j.ideal_offsets)


def _at(values: np.ndarray, offsets: np.ndarray, rows: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """values[rank] of each row (1-based; 0 where rank is 0)."""
    index = offsets[:-1][rows] + np.maximum(rank, 1) - 1
    return np.where(rank > 0, values[np.minimum(index, max(len(values) - 1, 0))]
                    if len(values) else 0.0, 0.0)


def _ndcg_rel(j: Judged) -> np.ndarray:
    gain, ranks, dcg, ideal_dcg, r = _gains(j)
    rows = j.rows
    positive = gain > 0
    at_rank = _at(ideal_dcg, j.ideal_offsets, rows, np.minimum(ranks, r[rows]))
    terms = j.row_sum(np.where(positive, dcg / np.where(positive, at_rank, 1.0), 0.0))
    everything = np.arange(len(j.K))
    total = _at(dcg, j.top_offsets, everything, j.K)
    ideal_all = _at(ideal_dcg, j.ideal_offsets, everything, r)
    missed = r - j.row_sum(positive.astype(np.float64))
    value = _safe_ratio(terms + missed * _safe_ratio(total, ideal_all), r)
    return _defined(j, value)


def _rndcg(j: Judged, *, min_grade: float | None = None) -> np.ndarray:
    _, _, dcg, ideal_dcg, r = _gains(j)
    rows = np.repeat(np.arange(len(j.K)), r)
    level = Grades.ranks(j.ideal_offsets)
    following = np.append(j.ideal[1:], np.nan)
    boundary = (level == r[rows]) | (following != j.ideal)
    reached = _at(dcg, j.top_offsets, rows, np.minimum(level, j.K[rows]))
    terms = np.where(boundary, reached / ideal_dcg, 0.0)
    count = np.bincount(rows, weights=boundary, minlength=len(j.K))
    total = np.bincount(rows, weights=terms, minlength=len(j.K))
    everything = np.arange(len(j.K))
    final = (r + 1 < j.K) & (r > 0)
    total += np.where(final, _safe_ratio(_at(dcg, j.top_offsets, everything, j.K),
                                         _at(ideal_dcg, j.ideal_offsets, everything, r)), 0.0)
    count += final
    value = np.where(j.n == 0, 0.0, np.where(r == 0, np.nan, _safe_ratio(total, count)))
    return _defined(j, value)


def _normalized_gain(j: Judged) -> np.ndarray:
    gain, ranks, _, _, r = _gains(j)
    rows = j.rows
    cost = row_cumsum(np.maximum(j.ideal, 1.0), j.ideal_offsets)
    paid = _at(cost, j.ideal_offsets, rows, np.minimum(ranks, r[rows])) + np.maximum(
        ranks - r[rows], 0)
    gained = row_cumsum(gain, j.top_offsets)
    positive = gain > 0
    terms = np.where(positive, gain / np.log2(np.where(positive, 2 + paid - gained, 2.0)), 0.0)
    ideal_sum = np.bincount(np.repeat(np.arange(len(j.K)), r), weights=j.ideal,
                            minlength=len(j.K))
    return _defined(j, _safe_ratio(j.row_sum(terms), ideal_sum))


BPREF_SQL = (
    "CASE WHEN {n} = 0 THEN 0.0 ELSE coalesce(list_sum(list_transform("
    + _before("{pos}", "{nonrel}")
    + ", lambda above: CASE WHEN above > 0 THEN 1.0 - least(above, {n}) / least({nn}, {n}) "
    "ELSE 1.0 END)), 0.0) / {n} END"
)

# For the j-th relevant item at rank q, with `judged` the items of truth ranked above it
# (relevant, judged non-relevant or negative grade) and `non` the judged non-relevant ones.
INFAP_SQL = (
    "CASE WHEN {n} = 0 THEN 0.0 ELSE coalesce(list_transform([struct_pack(non := "
    + _before("{pos}", "{nonrel}") + ", unjudged := "
    + _before("{pos}", "{pool}") + ")], lambda s: list_sum(list_transform({pos}, lambda q, j: "
    "CASE WHEN q = 1 THEN 1.0 ELSE 1.0 / q + ((q - 1.0) / q) "
    "* ((j - 1 + s.non[j] + s.unjudged[j]) / (q - 1.0)) "
    f"* ((j - 1 + {INFAP_EPSILON!r}) / (j - 1 + s.non[j] + 2 * {INFAP_EPSILON!r})) END)))[1], "
    "0.0) / {n} END"
)

# The ranks of positive gain in the top K, in rank order: ``_positive``'s pass over it, which
# duckrank trec_eval reads from its judged match instead (``duckrank.render.trec_eval``).
POSITIVE_RANKS = (
    "list_filter(list_transform({gains}, lambda x, i: CASE WHEN x > 0 THEN i END), "
    "lambda i: i IS NOT NULL)"
)


def _positive(term: bool) -> str:
    """The ranks q of positive gain in rank order, each with its gain g (and with ``term`` its
    DCG term t): the ranks from one pass over the top K, their gains picked by list_select
    (indexing the list inside a lambda copies it for every element). A DCG sums these terms
    alone (a rank of gain 0 adds 0.0, which leaves a sum of doubles as it is), so that the
    formulas below loop over the ranks of positive gain, not over all K."""
    fields = "q := z[1], g := z[2]" + (", t := z[2] / log2(z[1] + 1)" if term else "")
    return (
        f"list_transform([{POSITIVE_RANKS}], lambda rs: list_transform(list_zip(rs, "
        f"list_select({{gains}}, rs)), lambda z: struct_pack({fields})))[1]"
    )


# The parts of the judged formulas that two or more of them compute alike, which duckrank
# trec_eval computes once per query instead, as fields of its judged match
# (``duckrank.render.trec_eval``): the ranks of positive gain with their gains and DCG terms
# (ndcg_rel and Rndcg; G reads the ranks and gains of the same list), and for each relevant
# item the judged non-relevant items above it (bpref and infAP).
POSITIVE_TERMS, POSITIVE_GAINS = _positive(True), _positive(False)
NONREL_ABOVE = _before("{pos}", "{nonrel}")


def _positive_dcg(positive: str, rank: str | None = None) -> str:
    """The DCG of the top ``rank`` (None: of the top K) from ``_positive``'s list ``positive``."""
    terms = positive if rank is None else f"list_filter({positive}, lambda p: p.q <= {rank})"
    return f"coalesce(list_sum(list_transform({terms}, lambda p: p.t)), 0.0)"


# Rndcg: the ranks r where the ideal gain changes (the last positive one included).
RNDCG_SQL = (
    "CASE WHEN {n} = 0 THEN 0.0 WHEN len({ideal}) = 0 THEN NULL ELSE list_transform(["
    f"{_positive(True)}], lambda ps: list_transform([list_concat(list_transform(list_filter("
    "range(1, len({ideal}) + 1), lambda r: r = len({ideal}) OR {ideal}[r + 1] <> {ideal}[r]), "
    f"lambda r: {_positive_dcg('ps', 'r')} / {_ideal_dcg_to('r')}), "
    "CASE WHEN len({ideal}) + 1 < {K} THEN "
    f"[{_positive_dcg('ps')} / {_ideal_dcg_to('len({ideal})')}] ELSE [] END)], "
    "lambda t: list_sum(t) / len(t))[1])[1] END"
)

def _prefix_at(terms: str, total: str, rank: str) -> str:
    """The sum of the first ``rank`` of ``terms`` (a DOUBLE[] of len({ideal}) elements, bound
    once; ``total``: their sum, bound once) where ``rank`` is below len({ideal}), ``total`` from
    there on: an element of ``_prefix_sums(terms)`` at least(rank, len({ideal})), the same sum of
    the same doubles in the same order, computed for the ranks read only (the ideal's running sums
    were most of the time of ndcg_rel and G: half of it went)."""
    return (f"CASE WHEN {rank} >= len({{ideal}}) THEN {total} "
            f"ELSE list_sum(list_slice({terms}, 1, {rank})) END")


NDCG_REL_SQL = (
    "CASE WHEN len({ideal}) = 0 THEN 0.0 ELSE list_transform([struct_pack(p := " + _positive(True)
    + ", ideal := list_transform({ideal}, lambda x, i: x / log2(i + 1)))], lambda s: "
    "list_transform([struct_pack(dcg := " + _prefix_sums("list_transform(s.p, lambda p: p.t)")
    + ", ideal := list_sum(s.ideal))], lambda d: (coalesce(list_sum(list_transform(s.p, "
    "lambda p, j: d.dcg[j] / " + _prefix_at("s.ideal", "d.ideal", "p.q") + ")), 0.0) "
    "+ (len({ideal}) - len(s.p)) * coalesce(d.dcg[len(s.p)], 0.0) / d.ideal) "
    "/ len({ideal}))[1])[1] END"
)

# G: at a rank q of positive gain, cost(q) = sum over i <= min(q, R) of max(ideal_i, 1), plus 1
# for each rank past R; gained(q) = the gains up to q.
G_SQL = (
    "CASE WHEN len({ideal}) = 0 THEN 0.0 ELSE list_transform([struct_pack(p := " + _positive(False)
    + ", cost := list_transform({ideal}, lambda x: greatest(x, 1.0)))], lambda s: "
    "list_transform([struct_pack(gained := " + _prefix_sums("list_transform(s.p, lambda p: p.g)")
    + ", cost := list_sum(s.cost))], lambda d: coalesce(list_sum(list_transform(s.p, lambda p, j: "
    "p.g / log2(2 + " + _prefix_at("s.cost", "d.cost", "p.q")
    + " + greatest(p.q - len({ideal}), 0) - d.gained[j]))), 0.0) / list_sum({ideal}))[1])[1] END"
)

# coalesce: DuckDB 1.4's array_to_string gives NULL for an empty list (1.5 and 2.0 give '').
RELSTRING_SQL = (
    "coalesce(array_to_string(list_transform({gains}, lambda x, i: CASE WHEN list_contains("
    "{pool}, i) THEN '.' WHEN NOT list_contains({judged}, i) THEN '-' WHEN x > 9 THEN '>' "
    "ELSE floor(x)::INTEGER::VARCHAR END), ''), '')"
)

_JUDGED = dict(inputs="judged", truth_type=GRADED_TRUTH, options=(MIN_GRADE,))
_GAINS = (
    "Gains are trec_eval's defaults: the grade, 0 for an unjudged item (pass the grades mapped "
    "to other gains for trec_eval's -m measure.1=3,2=9)."
)

BPREF = _record(
    "bpref",
    "Binary preference (Buckley and Voorhees, SIGIR 2004): the share of judged non-relevant "
    "items each relevant item is ranked above, unjudged items ignored.",
    "(1 / n) sum over relevant retrieved items of 1 - min(nonrel above it, n) / min(nn, n), "
    "nn = the judged non-relevant items of truth (1 when none is above it)",
    BPREF_SQL, _bpref, "bpref", **_JUDGED,
)
INFAP = _record(
    "infap",
    "Inferred average precision (Yilmaz and Aslam, CIKM 2006): average precision estimated from "
    "a judged sample of the pool (negative grades: in the pool, not judged).",
    "(1 / n) sum over relevant retrieved items at rank q, the j-th, of 1 for q = 1, else "
    "1/q + ((q-1)/q) (judged above / (q-1)) ((j-1+e) / (j-1+nonrel above+2e)), e = 1e-5, "
    "judged above counting every item of truth above it",
    INFAP_SQL, _infap, "infap", **_JUDGED,
)
NUM_NONREL_JUDGED_RET = _record(
    "num_nonrel_judged_ret",
    "trec_eval's num_nonrel_judged_ret: the judged non-relevant items retrieved.",
    "judged non-relevant items (grade >= 0, not relevant) in the top K",
    "len({nonrel})::DOUBLE", _num_nonrel_judged_ret, "num_nonrel_judged_ret", undefined=_NEVER,
    **_JUDGED,
)
UNJUDGED = _record(
    "unjudged",
    "trec_eval's unj: the share of the top k that is unjudged (not in truth, or of negative "
    "grade); ranks past the end of rec count as judged.",
    "(K - judged items of the top K) / k", _ratio("{K} - len({judged})", "{k}"),
    _unjudged, "unjudged", inputs="judged", truth_type=GRADED_TRUTH, aliases=("unj",),
)
RBP_RESID = _record(
    "rbp_resid",
    "trec_eval's rbp_resid: the RBP weight left to unjudged items, the uncertainty of rbp.",
    "p^K + (1 - p) sum over unjudged items of the top K at rank i of p^(i - 1); 0 when the top "
    "K holds no unjudged item",
    "CASE WHEN {K} = len({judged}) THEN 0.0 ELSE list_transform([try_cast(persistence AS "
    "DOUBLE)], lambda pr: pow(pr, {K}) + (1 - pr) * (list_sum(list_transform(range(1, {K} + 1), "
    "lambda i: pow(pr, i - 1))) - coalesce(list_sum(list_transform({judged}, "
    "lambda i: pow(pr, i - 1))), 0.0)))[1] END",
    _rbp_resid, "rbp_resid", inputs="judged", truth_type=GRADED_TRUTH,
    options=(PERSISTENCE,), undefined=_NEVER,
)
RELSTRING = _record(
    "relstring",
    "trec_eval's relstring: the grades of the top K as a string, one character each: the digit "
    "of a grade 0..9 (its integer part), '>' above 9, '-' not in truth, '.' a negative grade.",
    "one character per item of the top K (trec_eval's default length is k = 10)",
    RELSTRING_SQL, _relstring, "relstring", inputs="judged", truth_type=GRADED_TRUTH,
    undefined=_NEVER, result_type="VARCHAR",
)
NDCG_REL = _record(
    "ndcg_rel",
    "trec_eval's ndcg_rel (experimental): ndcg averaged over the relevant items (gain > 0).",
    "(1 / R) (sum over retrieved items of positive gain at rank q of DCG(q) / IDCG(min(q, R)) "
    "+ (R - those items) DCG(K) / IDCG(R)), R = the positive grades of truth; linear gain, "
    f"log2(i + 1) discount. {_GAINS}",
    NDCG_REL_SQL, _ndcg_rel, "ndcg_rel", inputs="judged", truth_type=GRADED_TRUTH,
    undefined="0 when truth has no positive grade; NULL only for a NULL rec, truth or k.",
)
RNDCG = _record(
    "rndcg",
    "trec_eval's Rndcg (experimental): ndcg averaged at the ranks where the ideal gain changes.",
    "the mean of DCG(min(r, K)) / IDCG(r) over the ranks r where the ideal gain changes "
    "(r = R included), and DCG(K) / IDCG(R) when R + 1 < K (trec_eval's final R level at "
    f"num_ret); linear gain, log2(i + 1) discount. {_GAINS}",
    RNDCG_SQL, _rndcg, "Rndcg", **_JUDGED,
    undefined="0 when truth has no relevant item; NULL when it has relevant items but no "
    "positive grade (min_grade <= 0: trec_eval divides 0 by 0).",
)
NORMALIZED_GAIN = _record(
    "normalized_gain",
    "trec_eval's G (experimental): gain discounted by how far the gain so far lags the ideal.",
    "(sum over retrieved items of gain g > 0 at rank q of g / log2(2 + cost(q) - gained(q))) "
    "/ sum of truth's positive grades; cost(q) = sum over i <= q of max(ideal_i, 1) (1 past "
    f"the ideal list), gained(q) = the gains up to q. {_GAINS}",
    G_SQL, _normalized_gain, "G", inputs="judged", truth_type=GRADED_TRUTH, aliases=("g",),
    undefined="0 when truth has no positive grade; NULL only for a NULL rec, truth or k.",
)

JUDGED = (
    BPREF, INFAP, NUM_NONREL_JUDGED_RET, UNJUDGED, RBP_RESID, RELSTRING, NDCG_REL, RNDCG,
    NORMALIZED_GAIN,
)
