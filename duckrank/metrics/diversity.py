"""The intent-aware (diversity) measures of TREC's ndeval, one record each, as ndeval computes
them (the TREC Web track's ndeval.c, through pyndeval 0.0.8, which ir_measures 0.4.3 runs):
alpha-DCG, alpha-nDCG (Clarke et al., "Novelty and diversity in information retrieval
evaluation", SIGIR 2008), ERR-IA and nERR-IA (Chapelle et al., "Expected reciprocal rank for
graded relevance", CIKM 2009, intent-aware), NRBP and nNRBP (Clarke, Kolla and Vechtomova, "An
effectiveness measure for ambiguous and underspecified queries", ICTIR 2009), P-IA and MAP-IA
(Agrawal et al., "Diversifying search results", WSDM 2009) and subtopic recall (Zhai, Cohen and
Lafferty, SIGIR 2003).

They read subtopic qrels (``inputs="subtopics"``, ``duckrank.matching.subtopics``): truth is a
LIST of STRUCT(subtopic, item, grade); relevant to a subtopic means grade >= min_grade (ndeval's
binary reading, ir_measures' rel, 1 by default). With N the subtopics that have a relevant item,
r(i, s) the ranks above i relevant to s and J(i, s) = 1 when rec's item at rank i is relevant to
s, the gain of rank i is g(i) = sum_s J(i, s) (1 - alpha)^r(i, s). ndeval's normalisations:

* alpha-DCG@k and ERR-IA@k are divided by N times the most one subtopic could gain, as ndeval
  does (a "collection-independent" normalisation: a list whose every item is relevant to every
  subtopic scores 1);
* alpha-nDCG@k, nERR-IA@k and nNRBP are divided by the same sum over the ideal ranking, built
  greedily (each rank takes the remaining relevant item of the largest gain; equal gains go to
  the item whose id text is largest, ndeval's order, measured against pyndeval).

Every value is NULL for a NULL rec, truth or k, and when N = 0 (no relevant item: ndeval prints
0, and NaN for nNRBP; duckrank's convention for a query without relevant items).
"""

from __future__ import annotations

from duckrank.lazy import LazyModule
from duckrank.matching.subtopics import Subtopics
from duckrank.metrics.record import Bounds, Metric, Option, check_options

np = LazyModule("numpy")

SOURCE = ("ndeval (TREC Web track, ndeval.c) as pyndeval 0.0.8 runs it (ir_measures 0.4.3's "
          "provider), checked against pyndeval; {}")

ALPHA = Option("alpha", 0.5, "how much a subtopic's gain falls each time it is covered again: "
               "rank i gains (1 - alpha)^r for each subtopic already covered r times (ndeval's "
               "-a, ir_measures' alpha)", bounds=Bounds(0, 1))
BETA = Option("beta", 0.5, "NRBP's persistence: rank i is weighted beta^(i - 1) (ndeval's -b, "
              "ir_measures' beta)", bounds=Bounds(0, 1))
MIN_GRADE = Option("min_grade", 1, "relevant to a subtopic means grade >= min_grade (ndeval's "
                   "binary reading; ir_measures' rel)", bounds=Bounds())

# --- numpy ----------------------------------------------------------------------------------------


def _per_row(m: Subtopics, values: np.ndarray, where: np.ndarray | None = None) -> np.ndarray:
    """The sum of ``values`` (one per pair) over each row's pairs within the cut-off."""
    within = m.pair_rank <= m.k[m.pair_row]
    if where is not None:
        within &= where
    return np.bincount(m.pair_row[within], weights=values[within], minlength=len(m.N))


def _defined(m: Subtopics, values: np.ndarray) -> np.ndarray:
    return np.where(m.valid & (m.N > 0), values, np.nan)


