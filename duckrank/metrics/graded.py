"""Graded-relevance metrics: dcg and ndcg with gain and discount options, err, half_life_utility.

Every metric here reads a row through the graded matching step (``duckrank.matching``). In SQL
its formula reads the hits only: ``{pos}``, the ascending ranks i <= K whose item has a positive
grade (an item's first occurrence), ``{grades}`` their grades, and ``{ideal}``, the min(k, n)
largest positive grades of truth, largest first, where n (``{n}``) is the number of positive
grades in truth; a rank without a grade adds nothing to a DCG and leaves ERR's cascade as it is,
so the sums over the hits are the sums over the top K (``matching.sql.graded_match_sql`` and
the native ``duckrank_graded`` give them). The numpy kernels read the ``Grades`` representation:
the grades of the whole top K in rec order, and the same ideal grades. duckrank sorts the ideal
grades itself; it never trusts the caller's order.

Truth is a MAP from item id to grade (a finite number >= 0; 0 means not relevant), or a LIST,
which means grade 1 for each of its items. The value is NULL when rec, truth or k is NULL and
when truth holds no positive grade (n = 0): like ndcg, so that avg() over a column of any of
these metrics averages over the same rows. A NULL, NaN, infinite or negative grade is an error
naming the item; so is an option outside its domain.

Sources: Järvelin & Kekäläinen's DCG and the half-life utility of Breese et al. as taught in the
"Rank-Aware Top-N Metrics" lecture slides (a recommender-systems course), the exponential gain of
Burges et al. as in Hivemall's graded ndcg (the Apache Hivemall user guide, "Evaluation of
ranking problems"), Chapelle et al.'s ERR as restated in Bharath G.S., "A Quick Recap on Ranking
Evaluation metrics" (2022) and in Shi et al., "xCLiMF: Optimizing Expected Reciprocal Rank for
Data with Multiple Levels of Relevance" (RecSys 2013).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from duckrank.lazy import LazyModule
from duckrank.matching.arrays import Grades
from duckrank.metrics.record import Above, Choice, Combination, Metric, Option, check_options

np = LazyModule("numpy")

GRADED_TRUTH = "MAP(VARCHAR, DOUBLE)"

# ideal := 'k' sums k discounts per row: a larger k is refused rather than left to exhaust memory.
IDEAL_K_LIMIT = 1_000_000

def _base_with_log2_sql(function: str) -> tuple[str, str]:
    return (
        "discount::VARCHAR = 'log2' AND try_cast(base AS DOUBLE) <> 2",
        f"error('{function}: base applies to discount := ''jarvelin'' only, got base ' "
        "|| base::VARCHAR || ' with discount ''log2''')",
    )


def _check_base_with_log2(function: str, values: dict) -> None:
    if values.get("discount") == "log2" and values["base"] != 2:
        raise ValueError(f"{function}: base applies to discount := 'jarvelin' only, got base "
                         f"{values['base']!r} with discount 'log2'")


GAIN = Option(
    "gain",
    "exponential",
    "gain of a grade g: 'exponential' = 2^g - 1 (Burges et al., Hivemall, ranx's ndcg_burges), "
    "'linear' = g (trec_eval's ndcg_cut, ranx's ndcg, the 'Rank-Aware Top-N Metrics' slides). "
    "A LIST truth (every grade 1) gains 1 either way.",
    choices=("exponential", "linear"),
)
DISCOUNT = Option(
    "discount",
    "log2",
    "discount of rank i: 'log2' = log2(i + 1); 'jarvelin' = Järvelin & Kekäläinen's original, "
    "1 for i <= base and log_base(i) after.",
    choices=("log2", "jarvelin"),
)
BASE = Option(
    "base",
    2,
    "the base b of the 'jarvelin' discount, a number > 1 (ranks up to b are not discounted); "
    "any other value than 2 with discount 'log2' is an error.",
    bounds=Above(1),
    combinations=(Combination(_base_with_log2_sql, _check_base_with_log2),),
)
MAX_GRADE = Option(
    "max_grade",
    4,
    "the largest grade the scale allows, a number > 0: 4 as in TREC's gdeval, 5 for 1..5 "
    "ratings as in the xCLiMF paper. A grade above it is an error.",
    bounds=Above(0),
)
HALF_LIFE = Option(
    "half_life",
    5,
    "the rank alpha whose item has a 50% chance of being viewed, a number > 1.",
    bounds=Above(1),
)

IDEAL = Option(
    "ideal",
    "min_k_truth",
    "the ideal list the DCG is divided by: 'min_k_truth' = the min(k, n) largest grades of "
    "truth, the best list this truth allows (trec_eval, ranx, RePlay, LensKit, Recommenders, "
    "RecTools' divide_by_achievable=True); 'k' = k items of truth's largest grade (k hits for a "
    "LIST truth: RecTools' NDCG default), so a row with fewer than k relevant items cannot reach "
    f"1. 'k' takes a k of at most {IDEAL_K_LIMIT:,}.",
    choices=("min_k_truth", "k"),
)

DCG_OPTIONS = (GAIN, DISCOUNT, BASE)
NDCG_OPTIONS = (*DCG_OPTIONS, IDEAL)



# --- options -------------------------------------------------------------------------------------
# Their checks (SQL and numpy) are derived from the records' ``Option``s in
# ``duckrank.metrics.record`` (``option_errors_sql``, ``check_options``).

def _text(option: str) -> str:
    return f"{option}::VARCHAR"


def _number(option: str) -> str:
    """The option as a DOUBLE (NULL when it is not a number); used wherever SQL computes with
    it, so that a wrong type reaches the option check instead of failing to bind."""
    return f"try_cast({option} AS DOUBLE)"


def choose_sql(option: Option, forms: dict[str, str]) -> str:
    """SQL taking ``forms[value]`` for the option's value (one form per choice); the option
    check (``option_errors_sql``) runs before, so no other value reaches the ELSE. Inside the
    macro's per-row lambda DuckDB does not fold this CASE even for a constant option, and its
    cost grows with all its branches: keep the forms small (a denominator, not a formula), and
    give the record a ``choice`` (``chosen_sql``) so that the default path goes without it."""
    others = "".join(
        f"WHEN {_text(option.name)} = '{choice}' THEN ({forms[choice]}) "
        for choice in option.choices if choice != option.default
    )
    return f"CASE {others}ELSE ({forms[str(option.default)]}) END"


def chosen_sql(option: Option, forms: dict[str, str],
               formula: Callable[[str], str]) -> dict[str, str | Choice]:
    """A record's ``sql`` and ``choice`` (keyword arguments of ``Metric``): ``formula`` over the
    form the option chooses (``choose_sql``), and the same formula over the default's form."""
    return {
        "sql": formula(choose_sql(option, forms)),
        "choice": Choice(option, formula(forms[str(option.default)])),
    }


