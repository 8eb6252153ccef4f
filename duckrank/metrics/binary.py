"""Binary-relevance metrics over hit positions.

Shared conventions (K, hits, duplicates, NULL elements) are in ``duckrank.matching``. Every value
below is NULL (NaN in the kernels) when rec, truth or k is NULL; each record says when else.
Source of the definitions: the Apache Hivemall user guide, "Evaluation of ranking problems"
(docs/gitbook/eval/rank.md of apache/incubator-hivemall), which agrees with trec_eval and ranx
except where ``peers`` says otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from functools import cache

from duckrank.lazy import LazyModule
from duckrank.matching.arrays import Hits
from duckrank.metrics.graded import (
    GRADED_TRUTH,
    IDEAL,
    IDEAL_K_LIMIT,
    NDCG_OPTIONS,
    binary_ndcg_sql,
    check_ideal_k,
    chosen_sql,
    discounts,
    ideal_k_error_sql,
)
from duckrank.metrics.record import Bounds, Choice, Metric, Option, check_options

np = LazyModule("numpy")

NAN = math.nan  # np.nan is this float: the records do not import numpy (issue 32)


def _where_defined(hits: Hits, defined: np.ndarray, values: np.ndarray) -> np.ndarray:
    return np.where(hits.valid & defined, values, NAN)


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    return numerator / np.where(denominator == 0, 1, denominator)


# --- denominators: the peers' conventions as options ----------------------------------------------
# What precision, recall and average precision divide by, per row, in SQL (placeholders of the
# "hits" record) and in numpy; docs/conventions.md says which peer uses which. A denominator of 0
# (k omitted with an empty rec, so k = K = 0) leaves the value NULL, as an empty top K leaves
# precision; only 'hits' is 0 without hits (an AP of no hit is 0, as torchmetrics and Hivemall
# give it).
_DENOMINATORS: dict[str, tuple[str, Callable[[Hits], np.ndarray]]] = {
    "returned": ("nullif({K}, 0)", lambda h: h.K),
    "k": ("nullif({k}, 0)", lambda h: h.k),
    "truth": ("{n}", lambda h: h.n),  # > 0 wherever the metric reads it
    "min_k_truth": ("nullif(least({k}, {n}), 0)", lambda h: np.minimum(h.k, h.n)),
    "min_returned_truth": ("nullif(least({K}, {n}), 0)", lambda h: np.minimum(h.K, h.n)),
    "hits": ("greatest(len({pos}), 1)", lambda h: h.counts),
}


def _divided(function: str, option: Option, choice: str, h: Hits,
             numerator: np.ndarray) -> np.ndarray:
    """numerator / the chosen denominator, NULL (NaN) where the metric is undefined: no relevant
    item (recall and AP), a denominator of 0 (except 'hits')."""
    check_options(function, (option,), {option.name: choice})
    denominator = _DENOMINATORS[choice][1](h)
    defined = (denominator > 0) | (choice == "hits")
    if "truth" in option.choices:  # recall and AP need a relevant item; precision does not
        defined &= h.n > 0
    return _where_defined(h, defined, _ratio(numerator, denominator))


def _divided_sql(option: Option, formula: Callable[[str], str]) -> dict[str, str | Choice]:
    """The SQL twin of ``_divided``: ``formula`` over the chosen denominator, NULL where it is 0
    (so the quotient is NULL), with the default's form for the macros' default path
    (``chosen_sql``). Only the denominator is chosen, so that the numerator's list lambdas are
    written once (see ``choose_sql``: every branch holding the whole formula cost 20-40% on
    map@10 and ndcg@10)."""
    return chosen_sql(option, {c: _DENOMINATORS[c][0] for c in option.choices}, formula)


def _precision_sql(denominator: str) -> str:
    return f"len({{pos}}) / {denominator}"


def _recall_sql(denominator: str) -> str:
    return f"CASE WHEN {{n}} = 0 THEN NULL ELSE len({{pos}}) / {denominator} END"


def _average_precision_sql(denominator: str) -> str:
    # the sum over the hits of (hits in the top i) / i, i the hit's position, / the denominator
    return (
        "CASE WHEN {n} = 0 THEN NULL ELSE coalesce(list_sum(list_transform(list_sort({pos}), "
        f"lambda p, j: j / p)), 0) / {denominator} END"
    )


PRECISION_DENOMINATOR = Option(
    "denominator",
    "returned",
    "what the hits are divided by: 'returned' = K = min(k, len(rec)), the items returned "
    "(Hivemall, LensKit); 'k' = k, so that a list shorter than k counts its missing places as "
    "misses (trec_eval's P, ranx, ir-measures, RecTools, RePlay, Recommenders, torchmetrics, "
    "recpack).",
    choices=("returned", "k"),
)
RECALL_DENOMINATOR = Option(
    "denominator",
    "truth",
    "what the hits are divided by: 'truth' = |truth| (trec_eval, ranx, RecTools, RePlay, "
    "Recommenders, torchmetrics); 'min_k_truth' = min(k, |truth|), so that a top k of hits "
    "scores 1 when truth has more than k items (LensKit's Recall, recpack's "
    "CalibratedRecallK, RecTools' Precision(r_precision=True)).",
    choices=("truth", "min_k_truth"),
)
AP_DENOMINATOR = Option(
    "denominator",
    "truth",
    "what the sum of precisions at the hits is divided by: 'truth' = |truth| (trec_eval's "
    "map_cut, ranx, ir-measures, RecTools' MAP, Recommenders' map); 'min_k_truth' = "
    "min(k, |truth|) (RePlay, Recommenders' map_at_k); 'min_returned_truth' = min(K, |truth|), "
    "K = min(k, len(rec)) (LensKit's AveragePrecision); 'k' = k (RecTools' "
    "MAP(divide_by_k=True)); 'hits' = the hits in the top K (torchmetrics' RetrievalMAP, "
    "Hivemall's code), 0 when there is none.",
    choices=("truth", "min_k_truth", "min_returned_truth", "k", "hits"),
)


def _precision(h: Hits, *, denominator: str = "returned") -> np.ndarray:
    return _divided("precision_at", PRECISION_DENOMINATOR, denominator, h, h.counts)


def _recall(h: Hits, *, denominator: str = "truth") -> np.ndarray:
    return _divided("recall_at", RECALL_DENOMINATOR, denominator, h, h.counts)


def _average_precision(h: Hits, *, denominator: str = "truth") -> np.ndarray:
    precisions = h.row_sum(h.rank_of_hit / h.positions)
    return _divided("average_precision", AP_DENOMINATOR, denominator, h, precisions)


def _mrr(h: Hits) -> np.ndarray:
    has_hit = h.counts > 0
    first = np.full(len(h.K), np.inf)
    first[has_hit] = h.positions[h.offsets[:-1][has_hit]]
    return _where_defined(h, h.n > 0, 1.0 / first)


def _hitrate(h: Hits) -> np.ndarray:
    return _where_defined(h, h.n > 0, (h.counts > 0).astype(np.float64))


def _ideal_binary_dcg(positions: np.ndarray, discount: str, base: float) -> np.ndarray:
    """sum_{i=1..m} 1/disc(i) for each m, by cumulative sum over the largest m needed."""
    m = positions.astype(np.int64)
    largest = int(m.max()) if len(m) else 0
    weights = 1.0 / discounts(np.arange(1, largest + 1), discount, base)
    cumulative = np.concatenate([[0.0], np.cumsum(weights)])
    return cumulative[m]


# Ideal DCGs up to this many relevant items are read from a constant list (the kernel's own
# values) instead of being summed per row: 5x to 10x cheaper in DuckDB.
_IDEAL_DCG_TABLE_SIZE = 128


@cache
def _ideal_binary_dcg_values() -> tuple[float, ...]:
    """sum_{i=1..m} 1/log2(i+1) for m = 1.._IDEAL_DCG_TABLE_SIZE: ``_ideal_binary_dcg``'s
    divisions and additions in its order, without numpy, as the SQL below is built when the
    module is imported (issue 32). numpy's log2 is not always libm's to the last bit (its AVX-512
    loops), but is on these ranks: tests/test_lazy_imports.py checks the kernel's own values."""
    values = []
    total = 0.0
    for rank in range(1, _IDEAL_DCG_TABLE_SIZE + 1):
        total += 1.0 / math.log2(rank + 1.0)
        values.append(total)
    return tuple(values)


