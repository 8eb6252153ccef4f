"""``duckrank.off_policy`` (pandas, polars, Arrow, Parquet in) and ``duckrank off-policy``:
obp's estimates and intervals on its synthetic data (pinned by make_obp_pins.py), segments,
obp's arrays reduced to a log (``bandit_log``), and the errors."""

from __future__ import annotations

import argparse
import json
import math

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from duckrank.off_policy.arrays import bandit_log
from duckrank.reports import off_policy as report
from duckrank.reports.off_policy import off_policy

from .conftest import HAND, obp_log, pins


def test_estimates_and_intervals_against_obp() -> None:
    """Estimates: obp's estimate_policy_value (1e-12). Intervals: obp's estimate_interval
    (2,000 bootstrap samples, its own random stream) against duckrank's 10,000 resamples of
    the same round values: equal within Monte Carlo error, here 0.2 standard errors."""
    data = pins()
    for dataset in ("binary", "continuous"):
        result = off_policy(obp_log(dataset, data), ["ips", "sndr", "dr_os"],
                            lambdas={"dr_os": [1.0, 10.0]}, seed=3)
        for row in result.itertuples():
            key = f"{dataset}/obp/{row.estimator}/{row.lambda_}"
            assert row.estimate == pytest.approx(float(data[key]), rel=1e-12)
            interval = data.get(f"{dataset}/interval/{row.estimator}")
            if interval is not None:
                _, low, high = interval
                assert abs(row.ci_low - low) < 0.2 * row.stderr, (dataset, row)
                assert abs(row.ci_high - high) < 0.2 * row.stderr, (dataset, row)


def test_standard_error_and_rounds_by_hand() -> None:
    """ips round values r w = 0.5, 0, 1, 0 (conftest.HAND): mean 0.375, sample sd
    sqrt(((0.125)^2 + 0.375^2 + 0.625^2 + 0.375^2) / 3); snips round values r w / mean(w) =
    (0.5, 0, 1, 0) / 0.875."""
    result = off_policy(HAND, ["ips", "snips"], interval=False)
    ips, snips = result.itertuples()
    sd = math.sqrt((0.125**2 + 0.375**2 + 0.625**2 + 0.375**2) / 3)
    assert ips.estimate == pytest.approx(0.375) and ips.stderr == pytest.approx(sd / 2)
    assert snips.stderr == pytest.approx(sd / 0.875 / 2)
    assert (ips.rounds, ips.ess, ips.support, ips.max_weight, ips.mean_weight) == (
        4, pytest.approx(7 / 3), 0.75, 2.0, 0.875)
    assert "ci_low" not in result.columns


def test_segments_polars_and_parquet(tmp_path) -> None:
    polars = pytest.importorskip("polars")
    path = tmp_path / "log.parquet"
    pq.write_table(HAND, path)
    by_path = off_policy(str(path), "snips", by="segment", interval=False)
    by_polars = off_policy(polars.from_arrow(HAND), "snips", by="segment", interval=False)
    assert isinstance(by_polars, polars.DataFrame)
    # a: 0.5 / 2.5; b: 1 / 1 (by hand)
    assert list(by_path["segment"]) == ["a", "b"]
    assert list(by_path["estimate"]) == [pytest.approx(0.2), 1.0]
    assert by_polars["estimate"].to_list() == list(by_path["estimate"])