def ideal_k_error_sql(function: str, k: str) -> str:
    """The error of ideal := 'k' with a k above ``IDEAL_K_LIMIT`` (``k``: the cut-off's SQL)."""
    return (
        f"error('{function}: ideal := ''k'' sums k discounts per row; k must be at most "
        f"{IDEAL_K_LIMIT}, got ' || ({k})::VARCHAR)"
    )


def check_ideal_k(function: str, k: np.ndarray) -> None:
    """The numpy twin of ``ideal_k_error_sql``."""
    if len(k) and int(k.max()) > IDEAL_K_LIMIT:
        raise ValueError(f"{function}: ideal := 'k' sums k discounts per row; k must be at most "
                         f"{IDEAL_K_LIMIT}, got {int(k.max())}")


# --- gain, discount and the sums over ranks, in SQL ----------------------------------------------
# Each helper below returns a SQL expression over the macro's option parameters (gain, discount,
# base, max_grade, half_life). Record ``sql`` strings pass through str.format, so their literal
# braces are doubled.

def gain_sql(grade: str) -> str:
    return f"(CASE WHEN {_text('gain')} = 'linear' THEN {grade} ELSE pow(2, {grade}) - 1 END)"


# --- gains that neither overflow nor vanish ------------------------------------------------------
# 2^g - 1 is infinite for g >= 1024 (grades that are counts or seconds reach that) and rounds to 0
# for g below about 1e-16; a sum of linear grades near 1e308 is infinite too: ndcg was inf / inf
# or 0 / 0, NaN. ndcg and half_life_utility are ratios and ERR reads 2^g / 2^max_grade, so a row
# whose largest grade M (the first ideal grade) is outside the ordinary range reads every gain
# divided by one number: 2^(g - M) - 2^-M for M above SCALED_ABOVE (at most 1; 2^-M is 0 for
# M > 1074, far below what a DOUBLE keeps of the largest term), g / M for the linear gain; and
# below TINY_GRADE 2^g - 1 is expm1(g ln 2) by its series (DuckDB has no expm1), whose first
# omitted term is below 1e-18 of it. Rows in the ordinary range keep their formula bit for bit.
SCALED_ABOVE = 1000
TINY_GRADE = 1e-3
_SERIES_TERMS = 6


