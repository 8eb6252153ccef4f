"""Measures of ir_measures and ranx that neither duckrank's own records nor trec_eval's give:
Judged@k, Compat, F1@k and NumQ, one record each, as the peer computes them.

* ``judged_at`` (ir_measures 0.4.3's ``Judged@k``, its judged provider): the share of the top K
  that has a judgment of any grade (a negative grade included: ir_measures asks only whether the
  document is in the qrels, where trec_eval's ``unj`` counts a negative grade as unjudged).
* ``compat`` (ir_measures' ``Compat``, its compat provider): Clarke, Vtyurina and Smucker's
  compatibility, "Assessing top-k preferences", ACM TOIS 39(3), 2021: the rank-biased overlap of
  the ranking with an ideal ranking of the relevant items.
* ``f1_at`` (ranx 0.3.21's ``f1@k``): the harmonic mean of ranx's precision@k (hits / k) and
  recall@k.
* ``num_q`` (ir_measures' ``NumQ``, trec_eval's ``num_q`` per query): 1 for every query ranked.

Every value is NULL when rec, truth or k is NULL; each record says when else. The ranking is rec
as given (``duckrank.evaluate`` ranks by score descending, then item descending, trec_eval's
order); docs/conventions.md says where a peer breaks ties otherwise.
"""

from __future__ import annotations

from duckrank.lazy import LazyModule
from duckrank.matching.arrays import Grades, Hits, Judged, row_cumsum
from duckrank.metrics.graded import GRADED_TRUTH
from duckrank.metrics.record import Bounds, Metric, Option, check_options

np = LazyModule("numpy")

IR_MEASURES = "ir_measures 0.4.3 (MacAvaney, Macdonald and Ounis, ECIR 2022), measures/{}.py"
RANX = "ranx 0.3.21 (Bassani, ECIR 2022), ranx/metrics/{}.py"


def _valid(matched: Hits | Judged, values: np.ndarray, defined: np.ndarray | bool = True
           ) -> np.ndarray:
    return np.where(matched.valid & defined, values, np.nan)


