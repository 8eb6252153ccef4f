"""More than two systems at once: one-way and two-way ANOVA and Tukey's HSD.

Each is an aggregate over the long rows of a comparison, one value ``x`` per (system, topic),
with the system's label (and the topic's); SQL gathers a group's rows as one list
(``LABELLED``, ``BLOCKED``), numpy does the sums over whole arrays (``np.bincount`` by code):

* one-way ANOVA (``anova_oneway(x, system)``): the systems as k independent groups, n_i values
  each. SS_system = sum_i n_i (mean_i - mean)^2, SS_error = sum (x - mean_system)^2,
  F = (SS_system / (k - 1)) / (SS_error / (N - k)). As statsmodels' ``anova_lm`` of
  ``ols("x ~ C(system)")``.
* two-way ANOVA without interaction (``anova_twoway(x, system, topic)``): the randomised block
  design IR uses (Sakai 2018; Carterette 2012): every system on every topic once, the topic a
  block. Only complete topics are used (every system has a value); then SS_topic =
  k sum_j (mean_j - mean)^2, SS_error = sum (x - mean_system - mean_topic + mean)^2 with
  (k - 1)(t - 1) degrees of freedom, F = MS_system / MS_error. As ``anova_lm`` of
  ``ols("x ~ C(system) + C(topic)")`` on those topics.
* Tukey's HSD: every pair of systems, q = |mean_a - mean_b| / sqrt(MSE / 2 (1/n_a + 1/n_b))
  and p = P(Q >= q) for Q the studentized range of k means with the MSE's degrees of freedom,
  the interval mean_a - mean_b +- q_crit(level) sqrt(MSE / 2 (1/n_a + 1/n_b)). ``tukey_hsd``
  takes the one-way MSE (Tukey-Kramer: as statsmodels' ``pairwise_tukeyhsd``, scipy's
  ``tukey_hsd`` and so ranx's Tukey test); ``tukey_hsd_blocked`` the two-way one (topics as
  blocks, n_a = n_b = t), which removes the variation between topics from the error, as
  Carterette (2012) and Sakai (2018) do for IR.

The F and studentized range distributions come from scipy (``scipy.special.fdtrc`` and
``scipy.stats.studentized_range``): the studentized range needs a double integral that duckrank
does not reimplement, and the F distribution's incomplete beta function with hundreds of
thousands of error degrees of freedom needs more than the continued fractions of
``distributions`` give (they do not converge there in 2,000 steps). Both are imported when a
p-value is computed; without scipy the functions raise an error that says to install it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from duckrank.options import PROPORTION
from duckrank.stats.record import BLOCKED, LABELLED, Field, LabelledRows, Option, StatTest, Summary


def _scipy(function: str) -> object:
    try:
        import scipy.special
        import scipy.stats
    except ImportError:
        raise ImportError(f"{function}: its p-value needs scipy (pip install scipy)") from None
    return scipy


def f_survival(f: float, df_between: float, df_error: float, function: str) -> float:
    """P(F >= f) for F with (df_between, df_error) degrees of freedom."""
    return float(_scipy(function).special.fdtrc(df_between, df_error, f))  # type: ignore[attr-defined]


def studentized_range_survival(q: np.ndarray, k: int, df: float, function: str) -> np.ndarray:
    """P(Q >= q) for the studentized range Q of k means with df degrees of freedom."""
    stats = _scipy(function).stats  # type: ignore[attr-defined]
    with np.errstate(invalid="ignore"):
        return np.asarray(stats.studentized_range.sf(q, k, df), dtype=np.float64)


def studentized_range_quantile(level: float, k: int, df: float, function: str) -> float:
    stats = _scipy(function).stats  # type: ignore[attr-defined]
    return float(stats.studentized_range.ppf(level, k, df))


def _complete_topics(rows: LabelledRows, function: str) -> LabelledRows:
    """The rows of the topics on which every system has a value; an error naming a (system,
    topic) given twice (a block design has one value per cell)."""
    assert rows.topic is not None
    k, t = len(rows.systems), len(rows.topics)
    cells = np.bincount(rows.system * t + rows.topic, minlength=k * t)
    if (cells > 1).any():
        cell = int(np.argmax(cells > 1))
        raise ValueError(f"{function}: system {rows.systems[cell // t]!r} has "
                         f"{int(cells[cell])} values on topic {rows.topics[cell % t]!r}; a "
                         "randomised block design has one value per (system, topic)")
    complete = cells.reshape(k, t).all(axis=0)
    if complete.all():
        return rows
    keep = complete[rows.topic]
    used = np.flatnonzero(complete)
    recode = np.cumsum(complete) - 1
    return LabelledRows(rows.x[keep], rows.system[keep], rows.systems,
                        recode[rows.topic[keep]], tuple(rows.topics[j] for j in used))


def _nan(fields: tuple[Field, ...], n: int, k: int, **known: float) -> dict[str, object]:
    """Every field undefined (NaN, or empty lists) but n, the systems and what is ``known``."""
    out: dict[str, object] = {f.name: ([] if f.sql_type.endswith("[]") else math.nan)
                              for f in fields}
    return {**out, "n": n, "systems": k, **known}


class _Sums:
    """The one-way or two-way decomposition of one group's values."""

    def __init__(self, rows: LabelledRows) -> None:
        x, k = rows.x, len(rows.systems)
        self.n = len(x)
        self.k = k
        self.counts = np.bincount(rows.system, minlength=k).astype(np.float64)
        self.means = np.bincount(rows.system, x, minlength=k) / self.counts
        self.mean = float(x.mean())
        self.ss_system = float(np.sum(self.counts * (self.means - self.mean) ** 2))
        fitted = self.means[rows.system]
        self.topics = 0
        self.ss_topic = math.nan
        if rows.topic is not None:
            self.topics = len(rows.topics)
            topic_means = np.bincount(rows.topic, x, minlength=self.topics) / k
            self.ss_topic = float(k * np.sum((topic_means - self.mean) ** 2))
            fitted = fitted + topic_means[rows.topic] - self.mean
            self.df_error = (k - 1) * (self.topics - 1)
        else:
            self.df_error = self.n - k
        self.ss_error = float(np.sum((x - fitted) ** 2))
        # Each fitted value is a few means of up to n values, summed one after another: its
        # rounding error is below (n + 4) u max|x| (u = 2^-53). An error sum of squares within
        # n times that squared is rounding, not variance: values that are exactly a system's
        # (plus a topic's) would otherwise give F near 10^31 and p = 0.
        rounding = (self.n + 4) * 2.0**-53 * float(np.abs(x).max())
        self.no_error = self.ss_error <= self.n * rounding**2
        self.df_system = k - 1
        self.mse = self.ss_error / self.df_error if self.df_error > 0 else math.nan

    @property
    def defined(self) -> bool:
        """An F statistic exists: two systems, error degrees of freedom, and error variance
        beyond the rounding of the sums."""
        return self.k >= 2 and self.df_error > 0 and not self.no_error


