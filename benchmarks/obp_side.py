"""The Open Bandit Pipeline's side of docs/off-policy.md's worked example and of
benchmarks/bench_off_policy.py, run in obp's own venv (tests/off_policy/make_obp_pins.py says
how to make it). It imports nothing of duckrank.

    /tmp/venv-obp/bin/python benchmarks/obp_side.py example OUT.npz
        obp's synthetic bandit data (SyntheticBanditDataset, 10,000 rounds, 10 actions, seed
        12345), an epsilon-greedy evaluation policy (eps 0.3) on the true expected rewards, a
        logistic-regression reward model (obp's RegressionModel, 3 folds): the arrays (and a
        segment of the contexts) into OUT.npz, obp's estimates printed as JSON.
    /tmp/venv-obp/bin/python benchmarks/obp_side.py time FOLDER
        load FOLDER/*.npy (reward, action, pscore, action_dist, estimated_rewards) and run
        OffPolicyEvaluation.estimate_policy_values with the eight estimators; prints JSON with
        the seconds (load included) and the peak resident memory.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
from obp import ope

SEED = 12345
ESTIMATORS = {
    "dm": ope.DirectMethod(), "ips": ope.InverseProbabilityWeighting(),
    "snips": ope.SelfNormalizedInverseProbabilityWeighting(), "dr": ope.DoublyRobust(),
    "sndr": ope.SelfNormalizedDoublyRobust(), "switch_dr": ope.SwitchDoublyRobust(lambda_=10.0),
    "dr_os": ope.DoublyRobustWithShrinkage(lambda_=10.0),
    "sg_ips": ope.SubGaussianInverseProbabilityWeighting(lambda_=0.1),
}


def example(path: Path) -> None:
    from obp.dataset import (
        SyntheticBanditDataset,
        linear_behavior_policy,
        logistic_reward_function,
    )
    from obp.ope import RegressionModel
    from sklearn.linear_model import LogisticRegression

    n_actions = 10
    dataset = SyntheticBanditDataset(
        n_actions=n_actions, dim_context=5, reward_type="binary",
        reward_function=logistic_reward_function,
        behavior_policy_function=linear_behavior_policy, random_state=SEED)
    feedback = dataset.obtain_batch_bandit_feedback(n_rounds=10_000)
    expected = feedback["expected_reward"]
    action_dist = np.full(expected.shape, 0.3 / n_actions)
    action_dist[np.arange(len(expected)), expected.argmax(axis=1)] += 0.7
    action_dist = action_dist[:, :, None]
    estimated = RegressionModel(
        n_actions=n_actions, base_model=LogisticRegression(random_state=SEED)).fit_predict(
        context=feedback["context"], action=feedback["action"], reward=feedback["reward"],
        n_folds=3, random_state=SEED)
    arrays = {"reward": feedback["reward"], "action": feedback["action"],
              "pscore": feedback["pscore"], "action_dist": action_dist,
              "estimated_rewards_by_reg_model": estimated}
    # A segment of the context (not of the logged action, which would bias every estimate).
    segment = np.where(feedback["context"][:, 0] > 0, "context_0_positive", "context_0_negative")
    np.savez_compressed(path, **arrays, segment=segment)
    values = {name: float(e.estimate_policy_value(**arrays)) for name, e in ESTIMATORS.items()}
    values["ground_truth"] = float(dataset.calc_ground_truth_policy_value(
        expected_reward=expected, action_dist=action_dist))
    interval = ope.InverseProbabilityWeighting().estimate_interval(
        **arrays, alpha=0.05, n_bootstrap_samples=10_000, random_state=SEED)
    values["ips_interval"] = [float(v) for v in interval.values()]
    print(json.dumps(values, indent=1))


def _peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def timed(folder: Path) -> None:
    start, cpu = time.perf_counter(), time.process_time()
    arrays = {name: np.load(folder / f"{name}.npy") for name in (
        "reward", "action", "pscore", "action_dist", "estimated_rewards")}
    loaded = time.perf_counter()
    feedback = {"reward": arrays["reward"], "action": arrays["action"],
                "pscore": arrays["pscore"], "action_dist": arrays["action_dist"],
                "n_rounds": len(arrays["reward"]), "n_actions": arrays["action_dist"].shape[1],
                "position": None, "context": None}
    evaluation = ope.OffPolicyEvaluation(bandit_feedback=feedback,
                                         ope_estimators=list(ESTIMATORS.values()))
    values = evaluation.estimate_policy_values(
        action_dist=arrays["action_dist"],
        estimated_rewards_by_reg_model=arrays["estimated_rewards"])
    print(json.dumps({"seconds": time.perf_counter() - start,
                      "cpu_seconds": time.process_time() - cpu,
                      "load_seconds": loaded - start, "rss_mb": _peak_mb(),
                      "values": {k: float(v) for k, v in values.items()}}))


if __name__ == "__main__":
    {"example": example, "time": timed}[sys.argv[1]](Path(sys.argv[2]))
