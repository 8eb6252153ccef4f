"""Resampling tests: Fisher's paired randomization test and percentile bootstrap intervals.

Both take one group's values sorted (so the answer does not depend on the order in which DuckDB's
threads gathered them), draw from numpy's PCG64 seeded with ``seed`` (each group from the same
seed), and work through the trials in blocks of about ``_BLOCK`` numbers, so memory stays bounded:
the values, one float per trial and about 10 MiB, whatever the number of trials and values.

Randomization: a trial flips the sign of each difference with probability 1/2, independently. The
flips come as raw random bits (bit i of a trial's bytes flips value i); rather than multiply n
signs per trial, the values are cut into groups of 8 and a table holds, for each group, the flipped
sum for each of the 256 bit patterns, so a trial costs n/8 table look-ups. Flipped sums within the
rounding bound of the observed one count as equal to it (ties are common: metric differences take
few distinct values).

Between blocks the kernels call ``stop()`` when given one (``duckrank.engines.stats`` passes a
check of ``con.interrupt()``): DuckDB checks for an interrupt only between its own steps, and a
run of trials is one step, so without it an interrupt waits for the whole run. A block is a few
milliseconds of work.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from duckrank.options import NON_NEGATIVE_INTEGER, POSITIVE_INTEGER, PROPORTION
from duckrank.stats.record import DIFFERENCES, VALUES, Field, InReport, Option, StatTest

_BLOCK = 1 << 19  # numbers held per block of trials (4 MiB as float64)
_COLUMNS = 512  # bytes of flips (4,096 values) per slice: its table (1 MiB) stays in cache
_UNIT_ROUNDOFF = 2.0**-53


def _flip_table(values: np.ndarray) -> np.ndarray:
    """table[256 j + b]: the sum of values 8j .. 8j+7 with the signs of those whose bit is set in
    b flipped (``values`` padded with zeros to a multiple of 8)."""
    eights = values.reshape(-1, 8)
    subset = np.empty((len(eights), 256))  # subset[j, b]: sum of the values whose bit is set
    subset[:, 0] = 0.0
    for bit in range(8):
        np.add(subset[:, : 1 << bit], eights[:, bit : bit + 1], out=subset[:, 1 << bit : 2 << bit])
    return (eights.sum(axis=1)[:, None] - 2.0 * subset).ravel()


def _flipped_sums(table: np.ndarray, flips: np.ndarray, index: np.ndarray,
                  looked_up: np.ndarray) -> np.ndarray:
    """For each row of ``flips`` (uint8, one byte per 8 values), the sum of the flipped values
    (``index`` and ``looked_up``: buffers of the same shape)."""
    np.add(flips, np.arange(0, flips.shape[1] * 256, 256), out=index)
    table.take(index, out=looked_up)
    return looked_up.sum(axis=1)


def _never() -> None:
    """The default ``stop``: nothing interrupts."""


def sign_flip_count(values: np.ndarray, trials: int, seed: int,
                    stop: Callable[[], None] = _never) -> int:
    """How many of ``trials`` random sign flips of ``values`` give |sum| >= |observed sum|.

    The values go by slices of ``_COLUMNS`` bytes of flips (8 values a byte): for each slice, its
    table (``_COLUMNS`` x 256 sums, 1 MiB) and, block by block, each trial's bytes for that slice,
    added to the trial's running sum. Memory: the values, one float per trial, and about 10 MiB.
    The random stream is laid out slice by slice, trial by trial within a slice, so the answer
    depends only on the values, the trials and the seed."""
    columns = -(-len(values) // 64) * 8  # bytes of flips per trial, whole 64-bit words
    padded = np.zeros(columns * 8)
    padded[: len(values)] = values
    bits = np.random.PCG64(seed)
    sums = np.zeros(trials)
    observed = 0.0
    width = min(columns, _COLUMNS)
    block = max(1, _BLOCK // width)
    index = np.empty((block, width), dtype=np.intp)
    looked_up = np.empty((block, width))
    for first in range(0, columns, width):
        wide = min(width, columns - first)
        table = _flip_table(padded[first * 8 : (first + wide) * 8])
        zero = np.zeros((1, wide), dtype=np.uint8)
        observed += _flipped_sums(table, zero, index[:1, :wide], looked_up[:1, :wide])[0]
        for start in range(0, trials, block):
            stop()
            rows = min(block, trials - start)
            raw = bits.random_raw(rows * wide // 8).astype("<u8", copy=False)
            flips = raw.view(np.uint8).reshape(rows, wide)
            sums[start : start + rows] += _flipped_sums(
                table, flips, index[:rows, :wide], looked_up[:rows, :wide]
            )
    # Each sum carries at most (8 + columns) u sum|values| of rounding (8 values per table entry,
    # then one addition per entry); twice that covers the observed sum's own error.
    tolerance = 2 * (8 + columns) * _UNIT_ROUNDOFF * float(np.abs(values).sum())
    return int(np.count_nonzero(np.abs(sums) >= abs(observed) - tolerance))


def bootstrap_moments(values: np.ndarray, trials: int, seed: int,
                      stop: Callable[[], None] = _never, sd: bool = False
                      ) -> tuple[np.ndarray, np.ndarray | None]:
    """The means of ``trials`` resamples of ``values`` with replacement and, with ``sd``, their
    standard deviations (n - 1 in the denominator). The means do not depend on ``sd``: the same
    resamples are drawn either way."""
    rng = np.random.default_rng(seed)
    n = len(values)
    block = max(1, _BLOCK // n)
    means = np.empty(trials)
    sds = np.empty(trials) if sd else None
    for start in range(0, trials, block):
        stop()
        rows = min(block, trials - start)
        sample = values.take(rng.integers(0, n, (rows, n)))
        means[start : start + rows] = sample.mean(axis=1)
        if sds is not None:
            sds[start : start + rows] = sample.std(axis=1, ddof=1)
    return means, sds


def bootstrap_means(values: np.ndarray, trials: int, seed: int,
                    stop: Callable[[], None] = _never) -> np.ndarray:
    """The means of ``trials`` resamples of ``values`` with replacement."""
    return bootstrap_moments(values, trials, seed, stop)[0]


def _scaled(values: np.ndarray) -> tuple[np.ndarray, int] | None:
    """``values`` times a power of two 2^-e chosen so that their sums cannot overflow, and e
    (``np.ldexp(result, e)`` undoes it); None when a value is NaN or infinite. A power of two
    scales every value and every rounded sum exactly, so the counts and quantiles are those of
    the unscaled values; only when the sum of |values| would overflow (values near 1e308) is
    anything scaled, so ordinary values keep every bit. An ordinary group costs one pass: a
    finite sum of |values| means every value is finite."""
    with np.errstate(over="ignore", invalid="ignore"):
        magnitude = float(np.abs(values).sum()) if len(values) else 0.0
    if math.isfinite(magnitude):
        return values, 0
    if not np.isfinite(values).all():
        return None
    exponent = math.frexp(float(np.abs(values).max()))[1] + math.ceil(math.log2(len(values)))
    return np.ldexp(values, -exponent), exponent


def _mean_and_scaled(values: np.ndarray) -> tuple[float, tuple[np.ndarray, int] | None]:
    """The first step of each kernel over one group's values: their mean, computed without
    overflow (NaN for none), and the values ``_scaled`` (with the exponent). When a value is
    NaN or infinite, the mean as computed (inf, -inf or NaN) and None: nothing but the mean
    has an answer then."""
    finite = _scaled(values)
    if finite is None:
        with np.errstate(invalid="ignore"):
            return float(values.mean()), None
    scaled, exponent = finite
    return (math.ldexp(float(scaled.mean()), exponent) if len(scaled) else math.nan), finite


def randomization_kernel(values: np.ndarray, trials: int, seed: int,
                         stop: Callable[[], None] = _never) -> dict[str, float]:
    """The fields of ``randomization_test`` for one group's sorted differences."""
    n = len(values)
    mean, finite = _mean_and_scaled(values)
    # No p-value for an infinite difference: every flipped sum is then infinite (inf - inf is
    # NaN), and the test's question, how often a flip gives a mean as large, has no answer.
    p_value = math.nan
    if finite is not None and n >= 2:
        p_value = (sign_flip_count(finite[0], trials, seed, stop) + 1) / (trials + 1)
    return {"n": n, "mean_diff": mean, "p_value": p_value}