def _anova(rows: LabelledRows, fields: tuple[Field, ...], function: str) -> dict[str, object]:
    """The fields of ``anova_oneway`` or ``anova_twoway``."""
    if rows.topic is not None:
        rows = _complete_topics(rows, function)
    if not np.isfinite(rows.x).all() or len(rows.x) == 0:
        return _nan(fields, len(rows.x), len(np.unique(rows.system)))
    sums = _Sums(rows)
    known = {"df_system": sums.df_system, "df_error": sums.df_error,
             "ss_system": sums.ss_system, "ss_error": sums.ss_error}
    if rows.topic is not None:
        known |= {"topics": sums.topics, "df_topic": sums.topics - 1, "ss_topic": sums.ss_topic}
    if not sums.defined:
        return _nan(fields, sums.n, sums.k, **known)
    ms_system = sums.ss_system / sums.df_system
    f = ms_system / sums.mse
    if rows.topic is None:  # of the total variation
        effect = {"eta_squared": sums.ss_system / (sums.ss_system + sums.ss_error),
                  "omega_squared": (sums.ss_system - sums.df_system * sums.mse)
                  / (sums.ss_system + sums.ss_error + sums.mse)}
    else:  # partial: of the variation left once the topics' is removed
        effect = {"partial_eta_squared": sums.ss_system / (sums.ss_system + sums.ss_error),
                  "partial_omega_squared": sums.df_system * (ms_system - sums.mse)
                  / (sums.df_system * ms_system + (sums.n - sums.df_system) * sums.mse)}
    return {**_nan(fields, sums.n, sums.k), **known, "f": f,
            "p_value": f_survival(f, sums.df_system, sums.df_error, function), **effect}