def ordinary_sql(top: str) -> str:
    """True when a row whose largest grade is ``top`` needs no ``scaled_gain_sql``."""
    return f"({top} BETWEEN {TINY_GRADE} AND {SCALED_ABOVE})"


def _series_sql(grade: str) -> str:
    """2^g - 1 = sum over j >= 1 of (g ln 2)^j / j!, its first terms by Horner's scheme."""
    x = f"({grade} * ln(2))"
    value = "1"
    for j in range(_SERIES_TERMS, 1, -1):
        value = f"(1 + {x} / {j} * {value})"
    return f"({x} * {value})"


def scaled_gain_sql(grade: str, top: str) -> str:
    """The gain of ``grade`` divided by one positive number for every grade of a row whose
    largest grade is ``top`` (read per term: keep it a list element); ``top`` '1' divides by 1."""
    exponential = (
        f"CASE WHEN {top} > {SCALED_ABOVE} THEN pow(2, {grade} - {top}) - pow(2, -{top}) "
        f"WHEN {grade} < {TINY_GRADE} THEN {_series_sql(grade)} ELSE pow(2, {grade}) - 1 END"
    )
    return f"(CASE WHEN {_text('gain')} = 'linear' THEN {grade} / {top} ELSE {exponential} END)"


def discount_sql(rank: str) -> str:
    base = _number("base")
    return (
        f"(CASE WHEN {_text('discount')} = 'jarvelin' "
        f"THEN (CASE WHEN {rank} <= {base} THEN 1.0 ELSE ln({rank}) / ln({base}) END) "
        f"ELSE log2({rank} + 1) END)"
    )


def _gained_sql(grade: str, rank: str) -> str:
    return f"{gain_sql(grade)} / {discount_sql(rank)}"


def _scaled_gained_sql(grade: str, rank: str) -> str:
    """``_gained_sql`` over ``scaled_gain_sql``, for a row whose largest grade {ideal}[1] is
    outside ``ordinary_sql``."""
    return f"{scaled_gain_sql(grade, '{ideal}[1]')} / {discount_sql(rank)}"


def _unscaled_gained_sql(grade: str, rank: str) -> str:
    """``_gained_sql`` with the series below TINY_GRADE, for dcg, which is no ratio."""
    return f"{scaled_gain_sql(grade, '1')} / {discount_sql(rank)}"


def _half_life_weight_sql(rank: str) -> str:
    return f"pow(2, -({rank} - 1) / ({_number('half_life')} - 1))"


def _half_life_sql(grade: str, rank: str) -> str:
    return f"{grade} * {_half_life_weight_sql(rank)}"


def _scaled_half_life_sql(grade: str, rank: str) -> str:
    """``_half_life_sql`` with every grade divided by the row's largest, {ideal}[1]."""
    return f"{grade} / {{ideal}}[1] * {_half_life_weight_sql(rank)}"


def hits_sum_sql(term: Callable[[str, str], str]) -> str:
    """Σ term(grade, rank) over the hits ({pos} ascending, {grades} theirs): the sum over the
    top K, whose other items have grade 0 and add nothing to it (0.0 without a hit)."""
    return (
        f"coalesce(list_sum(list_transform({{pos}}, "
        f"lambda p, j: {term('{grades}[j]', 'p')})), 0.0)"
    )


def ranked_sum_sql(grades: str, term: Callable[[str, str], str]) -> str:
    """Σ term(g_i, i) over a DOUBLE[] of grades in rank order (0.0 for an empty list)."""
    return f"coalesce(list_sum(list_transform({grades}, lambda x, i: {term('x', 'i')})), 0.0)"