def bootstrap_kernel(values: np.ndarray, level: float, trials: int, seed: int,
                     stop: Callable[[], None] = _never) -> dict[str, float]:
    """The fields of ``bootstrap_ci`` for one group's sorted values."""
    n = len(values)
    mean, finite = _mean_and_scaled(values)
    # No interval from fewer than 2 values, nor for an infinite value: it puts inf (or inf - inf)
    # in the resamples' means.
    if finite is None or n < 2:
        return {"n": n, "mean": mean, "ci_low": math.nan, "ci_high": math.nan}
    scaled, exponent = finite
    alpha = (1 - level) / 2
    quantiles = np.quantile(bootstrap_means(scaled, trials, seed, stop), [alpha, 1 - alpha])
    low, high = np.ldexp(quantiles, exponent) if exponent else quantiles
    return {"n": n, "mean": mean, "ci_low": float(low), "ci_high": float(high)}


TRIALS = Option("trials", 10000, "the number of random trials (resamples)",
                bounds=POSITIVE_INTEGER)
SEED = Option(
    "seed", 0,
    "seeds numpy's PCG64 generator; the same seed gives the same answer whatever DuckDB's "
    "threads and the order of the rows (each group draws from the same seed)",
    bounds=NON_NEGATIVE_INTEGER,
)
LEVEL = Option("level", 0.95, "the confidence level of the interval", bounds=PROPORTION)