def test_default_estimators_follow_the_columns() -> None:
    without_model = HAND.drop(["q_hat", "v_hat"])
    assert list(off_policy(without_model, interval=False)["estimator"]) == [
        "ips", "snips", "sg_ips"]
    renamed = HAND.rename_columns(["segment", "click", "propensity", "target_prob", "q", "v"])
    result = off_policy(renamed, "dr", interval=False, columns={
        "reward": "click", "pscore": "propensity", "action_prob": "target_prob",
        "q_hat": "q", "v_hat": "v"})
    assert result["estimate"][0] == pytest.approx(0.45)  # test_single_action's hand value


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"estimators": "dr", "log": HAND.drop(["q_hat"])},
     "dr needs the columns q_hat, which the log lacks"),
    ({"estimators": "nope"}, "unknown estimator 'nope'"),
    ({"estimators": "ips", "lambdas": {"ips": -1}}, "ips: lambda_ must be a number in"),
    ({"estimators": "snips", "lambdas": {"snips": 1}}, "snips has no lambda_"),
    ({"estimators": "ips", "lambdas": {"dr": 1}}, "lambdas names estimators not requested"),
    ({"by": "region"}, "no column 'region' to group by"),
    ({"columns": {"pscore": "p"}}, "no pscore column 'p'"),
])
def test_errors_name_the_argument(kwargs: dict, message: str) -> None:
    log = kwargs.pop("log", HAND)
    with pytest.raises(ValueError, match=message):
        off_policy(log, interval=False, **kwargs)


def test_bandit_log_reads_obps_arrays_at_the_logged_position() -> None:
    """Two rounds, two actions, two positions (by hand): round 0 logged action 1 at position 1,
    round 1 action 0 at position 0."""
    dist = np.array([[[0.5, 0.9], [0.5, 0.1]], [[0.2, 0.6], [0.8, 0.4]]])
    estimates = np.array([[[0.1, 0.2], [0.3, 0.4]], [[0.5, 0.6], [0.7, 0.8]]])
    columns = bandit_log([1, 0], [1, 0], [0.5, 0.5], dist, estimates, position=[1, 0])
    assert list(columns["action_prob"]) == [0.1, 0.2]
    assert list(columns["q_hat"]) == [0.4, 0.5]
    # round 0, position 1: 0.9 * 0.2 + 0.1 * 0.4; round 1, position 0: 0.2 * 0.5 + 0.8 * 0.7
    assert columns["v_hat"] == pytest.approx([0.22, 0.66])
    with pytest.raises(ValueError, match="action_dist must be a probability distribution"):
        bandit_log([1], [0], [0.5], np.array([[[0.5], [0.4]]]))
    with pytest.raises(ValueError, match="position is required"):
        bandit_log([1, 0], [1, 0], [0.5, 0.5], dist)


def _command(argv: list[str], capsys) -> str:
    commands = argparse.ArgumentParser().add_subparsers(dest="command")
    report.add_parser(commands)
    parser = commands.choices["off-policy"]
    args = parser.parse_args(argv)
    assert args.handler(args) == 0
    return capsys.readouterr().out


def test_the_command(tmp_path, capsys) -> None:
    path = tmp_path / "log.parquet"
    pq.write_table(HAND, path)
    out = _command([str(path), "-e", "ips", "-e", "dr_os", "--lambda", "dr_os=1",
                    "--lambda", "dr_os=inf", "--by", "segment", "--no-interval",
                    "--format", "json"], capsys)
    rows = json.loads(out)
    assert [(r["segment"], r["estimator"], r["lambda_"]) for r in rows] == [
        ("a", "ips", "inf"), ("a", "dr_os", 1.0), ("a", "dr_os", "inf"),
        ("b", "ips", "inf"), ("b", "dr_os", 1.0), ("b", "dr_os", "inf"),
    ]
    # By hand (conftest.HAND), segment b (w = 1, 0): ips (1 * 1 + 0) / 2; dr_os with lambda_
    # 1, w' = 1 / 2, 0: (0.7 + 0.5 * 0.1 + 0.4) / 2; ess (1 + 0)^2 / (1 + 0), every digit.
    b = {(r["estimator"], r["lambda_"]): r for r in rows if r["segment"] == "b"}
    assert b["ips", "inf"]["estimate"] == 0.5
    assert b["dr_os", 1.0]["estimate"] == pytest.approx(0.575, rel=1e-15)
    assert rows[0]["ess"] == 6.25 / 4.25
    table = _command([str(path), "-e", "snips", "--trials", "200"], capsys)
    assert "snips" in table and "ci_low" in table


