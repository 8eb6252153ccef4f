"""The comparison report's effect sizes and win/tie/loss counts (issue 30).

Expected values: wins, ties and losses from ranx 0.3.21's ``compare(...).win_tie_loss``; d_z by
its formula (mean / sd of the per-query differences, sd with n - 1) over the report's own
per-query values; the intervals against a baseline equal to ``paired_effect_size`` and
``paired_bootstrap_ci`` called on the same values with the report's trials and seed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import duckrank


def _runs() -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """Three systems over 25 queries with coarse scores (ties between systems are common)."""
    rng = np.random.default_rng(21)
    qrels = pd.DataFrame([(q, i, 1) for q in range(25) for i in (0, 1, 2)],
                         columns=["query", "item", "grade"])
    runs = {}
    for name, shift in (("one", 0.0), ("two", 0.25), ("three", 0.5)):
        runs[name] = pd.DataFrame(
            [(q, i, float(rng.random() + shift * (i < 3))) for q in range(25) for i in range(8)],
            columns=["query", "item", "score"])
    return runs, qrels


@pytest.fixture(scope="module")
def con():
    connection = duckrank.connect()
    yield connection
    connection.close()


def test_wins_ties_losses_equal_ranx(con) -> None:
    ranx = pytest.importorskip("ranx")
    runs, qrels = _runs()
    report = duckrank.compare(runs, qrels, ["mrr", "precision@3"], test="t", level=None,
                              connection=con)

    def nested(table: pd.DataFrame, value: str) -> dict:
        out: dict = {}
        for q, i, v in table[["query", "item", value]].itertuples(index=False):
            out.setdefault(str(q), {})[str(i)] = v
        return out

    theirs = ranx.compare(ranx.Qrels(nested(qrels, "grade")),
                          [ranx.Run(nested(run, "score"), name=n) for n, run in runs.items()],
                          ["mrr", "precision@3"], make_comparable=True).win_tie_loss
    rows = report.frame("comparisons")
    assert (rows["ties"] > 0).any()  # the case worth testing
    for row in rows.itertuples():
        counts = theirs[row.system, row.other][row.metric]
        assert (row.wins, row.ties, row.losses) == (counts["W"], counts["T"], counts["L"])


def test_d_z_and_its_interval_against_a_baseline(con) -> None:
    runs, qrels = _runs()
    report = duckrank.compare(runs, qrels, ["mrr"], test="t", baseline="one", trials=500,
                              seed=4, connection=con)
    values = report.per_query.pivot(index="query", columns="system", values="value")
    for row in report.frame("comparisons").itertuples():
        d = (values[row.system] - values[row.other]).to_numpy()
        assert row.d_z == pytest.approx(d.mean() / d.std(ddof=1), rel=1e-12)
        con.register("report_d", pd.DataFrame({"x": values[row.system],
                                               "y": values[row.other]}))
        effect, interval = con.execute(
            "SELECT paired_effect_size(x, y, trials := 500, seed := 4), "
            "paired_bootstrap_ci(x, y, trials := 500, seed := 4) FROM report_d").fetchall()[0]
        con.unregister("report_d")
        assert (row.d_z_low, row.d_z_high) == (effect["d_z_low"], effect["d_z_high"])
        assert (row.ci_low, row.ci_high) == (interval["ci_low"], interval["ci_high"])


def test_several_baselines(con) -> None:
    """Each system against each baseline, a pair of baselines once; p-values from scipy's
    ``ttest_rel`` on the report's per-query values, Holm over the 3 comparisons by hand."""
    stats = pytest.importorskip("scipy.stats")
    runs, qrels = _runs()
    report = duckrank.compare(runs, qrels, ["mrr"], test="t", baseline=["one", "two"],
                              level=None, connection=con)
    rows = report.frame("comparisons")
    assert list(zip(rows["system"], rows["other"], strict=True)) == [
        ("two", "one"), ("three", "one"), ("three", "two")]
    values = report.per_query.pivot(index="query", columns="system", values="value")
    p = [stats.ttest_rel(values[a], values[b]).pvalue for a, b in zip(
        rows["system"], rows["other"], strict=True)]
    np.testing.assert_allclose(rows["p_value"], p, rtol=1e-9)
    order = np.argsort(p)
    holm = np.maximum.accumulate(np.array(p)[order] * [3, 2, 1])
    np.testing.assert_allclose(rows["p_adjusted"].to_numpy()[order], np.minimum(holm, 1),
                               rtol=1e-9)
    with pytest.raises(ValueError, match="compare: baseline=.*several different names"):
        duckrank.compare(runs, qrels, ["mrr"], baseline=["one", "one"], connection=con)


def test_several_baselines_read_in_the_legend_and_plot_against_the_first(tmp_path) -> None:
    """With baseline=('a', 'b') the legend names both (not a Python tuple) and the difference
    plot and HTML page are drawn against the first baseline."""
    rng = np.random.default_rng(3)
    run = pd.DataFrame([(s, q, i, float(rng.random())) for s in "abc" for q in range(12)
                        for i in range(6)], columns=["system", "query", "item", "score"])
    qrels = pd.DataFrame([(q, i, 1) for q in range(12) for i in (0, 3)],
                         columns=["query", "item", "grade"])
    report = duckrank.compare(run, qrels, ["mrr"], by="system", baseline=["a", "b"], trials=200)
    assert "against each of the baselines a, b" in str(report)
    assert "('a', 'b')" not in str(report)
    pytest.importorskip("matplotlib")
    drawn = report.plot(tmp_path / "d.png", kind="difference")
    assert (tmp_path / "d.png").exists() and drawn is not None