def _ideal_binary_dcg_sql(m: str) -> str:
    """SQL for sum_{i=1..m} 1/log2(i+1); NULL for m = 0 (a list index of 0 is NULL)."""
    table = ", ".join(f"{v:.17e}" for v in _ideal_binary_dcg_values())
    summed = f"list_sum(list_transform(range(1, {m} + 1), lambda i: 1.0 / log2(i + 1)))"
    return f"coalesce([{table}][{m}], {summed})"


def _ndcg(h: Hits, *, gain: str = "exponential", discount: str = "log2",
          base: float = 2, ideal: str = "min_k_truth") -> np.ndarray:
    # Every grade is 1, so both gains are 1; only the discount changes the value.
    check_options("ndcg", NDCG_OPTIONS,
                  {"gain": gain, "discount": discount, "base": base, "ideal": ideal})
    if ideal == "k":
        check_ideal_k("ndcg", h.k[h.valid & (h.n > 0)])
    ideal_hits = h.k if ideal == "k" else np.minimum(h.k, h.n)
    dcg = h.row_sum(1.0 / discounts(h.positions, discount, base))
    idcg = _ideal_binary_dcg(ideal_hits, discount, base)
    return _where_defined(h, h.n > 0, np.where(h.counts > 0, _ratio(dcg, idcg), 0.0))


