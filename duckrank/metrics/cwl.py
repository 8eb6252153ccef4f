"""The C/W/L measures of cwl_eval (cwl-eval 1.0.12; Azzopardi, Thomas and Moffat, "cwl_eval: An
evaluation tool for information retrieval", SIGIR 2019), one record each, as cwl_eval computes
them with ir_measures 0.4.3's settings: BPM, SDCG, NERR8, NERR9, NERR10, NERR11, INST, INSQ and
RBP.

The C/W/L framework: a user at rank i continues to rank i + 1 with probability C(i); the weight
of rank i is W(i) = prod_{m<i} C(m) / sum_{j=1..n} prod_{m<j} C(m), and a measure is the expected
utility per item, sum_i W(i) g(i). As cwl_eval runs it:

* the ranking is rec cut at K = min(k, len(rec)), then at n = 1000 items (cwl_eval's max_n),
  and extended to n with items of gain 0: W sums over n ranks;
* gains: g = (min(max(grade, 0, min_rel), max_rel) - min_rel) / (max_rel - min_rel), the grade
  clipped to [min_rel, max_rel] and scaled to [0, 1] (ir_measures' cwl_eval provider: a negative
  grade is 0 first, as in trec_eval); an unjudged item, or a repeat of an item in rec, gains 0
  (cwl_eval's worst case); every item costs 1 (no cost file);
* the C of each measure is below (Moffat et al.; Azzopardi et al., "ERR is not C/W/L",
  ICTIR 2021, for NERR8-11).

The products prod_{m<i} C(m) over the ranks of rec are taken in order (O(K^2) in SQL); past the
ranking, where the gains are 0, the closed forms of each C give the rest of the sum. Every value
is NULL for a NULL rec, truth or k; otherwise defined (0 for an empty rec).
"""

from __future__ import annotations

from duckrank.lazy import LazyModule
from duckrank.matching.arrays import Judged
from duckrank.metrics.graded import GRADED_TRUTH
from duckrank.metrics.record import Bounds, Combination, Metric, Option, check_options

np = LazyModule("numpy")

SOURCE = ("cwl-eval 1.0.12 (cwl/ruler/measures/cwl_{}.py) with ir_measures 0.4.3's settings "
          "(providers/cwl_eval.py: gains scaled by min_rel and max_rel, unit costs, max_n 1000), "
          "checked against cwl-eval through ir_measures")
DEPTH = 1000  # cwl_eval's max_n: the ranks W is spread over


def _max_above_min_sql(function: str) -> tuple[str, str]:
    return ("max_rel::DOUBLE <= min_rel::DOUBLE",
            f"error('{function}: max_rel must be greater than min_rel, got max_rel ' || "
            "max_rel::VARCHAR || ' and min_rel ' || min_rel::VARCHAR)")


def _max_above_min(function: str, values: dict) -> None:
    if values["max_rel"] <= values["min_rel"]:
        raise ValueError(f"{function}: max_rel must be greater than min_rel, got max_rel "
                         f"{values['max_rel']} and min_rel {values['min_rel']}")


MIN_REL = Option("min_rel", 0, "the grade of gain 0 (lower grades gain 0; ir_measures' "
                 "min_rel)", bounds=Bounds())
MAX_REL = Option(
    "max_rel", 1, "the grade of gain 1 (higher grades gain 1; ir_measures' max_rel, which it "
    "requires: the default 1 reads binary qrels, and clips every positive grade of graded "
    "qrels to gain 1, so the evaluation names it in the column)",
    bounds=Bounds(), combinations=(Combination(_max_above_min_sql, _max_above_min),),
)
T = Option("t", 1.0, "T, the gain the user wants (cwl_eval's and ir_measures' T)",
           bounds=Bounds(0, open_low=True))
PHI = Option("p", 0.9, "the persistence (cwl_eval's phi or theta, ir_measures' p)",
             bounds=Bounds(0, 1, open_low=True, open_high=True))
GAINS = (MIN_REL, MAX_REL)


# --- numpy: the ranking's gains as a padded matrix (rows x ranks) ---------------------------------

