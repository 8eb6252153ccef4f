"""The Wilcoxon signed-rank test, as ``scipy.stats.wilcoxon(x, y)`` does it with its default options
(scipy 1.17: ``zero_method="wilcox"``, ``correction=False``, ``method="auto"``).

For one group, with d = x - y over the n pairs:

* zero differences are dropped; the m others are ranked by |d| (ties get their average rank);
  r+ and r- are the sums of the ranks of the positive and of the negative differences; the
  statistic is min(r+, r-).
* the p-value is 2 min(P(R+ <= r+), P(R+ >= r+)), capped at 1, from the exact distribution of R+
  over the 2^m equally likely sign patterns (``signed_rank_tails``) when n <= 50 and there are
  neither ties nor zeros, or when n <= 13 (scipy then runs a permutation test over all 2^n sign
  flips, which gives this same exact count); otherwise from the normal approximation
  z = (r+ - m(m+1)/4) / sqrt((m(m+1)(2m+1) - sum(t^3 - t)/2) / 24) (t: the sizes of the groups of
  tied |d|), without continuity correction. n counts the zero differences, m does not.
"""

from __future__ import annotations

import math

import numpy as np

from duckrank.stats.distributions import normal_two_sided, signed_rank_tails
from duckrank.stats.record import DIFFERENCES, Field, InReport, StatTest

_EXACT_MAX_N = 50  # scipy's threshold for the exact distribution (no ties, no zeros)
_PERMUTATION_MAX_N = 13  # below it scipy enumerates all 2^n sign flips (2^13 < its 9999)


def signed_ranks(nonzero: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Twice the average rank of each |d| (integers, so ties stay exact) and the sizes of the
    groups of tied |d|."""
    magnitude = np.abs(nonzero)
    order = np.argsort(magnitude, kind="stable")
    ordered = magnitude[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    sizes = np.diff(np.r_[starts, len(ordered)])
    doubled = np.empty(len(ordered), dtype=np.int64)
    # A group of ties at sorted positions start+1 .. start+size has average rank
    # start + (size + 1) / 2.
    doubled[order] = np.repeat(2 * starts + sizes + 1, sizes)
    return doubled, sizes


def wilcoxon_kernel(values: np.ndarray) -> dict[str, float]:
    """The fields of ``wilcoxon`` for one group's differences (NaN where undefined)."""
    n = len(values)
    # An infinite difference is left unranked, as NaN is (scipy ranks it above every finite
    # one): it comes from a metric value that is not a number, and one rule holds for every test.
    if n == 0 or not np.isfinite(values).all():
        return {"n": n, "statistic": math.nan, "p_value": math.nan}
    nonzero = values[values != 0]
    m = len(nonzero)
    doubled, sizes = signed_ranks(nonzero)
    plus = int(doubled[nonzero > 0].sum())
    minus = int(doubled.sum()) - plus
    exact = n <= _PERMUTATION_MAX_N or (n <= _EXACT_MAX_N and m == n and (sizes == 1).all())
    if exact:
        below, above = signed_rank_tails(doubled, plus)
        p_value = min(1.0, 2 * min(below, above) / 2.0**m)
    else:
        ties = float(np.sum(sizes.astype(np.float64) ** 3 - sizes))
        spread = math.sqrt((m * (m + 1.0) * (2.0 * m + 1.0) - ties / 2) / 24)
        z = (plus / 2 - m * (m + 1.0) * 0.25) / spread if spread > 0 else math.nan
        p_value = float(normal_two_sided(np.array([z]))[0])
    return {"n": n, "statistic": min(plus, minus) / 2, "p_value": p_value}


WILCOXON = StatTest(
    name="wilcoxon",
    summary_text="The Wilcoxon signed-rank test on the differences d = x - y.",
    summary=DIFFERENCES,
    fields=(
        Field("n", "BIGINT", "pairs used (both x and y non-NULL), zero differences included"),
        Field("statistic", "DOUBLE", "min(r+, r-): the smaller of the sums of the ranks of |d| "
              "over the positive and over the negative differences (zeros dropped, ties "
              "averaged)"),
        Field("p_value", "DOUBLE", "two-sided"),
    ),
    null_hypothesis="the differences are symmetric about 0.",
    convention="two-sided, as `scipy.stats.wilcoxon(x, y)` with its default options in scipy "
    "1.17 (equal to it to 1e-9): zero differences dropped before ranking, tied |d| given their "
    "average rank; p = 2 min(P(R+ <= r+), P(R+ >= r+)) capped at 1, from the exact distribution "
    "of R+ over all sign patterns when n <= 50 with neither ties nor zeros, or when n <= 13 "
    "(where scipy enumerates all 2^n sign flips); otherwise from the normal approximation with "
    "the tie correction of the variance and no continuity correction. n here counts the zero "
    "differences, as scipy's thresholds do.",
    undefined="statistic and p_value are NULL when n = 0. One pair, or differences that are "
    "all 0 with n <= 13, give statistic 0 and p-value 1 (as scipy); all-zero differences with "
    "n > 13 give statistic 0 and a NULL p-value (scipy: nan). A NaN or infinite difference makes "
    "both NULL (scipy would rank an infinite difference above the finite ones).",
    prefer="when the paper you compare with used it (the xCLiMF paper reports Wilcoxon tests at "
    "p < 0.05). Otherwise prefer the others: on TREC runs Smucker et al. (2007) found that it "
    "detects significance poorly and can detect it falsely, and recommend discontinuing it for "
    "the significance of a difference between means; Ihemelandu and Ekstrand (2023) found its "
    "false-positive rate too high on large search and recommendation experiments.",
    source="Wilcoxon (1945); `scipy.stats.wilcoxon`.",
    kernel=wilcoxon_kernel,
    report=InReport(alias="wilcoxon", title="Wilcoxon signed-rank test", help="signed-rank"),
)
