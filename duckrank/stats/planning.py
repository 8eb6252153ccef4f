"""Planning: how many topics an experiment needs, and the power a comparison had.

Sakai's topic set size design (Sakai 2016, after Nagata 2003): choose the smallest number of
topics n for which a test detects a given difference with a given power. Two designs:

* the paired t-test (two systems on the same topics): a difference ``min_difference`` between
  the means, the variance of the per-topic differences ``variance`` (from pilot data: the
  ``var_samp(x - y)`` of an earlier experiment). The effect size is d_z = min_difference /
  sqrt(variance), and the power with n topics is that of the two-sided paired t-test,
  P(|T'| >= t(1 - alpha/2, n - 1)), T' noncentral t with n - 1 degrees of freedom and
  noncentrality sqrt(n) d_z;
* one-way ANOVA over m systems: a range ``min_range`` between the best and the worst system's
  mean, the within-system variance ``variance``. In the least favourable configuration (the
  other means half-way) the noncentrality is lambda = n min_range^2 / (2 variance), and the power
  is P(F' >= F(1 - alpha; m - 1, m (n - 1))), F' noncentral F with noncentrality lambda (Cohen's
  f^2 = min_range^2 / (2 m variance)).

n is found exactly from those distributions (scipy's ``nct`` and ``ncf``, as statsmodels'
``TTestPower`` and ``FTestAnovaPower``; scipy is imported when called). Sakai's Excel tools use
Nagata's normal approximations of the same quantities, which can give a topic more or fewer.

``paired_t_power`` with the n and d_z of a comparison already made is its achieved power at
that effect size (Sakai 2016, "Statistical significance, power, and sample sizes": the power a
paper's test had). With d_z estimated from the same data it is a function of the p-value
(Hoenig and Heisey 2001): it says how likely a replication of that size detects an effect of
that size, not whether the test was right.
"""

from __future__ import annotations

import math
from typing import Any

_MAX_TOPICS = 10**8


def _scipy_stats(function: str) -> Any:
    try:
        from scipy import stats
    except ImportError:
        raise ImportError(f"{function}: it needs scipy (pip install scipy)") from None
    return stats


def _check(function: str, **values: float) -> None:
    """Each value a finite number in its domain, or an error naming the function, the argument
    and the value."""
    rules = {"alpha": (0, 1), "power": (0, 1), "variance": (0, math.inf),
             "min_difference": (0, math.inf), "min_range": (0, math.inf),
             "effect_size": (0, math.inf)}
    for name, value in values.items():
        low, high = rules[name]
        if isinstance(value, bool) or not isinstance(value, int | float) or not (
                low < value < high):
            shown = f"strictly between {low} and {high}" if high < math.inf else "above 0"
            raise ValueError(f"{function}: {name}={value!r} must be a finite number {shown}")


def _integer(function: str, name: str, value: int, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{function}: {name}={value!r} must be an integer >= {least}")


def paired_t_power(topics: int, effect_size: float, alpha: float = 0.05) -> float:
    """The power of the two-sided paired t-test at level ``alpha`` over ``topics`` topics when
    the differences have standardised mean ``effect_size`` (d_z; its sign does not matter)."""
    _integer("paired_t_power", "topics", topics, 2)
    _check("paired_t_power", alpha=alpha)
    if not (isinstance(effect_size, int | float) and math.isfinite(effect_size)):
        raise ValueError(f"paired_t_power: effect_size={effect_size!r} must be a finite number")
    stats = _scipy_stats("paired_t_power")
    df = topics - 1
    critical = float(stats.t.isf(alpha / 2, df))
    shift = abs(effect_size) * math.sqrt(topics)
    upper = float(stats.nct.sf(critical, df, shift))
    lower = float(stats.nct.cdf(-critical, df, shift))
    if math.isnan(lower):
        # scipy's noncentral t gives NaN far in its lower tail (statsmodels' TTestPower
        # passes that NaN on). That tail is below P(T' <= 0) = Phi(-shift): when that bound is
        # lost in the upper tail's last digit, the tail is 0 to double precision.
        if float(stats.norm.cdf(-shift)) > 1e-17 * upper:
            raise ArithmeticError(f"paired_t_power: no value for topics={topics}, "
                                  f"effect_size={effect_size!r} (scipy's nct gives NaN)")
        lower = 0.0
    return upper + lower


def anova_power(topics: int, systems: int, min_range: float, variance: float,
                alpha: float = 0.05) -> float:
    """The power of one-way ANOVA over ``systems`` systems and ``topics`` topics each, when the
    best and worst means differ by ``min_range`` and the within-system variance is
    ``variance`` (the least favourable configuration of the other means)."""
    _integer("anova_power", "topics", topics, 2)
    _integer("anova_power", "systems", systems, 2)
    _check("anova_power", min_range=min_range, variance=variance, alpha=alpha)
    stats = _scipy_stats("anova_power")
    df_system, df_error = systems - 1, systems * (topics - 1)
    critical = float(stats.f.isf(alpha, df_system, df_error))
    return float(stats.ncf.sf(critical, df_system, df_error,
                              topics * min_range**2 / (2 * variance)))


def _smallest(power_of: Any, target: float) -> int:
    """The smallest n >= 2 with power_of(n) >= target (power grows with n): doubling, then
    bisection."""
    high = 2
    while power_of(high) < target:
        high *= 2
        if high > _MAX_TOPICS:
            raise ValueError(f"more than {_MAX_TOPICS:,} topics would be needed")
    low = high // 2 if high > 2 else 1  # power_of(low) < target, or low = 1 (no test)
    while high - low > 1:
        middle = (low + high) // 2
        if power_of(middle) >= target:
            high = middle
        else:
            low = middle
    return high


def paired_t_topics(min_difference: float, variance: float, alpha: float = 0.05,
                    power: float = 0.8) -> int:
    """Sakai's topic set size for the paired t-test: the fewest topics with which a two-sided
    paired t-test at ``alpha`` detects a difference ``min_difference`` between two systems'
    means with probability ``power``, the per-topic differences having variance
    ``variance``."""
    _check("paired_t_topics", min_difference=min_difference, variance=variance, alpha=alpha,
           power=power)
    _scipy_stats("paired_t_topics")
    effect = min_difference / math.sqrt(variance)
    return _smallest(lambda n: paired_t_power(n, effect, alpha), power)


def anova_topics(systems: int, min_range: float, variance: float, alpha: float = 0.05,
                 power: float = 0.8) -> int:
    """Sakai's topic set size for one-way ANOVA: the fewest topics with which ANOVA over
    ``systems`` systems at ``alpha`` detects a range ``min_range`` between the best and worst
    means with probability ``power``, the within-system variance being ``variance``."""
    _integer("anova_topics", "systems", systems, 2)
    _check("anova_topics", min_range=min_range, variance=variance, alpha=alpha, power=power)
    _scipy_stats("anova_topics")
    return _smallest(lambda n: anova_power(n, systems, min_range, variance, alpha), power)