def _binary_ndcg_sql(ideal_hits: str) -> str:
    log2 = (
        "CASE WHEN {n} = 0 THEN NULL WHEN len({pos}) = 0 THEN 0.0 "
        "ELSE list_sum(list_transform({pos}, lambda p: 1.0 / log2(p + 1))) "
        f"/ {_ideal_binary_dcg_sql(ideal_hits)} END"
    )
    return binary_ndcg_sql(log2, ideal_hits)


def _auc(h: Hits) -> np.ndarray:
    hits = h.counts
    misses = h.K - hits
    # Each hit at position p with rank j has (K - p) items after it, of which (h - j) are hits.
    misses_below = (np.repeat(h.K, hits) - h.positions) - (np.repeat(hits, hits) - h.rank_of_hit)
    pairs = hits * misses
    return _where_defined(h, pairs > 0, _ratio(h.row_sum(misses_below), pairs))


PRECISION_AT = Metric(
    name="precision_at",
    summary="Precision@k: the share of the top K that are hits.",
    formula="hits / K, K = min(k, len(rec)); denominator := 'k': hits / k",
    undefined="NULL when the top K is empty (empty rec); with denominator := 'k', when k is "
    "omitted and rec is empty.",
    **_divided_sql(PRECISION_DENOMINATOR, _precision_sql),
    kernel=_precision,
    aliases=("precision", "p"),
    options=(PRECISION_DENOMINATOR,),
    peers="trec_eval's P@k and ranx's precision divide by k, not by min(k, len(rec)): they differ "
    "when rec is shorter than k (denominator := 'k' gives theirs).",
)