def test_the_command_through_duckrank_main(tmp_path, capsys) -> None:
    """When ``duckrank off-policy`` is wired into duckrank.cli's COMMANDS."""
    from duckrank import cli

    if "off-policy" not in {getattr(c, "name", None) for c in cli.COMMANDS}:
        pytest.skip("duckrank off-policy is not in duckrank.cli.COMMANDS yet")
    path = tmp_path / "log.csv"
    pacsv.write_csv(HAND, path)
    assert cli.main(["off-policy", str(path), "-e", "dm", "--format", "csv",
                     "--no-interval"]) == 0
    assert "dm," in capsys.readouterr().out
    assert cli.main(["off-policy", str(path), "-e", "dm", "--lambda", "dm=1"]) == 1
    assert "dm has no lambda_" in capsys.readouterr().err


def test_bad_rounds_are_errors_naming_the_input() -> None:
    """The inputs are checked once, before the estimators read them: the error names
    off_policy, the input and the value (the macros name themselves: test_single_action)."""
    import duckdb

    bad = HAND.set_column(2, "pscore", pa.array([0.5, 0.0, 0.8, 0.5]))
    with pytest.raises(duckdb.Error, match=r"off_policy: pscore must be in \(0, 1\], got 0"):
        off_policy(bad, "ips", interval=False)
    missing = HAND.set_column(1, "reward", pa.array([1.0, None, 1.0, 0.0]))
    with pytest.raises(duckdb.Error, match="off_policy: reward must be a finite number, got NULL"):
        off_policy(missing, "snips", interval=False)


def test_obps_arrays_as_a_dict() -> None:
    """obp's bandit_feedback dict (extra keys ignored) with action_dist and the reward model's
    estimates added: obp's estimates (pinned by make_obp_pins.py)."""
    data = pins()
    arrays = {k.split("/")[-1]: v for k, v in data.items() if k.startswith("continuous/input/")}
    feedback = {**arrays, "n_rounds": len(arrays["reward"]), "position": None, "context": None}
    result = off_policy(feedback, ["dr", "sg_ips"], lambdas={"sg_ips": 0.3}, interval=False)
    assert list(result["estimate"]) == [
        pytest.approx(float(data["continuous/obp/dr/inf"]), rel=1e-12),
        pytest.approx(float(data["continuous/obp/sg_ips/0.3"]), rel=1e-12)]
    with pytest.raises(ValueError, match="obp's arrays need action_dist"):
        off_policy({k: v for k, v in arrays.items() if k != "action_dist"}, interval=False)


def test_the_command_with_a_slate_estimator(tmp_path, capsys) -> None:
    """Two slates of two rows (by hand): r w = 1 * 0.5 + 0 and 1 * 2 + 1 * 1, so the
    slate independent IPS is (0.5 + 3) / 2."""
    path = tmp_path / "slates.parquet"
    pq.write_table(pa.table({"s": [1, 1, 2, 2], "reward": [1.0, 0.0, 1.0, 1.0],
                             "pscore": [0.5, 0.5, 0.2, 0.1], "eval": [0.25, 0.25, 0.4, 0.1]}),
                   path)
    out = _command([str(path), "-e", "iips", "--slate-id-column", "s", "--action-prob-column",
                    "eval", "--no-interval", "--format", "json"], capsys)
    (row,) = json.loads(out)
    assert (row["estimator"], row["estimate"], row["slates"]) == (
        "slate_independent_ips", 1.75, 2)
    # The standard IPS reads one probability per slate: slate 2 has two, as obp refuses.
    with pytest.raises(duckdb.Error, match="slate_standard_ips: pscore must be the same on "
                       "every row of a slate"):
        _command([str(path), "-e", "sips", "--slate-id-column", "s", "--action-prob-column",
                  "eval", "--no-interval"], capsys)