def _satisfied_sql(grade: str) -> str:
    """R = (2^g - 1) / 2^max_grade: the chance that a user stops, satisfied, at a grade g,
    written 2^(g - max_grade) - 2^-max_grade: both powers are at most 1 (g <= max_grade is
    checked first), where 2^max_grade is infinite from max_grade 1024 on."""
    max_grade = _number("max_grade")
    return f"(pow(2, {grade} - {max_grade}) - pow(2, -{max_grade}))"


def _err_sql() -> str:
    """Chapelle et al.'s cascade over the hits, folded from the last hit to the first (Horner's
    scheme): E_(h+1) = 0, E_j = R_j / p_j + (1 - R_j) E_(j+1), ERR = E_1, for the h hits at
    ranks p_1 < ... < p_h: the user stops at rank p_j with probability R_j, or goes on to the
    ERR of the ranks below. A rank without a grade has R = 0, where the fold over every rank
    gives E_r = 0 / r + 1 * E_(r+1) = E_(r+1) exactly, so folding over the hits alone changes no
    bit.

    Written for DuckDB 1.4 and 1.5 as well as 2.0 (sql/duckrank.sql). One DOUBLE carries the
    fold, because there list_reduce's accumulator must have the type of the list's elements. No
    initial value is given, because with one a list_reduce lambda that reads a column (here the
    ranks) reads another row's there (duckdb/duckdb#25816): the first element (the grade of the
    last hit) is the initial accumulator, made E_h = R_h / p_h at the first step (i = 2), and
    0 and 1 hits are answered directly. Element i of the reversed grades is hit h + 1 - i."""
    hits = "len({pos})"
    rank = f"{{pos}}[{hits} + 1 - i]"
    first_step = f"CASE WHEN i = 2 THEN {_satisfied_sql('acc')} / {{pos}}[{hits}] ELSE acc END"
    return (
        f"CASE WHEN {hits} = 0 THEN 0.0::DOUBLE WHEN {hits} = 1 "
        f"THEN {_satisfied_sql('{grades}[1]')} / {{pos}}[1] "
        f"ELSE list_reduce(list_reverse({{grades}}), lambda acc, x, i: "
        f"{_satisfied_sql('x')} / {rank} + (1 - {_satisfied_sql('x')}) * "
        f"({first_step})) END"
    )


def binary_ndcg_sql(log2_sql: str, ideal_hits: str) -> str:
    """The binary ndcg record's SQL with the gain/discount/base options: ``log2_sql`` (the tuned
    default path over hit positions) serves discount 'log2'; 'jarvelin' sums 1 / disc over the
    same positions, and over ranks 1..``ideal_hits`` for the ideal DCG. Gain does not matter for
    grade 1 (2^1 - 1 = 1) but is still checked: the macro body checks every option before the
    per-row lambda (``duckrank.render.macros._hits_body``), where DuckDB folds the checks on
    constant options away."""
    jarvelin = (
        "CASE WHEN {n} = 0 THEN NULL WHEN len({pos}) = 0 THEN 0.0 "
        f"ELSE list_sum(list_transform({{pos}}, lambda p: 1.0 / {discount_sql('p')})) "
        f"/ list_sum(list_transform(range(1, {ideal_hits} + 1), "
        f"lambda i: 1.0 / {discount_sql('i')})) END"
    )
    log2 = f"{_text('discount')} = 'log2'"
    return f"CASE WHEN {log2} THEN ({log2_sql}) ELSE ({jarvelin}) END"


# --- the same in numpy ---------------------------------------------------------------------------

def gains(grades: np.ndarray, gain: str) -> np.ndarray:
    return grades if gain == "linear" else np.power(2.0, grades) - 1


def _series(grades: np.ndarray) -> np.ndarray:
    """The twin of ``_series_sql``, the same operations in the same order."""
    x = grades * np.log(2.0)
    value = np.ones_like(x)
    for j in range(_SERIES_TERMS, 1, -1):
        value = 1 + x / j * value
    return x * value


def scaled_gains(grades: np.ndarray, top: np.ndarray, gain: str) -> np.ndarray:
    """The twin of ``scaled_gain_sql``; ``top``: the largest grade of each value's row."""
    if gain == "linear":
        with np.errstate(divide="ignore", invalid="ignore"):  # rows without a grade: NULL
            return grades / top
    with np.errstate(over="ignore", invalid="ignore"):
        ordinary = np.where(grades < TINY_GRADE, _series(grades), np.power(2.0, grades) - 1)
        large = np.power(2.0, grades - top) - np.power(2.0, -top)
    return np.where(top > SCALED_ABOVE, large, ordinary)


