"""Topic set size design and power (``duckrank.stats.planning``).

Expected values: statsmodels 0.15's power module (``TTestPower`` for the paired t-test,
``FTestAnovaPower`` for one-way ANOVA, both from scipy's noncentral t and F) to 1e-12; the
topic counts from ``solve_power`` (its n rounded up, checked on both sides); and Nagata's normal
approximation that Sakai's (2016) topic set size design starts from, written out below, within
a topic."""

from __future__ import annotations

import math

import pytest

from duckrank.stats.planning import anova_power, anova_topics, paired_t_power, paired_t_topics

power_module = pytest.importorskip("statsmodels.stats.power")
stats = pytest.importorskip("scipy.stats")

CASES = [(0.05, 0.8, 0.05, 0.02), (0.01, 0.8, 0.1, 0.05), (0.05, 0.9, 0.03, 0.01),
         (0.05, 0.5, 0.2, 0.04)]  # alpha, power, min difference, variance of the differences


@pytest.mark.parametrize("effect", [0.1, 0.35, -0.8, 2.0])
@pytest.mark.parametrize("topics", [2, 10, 50, 400])
def test_paired_t_power_equals_statsmodels(topics, effect) -> None:
    expected = power_module.TTestPower().power(effect_size=abs(effect), nobs=topics, alpha=0.05)
    if math.isnan(expected):
        # statsmodels passes on scipy's NaN for the far lower tail (noncentrality 16 here):
        # the upper tail alone, since P(T' <= -c) <= P(T' <= 0) = Phi(-16) = 6e-58.
        expected = stats.nct.sf(stats.t.isf(0.025, topics - 1), topics - 1,
                                abs(effect) * math.sqrt(topics))
    assert math.isclose(paired_t_power(topics, effect), expected, rel_tol=1e-12)


@pytest.mark.parametrize(("alpha", "power", "difference", "variance"), CASES)
def test_paired_t_topics_equal_statsmodels_and_nagata(alpha, power, difference, variance
                                                      ) -> None:
    effect = difference / math.sqrt(variance)
    ours = paired_t_topics(difference, variance, alpha, power)
    solved = power_module.TTestPower().solve_power(effect_size=effect, alpha=alpha, power=power)
    assert ours == math.ceil(solved - 1e-9)
    assert paired_t_power(ours, effect, alpha) >= power
    assert ours == 2 or paired_t_power(ours - 1, effect, alpha) < power
    # Nagata (2003), as Sakai (2016) uses it:
    # n ~ ((z_{alpha/2} + z_beta) / d)^2 + z_{alpha/2}^2 / 2.
    z_alpha, z_beta = stats.norm.isf(alpha / 2), stats.norm.isf(1 - power)
    nagata = ((z_alpha + z_beta) / effect) ** 2 + z_alpha**2 / 2
    assert abs(ours - nagata) <= 1


@pytest.mark.parametrize(("systems", "topics", "min_range", "variance"),
                         [(2, 20, 0.1, 0.05), (5, 50, 0.1, 0.03), (10, 100, 0.05, 0.02)])
def test_anova_power_equals_statsmodels(systems, topics, min_range, variance) -> None:
    # Cohen's f^2 = min_range^2 / (2 m variance); statsmodels counts every observation, m n.
    f = math.sqrt(min_range**2 / (2 * systems * variance))
    expected = power_module.FTestAnovaPower().power(effect_size=f, nobs=systems * topics,
                                                    alpha=0.05, k_groups=systems)
    assert math.isclose(anova_power(topics, systems, min_range, variance), expected,
                        rel_tol=1e-12)


@pytest.mark.parametrize(("systems", "min_range", "variance", "power"),
                         [(2, 0.1, 0.05, 0.8), (5, 0.1, 0.03, 0.8), (10, 0.05, 0.02, 0.9)])
def test_anova_topics_is_the_fewest_with_the_power(systems, min_range, variance, power) -> None:
    ours = anova_topics(systems, min_range, variance, power=power)
    assert anova_power(ours, systems, min_range, variance) >= power
    assert ours == 2 or anova_power(ours - 1, systems, min_range, variance) < power
    f = math.sqrt(min_range**2 / (2 * systems * variance))
    solved = power_module.FTestAnovaPower().solve_power(effect_size=f, alpha=0.05, power=power,
                                                        k_groups=systems)
    assert ours == math.ceil(solved / systems - 1e-9)  # statsmodels solves for m n


def test_two_systems_anova_is_the_unpaired_t_test() -> None:
    # Sakai (2018), section 6: one-way ANOVA with two groups is the two-sample t-test, whose
    # statsmodels power with d = min_range / sd and n per group must be the same.
    expected = power_module.TTestIndPower().power(effect_size=0.1 / math.sqrt(0.05), nobs1=60,
                                                  alpha=0.05)
    assert math.isclose(anova_power(60, 2, 0.1, 0.05), expected, rel_tol=1e-9)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: paired_t_topics(0.05, 0.0), "paired_t_topics: variance=0.0 must be a finite number "
                                         "above 0"),
    (lambda: paired_t_topics(0.05, 0.02, power=1.0), "paired_t_topics: power=1.0 must be"),
    (lambda: paired_t_power(1, 0.5), "paired_t_power: topics=1 must be an integer >= 2"),
    (lambda: anova_topics(1, 0.1, 0.05), "anova_topics: systems=1 must be an integer >= 2"),
    (lambda: anova_power(10, 3, float("nan"), 0.05), "anova_power: min_range=nan must be"),
])
def test_bad_arguments_name_themselves(call, message) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        call()


def test_without_scipy_the_error_says_so(monkeypatch) -> None:
    import sys

    from duckrank.stats import anova

    monkeypatch.setitem(sys.modules, "scipy", None)  # import scipy now fails
    with pytest.raises(ImportError, match=r"paired_t_topics: it needs scipy \(pip install"):
        paired_t_topics(0.05, 0.02)
    with pytest.raises(ImportError, match=r"tukey_hsd: its p-value needs scipy"):
        anova.studentized_range_quantile(0.95, 3, 10, "tukey_hsd")