RECALL_AT = Metric(
    name="recall_at",
    summary="Recall@k: the share of the relevant items found in the top K.",
    formula="hits / |truth|; denominator := 'min_k_truth': hits / min(k, |truth|)",
    undefined="NULL when truth has no item; with denominator := 'min_k_truth', also when k is "
    "omitted and rec is empty.",
    **_divided_sql(RECALL_DENOMINATOR, _recall_sql),
    kernel=_recall,
    aliases=("recall",),
    options=(RECALL_DENOMINATOR,),
    peers="Same as trec_eval's recall_k and ranx's recall; denominator := 'min_k_truth' gives "
    "LensKit's.",
)

AVERAGE_PRECISION = Metric(
    name="average_precision",
    summary="Average precision: the mean of precision@i over the relevant items, hits at i <= K.",
    formula="sum over hits at position i <= K of (hits in the top i) / i, divided by |truth| "
    "(denominator := 'min_k_truth': by min(k, |truth|); 'min_returned_truth': by "
    "min(K, |truth|); 'k': by k; 'hits': by the hits in the top K, 0 without hits)",
    undefined="NULL when truth has no item; with a denominator other than 'truth' and 'hits', "
    "also when it is 0 (k omitted, or 'min_returned_truth', with an empty rec).",
    **_divided_sql(AP_DENOMINATOR, _average_precision_sql),
    kernel=_average_precision,
    aliases=("map", "ap"),
    options=(AP_DENOMINATOR,),
    peers="Same as trec_eval's map_cut_k and ranx's map@k. Hivemall's code divides by the "
    "number of hits found instead (see the hivemall schema; denominator := 'hits').",
)

MRR = Metric(
    name="mrr",
    summary="Reciprocal rank of the first hit in the top K.",
    formula="1 / (position of the first hit), 0 when the top K has no hit",
    undefined="NULL when truth has no item.",
    sql="CASE WHEN {n} = 0 THEN NULL ELSE coalesce(1.0 / list_min({pos}), 0.0) END",
    kernel=_mrr,
    aliases=("rr", "recip_rank"),
    peers="Same as trec_eval's recip_rank (with a cut-off) and ranx's mrr@k.",
)

HITRATE = Metric(
    name="hitrate",
    summary="1 when the top K holds at least one hit, else 0.",
    formula="1 if hits > 0 else 0",
    undefined="NULL when truth has no item.",
    sql="CASE WHEN {n} = 0 THEN NULL WHEN len({pos}) > 0 THEN 1.0::DOUBLE ELSE 0.0::DOUBLE END",
    kernel=_hitrate,
    aliases=("hit_rate", "success"),
    peers="Same as ranx's hit_rate@k and trec_eval's success_k.",
)

NDCG = Metric(
    name="ndcg",
    summary="Normalised discounted cumulative gain with binary gains.",
    formula="DCG / IDCG, DCG = sum over hits at position i of 1 / log2(i + 1), "
    "IDCG = sum over i = 1..min(k, |truth|) of 1 / log2(i + 1) (ideal := 'k': over i = 1..k); "
    "0 when the top K has no hit",
    undefined="NULL when truth has no item.",
    # Only the number of ideal hits is chosen, for the reason given in _divided_sql.
    **chosen_sql(IDEAL, {
        "min_k_truth": "least({k}, {n})",
        "k": f"CASE WHEN {{k}} > {IDEAL_K_LIMIT} THEN {ideal_k_error_sql('ndcg', '{k}')} "
        "ELSE {k} END",
    }, _binary_ndcg_sql),
    kernel=_ndcg,
    options=NDCG_OPTIONS,
    aliases=("ndcg_cut",),
    peers="Same as trec_eval's ndcg_cut_k and ranx's ndcg@k for binary judgments. Hivemall's code "
    "also cuts the ideal DCG at len(rec) (see the hivemall schema).",
)