def _quotient(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    return np.where(denominator == 0, np.nan, numerator / np.where(denominator == 0, 1,
                                                                      denominator))


def _discount_sums(k: np.ndarray, weight) -> np.ndarray:
    """sum_{i=1..k} weight(i) per row (k >= 0)."""
    largest = int(k.max(initial=0))
    prefix = np.concatenate(([0.0], np.cumsum(weight(np.arange(1, largest + 1, dtype=float)))))
    return prefix[k]


def ideal_gains(m: Subtopics, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """The greedy ideal ranking's gains of every row: (gains, offsets), the row's relevant items
    in the order the greedy takes them. One step per rank for all rows at once (numpy over the
    batch): each row's unused candidate of the largest gain, the first in tie order."""
    rows = len(m.N)
    count = np.bincount(m.candidate_row, minlength=rows)
    offsets = np.concatenate(([0], np.cumsum(count)))
    covered = np.zeros(len(m.relevant), np.int64)
    used = np.zeros(len(m.candidate_row), bool)
    gains = np.zeros(len(m.candidate_row))
    for step in range(int(count.max(initial=0))):
        weights = np.power(1.0 - alpha, covered[m.candidate_subtopic])
        gain = np.bincount(m.candidate_pair, weights=weights, minlength=len(used))
        gain[used] = -np.inf
        active = np.flatnonzero(count > step)
        best = np.maximum.reduceat(gain, offsets[:-1][active]) if len(active) else gain[:0]
        top = np.full(rows, np.inf)
        top[active] = best
        candidates = np.flatnonzero(~used & (gain == top[m.candidate_row]))
        _, first = np.unique(m.candidate_row[candidates], return_index=True)
        chosen = candidates[first]
        gains[offsets[m.candidate_row[chosen]] + step] = gain[chosen]
        used[chosen] = True
        picked = np.zeros(len(used), bool)
        picked[chosen] = True
        np.add.at(covered, m.candidate_subtopic[picked[m.candidate_pair]], 1)
    return gains, offsets


def _ideal_sum(m: Subtopics, alpha: float, weight, cut: np.ndarray) -> np.ndarray:
    """sum_{j <= cut} weight(j) g*(j) per row over the greedy ideal's gains."""
    gains, offsets = ideal_gains(m, alpha)
    rows = np.repeat(np.arange(len(m.N)), np.diff(offsets))
    ranks = np.arange(len(gains)) - offsets[rows] + 1
    within = ranks <= cut[rows]
    return np.bincount(rows[within], weights=(gains * weight(ranks.astype(float)))[within],
                       minlength=len(m.N))


def _log_discount(i: np.ndarray) -> np.ndarray:
    return 1.0 / np.log2(1.0 + i)


def _reciprocal(i: np.ndarray) -> np.ndarray:
    return 1.0 / i


def _gain(m: Subtopics, alpha: float) -> np.ndarray:
    return np.power(1.0 - alpha, m.pair_before.astype(float))


def _collection_normalised(name: str, discount):
    def kernel(m: Subtopics, *, alpha: float = 0.5, min_grade: float = 1) -> np.ndarray:
        check_options(name, (ALPHA, MIN_GRADE), {"alpha": alpha, "min_grade": min_grade})
        value = _per_row(m, _gain(m, alpha) * discount(m.pair_rank.astype(float)))
        best = _discount_sums(m.k, lambda i: np.power(1.0 - alpha, i - 1) * discount(i))
        return _defined(m, _quotient(value, m.N * best))
    return kernel


def _ideal_normalised(name: str, discount):
    def kernel(m: Subtopics, *, alpha: float = 0.5, min_grade: float = 1) -> np.ndarray:
        check_options(name, (ALPHA, MIN_GRADE), {"alpha": alpha, "min_grade": min_grade})
        value = _per_row(m, _gain(m, alpha) * discount(m.pair_rank.astype(float)))
        return _defined(m, _quotient(value, _ideal_sum(m, alpha, discount, m.k)))
    return kernel


def _nrbp_of(m: Subtopics, alpha: float, beta: float, raw: np.ndarray) -> np.ndarray:
    return (1 - (1 - alpha) * beta) * _quotient(raw, m.N.astype(float))


def _nrbp(m: Subtopics, *, alpha: float = 0.5, beta: float = 0.5, min_grade: float = 1
          ) -> np.ndarray:
    check_options("nrbp", (ALPHA, BETA, MIN_GRADE),
                  {"alpha": alpha, "beta": beta, "min_grade": min_grade})
    raw = _per_row(m, _gain(m, alpha) * np.power(beta, m.pair_rank - 1.0))
    return _defined(m, _nrbp_of(m, alpha, beta, raw))


def _nnrbp(m: Subtopics, *, alpha: float = 0.5, beta: float = 0.5, min_grade: float = 1
           ) -> np.ndarray:
    check_options("nnrbp", (ALPHA, BETA, MIN_GRADE),
                  {"alpha": alpha, "beta": beta, "min_grade": min_grade})
    raw = _per_row(m, _gain(m, alpha) * np.power(beta, m.pair_rank - 1.0))
    everything = np.full(len(m.N), np.iinfo(np.int64).max)
    ideal = _ideal_sum(m, alpha, lambda i: np.power(beta, i - 1.0), everything)
    return _defined(m, _quotient(_nrbp_of(m, alpha, beta, raw),
                                 _nrbp_of(m, alpha, beta, ideal)))


def _binary_check(function: str, min_grade: float) -> None:
    check_options(function, (MIN_GRADE,), {"min_grade": min_grade})


def _precision_ia(m: Subtopics, *, min_grade: float = 1) -> np.ndarray:
    _binary_check("precision_ia", min_grade)
    hits = _per_row(m, np.ones(len(m.pair_row)))
    return _defined(m, _quotient(hits, (m.N * m.k).astype(float)))


def _ap_ia(m: Subtopics, *, min_grade: float = 1) -> np.ndarray:
    _binary_check("ap_ia", min_grade)
    terms = (m.pair_before + 1.0) / m.pair_rank / m.relevant[m.pair_subtopic]
    return _defined(m, _quotient(_per_row(m, terms), m.N.astype(float)))


def _subtopic_recall(m: Subtopics, *, min_grade: float = 1) -> np.ndarray:
    _binary_check("subtopic_recall", min_grade)
    first = m.pair_before == 0  # a subtopic is covered at its first relevant rank
    covered = _per_row(m, np.ones(len(m.pair_row)), first)
    return _defined(m, _quotient(covered, m.N.astype(float)))


# --- SQL ------------------------------------------------------------------------------------------
# Placeholders of the subtopics kind: {N}, {R} (relevant items per subtopic), {pairs} (STRUCT(i, s,
# r) per relevant rank and subtopic, the whole list), {k} (the cut-off; len(rec) when omitted),
# {ideal} (the greedy ideal's gains, all the relevant items); options by name.

_WITHIN = "list_filter({pairs}, lambda p: p.i <= {k})"
_GAIN = "pow(1 - alpha::DOUBLE, p.r)"
_UNDEFINED = "CASE WHEN {N} = 0 THEN NULL ELSE "


def _sum_sql(term: str, pairs: str = _WITHIN) -> str:
    return f"coalesce(list_sum(list_transform({pairs}, lambda p: {term})), 0.0)"


def _collection_sql(discount: str) -> str:
    best = (f"list_sum(list_transform(range(1, {{k}} + 1), lambda i: "
            f"pow(1 - alpha::DOUBLE, i - 1) * {discount.format(x='i')}))")
    return (_UNDEFINED + f"{_sum_sql(_GAIN + ' * ' + discount.format(x='p.i'))} / "
            f"nullif({{N}} * {best}, 0) END")


def _ideal_sql(discount: str) -> str:
    ideal = (f"list_sum(list_transform(list_slice({{ideal}}, 1, {{k}}), lambda g, j: "
             f"g * {discount.format(x='j')}))")
    return (_UNDEFINED + f"{_sum_sql(_GAIN + ' * ' + discount.format(x='p.i'))} / "
            f"nullif({ideal}, 0) END")


_LOG = "(1.0 / log2(1 + {x}))"
_RECIPROCAL = "(1.0 / {x})"
_NRBP_FACTOR = "(1 - (1 - alpha::DOUBLE) * beta::DOUBLE)"
_NRBP_RAW = _sum_sql(f"pow(beta::DOUBLE, p.i - 1) * {_GAIN}")
_NRBP_IDEAL = ("coalesce(list_sum(list_transform({ideal}, lambda g, j: "
               "pow(beta::DOUBLE, j - 1) * g)), 0.0)")


def _nrbp_sql(raw: str) -> str:
    return f"{_NRBP_FACTOR} * {raw} / {{N}}"


def _record(name: str, summary: str, formula: str, sql: str, kernel, options, source: str,
            **more) -> Metric:
    return Metric(
        name=name, summary=summary, formula=formula,
        undefined="NULL when no subtopic has a relevant item (N = 0; ndeval prints 0, NaN for "
        "nNRBP), or k is 0 (k omitted with an empty rec).",
        sql=sql, kernel=kernel, inputs="subtopics", options=options,
        source=SOURCE.format(source), **more,
    )


_G = "g(i) = sum_s J(i, s) (1 - alpha)^r(i, s)"

ALPHA_DCG = _record(
    "alpha_dcg", "alpha-DCG@k as ndeval prints it: novelty-discounted DCG over the subtopics, "
    "normalised by N times the most one subtopic can gain.",
    f"sum_{{i<=k}} g(i) / log2(1 + i) / (N sum_{{i<=k}} (1 - alpha)^(i-1) / log2(1 + i)), {_G}",
    _collection_sql(_LOG), _collection_normalised("alpha_dcg", _log_discount), (ALPHA, MIN_GRADE),
    "Clarke et al., SIGIR 2008", peers="ir_measures' alpha_DCG@k (pyndeval, k <= 20 there).",
)
ALPHA_NDCG = _record(
    "alpha_ndcg", "alpha-nDCG@k (ndeval): alpha-DCG divided by that of the greedy ideal ranking.",
    f"sum_{{i<=k}} g(i) / log2(1 + i) / sum_{{j<=k}} g*(j) / log2(1 + j), {_G}, g* the gains "
    "of the greedy ideal ranking",
    _ideal_sql(_LOG), _ideal_normalised("alpha_ndcg", _log_discount), (ALPHA, MIN_GRADE),
    "Clarke et al., SIGIR 2008", peers="ir_measures' alpha_nDCG@k (pyndeval, k <= 20 there).",
)
ERR_IA = _record(
    "err_ia", "ERR-IA@k as ndeval prints it: intent-aware expected reciprocal rank, normalised "
    "by N times the most one subtopic can gain.",
    f"sum_{{i<=k}} g(i) / i / (N sum_{{i<=k}} (1 - alpha)^(i-1) / i), {_G}",
    _collection_sql(_RECIPROCAL), _collection_normalised("err_ia", _reciprocal), (ALPHA, MIN_GRADE),
    "Chapelle et al., CIKM 2009", peers="ir_measures' ERR_IA@k (pyndeval, alpha 0.5, k <= 20).",
)
NERR_IA = _record(
    "nerr_ia", "nERR-IA@k (ndeval): ERR-IA divided by that of the greedy ideal ranking.",
    f"sum_{{i<=k}} g(i) / i / sum_{{j<=k}} g*(j) / j, {_G}",
    _ideal_sql(_RECIPROCAL), _ideal_normalised("nerr_ia", _reciprocal), (ALPHA, MIN_GRADE),
    "Chapelle et al., CIKM 2009", peers="ir_measures' nERR_IA@k (pyndeval, alpha 0.5).",
)
NRBP = _record(
    "nrbp", "NRBP (ndeval): novelty- and rank-biased precision over the subtopics.",
    f"(1 - (1 - alpha) beta) / N sum_{{i<=k}} beta^(i-1) g(i), {_G}; ndeval has no cut-off "
    "(omit k)",
    _UNDEFINED + _nrbp_sql(_NRBP_RAW) + " END", _nrbp, (ALPHA, BETA, MIN_GRADE),
    "Clarke, Kolla and Vechtomova, ICTIR 2009", peers="ir_measures' NRBP (pyndeval).",
)
NNRBP = _record(
    "nnrbp", "nNRBP (ndeval): NRBP divided by that of the greedy ideal ranking (all its ranks).",
    "NRBP / NRBP of the greedy ideal ranking of every relevant item",
    _UNDEFINED + f"{_nrbp_sql(_NRBP_RAW)} / nullif({_nrbp_sql(_NRBP_IDEAL)}, 0) END",
    _nnrbp, (ALPHA, BETA, MIN_GRADE), "Clarke, Kolla and Vechtomova, ICTIR 2009",
    peers="ir_measures' nNRBP (pyndeval; NaN there where no subtopic has a relevant item).",
)
PRECISION_IA = _record(
    "precision_ia", "P-IA@k (ndeval): precision@k per subtopic, averaged over the subtopics.",
    "(1 / N) sum_s (items of the top k relevant to s) / k (k, not K: a short list counts its "
    "missing places as misses, as ndeval does)",
    _UNDEFINED + f"len({_WITHIN}) / nullif({{N}} * {{k}}, 0) END", _precision_ia, (MIN_GRADE,),
    "Agrawal et al., WSDM 2009", peers="ir_measures' P_IA@k (pyndeval).",
)
AP_IA = _record(
    "ap_ia", "MAP-IA (ndeval): average precision per subtopic, averaged over the subtopics.",
    "(1 / N) sum_s AP_s, AP_s = sum over ranks i <= k relevant to s of (ranks <= i relevant to "
    "s) / i, divided by R_s, the items relevant to s; ndeval has no cut-off (omit k)",
    _UNDEFINED + _sum_sql("(p.r + 1.0) / p.i / {R}[p.s]") + " / {N} END", _ap_ia, (MIN_GRADE,),
    "Agrawal et al., WSDM 2009", peers="ir_measures' AP_IA and MAP_IA (pyndeval).",
)
SUBTOPIC_RECALL = _record(
    "subtopic_recall", "Subtopic recall@k (ndeval's strec): the share of the subtopics the top "
    "k covers.",
    "|{s : some item of the top k is relevant to s}| / N",
    _UNDEFINED + "len(list_distinct(list_transform(" + _WITHIN + ", lambda p: p.s))) / {N} END",
    _subtopic_recall, (MIN_GRADE,), "Zhai, Cohen and Lafferty, SIGIR 2003",
    peers="ir_measures' StRecall@k (pyndeval).", aliases=("strec",),
)

METRICS = (ALPHA_DCG, ALPHA_NDCG, ERR_IA, NERR_IA, NRBP, NNRBP, PRECISION_IA, AP_IA,
           SUBTOPIC_RECALL)
