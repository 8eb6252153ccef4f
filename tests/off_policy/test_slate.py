"""The slate estimators: obp 0.5.7's values on SyntheticSlateBanditDataset (pinned by
make_obp_pins.py), a hand calculation, and the previous position's probabilities taken with
lag() as docs/off-policy.md shows."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from .conftest import pins

N_UNIQUE_ACTION, LEN_LIST = 5, 3  # make_obp_pins.slate


def _slate_log() -> pa.Table:
    """One row per (slate, position): obp's slate arrays, plus the cascade DR's q_hat (the
    reward model's Q_l of the logged item) and v_hat (sum over items of pi_e Q_l), reduced
    as obp's SlateCascadeDoublyRobust._estimate_round_rewards indexes them."""
    data = pins()
    get = {k.split("/")[-1]: v for k, v in data.items() if k.startswith("slate/input/")}
    q_hat = get["q_hat"].reshape(-1, LEN_LIST, N_UNIQUE_ACTION)
    rounds = np.repeat(np.arange(len(q_hat)), LEN_LIST)
    position = get["position"]
    dist = get["evaluation_policy_action_dist"].reshape(-1, LEN_LIST, N_UNIQUE_ACTION)
    return pa.table({
        "slate_id": get["slate_id"], "position": position, "reward": get["reward"],
        "pscore": get["pscore"], "eval_pscore": get["evaluation_policy_pscore"],
        "pscore_item_position": get["pscore_item_position"],
        "eval_item_position": get["evaluation_policy_pscore_item_position"],
        "pscore_cascade": get["pscore_cascade"],
        "eval_cascade": get["evaluation_policy_pscore_cascade"],
        "q_hat": q_hat[rounds, position, get["action"]],
        "v_hat": (dist * q_hat).sum(axis=2)[rounds, position],
    })


CALLS = {
    "slate_standard_ips": "slate_standard_ips(slate_id, reward, pscore, eval_pscore)",
    "slate_independent_ips": "slate_independent_ips(slate_id, reward, pscore_item_position, "
    "eval_item_position)",
    "slate_reward_interaction_ips": "slate_reward_interaction_ips(slate_id, reward, "
    "pscore_cascade, eval_cascade)",
    "slate_cascade_dr": "slate_cascade_dr(slate_id, reward, pscore_cascade, eval_cascade, "
    "prev_pscore, prev_eval, q_hat, v_hat)",
}


def test_slate_estimators_give_obps_values(plain: duckdb.DuckDBPyConnection) -> None:
    """Expected: obp 0.5.7's estimate_policy_value of SlateStandardIPS, SlateIndependentIPS,
    SlateRewardInteractionIPS and SlateCascadeDoublyRobust, pinned by make_obp_pins.py."""
    data = pins()
    plain.register("slates", _slate_log())
    values = plain.execute(
        "WITH log AS (SELECT *, "
        "lag(pscore_cascade, 1, 1.0) OVER (PARTITION BY slate_id ORDER BY position) "
        "AS prev_pscore, "
        "lag(eval_cascade, 1, 1.0) OVER (PARTITION BY slate_id ORDER BY position) AS prev_eval "
        f"FROM slates) SELECT {', '.join(CALLS.values())} FROM log").fetchone()
    for name, value in zip(CALLS, values, strict=True):
        assert value == pytest.approx(float(data[f"slate/obp/{name}"]), rel=1e-12), name


def test_slate_hand_calculation(plain: duckdb.DuckDBPyConnection) -> None:
    """Two slates of two positions (by hand). Rows (slate, r, pscore, action_prob, prev
    pscore, prev action_prob, q_hat, v_hat):
    s1: (1, 0.5, 0.25, 1, 1, 0.5, 0.6), (0, 0.25, 0.125, 0.5, 0.25, 0.2, 0.3);
    s2: (1, 0.2, 0.4, 1, 1, 0.7, 0.5), (1, 0.1, 0.1, 0.2, 0.4, 0.4, 0.6).
    Weights w = 0.5, 0.5, 2, 1; previous weights 1, 0.5, 1, 2."""
    plain.execute(
        "CREATE TABLE s AS SELECT * FROM (VALUES "
        "(1, 1.0, 0.5, 0.25, 1.0, 1.0, 0.5, 0.6), (1, 0.0, 0.25, 0.125, 0.5, 0.25, 0.2, 0.3), "
        "(2, 1.0, 0.2, 0.4, 1.0, 1.0, 0.7, 0.5), (2, 1.0, 0.1, 0.1, 0.2, 0.4, 0.4, 0.6)"
        ") t(slate_id, reward, pscore, action_prob, pp, pa, q_hat, v_hat)")
    ips, dr = plain.execute(
        "SELECT slate_reward_interaction_ips(slate_id, reward, pscore, action_prob), "
        "slate_cascade_dr(slate_id, reward, pscore, action_prob, pp, pa, q_hat, v_hat) FROM s"
    ).fetchone()
    # IPS: (1 * 0.5 + 0 * 0.5 + 1 * 2 + 1 * 1) / 2 slates
    assert ips == pytest.approx(3.5 / 2, rel=1e-15)
    # DR: w (r - q) + w_prev v: 0.5 * 0.5 + 1 * 0.6 = 0.85; 0.5 * -0.2 + 0.5 * 0.3 = 0.05;
    # 2 * 0.3 + 1 * 0.5 = 1.1; 1 * 0.6 + 2 * 0.6 = 1.8; (0.85 + 0.05 + 1.1 + 1.8) / 2
    assert dr == pytest.approx(3.8 / 2, rel=1e-15)


def test_slate_bad_input_and_empty(plain: duckdb.DuckDBPyConnection) -> None:
    plain.register("slates", _slate_log())
    with pytest.raises(duckdb.Error, match="slate_standard_ips: slate_id must be not NULL"):
        plain.execute("SELECT slate_standard_ips(NULL::INTEGER, reward, pscore, eval_pscore) "
                      "FROM slates").fetchone()
    with pytest.raises(duckdb.Error, match=r"slate_independent_ips: pscore must be in \(0, 1\]"):
        plain.execute("SELECT slate_independent_ips(slate_id, reward, 0, eval_pscore) "
                      "FROM slates").fetchone()
    assert plain.execute(f"SELECT {CALLS['slate_standard_ips']} FROM slates WHERE false"
                         ).fetchone() == (None,)


def test_slates_in_python_against_obp() -> None:
    """duckrank.off_policy with slate estimators: obp 0.5.7's estimate_policy_value (pinned);
    the cascade DR's previous weights taken inside (lag over the slate's positions)."""
    from duckrank.reports.off_policy import off_policy

    data = pins()
    log = _slate_log()
    cascade = off_policy(log, ["rips", "slate_cascade_dr"], interval=False, columns={
        "pscore": "pscore_cascade", "action_prob": "eval_cascade"})
    assert list(cascade["estimator"]) == ["slate_reward_interaction_ips", "slate_cascade_dr"]
    for row in cascade.itertuples():
        assert row.estimate == pytest.approx(float(data[f"slate/obp/{row.estimator}"]),
                                             rel=1e-12)
        assert row.slates == 150
    standard = off_policy(log, "sips", columns={"action_prob": "eval_pscore"}, trials=2000)
    assert standard["estimate"][0] == pytest.approx(
        float(data["slate/obp/slate_standard_ips"]), rel=1e-12)
    assert standard["ci_low"][0] < standard["estimate"][0] < standard["ci_high"][0]


def test_slates_in_python_by_hand() -> None:
    """test_slate_hand_calculation's two slates, positions 0 and 1, the previous weights now
    taken inside: the slate sums of the cascade DR's terms are 0.85 + 0.05 and 1.1 + 1.8, so
    the estimate is 3.8 / 2 and the standard error sd(0.9, 2.9) / sqrt(2) = sqrt(2) / sqrt(2)."""
    from duckrank.reports.off_policy import off_policy

    log = pa.table({"slate_id": [1, 1, 2, 2], "position": [1, 0, 0, 1],
                    "reward": [0.0, 1.0, 1.0, 1.0], "pscore": [0.25, 0.5, 0.2, 0.1],
                    "action_prob": [0.125, 0.25, 0.4, 0.1], "q_hat": [0.2, 0.5, 0.7, 0.4],
                    "v_hat": [0.3, 0.6, 0.5, 0.6]})
    result = off_policy(log, "cascade-dr", interval=False)
    assert result["estimate"][0] == pytest.approx(1.9, rel=1e-15)
    assert result["stderr"][0] == pytest.approx(1.0, rel=1e-15)
    with pytest.raises(ValueError, match="slate and single-action estimators"):
        off_policy(log, ["sips", "ips"])
