"""Student's paired t-test, from one-pass sums that SQL computes at the speed of ``avg``.

With d = x - y over the n pairs: mean = S1 / n and the sum of squared deviations
SS = S2 - S1^2 / n (S1 = sum d, S2 = sum d^2); t = mean / sqrt(SS / (n - 1) / n) with n - 1
degrees of freedom, as ``scipy.stats.ttest_rel``.

Four sums keep the test within about twice the time of ``avg(x - y)`` over the same pairs (the
sums 1.7x, the p-value call the rest; measured on 1,000,000 pairs by benchmarks/bench_stats.py).
Welford's ``stddev_samp`` in their place makes it 3x, and min and max (to recognise constant
differences exactly) cost another 0.4x. The price: SS from one-pass sums cancels when the
differences are nearly constant. Its rounding error is below 3 n u S2 (u = 2^-53, in any
summation order), and the kernel checks that bound: when it would leave fewer than 6 exact digits
in SS, it raises an error rather than return an imprecise statistic. That needs
3 n u S2 > 1e-6 SS, i.e. a standard deviation of the differences below about 2e-5 sqrt(n) times
their mean (2% of it at n = 10^6: every user changed by almost exactly the same amount; |t| is
then above 50,000 and p underflows to 0), including differences that are all equal but whose
squares do not sum exactly (all 0.1, or ``(x + 0.1) - x``) and all-equal non-zero differences
(SS = 0 from one-pass sums cannot tell them from differences that merely cancel); all-zero
differences give NULL (0/0), as scipy.
"""

from __future__ import annotations

import numpy as np

from duckrank.stats.distributions import student_t_two_sided
from duckrank.stats.record import MOMENTS, Field, InReport, StatTest

_UNIT_ROUNDOFF = 2.0**-53
_MIN_EXACT_DIGITS = 6


def student_t(n: np.ndarray, mean: np.ndarray, variance: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """t = mean / sqrt(variance / n) and its two-sided p-value with n - 1 degrees of freedom,
    for a batch of groups (NaN where n < 2 or nothing is finite to divide). ``variance`` is the
    sample variance (n - 1 in the denominator)."""
    count = np.asarray(n, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        statistic = np.asarray(mean, dtype=np.float64) / np.sqrt(
            np.asarray(variance, dtype=np.float64) / count)
    statistic = np.where(count >= 2, statistic, np.nan)
    return statistic, student_t_two_sided(statistic, count - 1)


def paired_t(
    n: np.ndarray, sum_d: np.ndarray, sum_d2: np.ndarray, sum_x: np.ndarray, sum_y: np.ndarray
) -> dict[str, np.ndarray]:
    """The fields of ``paired_ttest`` for a batch of groups (NaN where undefined)."""
    count = n.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mean_d = sum_d / count
        squares = sum_d2 - sum_d * mean_d
        rounding = 3 * count * _UNIT_ROUNDOFF * sum_d2
        # SS = 0 is exact only when nothing could round (all differences 0): one-pass sums of
        # differences that are not all equal can also cancel to exactly 0.
        precise = rounding <= squares * 10.0**-_MIN_EXACT_DIGITS
        imprecise = (count >= 2) & np.isfinite(sum_d2) & ~precise
        if imprecise.any():
            i = int(np.argmax(imprecise))
            raise ValueError(
                f"paired_ttest: the differences x - y are too nearly constant for a one-pass "
                f"variance to keep {_MIN_EXACT_DIGITS} exact digits (mean {mean_d[i]:.17g}, sum "
                f"of squared deviations {squares[i]:.3g} against a rounding bound of "
                f"{rounding[i]:.3g}, over {n[i]} pairs); compute t as avg(x - y) / "
                "stddev_samp(x - y) * sqrt(count(x - y))"
            )
        # A sum that is not finite comes from an infinite or NaN difference, or overflowed (|d|
        # above about 1e154 squares to inf): SS would be inf or NaN, and t = mean / inf = 0
        # would read as p = 1. No statistic then.
        finite = np.isfinite(sum_d) & np.isfinite(sum_d2)
        statistic, p_value = student_t(
            count, np.where(finite, mean_d, np.nan), squares / (count - 1))
        return {
            "n": n,
            "mean_x": sum_x / count,
            "mean_y": sum_y / count,
            "mean_diff": mean_d,
            "statistic": statistic,
            "p_value": p_value,
        }


PAIRED_TTEST = StatTest(
    name="paired_ttest",
    summary_text="Student's paired t-test on the differences d = x - y.",
    summary=MOMENTS,
    fields=(
        Field("n", "BIGINT", "pairs used (both x and y non-NULL)"),
        Field("mean_x", "DOUBLE", "mean of x over those pairs"),
        Field("mean_y", "DOUBLE", "mean of y over those pairs"),
        Field("mean_diff", "DOUBLE", "mean of d = x - y"),
        Field("statistic", "DOUBLE", "t = mean(d) / (sd(d) / sqrt(n)), sd with n - 1 in the "
              "denominator"),
        Field("p_value", "DOUBLE", "two-sided: P(|T| >= |t|), T Student's t with n - 1 "
              "degrees of freedom"),
    ),
    null_hypothesis="the differences come from a normal distribution with mean 0.",
    convention="two-sided, from Student's t distribution with n - 1 degrees of freedom "
    "(the regularized incomplete beta function, computed by duckrank; equal to "
    "`scipy.stats.ttest_rel(x, y)` to 1e-9).",
    undefined="means are NULL when n = 0; statistic and p_value are NULL when n < 2 or "
    "when every difference is 0 (0/0, as scipy). The variance comes from one-pass sums (that is "
    "what keeps the test within about twice the time of `avg`): if the differences are so "
    "nearly constant that it would keep fewer than 6 exact digits (a standard deviation below "
    "about 2e-5 sqrt(n) times their mean: 2% of it at n = 10^6; |t| is then above 50,000), "
    "the function raises an "
    "error naming the values and the alternative (`stddev_samp`) rather than answer "
    "imprecisely. So do differences that are all equal and not 0, such as all 0.1, all 0.5 or "
    "`(x + 0.1) - x` (one-pass sums cannot tell them from differences that cancel). A NaN "
    "value makes every field computed from it NULL; an infinite difference, or differences so "
    "large that their squares overflow (|d| above about 1e154), make statistic and p_value "
    "NULL (the means are then as computed: inf, -inf or NULL).",
    prefer="the default for comparing two systems' mean metric over the same users or queries: "
    "Smucker et al. (2007) found it agrees closely with the randomization and bootstrap tests on "
    "TREC runs, and it costs only a few sums. With thousands of users its normality assumption "
    "matters little: Ihemelandu and Ekstrand (2023) found its error rate as expected on large "
    "search and recommendation experiments.",
    source="Student (1908); `scipy.stats.ttest_rel`.",
    kernel=paired_t,
    report=InReport(
        alias="t", title="paired t-test", help="paired t-test", from_variance=student_t,
        constant=": no variance, so no t statistic (the randomization test gives a p-value)",
    ),
)
