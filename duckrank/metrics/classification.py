"""The AUC family and the classification-style metrics of the recommender libraries (issue 28):
per-user records over hit positions (``f_beta``, ``mcc``, ``accuracy``, ``partial_auc``,
``pap``, ``lauc``) and the aggregates that are defined over a whole group (``gauc``,
``roc_auc``).

Per-user records read the "hits" input kind: ``{pos}`` the positions of the hits in the top K
(any order: sorted here where the formula needs the hits' order), ``{K}`` = min(k, len(rec)),
``{k}`` the cut-off (len(rec) when omitted), ``{n}`` the distinct relevant items (duplicates in
rec count once, as everywhere in duckrank: ``duckrank.matching``). Every value is NULL when rec,
truth or k is NULL; each record says when else.

Where a peer's number needs what a ranked list does not hold (RecTools' MCC and Accuracy the
catalogue size, Elliot's AUCs the user's candidate items), it is an option the caller gives,
which may be a column in SQL (``mcc(rec, truth, 10, catalog_size := n_items)``); left out
(NULL, its default) the value is NULL, never a guess. The peers' ``k`` of the partial AUCs counts
negatives, not list places: it is the option ``negatives`` here, and the third argument keeps its
meaning (the cut-off of rec).
"""

from __future__ import annotations

from collections.abc import Callable

from duckrank.lazy import LazyModule
from duckrank.matching.arrays import Hits
from duckrank.metrics.pointwise import Aggregate
from duckrank.metrics.record import Bounds, Choice, Metric, Option, check_options

np = LazyModule("numpy")

RECTOOLS = "RecTools 0.19 (MTS), rectools/metrics/{}.py"
ELLIOT = "Elliot (Anelli et al., SIGIR 2021), elliot/evaluation/metrics/accuracy/{}.py"
RECBOLE = "RecBole 1.2 (Zhao et al., CIKM 2021), recbole/evaluator/metrics.py"


def _valid(h: Hits, values: np.ndarray, defined: np.ndarray | bool = True) -> np.ndarray:
    return np.where(h.valid & defined, values, np.nan)


