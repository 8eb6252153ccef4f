"""Effect sizes of a paired comparison, with intervals: the mean difference and Cohen's d_z.

With d = x - y over the n pairs: d_z = mean(d) / sd(d), sd with n - 1 in the denominator (Cohen
1988, section 2.3.5: the standardised mean of the differences; Lakens 2013 calls it d_z). Both
intervals are percentile bootstrap intervals over the same ``trials`` resamples of the pairs
(``resampling.bootstrap_moments``), so the mean difference's interval is the one
``paired_bootstrap_ci`` gives for the same level, trials and seed, digit for digit.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from duckrank.stats.record import DIFFERENCES, Field, StatTest
from duckrank.stats.resampling import (
    _BOOTSTRAP_CONVENTION,
    LEVEL,
    SEED,
    TRIALS,
    _mean_and_scaled,
    _never,
    bootstrap_moments,
)


def effect_kernel(values: np.ndarray, level: float, trials: int, seed: int,
                  stop: Callable[[], None] = _never) -> dict[str, float]:
    """The fields of ``paired_effect_size`` for one group's sorted differences."""
    n = len(values)
    mean_diff, finite = _mean_and_scaled(values)
    out = {"n": n, "mean_diff": mean_diff, "ci_low": math.nan, "ci_high": math.nan,
           "d_z": math.nan, "d_z_low": math.nan, "d_z_high": math.nan}
    if finite is None or n < 2:  # fewer than 2 pairs, or an infinite difference: the mean alone
        return out
    scaled, exponent = finite
    sd = float(scaled.std(ddof=1))
    if sd > 0:  # d_z is scale-free: the scaled values give it
        out["d_z"] = float(scaled.mean()) / sd
    means, sds = bootstrap_moments(scaled, trials, seed, stop, sd=True)
    assert sds is not None
    alpha = (1 - level) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    out["ci_low"], out["ci_high"] = (math.ldexp(float(low), exponent),
                                     math.ldexp(float(high), exponent))
    # A resample whose differences are all equal has no d_z: it is left out of the quantiles.
    defined = sds > 0
    if defined.any():
        out["d_z_low"], out["d_z_high"] = (float(v) for v in np.quantile(
            means[defined] / sds[defined], [alpha, 1 - alpha]))
    return out


PAIRED_EFFECT_SIZE = StatTest(
    name="paired_effect_size",
    summary_text="The size of a paired difference: the mean difference and Cohen's d_z, each "
    "with a percentile bootstrap interval.",
    summary=DIFFERENCES,
    fields=(
        Field("n", "BIGINT", "pairs used (both x and y non-NULL)"),
        Field("mean_diff", "DOUBLE", "the mean of d = x - y"),
        Field("ci_low", "DOUBLE", "lower end of the mean difference's interval"),
        Field("ci_high", "DOUBLE", "upper end of the mean difference's interval"),
        Field("d_z", "DOUBLE", "Cohen's d_z = mean(d) / sd(d), sd with n - 1 in the "
              "denominator"),
        Field("d_z_low", "DOUBLE", "lower end of d_z's interval"),
        Field("d_z_high", "DOUBLE", "upper end of d_z's interval"),
    ),
    null_hypothesis="none: effect sizes and intervals, not a test.",
    convention=_BOOTSTRAP_CONVENTION + " Pairs are resampled together; each resample gives a "
    "mean and a d_z, and each interval is the quantiles of its statistic over the resamples "
    "(for d_z, over the resamples whose differences are not all equal). The mean difference's "
    "interval is `paired_bootstrap_ci`'s for the same level, trials and seed, digit for digit; "
    "d_z's is `scipy.stats.bootstrap((x, y), lambda x, y: mean(x - y) / std(x - y, ddof=1), "
    "paired=True, method=\"percentile\")`'s within Monte Carlo error.",
    undefined="mean_diff is NULL when n = 0; the intervals when n < 2; d_z when n < 2 or the "
    "differences are all equal (sd = 0: no scale to standardise by), and its interval when "
    "every resample's differences are all equal. A NaN or infinite difference makes all but n "
    "and mean_diff (as computed) NULL.",
    prefer="to say how large a difference is, not only whether it is significant: with "
    "thousands of queries nearly any difference is (Ihemelandu and Ekstrand 2023). d_z is in "
    "units of the differences' spread, comparable across metrics; Cohen's conventional 0.2, "
    "0.5, 0.8 (small, medium, large) were written for other fields and are a rough guide here. "
    "Sakai (2014) asks IR papers to report effect sizes with intervals.",
    source="Cohen (1988), *Statistical Power Analysis for the Behavioral Sciences*; Lakens "
    "(2013), Calculating and reporting effect sizes, *Frontiers in Psychology* 4; Sakai (2014), "
    "Statistical reform in information retrieval?, *SIGIR Forum* 48(1).",
    kernel=effect_kernel,
    options=(LEVEL, TRIALS, SEED),
    interruptible=True,
)