def _outside(top: np.ndarray, low: float, high: float) -> np.ndarray:
    """The rows whose largest grade is outside [low, high] (the twin of the SQL's BETWEEN)."""
    return ~((top >= low) & (top <= high))


def discounts(ranks: np.ndarray, discount: str, base: float) -> np.ndarray:
    ranks = np.asarray(ranks, dtype=np.float64)
    if discount == "jarvelin":
        # log(max(rank, 1)) keeps log(0) warnings away from unused branches of the where.
        return np.where(ranks <= base, 1.0, np.log(np.maximum(ranks, 1)) / np.log(base))
    return np.log2(ranks + 1)


def _dcg_rows(g: Grades, values: np.ndarray, offsets: np.ndarray, gain: str, discount: str,
              base: float, scale: np.ndarray | None = None) -> np.ndarray:
    """Each row's DCG of ``values``. ``scale``: per row, the number ``scaled_gains`` divides
    by (NaN: none, the plain gain), as the SQL chooses."""
    with np.errstate(over="ignore"):  # an infinite gain's row takes the scaled one below
        plain = gains(values, gain)
    if scale is not None and not np.isnan(scale).all():
        rows = np.repeat(np.arange(len(g.K)), np.diff(offsets))
        top = scale[rows]
        plain = np.where(np.isnan(top), plain, scaled_gains(values, top, gain))
    terms = plain / discounts(Grades.ranks(offsets), discount, base)
    return g.row_sum(terms, offsets)


def _scale(g: Grades) -> np.ndarray:
    """The twin of the ratio's choice in ``_graded_ndcg_sql``: each row's largest grade where
    ``ordinary_sql`` refuses it, else NaN."""
    top = _largest_grades(g)
    return np.where(_outside(top, TINY_GRADE, SCALED_ABOVE), top, np.nan)


def _defined(g: Grades, values: np.ndarray) -> np.ndarray:
    return np.where(g.valid & (g.n > 0), values, np.nan)


def _safe(denominator: np.ndarray) -> np.ndarray:
    return np.where(denominator == 0, 1, denominator)


def _ndcg(g: Grades, *, gain: str = "exponential", discount: str = "log2",
          base: float = 2, ideal: str = "min_k_truth") -> np.ndarray:
    check_options("ndcg", NDCG_OPTIONS,
                  {"gain": gain, "discount": discount, "base": base, "ideal": ideal})
    scale = _scale(g)
    dcg = _dcg_rows(g, g.top, g.top_offsets, gain, discount, base, scale)
    values, offsets = g.ideal, g.ideal_offsets
    if ideal == "k":
        defined = g.valid & (g.n > 0)
        check_ideal_k("ndcg", g.k[defined])
        places = np.where(defined, g.k, 0)
        values = np.repeat(_largest_grades(g), places)
        offsets = np.concatenate([[0], np.cumsum(places)]).astype(np.int64)
    best = _dcg_rows(g, values, offsets, gain, discount, base, scale)
    return _defined(g, dcg / _safe(best))


def _largest_grades(g: Grades) -> np.ndarray:
    """Each row's largest grade in truth (0 without a positive one)."""
    largest = np.zeros(len(g.K))
    has_ideal = np.diff(g.ideal_offsets) > 0
    largest[has_ideal] = g.ideal[g.ideal_offsets[:-1][has_ideal]]
    return largest


def _dcg(g: Grades, *, gain: str = "exponential", discount: str = "log2",
         base: float = 2) -> np.ndarray:
    check_options("dcg", DCG_OPTIONS, {"gain": gain, "discount": discount, "base": base})
    top = _largest_grades(g)
    # Outside the ordinary range the gains are divided by 1: the series for tiny grades.
    scale = np.where(_outside(top, TINY_GRADE, SCALED_ABOVE), 1.0, np.nan)
    with np.errstate(over="ignore"):
        dcg = _defined(g, _dcg_rows(g, g.top, g.top_offsets, gain, discount, base, scale))
    too_large = np.isinf(dcg)
    if too_large.any():
        raise ValueError(_dcg_too_large(top[too_large][0], gain))
    return dcg