def _quotient(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    return numerator / np.where(denominator == 0, 1, denominator)


# --- Judged@k -------------------------------------------------------------------------------------

def _judged_at(j: Judged) -> np.ndarray:
    # ``top`` is NaN for an item not in truth (and for a repeat or a NULL item): any grade counts.
    judged = j.row_sum((~np.isnan(j.top)).astype(np.float64))
    return _valid(j, _quotient(judged, j.K), j.K > 0)


JUDGED_AT = Metric(
    name="judged_at",
    summary="Judged@k (ir_measures): the share of the top K that has a judgment, of any grade.",
    formula="(items of the top K that are keys of truth, whatever their grade, a negative one "
    "included; each item once) / K, K = min(k, len(rec))",
    undefined="NULL when the top K is empty (an empty rec; ir_measures has no value for a query "
    "without a ranking).",
    sql="CASE WHEN {K} = 0 THEN NULL ELSE (len({judged}) + len({pool})) / {K} END",
    kernel=_judged_at,
    inputs="judged",
    truth_type=GRADED_TRUTH,
    peers="ir_measures' Judged@k (its judged provider, which breaks score ties by document id "
    "ascending: a tie across the cut-off can differ). trec_eval's unj@k is 1 - Judged@k only "
    "without negative grades: it counts a negative grade as unjudged and divides by k.",
    source=IR_MEASURES.format("judged") + " and providers/judged_provider.py",
)


# --- F1@k (ranx) ----------------------------------------------------------------------------------

def _f1_at(h: Hits) -> np.ndarray:
    hits = h.counts.astype(np.float64)
    value = _quotient(2.0 * hits, h.k + h.n)
    return _valid(h, value, (h.n > 0) & (h.k > 0))


F1_AT = Metric(
    name="f1_at",
    summary="F1@k as ranx defines it: the harmonic mean of precision@k = hits / k and "
    "recall@k = hits / |truth|.",
    formula="2 P R / (P + R) with P = hits / k (k, not K: a list shorter than k counts its "
    "missing places as misses) and R = hits / |truth|, which is 2 hits / (k + |truth|); 0 when "
    "the top K has no hit",
    undefined="NULL when truth has no item (ranx: 0) or k is 0 (k omitted with an empty rec).",
    sql="CASE WHEN {n} = 0 OR {k} = 0 THEN NULL ELSE 2.0 * len({pos}) / ({k} + {n}) END",
    kernel=_f1_at,
    aliases=("f1",),
    peers="ranx's f1@k (0 where truth is empty; NULL here). trec_eval's set_F divides precision "
    "by the items returned (set_f here).",
    source=RANX.format("f1"),
)


# --- NumQ -----------------------------------------------------------------------------------------

NUM_Q = Metric(
    name="num_q",
    summary="NumQ (ir_measures; trec_eval's num_q per query): 1 for a query the run ranks "
    "(rec not empty), 0 for an empty rec.",
    formula="1 if K > 0 (rec not empty) else 0; the number of ranked queries is its sum "
    "(ir_measures and trec_eval aggregate NumQ, NumRel, NumRet by summing; duckrank.evaluate "
    "reports means, and the count in 'scored')",
    undefined="NULL only for a NULL rec, truth or k.",
    sql="CASE WHEN {K} > 0 THEN 1.0::DOUBLE ELSE 0.0::DOUBLE END",
    kernel=lambda h: _valid(h, (h.K > 0).astype(np.float64)),
    peers="ir_measures' NumQ and trec_eval's num_q (summed over the queries there).",
    source=IR_MEASURES.format("numq"),
)


# --- Compat ---------------------------------------------------------------------------------------
# With the ranking r (the top K of rec) and the ideal ranking I (the relevant items, grade > 0,
# largest grade first), RBO at depth D = max(K, R), R = |I|, is
#   sum_{d=1..D} p^(d-1) |r[:d] & I[:d]| / d  /  sum_{d=1..D} p^(d-1).
# A relevant item at rank i of r and place j of I is in both prefixes from depth m = max(i, j)
# on, so the numerator is the sum over such items of tail(m) = sum_{d=m..D} p^(d-1) / d. The
# ideal's place of an item of grade g: the grades of truth above g, then the items of grade g in
# the order of the ranking (the unranked ones after them), so j = (grades > g) + (ranked items of
# grade g above it) + 1. Normalised, the numerator is divided by that of I against itself,
# sum_{d=1..D} p^(d-1) min(d, R) / d (the sum of the p^(d-1) cancels).

PERSISTENCE = Option("p", 0.95, "the persistence of the rank-biased overlap (ir_measures' p)",
                     bounds=Bounds(0, 1, open_low=True, open_high=True))
NORMALIZE = Option(
    "normalize", "true", "'true': divided by the ideal ranking's own overlap, so that the ideal "
    "scores 1 (ir_measures' default); 'false': the overlap itself",
    choices=("true", "false"),
)


def _compat_sql() -> str:
    # The grades of the top K with their ranks, the ideal place of each relevant one, then the
    # tails and the normaliser; D = 0 (an empty rec and no relevant item) is NULL.
    weight = "pow(p::DOUBLE, d - 1)"
    tail = f"list_sum(list_transform(range(c.m, c.D + 1), lambda d: {weight} / d))"
    places = (
        "list_filter(list_transform({gains}, lambda g, i: CASE WHEN g > 0 THEN "
        "greatest(i, len(list_filter({ideal}, lambda x: x > g)) "
        "+ len(list_filter(list_slice({gains}, 1, i - 1), lambda x: x = g)) + 1) END), "
        "lambda m: m IS NOT NULL)"
    )
    best = f"list_sum(list_transform(range(1, D + 1), lambda d: {weight} * least(d, R) / d))"
    total = f"list_sum(list_transform(range(1, D + 1), lambda d: {weight}))"
    return (
        "list_transform([struct_pack(D := greatest({K}, len({ideal})), R := len({ideal}), "
        f"places := {places})], lambda s: CASE WHEN s.D = 0 THEN NULL ELSE "
        "coalesce(list_sum(list_transform(s.places, lambda m: list_transform("
        f"[struct_pack(m := m, D := s.D)], lambda c: {tail})[1])), 0.0) / "
        f"list_transform([struct_pack(D := s.D, R := s.R)], lambda t: CASE WHEN "
        f"normalize::VARCHAR = 'true' AND t.R > 0 THEN "
        f"{best.replace('D + 1', 't.D + 1').replace('least(d, R)', 'least(d, t.R)')} ELSE "
        f"{total.replace('D + 1', 't.D + 1')} END)[1] END)[1]"
    )


def _prefix_sums(p: float, largest: int) -> tuple[np.ndarray, np.ndarray]:
    """W[x] = sum_{d<=x} p^(d-1) and H[x] = sum_{d<=x} p^(d-1) / d for x = 0..largest."""
    d = np.arange(1, largest + 1, dtype=np.float64)
    weights = np.power(p, d - 1)
    return (np.concatenate(([0.0], np.cumsum(weights))),
            np.concatenate(([0.0], np.cumsum(weights / d))))


def _ideal_places(j: Judged, ranks: np.ndarray, grades: np.ndarray, rows: np.ndarray
                  ) -> np.ndarray:
    """Each relevant ranked item's place in the ideal ranking: the grades of its row's truth
    above its grade, plus the ranked items of its grade above it, plus 1."""
    ideal_rows = np.repeat(np.arange(len(j.K)), np.diff(j.ideal_offsets))
    # Sorted together by (row, grade descending, ideal entries after items of equal grade), the
    # ideal entries before an item in its row are those of a larger grade.
    row_all = np.concatenate([ideal_rows, rows])
    grade_all = np.concatenate([j.ideal, grades])
    is_ideal = np.concatenate([np.ones(len(ideal_rows), bool), np.zeros(len(rows), bool)])
    order = np.lexsort((is_ideal, -grade_all, row_all))
    starts = np.searchsorted(row_all[order], np.arange(len(j.K) + 1))
    flags = is_ideal[order].astype(np.int64)
    above = np.empty(len(row_all), np.int64)
    above[order] = row_cumsum(flags, starts) - flags
    # Ranked items of the same grade above it: its place in its (row, grade) group by rank.
    same = np.lexsort((ranks, grades, rows))
    position = np.arange(len(same))
    starts_of_group = np.concatenate(([True], (rows[same][1:] != rows[same][:-1])
                                      | (grades[same][1:] != grades[same][:-1])))
    first = np.maximum.accumulate(np.where(starts_of_group, position, 0))
    before = np.empty(len(same), np.int64)
    before[same] = position - first
    return above[len(ideal_rows):] + before + 1


def _compat(j: Judged, *, p: float = 0.95, normalize: str = "true") -> np.ndarray:
    check_options("compat", (PERSISTENCE, NORMALIZE), {"p": p, "normalize": normalize})
    ranks, rows = Grades.ranks(j.top_offsets), j.rows
    with np.errstate(invalid="ignore"):
        relevant = j.top > 0
    R = np.diff(j.ideal_offsets)
    D = np.maximum(j.K, R)  # >= R, so min(d, R) = R for d > R
    W, H = _prefix_sums(p, int(D.max(initial=0)))
    rows, ranks, grades = rows[relevant], ranks[relevant], j.top[relevant]
    places = np.maximum(ranks, _ideal_places(j, ranks, grades, rows))
    numerator = np.bincount(rows, weights=H[D[rows]] - H[places - 1], minlength=len(j.K))
    # sum_{d<=D} p^(d-1) min(d, R) / d = W(R) + R (H(D) - H(R)).
    best = W[R] + R * (H[D] - H[R])
    divisor = np.where((normalize == "true") & (R > 0), best, W[D])
    return _valid(j, _quotient(numerator, divisor), D > 0)


COMPAT = Metric(
    name="compat",
    summary="Compatibility (Clarke et al.; ir_measures' Compat): the rank-biased overlap of the "
    "ranking with an ideal ranking of the relevant items, normalised so that the ideal scores 1.",
    formula="RBO(r, I, p) to depth D = max(K, R): sum_{d<=D} p^(d-1) |r[:d] & I[:d]| / d "
    "divided by sum_{d<=D} p^(d-1); r the top K of rec, I the items of truth with grade > 0, "
    "largest grade first and, within a grade, in the order of rec (unranked ones last), R = |I|. "
    "normalize := 'true' divides by RBO(I, I, p) instead (when R > 0)",
    undefined="NULL when rec is empty and truth has no relevant item (depth 0).",
    sql=_compat_sql(),
    kernel=_compat,
    inputs="judged",
    truth_type=GRADED_TRUTH,
    options=(PERSISTENCE, NORMALIZE),
    peers="ir_measures' Compat(p=0.95, normalize=True) ranks by score, ties by document id "
    "ascending, and orders the ideal's items of one grade by their run score (0 for an "
    "unranked item, which can place it above a ranked item of negative score): the same as "
    "here when the scores are positive and untied.",
    source=IR_MEASURES.format("compat") + " and providers/compat_provider.py; Clarke, Vtyurina "
    "and Smucker, 'Assessing top-k preferences', ACM TOIS 39(3), 2021",
)

# --- graded RBP: trec_eval 10.0's and ranx's ----------------------------------------------------

RBP_PERSISTENCE = Option("persistence", 0.9, "the chance p that the user goes on to the next rank "
                         "(trec_eval's rbp.p, 0.9 by default; ranx's rbp.p)",
                         bounds=Bounds(0, 1, open_low=True, open_high=True))
RBP_GAIN = Option(
    "gain", "trec_eval", "what a grade g gains: 'trec_eval' = g / G, G the largest grade of "
    "truth, when G > 1 (else g): trec_eval 10.0's rbp, which scales its gains to [0, 1]; "
    "'ranx' = g itself, which can exceed 1: ranx 0.3.21's rbp and trectools 0.0.50's get_rbp "
    "with binary_topical_relevance=False (ir_measures' RBP(p) without rel), which differ only "
    "where min_grade (ranx's rel_lvl) and tied scores (trectools' averaged weights) do",
    choices=("trec_eval", "ranx"),
)
RBP_MIN_GRADE = Option("min_grade", None, "grades below it gain 0 (ranx's rel_lvl); NULL: every "
                       "grade > 0 gains (trectools' rel > 0; ranx's rel_lvl 1 on integer "
                       "grades); a negative grade never does (trec_eval's 'pooled but unjudged')",
                       bounds=Bounds(nullable=True))


def _graded_rbp(j: Judged, *, persistence: float = 0.9, gain: str = "trec_eval",
                min_grade: float | None = None) -> np.ndarray:
    check_options("graded_rbp", (RBP_PERSISTENCE, RBP_GAIN, RBP_MIN_GRADE),
                  {"persistence": persistence, "gain": gain, "min_grade": min_grade})
    ranks = Grades.ranks(j.top_offsets)
    with np.errstate(invalid="ignore"):
        counted = (j.top > 0) & (True if min_grade is None else j.top >= min_grade)
    judged = np.diff(j.ideal_offsets) > 0  # rows with a positive grade: their largest first
    largest = np.zeros(len(judged))
    largest[judged] = j.ideal[j.ideal_offsets[:-1][judged]]
    scale = np.where((gain == "trec_eval") & (largest > 1), largest, 1.0)
    terms = np.where(counted, np.nan_to_num(j.top) / scale[j.rows], 0.0) * np.power(
        persistence, ranks - 1.0)
    return _valid(j, (1 - persistence) * j.row_sum(terms))


GRADED_RBP = Metric(
    name="graded_rbp",
    summary="Rank-biased precision over graded truth (Moffat and Zobel, TOIS 2008), in trec_eval "
    "10.0's convention (gains scaled to [0, 1]) or ranx's and trectools' (the grade itself).",
    formula="(1 - p) sum_{i<=K} p^(i-1) gain(g_i), g_i the grade of rec's item at rank i (0 "
    "unjudged, below min_grade or negative); gain := 'trec_eval': g / G when G, truth's largest "
    "grade, is above 1, else g; 'ranx': g",
    undefined="NULL only for a NULL rec, truth or k (0 for an empty rec or no relevant item, as "
    "both peers give).",
    sql="(1 - persistence::DOUBLE) * coalesce(list_sum(list_transform({gains}, lambda g, i: "
    "CASE WHEN g IS NULL OR g < min_grade::DOUBLE OR g <= 0 THEN 0.0 ELSE pow(persistence::DOUBLE, "
    "i - 1) * g / CASE WHEN gain::VARCHAR = 'trec_eval' AND {ideal}[1] > 1 THEN {ideal}[1] "
    "ELSE 1.0 END END)), 0.0)",
    kernel=_graded_rbp,
    inputs="judged",
    truth_type=GRADED_TRUTH,
    options=(RBP_PERSISTENCE, RBP_GAIN, RBP_MIN_GRADE),
    peers="trec_eval 10.0's rbp on graded qrels (gain 'trec_eval'; its m_rbp.c scales the "
    "gains by min and max values it reads uninitialized: the scaling here is what its build "
    "gives, checked against it); ranx's rbp (gain 'ranx'); trectools 0.0.50's get_rbp(p, depth "
    "K, binary_topical_relevance=False), which ir_measures' RBP(p=p)@K without rel runs (gain "
    "'ranx'; the same on untied scores: trectools gives the documents of equal scores the mean "
    "of their ranks' weights, over a run of equal scores that can reach across two queries; "
    "ir_measures reads its RBP, not its residual). trec_eval 9 (pytrec_eval) has no rbp; "
    "duckrank's rbp is the binary one; ir_measures' RBP(rel=...) is cwl_rbp.",
    source="trec_eval 10.0 (usnistgov/trec_eval, m_rbp.c and gain_init.c); " + RANX.format(
        "rank_biased_precision") + "; trectools 0.0.50 (Palotti, Scells and Zuccon, SIGIR "
    "2019), trectools/trec_eval.py get_rbp",
)

METRICS = (JUDGED_AT, F1_AT, NUM_Q, COMPAT, GRADED_RBP)