def _gains(j: Judged, min_rel: float, max_rel: float) -> tuple[np.ndarray, np.ndarray]:
    """(gains, L): each row's scaled gains of its first min(K, 1000) ranks, 0-padded."""
    L = np.minimum(j.K, DEPTH)
    width = int(L.max(initial=0))
    gains = np.zeros((len(L), width))
    ranks = np.arange(len(j.top)) - np.repeat(j.top_offsets[:-1], np.diff(j.top_offsets))
    keep = ranks < L[j.rows]
    grade = j.top[keep]
    scaled = (np.clip(np.maximum(grade, 0.0), min_rel, max_rel) - min_rel) / (max_rel - min_rel)
    gains[j.rows[keep], ranks[keep]] = np.nan_to_num(scaled, nan=0.0)  # unjudged: gain 0
    return gains, L


def _products(factors: np.ndarray) -> np.ndarray:
    """prod_{m<i} factors[m] for i = 1..width + 1 (column i - 1), per row."""
    ones = np.ones((len(factors), 1))
    return np.concatenate([ones, np.cumprod(factors, axis=1)], axis=1)


def _expected_utility(j: Judged, gains: np.ndarray, L: np.ndarray, w: np.ndarray,
                      tail: np.ndarray) -> np.ndarray:
    """sum_{i<=L} w_i g_i / (sum_{i<=L} w_i + tail), w given for ranks 1..width (+1)."""
    width = gains.shape[1]
    inside = np.arange(width)[None, :] < L[:, None]
    w_in = np.where(inside, w[:, :width], 0.0)
    total = w_in.sum(axis=1) + tail
    # No weight at all (an empty rec with k left out: SDCG, NERR8, NERR9) is the value 0.
    value = np.where(total > 0, (w_in * gains).sum(axis=1) / np.where(total > 0, total, 1), 0.0)
    return np.where(j.valid, value, np.nan)


def _at(matrix: np.ndarray, column: np.ndarray) -> np.ndarray:
    return matrix[np.arange(len(column)), column]