def _dcg_too_large(grade: float, gain: str) -> str:
    return (f"dcg: the DCG of a row whose largest grade is {float(grade)} is too large for a "
            f"DOUBLE (gain {gain}); use ndcg, or gain := 'linear' for grades of 1024 and more")


def _err(g: Grades, *, max_grade: float = 4) -> np.ndarray:
    check_options("err", (MAX_GRADE,), {"max_grade": max_grade})
    defined = g.valid & (g.n > 0)
    top_grade = _largest_grades(g)
    too_high = defined & (top_grade > max_grade)
    if too_high.any():
        raise ValueError(_err_too_high(top_grade[too_high][0], max_grade))
    satisfied = np.power(2.0, g.top - max_grade) - np.power(2.0, -max_grade)  # _satisfied_sql
    # Rows side by side in a padded matrix, folded from the last rank to the first as in the SQL
    # (_err_sql), so that both give the same bits: a padding rank (R = 0) leaves E unchanged.
    counts = np.diff(g.top_offsets)
    rows = np.repeat(np.arange(len(g.K)), counts)
    columns = Grades.ranks(g.top_offsets) - 1
    stop = np.zeros((len(g.K), int(counts.max()) if len(counts) else 0))
    stop[rows, columns] = satisfied
    below = np.zeros(len(g.K))
    for column in range(stop.shape[1] - 1, -1, -1):
        below = stop[:, column] / (column + 1) + (1 - stop[:, column]) * below
    return _defined(g, below)


def _err_too_high(grade: float, max_grade: float) -> str:
    return (f"err: truth has grade {float(grade)} above max_grade {max_grade}; raise max_grade "
            "(max_grade := 5 for 1..5 ratings)")


def _half_life_rows(g: Grades, values: np.ndarray, offsets: np.ndarray,
                    half_life: float, scaled: np.ndarray) -> np.ndarray:
    weights = np.power(2.0, -(Grades.ranks(offsets) - 1) / (half_life - 1))
    rows = np.repeat(np.arange(len(g.K)), np.diff(offsets))
    if scaled.any():
        values = np.where(scaled[rows], values / _largest_grades(g)[rows], values)
    return g.row_sum(values * weights, offsets)


def _half_life_utility(g: Grades, *, half_life: float = 5) -> np.ndarray:
    check_options("half_life_utility", (HALF_LIFE,), {"half_life": half_life})
    scaled = _outside(_largest_grades(g), *HALF_LIFE_ORDINARY) & (g.n > 0)
    utility = _half_life_rows(g, g.top, g.top_offsets, half_life, scaled)
    ideal = _half_life_rows(g, g.ideal, g.ideal_offsets, half_life, scaled)
    return _defined(g, utility / _safe(ideal))


# --- records -------------------------------------------------------------------------------------

_NO_RELEVANT = "NULL when truth has no positive grade."
_NO_RELEVANT_EMPTY = _NO_RELEVANT + " 0 when the top K is empty (empty rec)."
_GAIN_AND_DISCOUNT = "gain(g) = 2^g - 1 (or g), disc(i) = log2(i + 1) (or Järvelin's)"

def _graded_ndcg_sql(ideal: str) -> str:
    def ratio(term: Callable[[str, str], str]) -> str:
        return f"{hits_sum_sql(term)} / {ranked_sum_sql(ideal, term)}"

    return (
        f"CASE WHEN {{n}} = 0 THEN NULL WHEN {{K}} = 0 THEN 0.0 "
        f"WHEN {ordinary_sql('{ideal}[1]')} THEN {ratio(_gained_sql)} "
        f"ELSE {ratio(_scaled_gained_sql)} END"
    )


# half_life_utility divides every grade by the row's largest outside this range, where a sum of
# grades could overflow (inf / inf) or a product with a weight underflow (0 / 0).
HALF_LIFE_ORDINARY = (1e-300, 1e300)