_MONTE_CARLO = (
    "With the default 10,000 trials the Monte Carlo standard error of a p-value p is "
    "sqrt(p (1 - p) / 10000): 0.0022 at p = 0.05."
)

RANDOMIZATION_TEST = StatTest(
    name="randomization_test",
    summary_text="Fisher's paired randomization (permutation) test on the mean difference.",
    summary=DIFFERENCES,
    fields=(
        Field("n", "BIGINT", "pairs used (both x and y non-NULL)"),
        Field("mean_diff", "DOUBLE", "mean of d = x - y"),
        Field("p_value", "DOUBLE", "two-sided, (count + 1) / (trials + 1)"),
    ),
    null_hypothesis="the labels of each pair are exchangeable: x and y could have been swapped "
    "within any pair, so each difference is as likely to have either sign.",
    convention="each trial flips the sign of each difference independently with probability "
    "1/2; count = the trials whose |mean of the flipped differences| >= |mean(d)| (equal within "
    "floating-point rounding counts as equal); p = (count + 1) / (trials + 1), which counts the "
    "observed assignment as one of the trials, so p is never 0 and the test keeps its level "
    "(Phipson and Smyth 2010). Trials are random, with replacement, even when 2^n is smaller "
    "than trials. " + _MONTE_CARLO,
    undefined="mean_diff is NULL when n = 0; p_value is NULL when n < 2. A NaN or infinite "
    "difference makes p_value NULL (every flipped sum is then infinite or NaN: there is no "
    "p-value); mean_diff is then the mean as computed, inf, -inf or NULL (NaN, or inf - inf). "
    "Differences that are all 0 give p = 1.",
    prefer="when no distributional assumption is wanted: it tests the difference of means "
    "directly. On TREC runs Smucker et al. (2007) found the bootstrap and t tests agree "
    "closely with it, and describe the Wilcoxon and sign tests as simplified variants of it. "
    "It costs trials x n / 8 table look-ups in numpy: about 0.4 s of CPU for 10,000 trials "
    "over 100,000 users, with about 20 MB of memory (benchmarks/bench_stats.py).",
    source="Fisher (1935); Smucker, Allan and Carterette (2007).",
    kernel=randomization_kernel,
    options=(TRIALS, SEED),
    interruptible=True,
    report=InReport(alias="randomization", title="Fisher's paired randomization test",
                    help="Fisher's, --trials sign flips"),
)

