"""``paired_effect_size``: the mean difference and Cohen's d_z with bootstrap intervals.

Expected values: d_z by its formula written out below (Cohen 1988; Lakens 2013: mean(d) /
sd(d), sd with n - 1); the mean difference's interval equal to ``paired_bootstrap_ci``'s digit
for digit (same resamples); d_z's interval against ``scipy.stats.bootstrap(..., paired=True,
method="percentile")`` within Monte Carlo error (the two draw different resamples)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import duckrank

stats = pytest.importorskip("scipy.stats")


@pytest.fixture(scope="module")
def con():
    connection = duckrank.connect()
    yield connection
    connection.close()


def _pairs(seed: int, n: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.random(n)
    return pd.DataFrame({"x": x, "y": np.clip(x - rng.normal(0.05, 0.15, n), 0, 1)})


def _row(con, call: str, frame: pd.DataFrame) -> dict:
    con.register("effect_rows", frame)
    try:
        return con.execute(f"SELECT {call} FROM effect_rows").fetchall()[0][0]
    finally:
        con.unregister("effect_rows")


def test_d_z_by_its_formula_and_the_mean_interval_of_paired_bootstrap_ci(con) -> None:
    frame = _pairs(1, 300)
    ours = _row(con, "paired_effect_size(x, y, trials := 2000, seed := 3)", frame)
    d = (frame["x"] - frame["y"]).to_numpy()
    assert ours["n"] == 300
    assert ours["mean_diff"] == pytest.approx(d.mean(), rel=1e-12)
    assert ours["d_z"] == pytest.approx(d.mean() / d.std(ddof=1), rel=1e-12)
    interval = _row(con, "paired_bootstrap_ci(x, y, trials := 2000, seed := 3)", frame)
    assert (ours["ci_low"], ours["ci_high"]) == (interval["ci_low"], interval["ci_high"])


def test_d_z_interval_against_scipy_bootstrap(con) -> None:
    frame = _pairs(2, 200)
    ours = _row(con, "paired_effect_size(x, y, level := 0.9, trials := 4000)", frame)
    theirs = stats.bootstrap(
        (frame["x"].to_numpy(), frame["y"].to_numpy()),
        lambda x, y, axis=-1: np.mean(x - y, axis=axis) / np.std(x - y, ddof=1, axis=axis),
        paired=True, method="percentile", confidence_level=0.9, n_resamples=4000,
        random_state=np.random.default_rng(5)).confidence_interval
    # Monte Carlo error of a 5% quantile of 4,000 resamples: about 0.02 of the interval's
    # width (sqrt(0.05 x 0.95 / 4000) / density); allow 0.1 of it.
    width = theirs.high - theirs.low
    assert abs(ours["d_z_low"] - theirs.low) < 0.1 * width
    assert abs(ours["d_z_high"] - theirs.high) < 0.1 * width
    assert ours["d_z_low"] < ours["d_z"] < ours["d_z_high"]


def test_undefined_cases(con) -> None:
    rows = con.execute("""
        SELECT g, paired_effect_size(x, y, trials := 100) FROM (VALUES
            (1, 0.5, 0.2), (1, 0.7, 0.4),
            (2, 0.5, 0.5),
            (3, 'inf'::DOUBLE, 0.1), (3, 0.3, 0.1),
            (4, NULL, 0.1)) t(g, x, y)
        GROUP BY g ORDER BY g""").fetchall()
    equal, one, infinite, none = (row[1] for row in rows)
    # Two pairs: everything defined (0.5 - 0.2 and 0.7 - 0.4 differ in their last bits, so
    # d_z is large but finite; exactly equal differences are the last case below).
    assert equal["n"] == 2 and equal["d_z"] is not None and equal["ci_low"] is not None
    assert one == {"n": 1, "mean_diff": 0.0, "ci_low": None, "ci_high": None, "d_z": None,
                   "d_z_low": None, "d_z_high": None}
    assert infinite["n"] == 2 and infinite["mean_diff"] == float("inf")
    assert all(infinite[f] is None for f in ("ci_low", "d_z", "d_z_low"))
    assert none["n"] == 0 and none["mean_diff"] is None
    constant = con.execute("SELECT paired_effect_size(x + 0.25, x, trials := 100) FROM "
                           "(VALUES (0.5), (0.25), (0.0)) t(x)").fetchall()[0][0]
    assert constant["mean_diff"] == 0.25 and constant["d_z"] is None
    assert constant["d_z_low"] is None and constant["ci_low"] == constant["ci_high"] == 0.25