def _half_life_utility_sql() -> str:
    def ratio(term: Callable[[str, str], str]) -> str:
        return f"{hits_sum_sql(term)} / {ranked_sum_sql('{ideal}', term)}"

    low, high = HALF_LIFE_ORDINARY
    return (
        "CASE WHEN {n} = 0 THEN NULL WHEN {K} = 0 THEN 0.0 "
        f"WHEN {{ideal}}[1] BETWEEN {low} AND {high} THEN {ratio(_half_life_sql)} "
        f"ELSE {ratio(_scaled_half_life_sql)} END"
    )


def _dcg_sql() -> str:
    """DCG is no ratio: a row outside ``ordinary_sql`` takes the series for its tiny grades
    (gains divided by 1), and a value too large for a DOUBLE is an error naming the largest
    grade and the option, rather than Infinity."""
    message = (
        "'dcg: the DCG of a row whose largest grade is ' || {ideal}[1]::VARCHAR || ' is too "
        "large for a DOUBLE (gain ' || gain::VARCHAR || '); use ndcg, or gain := "
        "''linear'' for grades of 1024 and more'"
    )
    return (
        f"CASE WHEN {{n}} = 0 THEN NULL WHEN {ordinary_sql('{ideal}[1]')} "
        f"THEN {hits_sum_sql(_gained_sql)} "
        f"ELSE list_transform([{hits_sum_sql(_unscaled_gained_sql)}], lambda d: "
        f"CASE WHEN isinf(d) THEN error({message}) ELSE d END)[1] END"
    )


_GRADED_NDCG_SQL = _graded_ndcg_sql("{ideal}")

NDCG_GRADED = Metric(
    name="ndcg",
    summary="Normalised discounted cumulative gain with graded relevance (truth: item -> grade).",
    formula="DCG / IDCG, DCG = sum over ranks i <= K of gain(g_i) / disc(i), g_i the grade of "
    "the item at rank i (0 when it has none); IDCG = the same sum over the min(k, n) largest "
    f"grades of truth, sorted by duckrank (ideal := 'k': k times the largest); "
    f"{_GAIN_AND_DISCOUNT}",
    undefined=_NO_RELEVANT_EMPTY,
    # Only the ideal list is chosen, for the reason given in choose_sql.
    **chosen_sql(IDEAL, {
        "min_k_truth": "{ideal}",
        "k": f"CASE WHEN {{k}} > {IDEAL_K_LIMIT} THEN {ideal_k_error_sql('ndcg', '{k}')} "
        "ELSE list_resize([]::DOUBLE[], {k}, {ideal}[1]) END",
    }, _graded_ndcg_sql),
    kernel=_ndcg,
    inputs="grades",
    truth_type=GRADED_TRUTH,
    options=NDCG_OPTIONS,
    peers="gain 'exponential': ranx's ndcg_burges, Hivemall's graded ndcg (which cuts the ideal "
    "list at k but takes it unsorted from the caller), scikit-learn's ndcg_score on 2^g - 1. "
    "gain 'linear': trec_eval's ndcg_cut, ranx's ndcg, ir-measures' nDCG@k, scikit-learn's "
    "ndcg_score (which also breaks score ties by averaging). discount 'jarvelin': LensKit's "
    "NDCG (gain 'linear' for its gain= field); ideal 'k': RecTools' NDCG (binary). See "
    "docs/conventions.md.",
    source="Apache Hivemall user guide, 'Evaluation of ranking problems' (exponential gain); "
    "lecture slides 'Rank-Aware Top-N Metrics' (disc, 9.5 / 10.9)",
)

DCG = Metric(
    name="dcg",
    summary="Discounted cumulative gain (unnormalised) of the top K with graded relevance.",
    formula="sum over ranks i <= K of gain(g_i) / disc(i), g_i the grade of the item at rank i "
    f"(1 for a hit when truth is a LIST); {_GAIN_AND_DISCOUNT}",
    undefined=_NO_RELEVANT + " (0 is a possible value: a top K without any relevant item.)",
    sql=_dcg_sql(),
    kernel=_dcg,
    inputs="grades",
    options=DCG_OPTIONS,
    peers="ranx's dcg (linear gain) and dcg_burges (exponential) report 0 rather than dropping "
    "rows without relevant items.",
    source="Lecture slides 'Rank-Aware Top-N Metrics' (DCG(O, u) = 9.5 with the 'jarvelin' "
    "discount and linear gain)",
)