_BOOTSTRAP_CONVENTION = (
    "the percentile bootstrap: `trials` resamples of the n values with replacement, the mean of "
    "each, and the (1 - level)/2 and (1 + level)/2 quantiles of those means (linear "
    "interpolation, as `numpy.quantile` and `scipy.stats.quantile`). The same interval as "
    "`scipy.stats.bootstrap((values,), numpy.mean, method=\"percentile\", confidence_level="
    "level)` within Monte Carlo error (the two draw different resamples)."
)

BOOTSTRAP_CI = StatTest(
    name="bootstrap_ci",
    summary_text="A percentile bootstrap confidence interval for the mean of x.",
    summary=VALUES,
    fields=(
        Field("n", "BIGINT", "non-NULL values used"),
        Field("mean", "DOUBLE", "the mean of x"),
        Field("ci_low", "DOUBLE", "lower end of the interval"),
        Field("ci_high", "DOUBLE", "upper end of the interval"),
    ),
    null_hypothesis="none: an interval, not a test.",
    convention=_BOOTSTRAP_CONVENTION,
    undefined="mean is NULL when n = 0; ci_low and ci_high are NULL when n < 2 (scipy refuses "
    "fewer than two observations). A NaN or infinite value makes the interval NULL (and mean "
    "inf, -inf or NULL, as computed).",
    prefer="to show the uncertainty of one system's mean metric (the report's mean +- "
    "interval). It draws trials x n random indices: about 3.5 s of CPU for 10,000 trials over "
    "100,000 users (benchmarks/bench_stats.py). With 1,000 trials the ends of a 95% interval "
    "move by about a tenth of the mean's standard error from one seed to another "
    "(sqrt(0.025 x 0.975 / 1000) / 0.058).",
    source="Efron and Tibshirani (1993), *An Introduction to the Bootstrap*; "
    "`scipy.stats.bootstrap`.",
    kernel=bootstrap_kernel,
    options=(LEVEL, TRIALS, SEED),
    interruptible=True,
)

PAIRED_BOOTSTRAP_CI = StatTest(
    name="paired_bootstrap_ci",
    summary_text="A percentile bootstrap confidence interval for the mean difference of paired "
    "values.",
    summary=DIFFERENCES,
    fields=(
        Field("n", "BIGINT", "pairs used (both x and y non-NULL)"),
        Field("mean", "DOUBLE", "the mean of d = x - y"),
        Field("ci_low", "DOUBLE", "lower end of the interval"),
        Field("ci_high", "DOUBLE", "upper end of the interval"),
    ),
    null_hypothesis="none: an interval, not a test (an interval at level 1 - alpha that "
    "excludes 0 corresponds to a bootstrap test rejecting at alpha).",
    convention=_BOOTSTRAP_CONVENTION + " Pairs are resampled together: this is "
    "`bootstrap_ci` of d = x - y, and scipy's `bootstrap((x, y), lambda x, y: mean(x - y), "
    "paired=True)`.",
    undefined="mean is NULL when n = 0; ci_low and ci_high are NULL when n < 2. A NaN or "
    "infinite difference makes the interval NULL (and mean inf, -inf or NULL, as computed).",
    prefer="to show how large a difference between two systems is, with its uncertainty; "
    "Smucker et al. (2007) found the bootstrap test agrees closely with the randomization and "
    "t tests.",
    source="Efron and Tibshirani (1993), *An Introduction to the Bootstrap*; "
    "`scipy.stats.bootstrap` with `paired=True`.",
    kernel=bootstrap_kernel,
    options=(LEVEL, TRIALS, SEED),
    interruptible=True,
)
