"""Null distributions the tests need, with numpy and ``math`` only (scipy is no dependency).

* ``student_t_two_sided(t, df)``: P(|T| >= |t|) for Student's t with ``df`` degrees of freedom,
  which is the regularized incomplete beta function I_x(df/2, 1/2) at x = df / (df + t^2). It is
  evaluated by continued fractions (Abramowitz and Stegun 26.5.8 and 26.5.9, by their convergents),
  each where it converges fast and without cancellation, vectorised over groups: at most about
  100 steps for any t and df, relative error about 1e-13 (checked against mpmath in the tests).
* ``normal_two_sided(z)``: P(|Z| >= |z|) = erfc(|z| / sqrt(2)).
* ``signed_rank_tails``: the exact null distribution of the Wilcoxon signed-rank statistic
  (every sign pattern equally likely), by dynamic programming over the sums of ranks; ranks are
  doubled so that tied (average) ranks stay integers and the counts stay exact.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np

_EPSILON = 1e-15  # convergence of the continued fraction (a few units in the last place)
_MAX_STEPS = 2000  # never reached: at most about 100 steps are needed for any t and df
_BATCH = 32  # steps whose coefficients are computed at once
_PER_ELEMENT_MAX = 16  # up to this many elements, the recurrence runs on Python floats
_LOG_GAMMA_HALF = 0.5 * math.log(math.pi)


def _stirling_correction(z: np.ndarray) -> np.ndarray:
    """lgamma(z) - ((z - 1/2) log z - z + log(2 pi) / 2), by its asymptotic series (Bernoulli
    numbers); the first omitted term is below 2e-14 for z >= 10."""
    inverse = 1.0 / z
    square = inverse * inverse
    return inverse * (1 / 12 - square * (1 / 360 - square * (
        1 / 1260 - square * (1 / 1680 - square / 1188))))


def log_beta_half(a: np.ndarray) -> np.ndarray:
    """log B(a, 1/2) = lgamma(a) + lgamma(1/2) - lgamma(a + 1/2), for a > 0.

    For large ``a`` the two lgamma terms are huge and nearly equal (their difference would lose
    up to 9 digits at a = 10^6), so their difference is taken from Stirling's series instead:
    lgamma(a) - lgamma(a + 1/2) = -(a - 1/2) log1p(1/(2a)) - log(a + 1/2)/2 + 1/2
    + correction(a) - correction(a + 1/2)."""
    a = np.asarray(a, dtype=np.float64)
    out = np.empty_like(a)
    small = a < 10
    out[small] = [
        math.lgamma(v) + _LOG_GAMMA_HALF - math.lgamma(v + 0.5) for v in a[small].tolist()
    ]
    big = a[~small]
    out[~small] = (
        _LOG_GAMMA_HALF - (big - 0.5) * np.log1p(0.5 / big) - 0.5 * np.log(big + 0.5) + 0.5
        + _stirling_correction(big) - _stirling_correction(big + 0.5)
    )
    return out


def _limit(batches: Iterable, one: float | np.ndarray) -> float | np.ndarray:
    """The value of 1 + c_1 / (1 + c_2 / (1 + ...)) from its coefficients, given batch by batch
    (each an iterable of c_j: rows of an array to run every element at once, or floats for one
    element), as the limit of the convergents A_j / B_j.

    Forward (Wallis) recurrence X_j = X_{j-1} + c_j X_{j-2} for X = A and B; after each batch the
    pair is rescaled (so nothing overflows) and the evaluation stops once the last two
    convergents agree to ``_EPSILON`` (NaN, from NaN input, counts as agreeing)."""
    a_before, a, b_before, b = one, one, 0 * one, one
    for batch in batches:
        for term in batch:
            a_before, a = a, a + term * a_before
            b_before, b = b, b + term * b_before
        a, a_before, b_before, b = a / b, a_before / b, b_before / b, one
        if not np.any(abs(a - a_before / b_before) > _EPSILON * abs(a)):
            return a
    raise ArithmeticError("the incomplete beta continued fraction did not converge")


def _continued_fraction(coefficients: Callable[[np.ndarray], np.ndarray], size: int) -> np.ndarray:
    """``_limit`` for ``size`` elements; ``coefficients(j)`` gives c_j for a column of step numbers
    (shape (steps, 1)) and every element, ``_BATCH`` steps per call.

    With many elements the recurrence runs on numpy arrays, all elements at once. With few (one
    per group, and a query usually has a few groups) numpy's per-call overhead would dominate,
    so it runs on Python floats, element by element, from the same coefficients: about 20 times
    faster for one element."""
    firsts = range(1, _MAX_STEPS + 1, _BATCH)
    with np.errstate(all="ignore"):
        if size > _PER_ELEMENT_MAX:
            return _limit((coefficients(np.arange(f, f + _BATCH)[:, None]) for f in firsts),
                          np.ones(size))
        computed: list[list[list[float]]] = []  # per batch, per element: its coefficients

        def batch(k: int) -> list[list[float]]:  # computed once, for every element, on demand
            while len(computed) <= k:
                first = firsts[len(computed)]
                computed.append(coefficients(np.arange(first, first + _BATCH)[:, None]).T.tolist())
            return computed[k]

        return np.array([
            _limit((batch(k)[i] for k in range(len(firsts))), 1.0) for i in range(size)
        ], dtype=np.float64)


def _beta_fraction_small_x(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """I_x(a, b) * a * B(a, b) / (x^a (1 - x)^b), by Abramowitz and Stegun 26.5.8 (fast for x
    below about (a + 1) / (a + b + 2))."""

    def coefficients(j: np.ndarray) -> np.ndarray:
        m = j // 2
        odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        even = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        return np.where(j % 2 == 1, odd, even)

    return 1.0 / _continued_fraction(coefficients, len(x))


def _beta_fraction_large_x(a: np.ndarray, b: np.ndarray, x: np.ndarray, y: np.ndarray
                           ) -> np.ndarray:
    """I_x(a, b) * a * B(a, b) / (x^a (1 - x)^(b - 1)), with y = 1 - x, by Abramowitz and Stegun
    26.5.9 (in powers of x / (1 - x)). Near x = 1 with a large (many degrees of freedom), 26.5.8
    loses digits to cancellation (1 + c_j with c_j near -1); this form does not."""
    z = x / y

    def coefficients(j: np.ndarray) -> np.ndarray:
        m = j // 2
        odd = -(a + m) * (b - m - 1) / ((a + 2 * m) * (a + 2 * m + 1)) * z
        even = m * (a + b - 1 + m) / ((a + 2 * m - 1) * (a + 2 * m)) * z
        return np.where(j % 2 == 1, odd, even)

    return 1.0 / _continued_fraction(coefficients, len(x))


def student_t_two_sided(t: np.ndarray, df: np.ndarray) -> np.ndarray:
    """P(|T| >= |t|) for Student's t distribution with ``df`` > 0 degrees of freedom (NaN where
    t or df is NaN; 0 where t is infinite)."""
    t, df = np.broadcast_arrays(np.asarray(t, dtype=np.float64), np.asarray(df, dtype=np.float64))
    p = np.where(np.isinf(t), 0.0, np.nan)
    finite = np.isfinite(t) & np.isfinite(df) & (df > 0)
    if not finite.any():
        return p
    t2, df = t[finite] ** 2, df[finite]
    a = df / 2
    x = df / (df + t2)  # the answer is I_x(a, 1/2); y = 1 - x, computed without cancellation
    y = t2 / (df + t2)
    with np.errstate(divide="ignore"):  # t = 0: log(y) = -inf, the front factor is 0
        power = np.exp(-a * np.log1p(t2 / df) + 0.5 * np.log(y) - log_beta_half(a))
    # 26.5.9 for I_x(a, 1/2) directly, except where |t| <= 2 and x is past the usual switch
    # point (a + 1) / (a + b + 2): there 1 - I_y(1/2, a) by 26.5.8 takes fewer steps (26.5.9
    # needs hundreds as t goes to 0 when df is large) and the subtraction costs little (p > 0.04,
    # so its absolute error of 1e-16 is below 1e-14 relative). Beyond |t| = 2, 26.5.8 on that
    # side loses digits (1e-9 at |t| = 4 for df = 10^4) while 26.5.9 stays near 1e-15 and
    # converges within about 100 steps (measured over df = 1 .. 10^8 and all t).
    direct = (t2 > 4) | (x < (a + 1.0) / (a + 2.5))
    rest = ~direct
    value = np.empty_like(x)
    value[direct] = power[direct] / (y[direct] * a[direct]) * _beta_fraction_large_x(
        a[direct], np.full(direct.sum(), 0.5), x[direct], y[direct]
    )
    value[rest] = 1.0 - power[rest] / 0.5 * _beta_fraction_small_x(
        np.full(rest.sum(), 0.5), a[rest], y[rest]
    )
    if not np.isfinite(value).all():  # a zero denominator in the recurrence: never seen
        raise ArithmeticError("Student's t distribution: no finite value for finite t and df")
    p[finite] = value
    return p


_erfc = np.frompyfunc(math.erfc, 1, 1)


def normal_two_sided(z: np.ndarray) -> np.ndarray:
    """P(|Z| >= |z|) for a standard normal Z (NaN where z is NaN)."""
    return _erfc(np.abs(np.asarray(z, dtype=np.float64)) / math.sqrt(2)).astype(np.float64)


def signed_rank_tails(doubled_ranks: np.ndarray, observed: int) -> tuple[int, int]:
    """Among the 2^m sign patterns of m ranks (each pattern equally likely under the null
    hypothesis), how many give a sum of positive doubled ranks <= ``observed``, and how many
    >= ``observed``. Exact integers: the counts stay below 2^m (m <= 62 in int64; the Wilcoxon
    test uses m <= 50)."""
    total = int(np.sum(doubled_ranks))
    counts = np.zeros(total + 1, dtype=np.int64)  # counts[s]: patterns whose sum is s
    counts[0] = 1
    reached = 0
    for rank in np.asarray(doubled_ranks, dtype=np.int64).tolist():
        counts[rank : reached + rank + 1] += counts[: reached + 1].copy()
        reached += rank
    return int(counts[: observed + 1].sum()), int(counts[observed:].sum())