ERR = Metric(
    name="err",
    summary="Expected reciprocal rank (Chapelle et al.): the expected 1/rank at which a user "
    "scanning down the list stops, satisfied.",
    formula="sum over r <= K of (1 / r) R_r prod_{i < r} (1 - R_i), "
    "R = (2^g - 1) / 2^max_grade",
    undefined=_NO_RELEVANT,
    sql=(
        "CASE WHEN {n} = 0 THEN NULL "
        f"WHEN {{ideal}}[1] > {_number('max_grade')} THEN error('err: truth has grade ' "
        "|| {ideal}[1]::VARCHAR || ' above max_grade ' || max_grade::VARCHAR "
        "|| '; raise max_grade (max_grade := 5 for 1..5 ratings)') "
        f"ELSE {_err_sql()} END"
    ),
    kernel=_err,
    inputs="grades",
    options=(MAX_GRADE,),
    aliases=("expected_reciprocal_rank",),
    peers="ir-measures' ERR@k (TREC's gdeval, grades 0..4: the same as max_grade := 4). ranx and "
    "trec_eval have no ERR. The xCLiMF paper (Shi et al., RecSys 2013) uses max_grade 5 for "
    "1..5 ratings.",
    source="Bharath G.S., 'A Quick Recap on Ranking Evaluation metrics' (2022); Shi et al., "
    "'xCLiMF: Optimizing Expected Reciprocal Rank for Data with Multiple Levels of Relevance' "
    "(RecSys 2013), eq. 1 and 2",
)

HALF_LIFE_UTILITY = Metric(
    name="half_life_utility",
    summary="Breese et al.'s half-life utility: grades discounted exponentially by rank, "
    "normalised by the ideal ordering.",
    formula="sum over ranks i <= K of g_i 2^(-(i - 1) / (half_life - 1)), divided by the same "
    "sum over the min(k, n) largest grades of truth",
    undefined=_NO_RELEVANT_EMPTY,
    sql=_half_life_utility_sql(),
    kernel=_half_life_utility,
    inputs="grades",
    options=(HALF_LIFE,),
    aliases=("hlu",),
    peers="No installed peer tool. Breese et al. subtract a neutral vote d from each rating, "
    "max(v - d, 0); here d = 0 (grades are already >= 0): pass v - d as the grade to get theirs.",
    source="Lecture slides 'Rank-Aware Top-N Metrics' (half-life discount "
    "2^(-(k(i) - 1) / (alpha - 1)))",
)

NDCG_GRADES = Metric(
    name="ndcg_grades",
    summary="Graded ndcg from grades alone, Hivemall's graded form: rec lists the true grade of "
    "each recommended item in rec order (structs whose first field is the grade, as "
    "to_ordered_list(struct(relscore, itemid), score, '-reverse') makes), truth lists the "
    "grades of the relevant items.",
    formula="DCG / IDCG, DCG = sum over ranks i <= K of gain(g_i) / disc(i), g_i the first "
    "field of rec[i]; IDCG = the same sum over the min(k, n) largest grades in truth, sorted by "
    f"duckrank; {_GAIN_AND_DISCOUNT}",
    undefined=_NO_RELEVANT_EMPTY,
    sql=_GRADED_NDCG_SQL,
    kernel=_ndcg,
    inputs="grade_lists",
    options=DCG_OPTIONS,
    peers="Hivemall's ndcg(rec_structs, truth_grades, k) gives the same value when truth is "
    "sorted largest first; Hivemall trusts the caller's order, returns NaN or Infinity instead "
    "of NULL, and accepts negative grades (see the hivemall schema).",
    source="Apache Hivemall user guide, 'Evaluation of ranking problems' (dummy_recrel: "
    "0.8128912838590544 at k = 2, 0.9187707805346093 at k = 3)",
)


def _with_graded_truth(metric: Metric) -> Metric:
    """The MAP-truth overload of a metric whose LIST overload is ``metric``."""
    return replace(metric, truth_type=GRADED_TRUTH)


# ndcg's LIST overload is the binary record (duckrank.metrics.binary), whose fast path serves
# grade 1 for every item; dcg, err and half_life_utility have one record per truth kind.
METRICS = (
    NDCG_GRADED,
    *(overload for metric in (DCG, ERR, HALF_LIFE_UTILITY)
      for overload in (metric, _with_graded_truth(metric))),
    NDCG_GRADES,
)