def _range_sum(weight, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """sum_{i=low..high} weight(i) per row (0 where high < low)."""
    top = int(max(high.max(initial=0), 1))
    prefix = np.concatenate(([0.0], np.cumsum(weight(np.arange(1, top + 1, dtype=float)))))
    return np.where(high >= low, prefix[np.clip(high, 0, top)] - prefix[np.clip(low - 1, 0, top)],
                    0.0)


def _insq_weight(t: float):
    return lambda i: (2 * t / (i + 2 * t - 1)) ** 2


def _checked(function: str, options: tuple[Option, ...], values: dict) -> None:
    check_options(function, options, values)


def _cwl_rbp(j: Judged, *, p: float = 0.9, min_rel: float = 0, max_rel: float = 1) -> np.ndarray:
    _checked("cwl_rbp", (PHI, *GAINS), {"p": p, "min_rel": min_rel, "max_rel": max_rel})
    gains, L = _gains(j, min_rel, max_rel)
    w = np.power(p, np.arange(gains.shape[1] + 1, dtype=float))[None, :].repeat(len(L), 0)
    everything = (1 - p ** DEPTH) / (1 - p)
    tail = everything - np.where(np.arange(gains.shape[1])[None, :] < L[:, None],
                                 w[:, :-1], 0.0).sum(axis=1)
    return _expected_utility(j, gains, L, w, tail)


def _cut(j: Judged) -> np.ndarray:
    return np.minimum(j.k, DEPTH)


def _sdcg(j: Judged, *, min_rel: float = 0, max_rel: float = 1) -> np.ndarray:
    _checked("sdcg", GAINS, {"min_rel": min_rel, "max_rel": max_rel})
    gains, L = _gains(j, min_rel, max_rel)
    w = 1.0 / np.log2(np.arange(2, gains.shape[1] + 3, dtype=float))[None, :].repeat(len(L), 0)
    tail = _range_sum(lambda i: 1.0 / np.log2(i + 1), L + 1, _cut(j))
    return _expected_utility(j, gains, L, w, tail)


def _insq(j: Judged, *, t: float = 1.0, min_rel: float = 0, max_rel: float = 1) -> np.ndarray:
    _checked("insq", (T, *GAINS), {"t": t, "min_rel": min_rel, "max_rel": max_rel})
    gains, L = _gains(j, min_rel, max_rel)
    weight = _insq_weight(t)
    w = weight(np.arange(1, gains.shape[1] + 2, dtype=float))[None, :].repeat(len(L), 0)
    return _expected_utility(j, gains, L, w, _range_sum(weight, L + 1, np.full(len(L), DEPTH)))


def _not_satisfied(gains: np.ndarray) -> np.ndarray:
    """P(i) = prod_{m<i} (1 - g_m), i = 1..width + 1."""
    return _products(1.0 - gains)


def _nerr8(j: Judged, *, min_rel: float = 0, max_rel: float = 1) -> np.ndarray:
    _checked("nerr8", GAINS, {"min_rel": min_rel, "max_rel": max_rel})
    gains, L = _gains(j, min_rel, max_rel)
    w = _not_satisfied(gains)
    tail = _at(w, L) * np.maximum(_cut(j) - L, 0)
    return _expected_utility(j, gains, L, w, tail)


def _nerr9(j: Judged, *, min_rel: float = 0, max_rel: float = 1) -> np.ndarray:
    _checked("nerr9", GAINS, {"min_rel": min_rel, "max_rel": max_rel})
    gains, L = _gains(j, min_rel, max_rel)
    w = _not_satisfied(gains) / np.arange(1, gains.shape[1] + 2, dtype=float)[None, :]
    tail = _at(_not_satisfied(gains), L) * _range_sum(lambda i: 1.0 / i, L + 1, _cut(j))
    return _expected_utility(j, gains, L, w, tail)


def _nerr10(j: Judged, *, p: float = 0.9, min_rel: float = 0, max_rel: float = 1) -> np.ndarray:
    _checked("nerr10", (PHI, *GAINS), {"p": p, "min_rel": min_rel, "max_rel": max_rel})
    gains, L = _gains(j, min_rel, max_rel)
    powers = np.power(p, np.arange(gains.shape[1] + 1, dtype=float))[None, :]
    w = _not_satisfied(gains) * powers
    tail = _at(_not_satisfied(gains), L) * (np.power(p, L) - p ** DEPTH) / (1 - p)
    return _expected_utility(j, gains, L, w, tail)


def _nerr11(j: Judged, *, t: float = 1.0, min_rel: float = 0, max_rel: float = 1) -> np.ndarray:
    _checked("nerr11", (T, *GAINS), {"t": t, "min_rel": min_rel, "max_rel": max_rel})
    gains, L = _gains(j, min_rel, max_rel)
    weight = _insq_weight(t)
    w = _not_satisfied(gains) * weight(np.arange(1, gains.shape[1] + 2, dtype=float))[None, :]
    tail = _at(_not_satisfied(gains), L) * _range_sum(weight, L + 1, np.full(len(L), DEPTH))
    return _expected_utility(j, gains, L, w, tail)


def _inst(j: Judged, *, t: float = 1.0, min_rel: float = 0, max_rel: float = 1) -> np.ndarray:
    _checked("inst", (T, *GAINS), {"t": t, "min_rel": min_rel, "max_rel": max_rel})
    gains, L = _gains(j, min_rel, max_rel)
    ranks = np.arange(1, gains.shape[1] + 1, dtype=float)[None, :]
    spare = ranks + 2 * t - np.cumsum(gains, axis=1)  # i + T + T_i, T_i = T - sum_{m<=i} g_m
    w = _products(((spare - 1) / spare) ** 2)
    # Past the ranking C(m) = ((m + c - 1) / (m + c))^2, c = 2T - G: the product telescopes.
    c = 2 * t - gains.sum(axis=1)
    top = DEPTH
    i = np.arange(1, top + 1, dtype=float)[None, :]
    later = np.where(i >= (L + 1)[:, None], ((L[:, None] + c[:, None]) / (i - 1 + c[:, None]))
                     ** 2, 0.0)
    tail = _at(w, L) * later.sum(axis=1)
    return _expected_utility(j, gains, L, w, tail)


def _bpm(j: Judged, *, t: float = 1.0, min_rel: float = 0, max_rel: float = 1) -> np.ndarray:
    _checked("bpm", (T, *GAINS), {"t": t, "min_rel": min_rel, "max_rel": max_rel})
    gains, L = _gains(j, min_rel, max_rel)
    running = np.cumsum(gains, axis=1)
    width = gains.shape[1]
    reached = (running >= t) & (np.arange(width)[None, :] < L[:, None])
    first = np.where(reached.any(axis=1), reached.argmax(axis=1) + 1, np.iinfo(np.int64).max)
    stop = np.minimum(np.minimum(first, j.k), DEPTH)
    total = np.where(stop > 0, _at(np.concatenate([np.zeros((len(L), 1)), running], axis=1),
                                   np.minimum(stop, L)), 0.0)
    return np.where(j.valid, total / np.where(stop > 0, stop, 1), np.nan)


# --- SQL ------------------------------------------------------------------------------------------
# Over the judged kind's {gains} (the grades of the top K, NULL unjudged) and {k}; the row's gains
# g (its first min(K, 1000)) and L = len(g) are bound once by a lambda (cw), with the running
# products and sums a measure reads.

def _gain_sql(x: str) -> str:
    """An unjudged item (NULL) gains 0 (cwl_eval's worst case)."""
    return (f"CASE WHEN {x} IS NULL THEN 0.0 ELSE (least(greatest({x}, 0.0, min_rel::DOUBLE), "
            f"max_rel::DOUBLE) - min_rel::DOUBLE) / (max_rel::DOUBLE - min_rel::DOUBLE) END")


def _product_sql(factor: str) -> str:
    """prod_{m<i} factor(m) for i = 1..L + 1, as a list (O(L^2): each prefix multiplied)."""
    return (f"list_transform(range(1, len(cw.g) + 2), lambda i: coalesce(list_aggregate("
            f"list_transform(list_slice(cw.g, 1, i - 1), lambda x, m: {factor}), 'product'), "
            "1.0))")


_RUNNING = ("list_transform(range(1, len(cw.g) + 1), lambda i: "
            "list_sum(list_slice(cw.g, 1, i)))")


def _range_sum_sql(term: str, low: str, high: str) -> str:
    return (f"coalesce(list_sum(list_transform(range({low}, {high} + 1), lambda i: {term})), "
            "0.0)")


def _eu_sql(weights: str, tail: str) -> str:
    """sum_{i<=L} w_i g_i / (sum_{i<=L} w_i + tail), with w bound as cv.w; 0 when no rank has
    weight (an empty rec with k left out), as the kernels give it."""
    return (
        f"list_transform([struct_pack(w := {weights})], lambda cv: coalesce(coalesce(list_sum("
        "list_transform("
        "cw.g, lambda x, i: cv.w[i] * x)), 0.0) / nullif(coalesce(list_sum(list_slice(cv.w, 1, "
        f"len(cw.g))), 0.0) + {tail}, 0), 0.0))[1]"
    )


def _row_sql(value: str) -> str:
    gains = f"list_transform(list_slice({{gains}}, 1, {DEPTH}), lambda x: {_gain_sql('x')})"
    return f"list_transform([struct_pack(g := {gains})], lambda cw: {value})[1]"


_L = "len(cw.g)"
_CUT = f"least({{k}}, {DEPTH})"
_INSQ = "pow(2 * t::DOUBLE / (i + 2 * t::DOUBLE - 1), 2)"
_P = _product_sql("1 - x")

CWL_RBP_SQL = _row_sql(_eu_sql(
    "list_transform(range(1, len(cw.g) + 2), lambda i: pow(p::DOUBLE, i - 1))",
    f"(1 - pow(p::DOUBLE, {DEPTH})) / (1 - p::DOUBLE) - coalesce(list_sum(list_transform("
    f"range(1, {_L} + 1), lambda i: pow(p::DOUBLE, i - 1))), 0.0)"))
SDCG_SQL = _row_sql(_eu_sql(
    "list_transform(range(1, len(cw.g) + 2), lambda i: 1.0 / log2(i + 1))",
    _range_sum_sql("1.0 / log2(i + 1)", f"{_L} + 1", _CUT)))
INSQ_SQL = _row_sql(_eu_sql(
    f"list_transform(range(1, len(cw.g) + 2), lambda i: {_INSQ})",
    _range_sum_sql(_INSQ, f"{_L} + 1", str(DEPTH))))
NERR8_SQL = _row_sql(
    f"list_transform([struct_pack(P := {_P})], lambda cp: "
    + _eu_sql("cp.P", f"cp.P[{_L} + 1] * greatest({_CUT} - {_L}, 0)") + ")[1]")
NERR9_SQL = _row_sql(
    f"list_transform([struct_pack(P := {_P})], lambda cp: "
    + _eu_sql("list_transform(cp.P, lambda x, i: x / i)",
              f"cp.P[{_L} + 1] * {_range_sum_sql('1.0 / i', f'{_L} + 1', _CUT)}") + ")[1]")
NERR10_SQL = _row_sql(
    f"list_transform([struct_pack(P := {_P})], lambda cp: "
    + _eu_sql("list_transform(cp.P, lambda x, i: x * pow(p::DOUBLE, i - 1))",
              f"cp.P[{_L} + 1] * (pow(p::DOUBLE, {_L}) - pow(p::DOUBLE, {DEPTH})) "
              "/ (1 - p::DOUBLE)") + ")[1]")
NERR11_SQL = _row_sql(
    f"list_transform([struct_pack(P := {_P})], lambda cp: "
    + _eu_sql(f"list_transform(cp.P, lambda x, i: x * {_INSQ})",
              f"cp.P[{_L} + 1] * {_range_sum_sql(_INSQ, f'{_L} + 1', str(DEPTH))}") + ")[1]")
_SPARE = "(m + 2 * t::DOUBLE - cs.run[m])"
INST_SQL = _row_sql(
    f"list_transform([struct_pack(run := {_RUNNING})], lambda cs: list_transform([struct_pack("
    f"P := {_product_sql(f'pow(({_SPARE} - 1) / {_SPARE}, 2)')}, "
    "c := 2 * t::DOUBLE - coalesce(list_sum(cw.g), 0.0))], lambda cp: "
    + _eu_sql("cp.P", f"cp.P[{_L} + 1] * " + _range_sum_sql(
        f"pow(({_L} + cp.c) / (i - 1 + cp.c), 2)", f"{_L} + 1", str(DEPTH))) + ")[1])[1]")
BPM_SQL = _row_sql(
    f"list_transform([struct_pack(run := {_RUNNING})], lambda cs: list_transform([least(coalesce("
    "list_position(list_transform(cs.run, lambda x: x >= t::DOUBLE), true), 9e18::BIGINT), "
    f"{{k}}, {DEPTH})], lambda s: CASE WHEN s = 0 THEN 0.0 ELSE coalesce(cs.run[least(s, "
    f"{_L})], 0.0) / s END)[1])[1]")


def _record(name: str, summary: str, c: str, sql: str, kernel, options, source: str,
            **more) -> Metric:
    return Metric(
        name=name, summary=summary,
        formula=f"sum_i W(i) g(i), W(i) = prod_{{m<i}} C(m) / sum_{{j<=1000}} prod_{{m<j}} "
        f"C(m), with {c}",
        undefined="NULL only for a NULL rec, truth or k (0 for an empty rec).",
        sql=sql, kernel=kernel, inputs="judged", truth_type=GRADED_TRUTH,
        options=(*options, *GAINS), source=SOURCE.format(source), **more,
    )


BPM = _record(
    "bpm", "BPM (the static Bejewelled Player Model, Zhang et al., SIGIR 2017) as cwl_eval "
    "computes it: the mean gain of the ranks read until the gain T is reached or k items read.",
    "C(i) = 1 while sum_{m<=i} g(m) < T and i < k, else 0: the mean gain of the first "
    "s = min(first rank where the gain reaches T, k, 1000) ranks",
    BPM_SQL, _bpm, (T,), "bpm", peers="ir_measures' BPM(T, min_rel, max_rel)@k (cwl_eval).")
SDCG = _record(
    "sdcg", "SDCG@k (cwl_eval's scaled DCG): DCG@k divided by the DCG of k items of gain 1.",
    "C(i) = log2(i + 1) / log2(i + 2) for i < k, else 0: sum_{i<=k} g(i) / log2(i + 1) / "
    "sum_{i<=k} 1 / log2(i + 1)", SDCG_SQL, _sdcg, (), "dcg",
    peers="ir_measures' SDCG(min_rel, max_rel)@k (cwl_eval).")
NERR8 = _record(
    "nerr8", "NERR8@k (Azzopardi et al., ICTIR 2021, eq. 8): ERR's stopping, truncated at k.",
    "C(i) = 1 - g(i) for i < k, else 0", NERR8_SQL, _nerr8, (), "nerr",
    peers="ir_measures' NERR8(min_rel, max_rel)@k (cwl_eval).")
NERR9 = _record(
    "nerr9", "NERR9@k (Azzopardi et al., ICTIR 2021, eq. 9).",
    "C(i) = i / (i + 1) (1 - g(i)) for i < k, else 0", NERR9_SQL, _nerr9, (), "nerr",
    peers="ir_measures' NERR9(min_rel, max_rel)@k (cwl_eval).")
NERR10 = _record(
    "nerr10", "NERR10 (Azzopardi et al., ICTIR 2021, eq. 10): ERR's stopping with RBP's "
    "persistence p.", "C(i) = p (1 - g(i))", NERR10_SQL, _nerr10, (PHI,), "nerr",
    peers="ir_measures' NERR10(p, min_rel, max_rel) (cwl_eval).")
NERR11 = _record(
    "nerr11", "NERR11 (Azzopardi et al., ICTIR 2021, eq. 11): ERR's stopping with INSQ's "
    "continuation.", "C(i) = ((i + 2T - 1) / (i + 2T))^2 (1 - g(i))", NERR11_SQL, _nerr11,
    (T,), "nerr", peers="ir_measures' NERR11(T, min_rel, max_rel) (cwl_eval).")
INST = _record(
    "inst", "INST (Moffat et al., ADCS 2015): adaptive continuation by the gain still wanted.",
    "C(i) = ((i + T + T_i - 1) / (i + T + T_i))^2, T_i = T - sum_{m<=i} g(m)", INST_SQL,
    _inst, (T,), "inst", peers="ir_measures' INST(T, min_rel, max_rel) (cwl_eval).")
INSQ = _record(
    "insq", "INSQ (Moffat et al.): INST's continuation without the gain read.",
    "C(i) = ((i + 2T - 1) / (i + 2T))^2", INSQ_SQL, _insq, (T,), "insq",
    peers="ir_measures' INSQ(T, min_rel, max_rel) (cwl_eval).")
CWL_RBP = _record(
    "cwl_rbp", "RBP as cwl_eval computes it: rank i weighted p^(i-1), over 1000 ranks, with "
    "scaled gains.",
    "C(i) = p: (1 - p) / (1 - p^1000) sum_{i<=K} p^(i-1) g(i)", CWL_RBP_SQL, _cwl_rbp, (PHI,),
    "rbp", peers="ir_measures' RBP(p, rel) (cwl_eval, with the binary gains of grade >= rel: "
    "min_rel = rel - 1, max_rel = rel for integer grades); trec_eval's rbp (duckrank's rbp) "
    "is (1 - p) sum p^(i-1) g(i), without the 1 - p^1000.")

METRICS = (BPM, SDCG, NERR8, NERR9, NERR10, NERR11, INST, INSQ, CWL_RBP)
