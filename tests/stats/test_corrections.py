"""Multiple-comparison corrections (``duckrank.stats.corrections``), in numpy, in SQL
(``adjusted_sql``) and in the report (``duckrank.compare(correction=...)``).

Expected values: statsmodels' ``multipletests(p, method=name)[1]`` (statsmodels 0.15), to 1e-12;
and one hand calculation per shape written out in the test."""

from __future__ import annotations

import gc

import numpy as np
import pandas as pd
import pytest

import duckrank
from duckrank.reports.compare import CORRECTION_NAMES, CORRECTIONS, adjusted_sql
from duckrank.stats.corrections import BY_NAME

multitest = pytest.importorskip("statsmodels.stats.multitest")


@pytest.fixture(autouse=True)
def _no_full_collections(monkeypatch) -> None:
    """statsmodels' Holm branch calls gc.collect() on every call (0.2 s each with this
    process's heap); the result does not depend on it."""
    monkeypatch.setattr(gc, "collect", lambda *_: 0)


def _families(seed: int = 3) -> list[np.ndarray]:
    """Families of p-values as a report meets them: sizes 1 to 45, spread over [0, 1], some
    tiny (1e-12), some rounded to 2 digits (ties), some 1."""
    rng = np.random.default_rng(seed)
    families = []
    for size in (1, 2, 3, 5, 10, 21, 45):
        for power in (1, 4, 12):
            p = rng.random(size) ** power
            families += [p, np.round(p, 2), np.where(rng.random(size) < 0.2, 1.0, p)]
    return families


@pytest.mark.parametrize("name", list(BY_NAME))
def test_numpy_equals_statsmodels(name) -> None:
    for p in _families():
        expected = multitest.multipletests(p, method=name)[1]
        np.testing.assert_allclose(BY_NAME[name].adjust(p), expected, rtol=1e-12, atol=0)


def test_the_report_offers_statsmodels_names_and_todays() -> None:
    assert CORRECTIONS == ("holm", "bonferroni", "sidak", "holm-sidak", "simes-hochberg",
                           "hommel", "fdr_bh", "fdr_by", None)
    assert set(CORRECTION_NAMES) == set(BY_NAME)


def test_each_shape_by_hand() -> None:
    # p = 0.01, 0.04, 0.03, m = 3; sorted 0.01, 0.03, 0.04.
    p = np.array([0.01, 0.04, 0.03])
    # Hochberg (step-up): 3 x 0.01, 2 x 0.03, 1 x 0.04 = 0.03, 0.06, 0.04; the running minimum
    # from the largest: 0.04, then min(0.06, 0.04) = 0.04, then 0.03.
    np.testing.assert_allclose(BY_NAME["simes-hochberg"].adjust(p), [0.03, 0.04, 0.04])
    # Benjamini-Hochberg: 3/1 x 0.01, 3/2 x 0.03, 3/3 x 0.04 = 0.03, 0.045, 0.04; the
    # running minimum from the largest: 0.04, 0.04, 0.03.
    np.testing.assert_allclose(BY_NAME["fdr_bh"].adjust(p), [0.03, 0.04, 0.04])
    # Benjamini-Yekutieli: BH's times 1 + 1/2 + 1/3 = 11/6.
    np.testing.assert_allclose(BY_NAME["fdr_by"].adjust(p), np.array([0.03, 0.04, 0.04]) * 11 / 6)
    # Sidak: 1 - 0.99^3 = 0.029701.
    assert BY_NAME["sidak"].adjust(p)[0] == pytest.approx(0.029701, rel=1e-12)
    # A missing p-value (NaN) stays missing and is not in the family (m = 2 for the others).
    np.testing.assert_allclose(BY_NAME["bonferroni"].adjust([0.01, np.nan, 0.03]),
                               [0.02, np.nan, 0.06])


@pytest.fixture(scope="module")
def con():
    connection = duckrank.connect()
    yield connection
    connection.close()


@pytest.mark.parametrize("name", [n for n, c in BY_NAME.items() if c.sql_term is not None])
def test_sql_equals_statsmodels(con, name) -> None:
    families = _families(5)
    rows = [(m, i, i + 1, float(v)) for m, p in enumerate(families) for i, v in enumerate(p)]
    table = pd.DataFrame(rows, columns=["metric", "a", "b", "p_value"])
    con.register("tested_p", table)
    got = con.sql(f"SELECT metric, a, p_adjusted FROM ({adjusted_sql('tested_p', name)}) "
                  "ORDER BY metric, a").fetchall()
    con.unregister("tested_p")
    for m, p in enumerate(families):
        expected = multitest.multipletests(p, method=name)[1]
        ours = [v for metric, _, v in got if metric == m]
        np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=0)


def test_sql_refuses_a_method_without_a_sql_form() -> None:
    with pytest.raises(ValueError, match="adjusted_sql: correction='hommel' has no SQL form"):
        adjusted_sql("tested", "hommel")


def _runs() -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """Four systems over 30 queries, relevant items pushed up by a shift per system."""
    rng = np.random.default_rng(11)
    qrels = pd.DataFrame([(q, i, 1) for q in range(30) for i in (0, 1, 2)],
                         columns=["query", "item", "grade"])
    runs = {}
    for name, shift in (("a", 0.0), ("b", 0.2), ("c", 0.3), ("d", 0.5)):
        runs[name] = pd.DataFrame(
            [(q, i, rng.random() + shift * (i < 3)) for q in range(30) for i in range(12)],
            columns=["query", "item", "score"])
    return runs, qrels


# Two methods through the whole report (each report costs a second): Hommel, numpy only, and
# Benjamini-Yekutieli, a step-up FDR method; the others share their path (Correction.adjust).
@pytest.mark.parametrize("name", ["hommel", "fdr_by"])
def test_the_report_corrects_its_t_test_p_values_as_statsmodels(con, name) -> None:
    runs, qrels = _runs()
    report = duckrank.compare(runs, qrels, ["ndcg@10", "mrr"], test="t", correction=name,
                              level=None, connection=con)
    comparisons = report.frame("comparisons")
    for _, family in comparisons.groupby("metric"):
        expected = multitest.multipletests(family["p_value"].to_numpy(), method=name)[1]
        np.testing.assert_allclose(family["p_adjusted"], expected, rtol=1e-12, atol=0)
        assert (family["significant"] == (family["p_adjusted"] <= 0.05)).all()
    assert f"{CORRECTION_NAMES[name]}-corrected over 6 comparisons" in report.table()


def test_too_few_trials_names_the_fewest_that_can_reach_alpha(con) -> None:
    runs, qrels = _runs()
    # fdr_bh leaves a family of equal p-values as it is: 1/(trials + 1) <= 0.05 needs 19 trials.
    with pytest.raises(ValueError, match=r"trials=10 is too few .* use at least 19 trials"):
        duckrank.compare(runs, qrels, ["mrr"], correction="fdr_bh", trials=10, connection=con)
    # Holm: 6/(trials + 1) <= 0.05 needs 119.
    with pytest.raises(ValueError, match="use at least 119 trials"):
        duckrank.compare(runs, qrels, ["mrr"], correction="holm", trials=10, connection=con)