def _tukey(rows: LabelledRows, level: float, fields: tuple[Field, ...],
           function: str) -> dict[str, object]:
    """The fields of ``tukey_hsd`` or ``tukey_hsd_blocked``: every pair a < b (the systems'
    names sorted), mean_diff = mean_a - mean_b."""
    if rows.topic is not None:
        rows = _complete_topics(rows, function)  # none, or every system on each topic kept
    if not np.isfinite(rows.x).all() or len(rows.x) == 0:
        return _nan(fields, len(rows.x), len(np.unique(rows.system)))
    sums = _Sums(rows)
    a, b = np.triu_indices(sums.k, 1)
    known = {"df": sums.df_error, "mse": sums.mse, "system_a": [rows.systems[i] for i in a],
             "system_b": [rows.systems[i] for i in b]}
    diff = sums.means[a] - sums.means[b]
    if not sums.defined:
        return _nan(fields, sums.n, sums.k, **known,
                    mean_diff=diff, statistic=np.full(len(a), np.nan),
                    p_value=np.full(len(a), np.nan), ci_low=np.full(len(a), np.nan),
                    ci_high=np.full(len(a), np.nan))
    spread = np.sqrt(sums.mse / 2 * (1 / sums.counts[a] + 1 / sums.counts[b]))
    q = np.abs(diff) / spread
    k = sums.k
    critical = studentized_range_quantile(level, k, sums.df_error, function)
    return {**known, "n": sums.n, "systems": k, "mean_diff": diff, "statistic": q,
            "p_value": np.minimum(1.0, studentized_range_survival(q, k, sums.df_error,
                                                                  function)),
            "ci_low": diff - critical * spread, "ci_high": diff + critical * spread}


_ANOVA_FIELDS = (
    Field("n", "BIGINT", "values used"),
    Field("systems", "BIGINT", "k, the systems with a value"),
)
_DEGREES = (
    Field("df_system", "BIGINT", "k - 1"),
    Field("df_error", "BIGINT", "the error's degrees of freedom"),
    Field("ss_system", "DOUBLE", "the sum of squares between systems"),
    Field("ss_error", "DOUBLE", "the error (residual) sum of squares"),
    Field("f", "DOUBLE", "F = (ss_system / df_system) / (ss_error / df_error)"),
    Field("p_value", "DOUBLE", "P(F(df_system, df_error) >= f)"),
)
ONEWAY_FIELDS = (*_ANOVA_FIELDS, *_DEGREES,
                 Field("eta_squared", "DOUBLE", "ss_system / (ss_system + ss_error)"),
                 Field("omega_squared", "DOUBLE", "(ss_system - df_system MSE) / (ss_system + "
                       "ss_error + MSE), MSE = ss_error / df_error"))
TWOWAY_FIELDS = (*_ANOVA_FIELDS, Field("topics", "BIGINT", "t, the complete topics used"),
                 Field("df_topic", "BIGINT", "t - 1"),
                 Field("ss_topic", "DOUBLE", "the sum of squares between topics"),
                 *_DEGREES,
                 Field("partial_eta_squared", "DOUBLE", "ss_system / (ss_system + ss_error)"),
                 Field("partial_omega_squared", "DOUBLE", "df_system (MS_system - MSE) / "
                       "(df_system MS_system + (n - df_system) MSE)"))
TUKEY_FIELDS = (
    *_ANOVA_FIELDS,
    Field("df", "BIGINT", "the MSE's degrees of freedom"),
    Field("mse", "DOUBLE", "the ANOVA's mean squared error"),
    Field("system_a", "VARCHAR[]", "per pair, the first system (names sorted)"),
    Field("system_b", "VARCHAR[]", "per pair, the second"),
    Field("mean_diff", "DOUBLE[]", "per pair, mean_a - mean_b"),
    Field("statistic", "DOUBLE[]", "per pair, q = |mean_diff| / sqrt(MSE / 2 (1/n_a + 1/n_b))"),
    Field("p_value", "DOUBLE[]", "per pair, P(Q >= q): Q the studentized range of k means with "
          "df degrees of freedom (the family-wise adjusted p-value: no further correction)"),
    Field("ci_low", "DOUBLE[]", "per pair, the simultaneous interval's lower end"),
    Field("ci_high", "DOUBLE[]", "per pair, its upper end"),
)

LEVEL = Option("level", 0.95, "the simultaneous confidence level of the intervals",
               bounds=PROPORTION)

_UNDEFINED = (
    "NULL p-values, statistics and effect sizes when fewer than 2 systems have values, when "
    "the error has no degrees of freedom, or when the error sum of squares is 0 (every value "
    "equal to its fitted one: no variance to test against; a sum within the rounding bound of "
    "the means, n ((n + 4) 2^-53 max|x|)^2, counts as 0). A NaN or infinite value makes "
    "everything but n and systems NULL (as for the paired tests). Rows with a NULL value or "
    "label are left out."
)
_PREFER_ANOVA = (
    "to ask whether any of k systems differ before looking at pairs, and how much of the "
    "variation the systems explain. "
)


def _record(name: str, summary_text: str, summary: Summary, fields: tuple[Field, ...],
            kernel: Callable[..., dict[str, object]], **text: Any) -> StatTest:
    return StatTest(name=name, summary_text=summary_text, summary=summary, fields=fields,
                    kernel=kernel, **text)


