"""One-way and two-way ANOVA and Tukey's HSD (``duckrank.stats.anova``) through DuckDB.

Expected values: statsmodels 0.15 (``anova_lm`` of ``ols`` fits, ``pairwise_tukeyhsd``) and
ranx 0.3.21's Tukey test (``ranx.statistical_tests.tukey_hsd_test``, which calls scipy's
``tukey_hsd``), to 1e-9; the blocked Tukey test from ``pairwise_tukeyhsd``'s formula with
``anova_lm``'s two-way MSE and degrees of freedom, and scipy's studentized range (written out
below); effect sizes from ``anova_lm``'s sums of squares by their textbook formulas (written
out below)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import duckrank

smf = pytest.importorskip("statsmodels.formula.api")
sm = pytest.importorskip("statsmodels.api")
multicomp = pytest.importorskip("statsmodels.stats.multicomp")
stats = pytest.importorskip("scipy.stats")


@pytest.fixture(scope="module")
def con():
    connection = duckrank.connect()
    yield connection
    connection.close()


def _long(seed: int, systems: int, topics: int, unequal: bool = False) -> pd.DataFrame:
    """Metric-like values in [0, 1] per (system, topic): a topic effect, a system shift, noise;
    with ``unequal``, some values dropped (unequal group sizes, incomplete topics)."""
    rng = np.random.default_rng(seed)
    topic_effect = rng.random(topics)
    rows = [(f"s{s}", f"q{t:03d}", float(np.clip(
        topic_effect[t] + 0.03 * s + rng.normal(0, 0.15), 0, 1)))
        for s in range(systems) for t in range(topics)]
    frame = pd.DataFrame(rows, columns=["system", "topic", "x"])
    if unequal:
        frame = frame[rng.random(len(frame)) > 0.15].reset_index(drop=True)
    return frame


def _close(ours: float, expected: float) -> bool:
    return math.isclose(ours, expected, rel_tol=1e-9, abs_tol=1e-14)


def _query(con, call: str, frame: pd.DataFrame) -> dict:
    con.register("anova_rows", frame)
    try:
        return con.execute(f"SELECT {call} FROM anova_rows").fetchall()[0][0]
    finally:
        con.unregister("anova_rows")


@pytest.mark.parametrize(("systems", "topics", "unequal"), [(3, 10, False), (10, 50, True)])
def test_oneway_equals_anova_lm(con, systems, topics, unequal) -> None:
    frame = _long(1, systems, topics, unequal)
    ours = _query(con, "anova_oneway(x, system)", frame)
    table = sm.stats.anova_lm(smf.ols("x ~ C(system)", data=frame).fit())
    ss_b, ss_e = table["sum_sq"]
    df_b, df_e = table["df"]
    assert (ours["n"], ours["systems"], ours["df_system"], ours["df_error"]) == (
        len(frame), systems, df_b, df_e)
    assert _close(ours["ss_system"], ss_b) and _close(ours["ss_error"], ss_e)
    assert _close(ours["f"], table["F"].iloc[0])
    assert _close(ours["p_value"], table["PR(>F)"].iloc[0])
    mse = ss_e / df_e  # eta^2 = SS_b / SS_t; omega^2 = (SS_b - df_b MSE) / (SS_t + MSE)
    assert _close(ours["eta_squared"], ss_b / (ss_b + ss_e))
    assert _close(ours["omega_squared"], (ss_b - df_b * mse) / (ss_b + ss_e + mse))


@pytest.mark.parametrize(("systems", "topics"), [(3, 10), (8, 60)])
def test_twoway_equals_anova_lm(con, systems, topics) -> None:
    frame = _long(2, systems, topics)
    ours = _query(con, "anova_twoway(x, system, topic)", frame)
    table = sm.stats.anova_lm(smf.ols("x ~ C(system) + C(topic)", data=frame).fit())
    ss_s, ss_t, ss_e = table["sum_sq"]
    df_s, df_t, df_e = table["df"]
    assert (ours["n"], ours["systems"], ours["topics"]) == (len(frame), systems, topics)
    assert (ours["df_system"], ours["df_topic"], ours["df_error"]) == (df_s, df_t, df_e)
    for field, expected in (("ss_system", ss_s), ("ss_topic", ss_t), ("ss_error", ss_e),
                            ("f", table["F"].iloc[0]), ("p_value", table["PR(>F)"].iloc[0])):
        assert _close(ours[field], expected), field
    # Partial effect sizes (Olejnik and Algina 2003): eta_p^2 = SS_s / (SS_s + SS_e);
    # omega_p^2 = df_s (MS_s - MSE) / (df_s MS_s + (N - df_s) MSE).
    mse, ms_s = ss_e / df_e, ss_s / df_s
    assert _close(ours["partial_eta_squared"], ss_s / (ss_s + ss_e))
    assert _close(ours["partial_omega_squared"],
                  df_s * (ms_s - mse) / (df_s * ms_s + (len(frame) - df_s) * mse))


def test_twoway_uses_the_complete_topics(con) -> None:
    frame = _long(3, 4, 30, unequal=True)
    complete = frame.groupby("topic")["system"].transform("count") == 4
    ours = _query(con, "anova_twoway(x, system, topic)", frame)
    table = sm.stats.anova_lm(smf.ols("x ~ C(system) + C(topic)", data=frame[complete]).fit())
    assert ours["topics"] == frame[complete]["topic"].nunique()
    assert ours["n"] == complete.sum()
    assert _close(ours["p_value"], table["PR(>F)"].iloc[0])


def test_twoway_refuses_a_cell_given_twice(con) -> None:
    frame = _long(4, 3, 5)
    frame = pd.concat([frame, frame.iloc[[7]]])
    with pytest.raises(Exception, match="anova_twoway: system 's1' has 2 values on topic "
                                        "'q002'; a randomised block design has one value"):
        _query(con, "anova_twoway(x, system, topic)", frame)


@pytest.mark.parametrize(("systems", "topics", "unequal"), [(3, 10, False), (8, 40, True)])
def test_tukey_equals_pairwise_tukeyhsd(con, systems, topics, unequal) -> None:
    frame = _long(5, systems, topics, unequal)
    ours = _query(con, "tukey_hsd(x, system, level := 0.9)", frame)
    result = multicomp.pairwise_tukeyhsd(frame["x"], frame["system"], alpha=0.1)
    pairs = [(a, b) for i, a in enumerate(result.groupsunique)
             for b in result.groupsunique[i + 1:]]
    assert list(zip(ours["system_a"], ours["system_b"], strict=True)) == pairs
    assert ours["df"] == result.df_total
    for i in range(len(pairs)):
        # statsmodels' meandiff is mean_b - mean_a: its interval is ours negated.
        assert _close(ours["mean_diff"][i], -result.meandiffs[i])
        assert _close(ours["p_value"][i], result.pvalues[i])
        assert _close(ours["ci_low"][i], -result.confint[i][1])
        assert _close(ours["ci_high"][i], -result.confint[i][0])
        assert _close(ours["statistic"][i], abs(result.meandiffs[i]) / result.std_pairs[i])


def test_tukey_equals_ranx(con) -> None:
    tukey = pytest.importorskip("ranx.statistical_tests.tukey_hsd_test")
    frame = _long(6, 4, 60)
    ours = _query(con, "tukey_hsd(x, system)", frame)
    names = sorted(frame["system"].unique())
    scores = [frame[frame["system"] == name].sort_values("topic")["x"].to_numpy()
              for name in names]
    theirs = {(r["control"], r["treatment"]): r["p-value"]
              for r in tukey.tukey_hsd_test(names, scores, 0.05)}
    for a, b, p in zip(ours["system_a"], ours["system_b"], ours["p_value"], strict=True):
        assert _close(p, theirs[a, b])


def test_blocked_tukey_from_anova_lm_and_the_studentized_range(con) -> None:
    frame = _long(7, 5, 50)
    ours = _query(con, "tukey_hsd_blocked(x, system, topic)", frame)
    table = sm.stats.anova_lm(smf.ols("x ~ C(system) + C(topic)", data=frame).fit())
    mse, df = table["sum_sq"].iloc[2] / table["df"].iloc[2], table["df"].iloc[2]
    means = frame.groupby("system")["x"].mean()
    spread = math.sqrt(mse / 50)  # sqrt(MSE / 2 (1/t + 1/t))
    critical = stats.studentized_range.ppf(0.95, 5, df)
    assert ours["df"] == df and _close(ours["mse"], mse)
    for a, b, d, q, p, low, high in zip(*(ours[f] for f in (
            "system_a", "system_b", "mean_diff", "statistic", "p_value", "ci_low", "ci_high")),
            strict=True):
        expected = means[a] - means[b]
        assert _close(d, expected) and _close(q, abs(expected) / spread)
        assert _close(p, stats.studentized_range.sf(abs(expected) / spread, 5, df))
        assert _close(low, expected - critical * spread)
        assert _close(high, expected + critical * spread)


def test_groups_nulls_and_undefined_cases(con) -> None:
    con.execute("""CREATE OR REPLACE TEMP TABLE anova_cases AS SELECT * FROM (VALUES
        (1, 'a', 1, 0.5), (1, 'b', 1, 0.5), (1, 'a', 2, 0.5), (1, 'b', 2, 0.5),
        (2, 'a', 1, 0.1), (2, 'a', 2, 0.3), (2, NULL, 1, 0.9), (2, 'b', 1, NULL),
        (3, 'a', 1, 'inf'::DOUBLE), (3, 'b', 1, 0.2), (3, 'a', 2, 0.1), (3, 'b', 2, 0.4))
        t(g, system, topic, x)""")
    rows = con.execute("""SELECT g, anova_oneway(x, system), tukey_hsd(x, system),
                             anova_twoway(x, system, topic)
                      FROM anova_cases GROUP BY g ORDER BY g""").fetchall()
    # 1: every value equal: no error variance, so no F, p or q (NULL), sums of squares 0.
    one, tukey, two = rows[0][1:]
    assert (one["n"], one["systems"], one["ss_error"], one["f"], one["p_value"]) == (
        4, 2, 0.0, None, None)
    assert tukey["mean_diff"] == [0.0] and tukey["p_value"] == [None]
    assert two["f"] is None and two["topics"] == 2
    # 2: NULL label and NULL value rows left out: one system, no F.
    one, tukey, two = rows[1][1:]
    assert (one["n"], one["systems"], one["f"]) == (2, 1, None)
    assert tukey["system_a"] == [] and (two["n"], two["topics"], two["f"]) == (2, 2, None)
    # 3: an infinite value: nothing but the counts.
    one, tukey, two = rows[2][1:]
    assert (one["n"], one["systems"], one["f"], one["ss_system"]) == (4, 2, None, None)
    assert tukey["p_value"] == [] and two["p_value"] is None


def test_rounding_is_not_error_variance(con) -> None:
    # Each system constant (one-way), or exactly system + topic (two-way): the error sum of
    # squares is 0 in exact arithmetic, about 1e-33 in floating point; before, F = 5.8e31 and
    # 1.6e30 with p = 0. Now no F. Hand calculation: SS_system = 6 x 0.3^2 = 0.54 (one-way).
    one = con.execute("""SELECT anova_oneway(x, s) FROM (VALUES (0.1, 'a'), (0.1, 'a'),
        (0.1, 'a'), (0.7, 'b'), (0.7, 'b'), (0.7, 'b')) v(x, s)""").fetchall()[0][0]
    assert one["f"] is None and one["p_value"] is None
    assert one["ss_system"] == pytest.approx(0.54, rel=1e-12)
    two = con.execute("""SELECT anova_twoway(x, s, t) FROM (VALUES (0.1, 'a', 1),
        (0.3, 'a', 2), (0.6, 'a', 3), (0.2, 'b', 1), (0.4, 'b', 2), (0.7, 'b', 3))
        v(x, s, t)""").fetchall()[0][0]
    assert two["f"] is None and two["partial_eta_squared"] is None