AUC = Metric(
    name="auc",
    summary="Area under the ROC curve of the top K: the share of (hit, non-hit) pairs ranked "
    "hit first.",
    formula="sum over hits of (non-hits ranked below it) / (hits * (K - hits))",
    undefined="NULL when the top K lacks either hits or non-hits.",
    # With h hits at positions p_j (j = rank among hits), the non-hits below hit j number
    # (K - p_j) - (h - j); summed over j that is h K - sum(p) - h (h - 1) / 2: no sort needed.
    sql="CASE WHEN len({pos}) = 0 OR len({pos}) = {K} THEN NULL "
    "ELSE (len({pos}) * {K} - list_sum({pos}) - len({pos}) * (len({pos}) - 1) // 2) "
    "/ (len({pos}) * ({K} - len({pos}))) END",
    kernel=_auc,
    peers="scikit-learn's roc_auc_score on the top K with hits as positives. Hivemall divides "
    "by hits * (k - hits) with the raw k (see the hivemall schema).",
)

# --- Elliot's MAP and MAR: precision@i and recall@i averaged over the cut-offs i = 1..k -----------
# A hit at position p counts in precision@i for every i in p..k, 1 / i each: the sum over i of
# precision@i is the sum over the hits of H(k) - H(p - 1), H the harmonic numbers; in recall@i
# it counts k - p + 1 times. Both forms are closed, so the cost is that of the hits, not of k.

# H(m) for m below this is read from a constant list (exact to the last bit); from it on,
# Euler-Maclaurin's series to 1 / (120 m^4), whose next term, 1 / (252 m^6), is below 1e-15.
_HARMONIC_TABLE_SIZE = 128
_EULER_GAMMA = 0.5772156649015329


@cache
def _harmonic_values() -> tuple[float, ...]:
    """H(0), ..., H(_HARMONIC_TABLE_SIZE - 1): 1.0 / i added in order from H(0) = 0.0, the
    doubles ``np.cumsum(1.0 / np.arange(1, size))`` gives (its sum runs in order), without numpy:
    the SQL below is built when the module is imported (issue 32)."""
    values = [0.0]
    for i in range(1, _HARMONIC_TABLE_SIZE):
        values.append(values[-1] + 1.0 / i)
    return tuple(values)


@cache
def _harmonic_table() -> np.ndarray:
    """``_harmonic_values`` as a float64 array, made on the first kernel call."""
    return np.array(_harmonic_values(), dtype=np.float64)


def _harmonic(m: np.ndarray) -> np.ndarray:
    """H(m) = sum_{i=1..m} 1 / i (H(0) = 0), elementwise."""
    large = np.maximum(m, _HARMONIC_TABLE_SIZE).astype(np.float64)
    series = (np.log(large) + _EULER_GAMMA + 1 / (2 * large) - 1 / (12 * large ** 2)
              + 1 / (120 * large ** 4))
    return np.where(m < _HARMONIC_TABLE_SIZE,
                    _harmonic_table()[np.minimum(m, _HARMONIC_TABLE_SIZE - 1)], series)


def _harmonic_sql(m: str) -> str:
    """The SQL of ``_harmonic`` over the integer expression ``m`` (the list is 1-based)."""
    table = ", ".join(f"{v:.17e}" for v in _harmonic_values())
    return (f"CASE WHEN {m} < {_HARMONIC_TABLE_SIZE} THEN [{table}][{m} + 1] "
            f"ELSE ln({m}) + {_EULER_GAMMA!r} + 1 / (2 * ({m})::DOUBLE) "
            f"- 1 / (12 * ({m})::DOUBLE ^ 2) + 1 / (120 * ({m})::DOUBLE ^ 4) END")


def _mean_precision(h: Hits) -> np.ndarray:
    hits = h.counts
    summed = hits * _harmonic(h.k) - h.row_sum(_harmonic(h.positions - 1))
    return _where_defined(h, (h.n > 0) & (h.k > 0), _ratio(summed, h.k))


def _mean_recall(h: Hits) -> np.ndarray:
    summed = h.row_sum(np.repeat(h.k, h.counts) - h.positions + 1.0)
    return _where_defined(h, (h.n > 0) & (h.k > 0), _ratio(summed, h.k * h.n))