ANOVA_ONEWAY = _record(
    "anova_oneway", "One-way analysis of variance of x across the systems.", LABELLED,
    ONEWAY_FIELDS, lambda rows: _anova(rows, ONEWAY_FIELDS, "anova_oneway"),
    null_hypothesis="every system's values come from normal distributions with the same mean "
    "and variance.",
    convention="F from the one-way decomposition (the systems as independent groups), p from "
    "the F distribution (`scipy.special.fdtrc`); as statsmodels' `anova_lm(ols(\"x ~ "
    "C(system)\"))` (equal to it to 1e-9). Effect sizes: eta squared and omega squared "
    "(Hays 1963; omega squared is less biased upward in small samples).",
    undefined=_UNDEFINED,
    prefer=_PREFER_ANOVA + "It ignores that the systems ran on the same topics: "
    "`anova_twoway` is the test for the usual IR experiment.",
    source="Fisher (1925); statsmodels `anova_lm`.",
)

ANOVA_TWOWAY = _record(
    "anova_twoway", "Two-way analysis of variance (system x topic, no interaction): the "
    "randomised block design.", BLOCKED, TWOWAY_FIELDS,
    lambda rows: _anova(rows, TWOWAY_FIELDS, "anova_twoway"),
    null_hypothesis="every system has the same mean once each topic's effect is removed "
    "(normal errors with one variance).",
    convention="F = MS_system / MS_error from the decomposition into system, topic and error "
    "(no interaction: one value per cell), over the topics where every system has a value; p "
    "from the F distribution (`scipy.special.fdtrc`); as statsmodels' `anova_lm(ols(\"x ~ "
    "C(system) + C(topic)\"))` on those topics (to 1e-9). Effect sizes: partial eta squared "
    "and partial omega squared (of the variation left once the topics' is removed; Olejnik and "
    "Algina 2003).",
    undefined=_UNDEFINED + " A topic on which some system has no value is left out (`topics` "
    "counts those used); a (system, topic) given twice is an error naming both.",
    prefer=_PREFER_ANOVA + "The usual IR experiment: every system on the same topics, the "
    "topic's difficulty removed from the error (Sakai 2018, chapter 4; Carterette 2012).",
    source="Fisher (1925); Sakai (2018), *Laboratory Experiments in Information Retrieval*; "
    "statsmodels `anova_lm`.",
)


def _tukey_record(name: str, summary: Summary, design: str, **text: Any) -> StatTest:
    return _record(
        name, f"Tukey's honestly significant difference test over every pair of systems, "
        f"{design}.", summary, TUKEY_FIELDS,
        lambda rows, level: _tukey(rows, level, TUKEY_FIELDS, name),
        null_hypothesis="for each pair, the two systems have the same mean (all k means equal "
        "for the family).",
        options=(LEVEL,), **text)


TUKEY_HSD = _tukey_record(
    "tukey_hsd", LABELLED, "the one-way design (Tukey-Kramer)",
    convention="q from the one-way MSE (df = N - k), p = P(Q >= q) from the studentized range "
    "distribution (`scipy.stats.studentized_range`): the family-wise adjusted p-value over "
    "all k (k - 1) / 2 pairs. As statsmodels' `pairwise_tukeyhsd` (p and intervals to 1e-9; its "
    "`meandiffs` are mean_b - mean_a) and scipy's `tukey_hsd`, which ranx's Tukey test calls.",
    undefined=_UNDEFINED,
    prefer="to reproduce ranx's Tukey test or when the systems ran on different queries; for "
    "systems on the same topics prefer `tukey_hsd_blocked`.",
    source="Tukey (1949); Kramer (1956); statsmodels `pairwise_tukeyhsd`; scipy `tukey_hsd`.",
)

TUKEY_HSD_BLOCKED = _tukey_record(
    "tukey_hsd_blocked", BLOCKED, "with the topics as blocks (two-way MSE)",
    convention="q from the MSE of `anova_twoway` (df = (k - 1)(t - 1)), over the topics where "
    "every system has a value, p = P(Q >= q) from the studentized range distribution "
    "(`scipy.stats.studentized_range`): the family-wise adjusted p-value over all pairs. Equal "
    "to `pairwise_tukeyhsd`'s formula with the MSE and degrees of freedom of statsmodels' "
    "`anova_lm(ols(\"x ~ C(system) + C(topic)\"))`.",
    undefined=_UNDEFINED + " A topic on which some system has no value is left out; a "
    "(system, topic) given twice is an error naming both.",
    prefer="comparing every pair of k systems on the same topics: Carterette (2012) and Sakai "
    "(2018) recommend it over k (k - 1) / 2 t-tests with a correction.",
    source="Tukey (1949); Carterette (2012), Multiple testing in statistical analysis of "
    "systems-based information retrieval experiments, ACM TOIS 30(1); Sakai (2018).",
)