def _quotient(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    return numerator / np.where(denominator == 0, 1, denominator)


def _misses_above(h: Hits) -> np.ndarray:
    """For each hit (flattened, rows in order, positions ascending): the non-hits ranked above
    it, position - (its rank among the hits)."""
    return h.positions - h.rank_of_hit


# --- F-beta (RecTools' F1Beta, Elliot's F1) -------------------------------------------------------

BETA = Option("beta", 1.0, "the weight of recall: beta = 1 is F1 (RecTools' F1Beta(beta=...))",
              bounds=Bounds(0, open_low=True))
F_DENOMINATOR = Option(
    "denominator", "k", "what precision divides the hits by: 'k' (RecTools, Elliot, ranx: a list "
    "shorter than k counts its missing places as misses); 'returned' = K = min(k, len(rec))",
    choices=("k", "returned"),
)


def _f_beta(h: Hits, *, beta: float = 1.0, denominator: str = "k") -> np.ndarray:
    check_options("f_beta", (BETA, F_DENOMINATOR), {"beta": beta, "denominator": denominator})
    places = h.k if denominator == "k" else h.K
    square = beta * beta
    hits = h.counts.astype(np.float64)
    # (1 + b^2) P R / (b^2 P + R) with P = hits / places, R = hits / n is
    # (1 + b^2) hits / (b^2 n + places) when hits > 0, and 0 (the peers' value) without hits.
    value = _quotient((1 + square) * hits, square * h.n + places)
    return _valid(h, value, (h.n > 0) & (places > 0))


F_BETA = Metric(
    name="f_beta",
    summary="F-beta@k (RecTools' F1Beta, Elliot's F1): the weighted harmonic mean of "
    "precision@k and recall@k.",
    formula="(1 + beta^2) P R / (beta^2 P + R), P = hits / k (denominator := 'returned': "
    "hits / K), R = hits / |truth|; equal to (1 + beta^2) hits / (beta^2 |truth| + k); 0 when "
    "the top K has no hit",
    undefined="NULL when truth has no item (RecTools divides by 0 there) or the precision's "
    "denominator is 0 (k omitted with an empty rec).",
    sql="CASE WHEN {n} = 0 OR (CASE WHEN denominator::VARCHAR = 'k' THEN {k} ELSE {K} END) = 0 "
    "THEN NULL ELSE (1 + beta::DOUBLE * beta::DOUBLE) * len({pos}) / (beta::DOUBLE * "
    "beta::DOUBLE * {n} + CASE WHEN denominator::VARCHAR = 'k' THEN {k} ELSE {K} END) END",
    kernel=_f_beta,
    aliases=("f1beta", "fbeta"),
    options=(BETA, F_DENOMINATOR),
    peers="RecTools' F1Beta(k, beta); Elliot's F1 (beta 1). Elliot's ExtendedF1 is the harmonic "
    "mean of two other metrics (its configuration names them): 2 a b / (a + b) over any two "
    "duckrank values. f1_at (ranx) is f_beta with beta 1.",
    source=RECTOOLS.format("classification") + "; " + ELLIOT.format("f1/f1"),
)


# --- MCC (RecTools) -------------------------------------------------------------------------------

CATALOG_SIZE = Option(
    "catalog_size", None, "the number of items that could be recommended (RecTools' "
    "len(catalog)), which gives the true negatives. May be a column. NULL (the default): the "
    "value is NULL",
    bounds=Bounds(1, nullable=True),
)


# A catalogue smaller than the list and the relevant items it misses gives a negative TN: an
# error, in both forms with the same text.
_SMALL_CATALOG = "catalog_size must be at least k plus the relevant items not recommended, got "


def _small_catalog_sql(function: str) -> str:
    """The CASE branch that refuses a negative TN (the kernels' twin: ``_confusion``)."""
    return (f"WHEN catalog_size::DOUBLE - {{k}} - ({{n}} - len({{pos}})) < 0 THEN "
            f"error('{function}: {_SMALL_CATALOG}' || catalog_size::VARCHAR) ")


def _confusion(function: str, h: Hits, catalog_size: float) -> tuple[np.ndarray, ...]:
    """RecTools' confusion counts per row (rectools/metrics/classification.py, calc_confusions):
    TP, FP = k - TP (k, not K), FN = |truth| - TP, TN = catalog_size - k - FN."""
    tp = h.counts.astype(np.float64)
    fn = h.n - tp
    tn = catalog_size - h.k - fn
    if np.any(h.valid & (h.n > 0) & (tn < 0)):
        raise ValueError(f"{function}: {_SMALL_CATALOG}{catalog_size!r}")
    return tp, h.k - tp, fn, tn


def _mcc(h: Hits, *, catalog_size: float | None = None) -> np.ndarray:
    check_options("mcc", (CATALOG_SIZE,), {"catalog_size": catalog_size})
    if catalog_size is None:
        return np.full(len(h.K), np.nan)
    tp, fp, fn, tn = _confusion("mcc", h, catalog_size)
    denominator = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    value = _quotient(tp * tn - fp * fn, denominator)
    return _valid(h, value, h.n > 0)


MCC = Metric(
    name="mcc",
    summary="Matthews correlation coefficient@k (RecTools' MCC): the correlation between "
    "'recommended in the top k' and 'relevant' over the catalogue.",
    formula="(TP TN - FP FN) / sqrt((TP + FP)(TP + FN)(TN + FP)(TN + FN)), TP = hits, FP = k - "
    "hits, FN = |truth| - hits, TN = catalog_size - k - FN; 0 when the denominator is 0 "
    "(RecTools)",
    undefined="NULL when truth has no item or catalog_size is NULL (not given). An error when "
    "catalog_size is smaller than k + FN (a negative TN).",
    sql="CASE WHEN {n} = 0 OR catalog_size IS NULL THEN NULL " + _small_catalog_sql("mcc")
    + "ELSE list_transform([struct_pack(tp := len({pos})::DOUBLE, "
    "fp := ({k} - len({pos}))::DOUBLE, fn := ({n} - len({pos}))::DOUBLE, tn := "
    "catalog_size::DOUBLE - {k} - ({n} - len({pos})))], lambda c: CASE WHEN (c.tp + c.fp) * "
    "(c.tp + c.fn) * (c.tn + c.fp) * (c.tn + c.fn) = 0 THEN 0.0 ELSE (c.tp * c.tn - c.fp * "
    "c.fn) / sqrt((c.tp + c.fp) * (c.tp + c.fn) * (c.tn + c.fp) * (c.tn + c.fn)) END)[1] END",
    kernel=_mcc,
    options=(CATALOG_SIZE,),
    peers="RecTools' MCC(k) with catalog = the items that could be recommended (FP = k - hits "
    "even when rec is shorter than k, as RecTools counts).",
    source=RECTOOLS.format("classification"),
)


def _accuracy(h: Hits, *, catalog_size: float | None = None) -> np.ndarray:
    check_options("accuracy", (CATALOG_SIZE,), {"catalog_size": catalog_size})
    if catalog_size is None:
        return np.full(len(h.K), np.nan)
    tp, _, _, tn = _confusion("accuracy", h, catalog_size)
    return _valid(h, (tp + tn) / catalog_size, h.n > 0)


ACCURACY = Metric(
    name="accuracy",
    summary="Accuracy@k (RecTools' Accuracy): the share of the catalogue classified right by "
    "'recommended in the top k', relevant items recommended plus others not recommended.",
    formula="(TP + TN) / catalog_size, TP = hits, TN = catalog_size - k - FN, FN = |truth| - "
    "hits; equal to (catalog_size - k - |truth| + 2 hits) / catalog_size. k, not K: a list "
    "shorter than k counts its missing places as recommended non-relevant items (RecTools' FP = "
    "k - TP)",
    undefined="NULL when truth has no item or catalog_size is NULL (not given). An error when "
    "catalog_size is smaller than k + FN (a negative TN).",
    sql="CASE WHEN {n} = 0 OR catalog_size IS NULL THEN NULL " + _small_catalog_sql("accuracy")
    + "ELSE (catalog_size::DOUBLE - {k} - {n} + 2 * len({pos})) / catalog_size::DOUBLE END",
    kernel=_accuracy,
    options=(CATALOG_SIZE,),
    peers="RecTools' Accuracy(k) with catalog = the items that could be recommended; its users "
    "are those of its interactions (truth), so an empty truth is NULL here. Not ir_measures' "
    "Accuracy, which is the AUC of the top K (auc).",
    source=RECTOOLS.format("classification"),
)


# --- partial AUC and pAp (RecTools) ---------------------------------------------------------------

NEGATIVES = Option(
    "negatives", None, "the number of top-ranked negatives the AUC is taken over (RecTools' k of "
    "PartialAUC and PAP, which is not a list cut-off). NULL (the default): the value is NULL",
    bounds=Bounds(1, nullable=True),
)
INSUFFICIENT = Option(
    "insufficient_handling", "ignore", "what a list too short for the AUC gives (RecTools' "
    "insufficient_handling): a list that holds fewer than `negatives` non-relevant items and "
    "misses a relevant item (RecTools' 'insufficient' user), whose missing items count as ranked "
    "below every negative. 'ignore' (RecTools' default): that value; 'raise': an error giving "
    "the list's counts; 'exclude': NULL, which avg() skips as RecTools leaves the user out of "
    "its mean. The list is rec's top K: leave k out for RecTools' reading",
    choices=("ignore", "raise", "exclude"),  # RecTools' order
)
_PARTIAL_OPTIONS = (NEGATIVES, INSUFFICIENT)
_PARTIAL_UNDEFINED = (
    "NULL when truth has no item or negatives is NULL (not given); with insufficient_handling "
    ":= 'exclude', NULL for a list of fewer than N non-relevant items (K - hits < N) that misses "
    "a relevant item (hits < |truth|), and with 'raise' an error there."
)
# The 'raise' error around its three counts (the non-relevant items listed, the relevant items
# missed, the relevant items): one wording for the SQL and the kernels (``_insufficient_text``).
_INSUFFICIENT_TEXT = (
    ": insufficient_handling is 'raise' and a list holds ",
    " non-relevant items, fewer than negatives, and misses ", " of its ",
    " relevant items; recommend more items, or set insufficient_handling := 'exclude'",
)


def _insufficient_text(function: str, counts: tuple[str, str, str],
                       literal: Callable[[str], str] = str) -> str:
    """The 'raise' error with ``counts`` (text) in place, its own words passed through
    ``literal`` (the SQL doubles their quotes, not those of the counts' SQL)."""
    first, *rest = _INSUFFICIENT_TEXT
    return literal(function + first) + "".join(
        count + literal(text) for count, text in zip(counts, rest, strict=True))


def _partial_sql(function: str, value: str) -> dict[str, str | Choice]:
    """The record's ``sql`` and ``choice`` (keyword arguments of ``Metric``): ``value`` (the AUC
    over ``{pos}``, ``{n}`` and ``negatives``) after the NULL cases and RecTools' check of the
    list (``INSUFFICIENT``). At 'ignore' the check is left out: inside the per-row lambda its
    test of the option cost the default path 10-15% (1,000,000 lists of 20, negatives 5)."""
    counts = tuple(f"' || ({count})::VARCHAR || '"
                   for count in ("{K} - len({pos})", "{n} - len({pos})", "{n}"))
    message = _insufficient_text(function, counts, lambda text: text.replace("'", "''"))
    undefined = "CASE WHEN {n} = 0 OR negatives IS NULL THEN NULL "
    checked = (
        # IN the other choices rather than <> the default: the default's literal stays out of
        # the plan of a non-default call (tests/render/test_default_path.py).
        f"{undefined}WHEN insufficient_handling::VARCHAR IN ('raise', 'exclude') AND "
        "{K} - len({pos}) < "
        "negatives::DOUBLE AND len({pos}) < {n} THEN CASE WHEN insufficient_handling::VARCHAR "
        f"= 'exclude' THEN NULL ELSE error('{message}') END "
    )
    return {"sql": f"{checked}ELSE {value} END",
            "choice": Choice(INSUFFICIENT, f"{undefined}ELSE {value} END")}


def _partial(h: Hits, function: str, negatives: float | None, insufficient_handling: str,
             capped: bool) -> np.ndarray:
    check_options(function, _PARTIAL_OPTIONS,
                  {"negatives": negatives, "insufficient_handling": insufficient_handling})
    if negatives is None:
        return np.full(len(h.K), np.nan)
    misses = _misses_above(h)
    gains = np.maximum(negatives - misses, 0.0)
    if capped:  # pAp: only the first `negatives` hits
        gains = np.where(h.rank_of_hit <= negatives, gains, 0.0)
    positives = np.minimum(h.n, negatives) if capped else h.n
    value = _valid(h, _quotient(h.row_sum(gains), positives * negatives), h.n > 0)
    if insufficient_handling == "ignore":
        return value
    listed, missed = h.K - h.counts, h.n - h.counts
    insufficient = h.valid & (h.n > 0) & (listed < negatives) & (missed > 0)
    if insufficient_handling == "raise" and insufficient.any():
        row = np.flatnonzero(insufficient)[0]
        raise ValueError(_insufficient_text(
            function, (str(listed[row]), str(missed[row]), str(h.n[row]))))
    return np.where(insufficient, np.nan, value)


PARTIAL_AUC = Metric(
    name="partial_auc",
    summary="Partial AUC (RecTools' PartialAUC): the ROC AUC of every relevant item against the "
    "`negatives` top-ranked non-relevant items.",
    formula="sum over the hits j (ascending position p_j, rank j among the hits, m_j = p_j - j "
    "non-hits above it) of max(N - m_j, 0), divided by |truth| N, N = negatives; relevant items "
    "not in the top K count as ranked below every negative",
    undefined=_PARTIAL_UNDEFINED,
    **_partial_sql("partial_auc", "coalesce(list_sum(list_transform(list_sort({pos}), "
                   "lambda p, j: greatest(negatives::DOUBLE - (p - j), 0))), 0) "
                   "/ ({n} * negatives::DOUBLE)"),
    kernel=lambda h, *, negatives=None, insufficient_handling="ignore": _partial(
        h, "partial_auc", negatives, insufficient_handling, False),
    aliases=("pauc",),
    options=_PARTIAL_OPTIONS,
    peers="RecTools' PartialAUC(k=negatives, insufficient_handling=...) on the whole list "
    "(leave the cut-off out: a cut at k drops hits RecTools counts, and its check reads the "
    "whole list).",
    source=RECTOOLS.format("auc") + "; Hiranandani et al., 'Optimization and analysis of the "
    "pAp@k metric for recommender systems', ICML 2020",
)

PAP = Metric(
    name="pap",
    summary="pAp@k (RecTools' PAP): the AUC of the top min(negatives, |truth|) ranked relevant "
    "items against the `negatives` top-ranked non-relevant ones.",
    formula="sum over the hits j <= N (rank among the hits) of max(N - m_j, 0), m_j the non-hits "
    "above hit j, divided by min(|truth|, N) N, N = negatives",
    undefined=_PARTIAL_UNDEFINED,
    **_partial_sql("pap", "coalesce(list_sum(list_transform(list_sort({pos}), lambda p, j: "
                   "CASE WHEN j <= negatives::DOUBLE THEN greatest(negatives::DOUBLE - "
                   "(p - j), 0) ELSE 0 END)), 0) "
                   "/ (least({n}, negatives::DOUBLE) * negatives::DOUBLE)"),
    kernel=lambda h, *, negatives=None, insufficient_handling="ignore": _partial(
        h, "pap", negatives, insufficient_handling, True),
    options=_PARTIAL_OPTIONS,
    peers="RecTools' PAP(k=negatives, insufficient_handling=...) on the whole list.",
    source=RECTOOLS.format("auc") + "; Hiranandani et al., ICML 2020",
)


# --- Elliot's limited AUC (and its GAUC per user) -------------------------------------------------

CANDIDATES = Option(
    "candidates", None, "the items the user could be recommended: Elliot's num_items - "
    "|the user's training items|. May be a column. NULL (the default): the value is NULL",
    bounds=Bounds(1, nullable=True),
)
LAUC_DENOMINATOR = Option(
    "denominator", "min_k_truth", "what the sum is divided by: 'min_k_truth' = min(k, |truth|) "
    "(Elliot's LAUC); 'truth' = |truth| (Elliot's GAUC, with k left out)",
    choices=("min_k_truth", "truth"),
)


def _lauc(h: Hits, *, candidates: float | None = None,
          denominator: str = "min_k_truth") -> np.ndarray:
    check_options("lauc", (CANDIDATES, LAUC_DENOMINATOR),
                  {"candidates": candidates, "denominator": denominator})
    if candidates is None:
        return np.full(len(h.K), np.nan)
    negatives = candidates - h.n + 1.0  # Elliot's neg_num, its + 1 included
    if np.any(h.valid & (h.n > 0) & (negatives < 1)):
        raise ValueError(f"lauc: candidates must be at least the relevant items, got "
                         f"{candidates!r}")
    row = h.row_of_hit
    gains = (negatives[row] - _misses_above(h)) / negatives[row]
    divisor = np.minimum(h.k, h.n) if denominator == "min_k_truth" else h.n
    return _valid(h, _quotient(h.row_sum(gains), divisor), (h.n > 0) & (divisor > 0))


LAUC = Metric(
    name="lauc",
    summary="Limited AUC@k as Elliot computes it (Schroeder et al.): each hit in the top K "
    "scores the share of the user's negatives it is ranked above.",
    formula="sum over the hits in the top K of (N - m_j) / N, m_j the non-hits above hit j, "
    "N = candidates - |truth| + 1 (Elliot's count of negatives, its + 1 kept), divided by "
    "min(k, |truth|) (denominator := 'truth': by |truth|)",
    undefined="NULL when truth has no item, the divisor is 0 or candidates is NULL (not given). "
    "An error when candidates is smaller than |truth|.",
    sql="CASE WHEN {n} = 0 OR candidates IS NULL OR (CASE WHEN denominator::VARCHAR = 'truth' "
    "THEN {n} ELSE least({k}, {n}) END) = 0 THEN NULL WHEN candidates::DOUBLE < {n} THEN "
    "error('lauc: candidates must be at least the relevant items, got ' || "
    "candidates::VARCHAR) ELSE "
    "coalesce(list_sum(list_transform(list_sort({pos}), lambda p, j: (candidates::DOUBLE - {n} "
    "+ 1 - (p - j)) / (candidates::DOUBLE - {n} + 1))), 0) / CASE WHEN denominator::VARCHAR = "
    "'truth' THEN {n} ELSE least({k}, {n}) END END",
    kernel=_lauc,
    options=(CANDIDATES, LAUC_DENOMINATOR),
    peers="Elliot's LAUC (denominator 'min_k_truth', k its cutoff) and, per user, its GAUC "
    "(denominator 'truth', k left out; gauc(..., weighting := 'users') averages it).",
    source=ELLIOT.format("AUC/lauc") + " and AUC/gauc.py; Schroeder, Thiele and Lehner, "
    "'Setting goals and choosing metrics for recommender system evaluations', UCERSTI 2011",
)

METRICS = (F_BETA, MCC, ACCURACY, PARTIAL_AUC, PAP, LAUC)


# --- aggregates: GAUC and ROC AUC over scores -----------------------------------------------------

WEIGHTING = Option(
    "weighting", "positives", "how the users' AUCs are averaged: 'positives' weighs each by "
    "its hits (RecBole), 'users' counts each once (Elliot)", choices=("positives", "users"),
)


def _gauc_sql() -> str:
    # Both forms are aggregates of the rows; the FILTER on the constant option leaves the other
    # form's per-row work undone (DuckDB evaluates a filtered aggregate's input only on the
    # rows that pass).
    positives = "duckrank_gauc_hits(rec, truth)"
    recbole = (
        f"sum(auc(rec, truth) * {positives}) FILTER (WHERE weighting::VARCHAR = 'positives') / "
        f"sum({positives}) FILTER (WHERE weighting::VARCHAR = 'positives' AND "
        "auc(rec, truth) IS NOT NULL)"
    )
    elliot = (
        "avg(lauc(rec, truth, candidates := candidates, denominator := 'truth')) "
        "FILTER (WHERE weighting::VARCHAR = 'users')"
    )
    invalid, error = WEIGHTING.error_sql("gauc")
    return (
        f"CASE WHEN {invalid} THEN {error} "
        f"WHEN weighting::VARCHAR = 'positives' THEN {recbole} ELSE {elliot} END"
    )


GAUC_HELPERS = (
    # The hits of the whole list (num_rel_ret with k left out), RecBole's pos_len when rec ranks
    # every candidate.
    "CREATE OR REPLACE MACRO duckrank_gauc_hits(rec, truth) AS num_rel_ret(rec, truth)",
)

GAUC = Aggregate(
    name="gauc",
    parameters=f"rec, truth, candidates := NULL, weighting := {WEIGHTING.sql_default()}",
    summary="Group AUC (Zhou et al., KDD 2018): per-user AUCs averaged over the users, weighted "
    "by their positives (RecBole) or not (Elliot).",
    formula="weighting := 'positives' (RecBole's GAUC): sum_u auc_u P_u / sum_u P_u, auc_u = "
    "auc(rec, truth) over the whole list, P_u the hits in rec, over the users whose list holds "
    "both hits and non-hits; 'users' (Elliot's GAUC): the mean over users with a relevant item "
    "of lauc(rec, truth, candidates := candidates, denominator := 'truth')",
    undefined="NULL when no row counts ('users' without candidates: none counts).",
    sql=_gauc_sql(),
    kernel=None,
    peers="RecBole's GAUC when rec is the user's full ranking of the candidate items (every "
    "positive ranked; RecBole averages the ranks of tied scores, a list has no ties); Elliot's "
    "GAUC with weighting 'users'.",
    source=RECBOLE + " (GAUC); " + ELLIOT.format("AUC/gauc"),
)


_COUNTED = "score IS NOT NULL AND label IS NOT NULL"


def _score_label_checks(function: str) -> str:
    """CASE branches: a label other than 0/1 (booleans are 0/1) or a non-finite score among the
    counted rows is an error naming the function and the value."""
    bad_label = (f"min(label::DOUBLE) FILTER (WHERE {_COUNTED} AND label::DOUBLE NOT IN (0, 1))")
    total = f"sum(score::DOUBLE) FILTER (WHERE {_COUNTED})"
    return (
        f"WHEN {bad_label} IS NOT NULL THEN error('{function}: label must be 0 or 1, got ' || "
        f"{bad_label}::VARCHAR) "
        f"WHEN NOT isfinite({total}) THEN error('{function}: score must be finite: its sum is ' "
        f"|| {total}::VARCHAR || ' (a NaN or an infinite value, or values too large to add)') "
    )


def _roc_auc_sql() -> str:
    """The Mann-Whitney count from two sorted label lists: with the labels sorted by (score,
    label) ascending, sum(position of each positive) - P(P + 1)/2 counts the negatives scored at
    or below each positive; with label descending within a score, strictly below. Their mean
    gives tied pairs half credit (scikit-learn's trapezoids)."""
    label01 = "(label::DOUBLE = 1)::INTEGER"
    positives = f"count(*) FILTER (WHERE {_COUNTED} AND label::DOUBLE = 1)"
    negatives = f"count(*) FILTER (WHERE {_COUNTED} AND label::DOUBLE = 0)"

    def rank_sum(order: str) -> str:
        labels = f"list({label01} ORDER BY score, {label01} {order}) FILTER (WHERE {_COUNTED})"
        return f"list_sum(list_transform({labels}, lambda l, i: l * i::HUGEINT))"

    triangle = f"{positives} * ({positives} + 1) // 2"
    return (
        f"CASE {_score_label_checks('roc_auc')}"
        f"WHEN {positives} = 0 OR {negatives} = 0 THEN NULL::DOUBLE "
        f"ELSE (({rank_sum('ASC')} - {triangle}) + ({rank_sum('DESC')} - {triangle}))::DOUBLE "
        f"/ 2 / ({positives} * {negatives}) END"
    )


def _pr_auc_sql() -> str:
    """Average precision from sorted lists, without a running sum (list functions have none):
    the rows sorted by score descending, negatives first within a tie (``a``); the positions of
    its positives in order (``q``: the k-th is the k-th positive, so k positives are scored at
    or above it); the positives that end their tie group (``g``: k and its position p, the rows
    scored >= its score). Each group adds (k - the previous group's k) k / p; the sum is
    divided by the positives. Measured: 10,000,000 rows in 9.6 s, where a window over the
    unnested rows in a correlated subquery took 27 s for 1,000,000 and ran out of memory per
    user (benchmarks/RESULTS.md)."""
    rows = (f"list({{'s': -score::DOUBLE, 'l': (label::DOUBLE = 1)::INTEGER}}) "
            f"FILTER (WHERE {_COUNTED})")
    ends = ("list_filter(list_transform(q, lambda e, k: CASE WHEN k = len(q) OR q[k + 1].s <> e.s "
            "THEN {'k': k, 'p': e.p} END), lambda x: x IS NOT NULL)")
    positives = ("list_filter(list_transform(a, lambda e, i: CASE WHEN e.l = 1 THEN "
                 "{'p': i, 's': e.s} END), lambda x: x IS NOT NULL)")
    value = (
        f"list_transform([list_sort({rows})], lambda a: list_transform([{positives}], lambda q: "
        f"list_transform([{ends}], lambda g: list_sum(list_transform(g, lambda e, m: (e.k - "
        "CASE WHEN m = 1 THEN 0 ELSE g[m - 1].k END) * e.k / e.p)) / len(q))[1])[1])[1]"
    )
    positive_rows = f"count(*) FILTER (WHERE {_COUNTED} AND label::DOUBLE = 1)"
    return (
        f"CASE {_score_label_checks('pr_auc')}"
        f"WHEN {positive_rows} = 0 THEN NULL::DOUBLE ELSE {value} END"
    )


PR_AUC = Aggregate(
    name="pr_auc",
    parameters="score, label",
    summary="Area under the precision-recall curve as average precision (scikit-learn's "
    "average_precision_score) of scores against 0/1 labels over the rows of a group.",
    formula="(1 / P) sum over the rows labelled 1 of TP(s) / N(s), TP(s) and N(s) the positive "
    "and all rows scored >= that row's score s (tied scores are one threshold: scikit-learn's "
    "sum over thresholds of (R_n - R_n-1) P_n), P the rows labelled 1",
    undefined="NULL when the group has no positive row (scikit-learn warns and gives 0). Rows "
    "with a NULL score or label are skipped; another label than 0/1 (booleans read as 0/1) or a "
    "non-finite score is an error naming the value.",
    sql=_pr_auc_sql(),
    kernel=None,
    peers="scikit-learn's average_precision_score; torchmetrics' BinaryAveragePrecision. Per "
    "ranked list (rec, truth) it is average_precision(rec, truth) with k left out, when rec ranks "
    "every relevant item. Not the trapezoidal area of scikit-learn's auc(recall, precision).",
    source="scikit-learn 1.9, sklearn/metrics/_ranking.py (average_precision_score)",
)


ROC_AUC = Aggregate(
    name="roc_auc",
    parameters="score, label",
    summary="ROC AUC of scores against 0/1 labels over the rows of a group (GROUP BY user: the "
    "per-user AUC of pointwise predictions).",
    formula="(pairs (positive, negative) with the positive scored higher + half the tied pairs) "
    "/ (P N), P and N the rows labelled 1 and 0",
    undefined="NULL when the group lacks positives or negatives (scikit-learn raises). Rows with "
    "a NULL score or label are skipped; another label than 0/1 (booleans read as 0/1) or a "
    "non-finite score is an error naming the value.",
    sql=_roc_auc_sql(),
    kernel=None,
    peers="scikit-learn's roc_auc_score; torchmetrics' BinaryAUROC; RecBole's AUC (per batch of "
    "all users' scores: one group). hivemall.auc(score, label) is Hivemall's (scores in [0, 1], "
    "labels -1/1 accepted).",
    source="scikit-learn 1.9, sklearn/metrics/_ranking.py (roc_auc_score)",
)

AGGREGATES: tuple[Aggregate, ...] = (GAUC, ROC_AUC, PR_AUC)