_MEAN_UNDEFINED = ("NULL when truth has no item (Elliot leaves such a user out) or k is 0 (k "
                   "omitted with an empty rec).")
_MEAN_PEERS = ("a hit counts once: a duplicate of a recommended item is a miss (Elliot counts "
               "each copy of a relevant item, but its lists, a model's top k, hold none). "
               "Elliot evaluates only the users it has a list for; an empty rec gives 0 here.")

MEAN_PRECISION_AT = Metric(
    name="mean_precision_at",
    summary="The mean of precision@1 .. precision@k over every cut-off, hit or not (Elliot's "
    "MAP).",
    formula="(1 / k) sum_{i=1..k} hits(i) / i, hits(i) the hits in the top i; places past the "
    "end of a list shorter than k are misses (precision@i divides by i, not by min(i, len(rec)))",
    undefined=_MEAN_UNDEFINED,
    sql=f"CASE WHEN {{n}} = 0 OR {{k}} = 0 THEN NULL ELSE (len({{pos}}) * "
    f"{_harmonic_sql('{k}')} - coalesce(list_sum(list_transform({{pos}}, lambda p: "
    f"{_harmonic_sql('p - 1')})), 0)) / {{k}} END",
    kernel=_mean_precision,
    peers="Elliot's MAP (elliot:MAP@k), not trec_eval's or RecTools' MAP (average_precision, "
    "which sums precision at the hits only); " + _MEAN_PEERS,
    source="Elliot (Anelli et al., SIGIR 2021), elliot/evaluation/metrics/accuracy/map/map.py",
)

MEAN_RECALL_AT = Metric(
    name="mean_recall_at",
    summary="The mean of recall@1 .. recall@k over every cut-off (Elliot's MAR).",
    formula="(1 / k) sum_{i=1..k} hits(i) / |truth|, hits(i) the hits in the top i; equal to "
    "sum over the hits at position p of (k - p + 1), divided by k |truth|; places past the end "
    "of a list shorter than k add no hit",
    undefined=_MEAN_UNDEFINED,
    sql="CASE WHEN {n} = 0 OR {k} = 0 THEN NULL ELSE coalesce(list_sum(list_transform({pos}, "
    "lambda p: {k} - p + 1)), 0) / ({k} * {n}) END",
    kernel=_mean_recall,
    peers="Elliot's MAR (elliot:MAR@k); " + _MEAN_PEERS,
    source="Elliot (Anelli et al., SIGIR 2021), elliot/evaluation/metrics/accuracy/mar/mar.py",
)

METRICS = (PRECISION_AT, RECALL_AT, AVERAGE_PRECISION, MRR, HITRATE, AUC, NDCG,
           MEAN_PRECISION_AT, MEAN_RECALL_AT)


# --- the same metrics over MAP truth (item -> grade) ---------------------------------------------

MIN_GRADE = Option(
    "min_grade", None,
    "relevant means grade >= min_grade (trec_eval's -l, ir_measures' rel=); NULL: grade > 0 "
    "(trec_eval's default on its integer grades). A negative grade is never relevant: trec_eval "
    "reads it as 'in the pool but unjudged'.",
    bounds=Bounds(nullable=True),
)


def graded_truth_overload(metric: Metric) -> Metric:
    """The MAP-truth overload of a binary metric (``inputs="hits"``): the same formula over the
    items whose grade is relevant (``min_grade``), matched as text as the graded metrics match
    (``duckrank.render.macros``; ``duckrank.matching.arrays.match_graded_hits``)."""
    kernel = metric.kernel

    def on_relevant_items(hits: Hits, *, min_grade: float | None = None, **options) -> np.ndarray:
        # min_grade was applied by the matching step that made ``hits``.
        return kernel(hits, **options)

    return replace(
        metric, inputs="graded_hits", truth_type=GRADED_TRUTH,
        options=(*metric.options, MIN_GRADE), kernel=on_relevant_items if kernel else None,
    )
