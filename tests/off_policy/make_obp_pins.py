"""Write the pinned obp values the off-policy tests compare with (tests/off_policy/obp_pins.npz).

Run in obp's own venv (obp 0.5.7 pins torch 1.12 and Python < 3.11; its estimators are numpy
and run unchanged beside torch 2.13):

    python3 -m venv /tmp/venv-obp
    /tmp/venv-obp/bin/pip install torch==2.13.0 numpy==1.23.5 pandas==1.5.2 \\
        scikit-learn==1.1.3 scipy==1.9.3 'matplotlib<3.8' seaborn==0.11.2 tqdm pyyaml \\
        'mypy-extensions<0.5'
    /tmp/venv-obp/bin/pip install --no-deps --ignore-requires-python obp==0.5.7
    /tmp/venv-obp/bin/python tests/off_policy/make_obp_pins.py [OUT.npz]

Everything is drawn from fixed seeds: obp's synthetic generators (SyntheticBanditDataset,
SyntheticSlateBanditDataset, random_state=12345), an epsilon-greedy evaluation policy on the
true expected rewards, obp's RegressionModel (scikit-learn's LogisticRegression, 3 folds) for
the reward estimates; and random arrays with three positions (numpy, seeded). The file holds
the inputs (so the tests need no obp) and, under ``obp/<estimator>/<lambda_>``, obp's
``estimate_policy_value``; under ``interval/...`` obp's ``estimate_interval`` (2,000 bootstrap
samples).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from obp import ope
from obp.dataset import (
    SyntheticBanditDataset,
    SyntheticSlateBanditDataset,
    linear_behavior_policy,
    linear_reward_function,
    logistic_reward_function,
)
from obp.ope import RegressionModel
from sklearn.linear_model import LogisticRegression, Ridge

SEED = 12345
INF = float("inf")
# (obp class, its SQL name in duckrank, the lambda_ values pinned; None: no lambda_)
SINGLE = (
    (ope.DirectMethod, "dm", (None,)),
    (ope.InverseProbabilityWeighting, "ips", (INF, 2.0, 0.5, 0.0)),
    (ope.SelfNormalizedInverseProbabilityWeighting, "snips", (None,)),
    (ope.DoublyRobust, "dr", (INF, 1.5)),
    (ope.SelfNormalizedDoublyRobust, "sndr", (None,)),
    (ope.SwitchDoublyRobust, "switch_dr", (INF, 1.0, 3.0)),
    (ope.DoublyRobustWithShrinkage, "dr_os", (0.0, 1.0, 10.0, INF)),
    (ope.SubGaussianInverseProbabilityWeighting, "sg_ips", (0.0, 0.3, 1.0)),
    (ope.SubGaussianDoublyRobust, "sg_dr", (0.0, 0.3, 1.0)),
)


def eps_greedy(expected_reward: np.ndarray, eps: float) -> np.ndarray:
    """An epsilon-greedy evaluation policy on the true expected rewards, (n, n_actions, 1)."""
    n, n_actions = expected_reward.shape
    dist = np.full((n, n_actions), eps / n_actions)
    dist[np.arange(n), expected_reward.argmax(axis=1)] += 1.0 - eps
    return dist[:, :, None]


def single_action(out: dict, name: str, reward_type: str, n_rounds: int, n_actions: int,
                  eps: float) -> None:
    binary = reward_type == "binary"
    dataset = SyntheticBanditDataset(
        n_actions=n_actions, dim_context=4, reward_type=reward_type,
        reward_function=logistic_reward_function if binary else linear_reward_function,
        behavior_policy_function=linear_behavior_policy, random_state=SEED,
    )
    feedback = dataset.obtain_batch_bandit_feedback(n_rounds=n_rounds)
    action_dist = eps_greedy(feedback["expected_reward"], eps)
    base = LogisticRegression(random_state=SEED) if binary else Ridge(alpha=1.0)
    model = RegressionModel(n_actions=n_actions, base_model=base)
    estimated = model.fit_predict(
        context=feedback["context"], action=feedback["action"], reward=feedback["reward"],
        n_folds=3, random_state=SEED,
    )
    inputs = {"reward": feedback["reward"], "action": feedback["action"],
              "pscore": feedback["pscore"], "action_dist": action_dist,
              "estimated_rewards_by_reg_model": estimated}
    for key, value in inputs.items():
        out[f"{name}/input/{key}"] = np.asarray(value)
    for cls, sql_name, lambdas in SINGLE:
        for lam in lambdas:
            estimator = cls() if lam is None else cls(lambda_=lam)
            with np.errstate(invalid="ignore", divide="ignore"):
                value = estimator.estimate_policy_value(**inputs)
            out[f"{name}/obp/{sql_name}/{lam}"] = np.float64(value)
    for cls, sql_name in ((ope.InverseProbabilityWeighting, "ips"),
                          (ope.SelfNormalizedDoublyRobust, "sndr")):
        interval = cls().estimate_interval(**inputs, alpha=0.05, n_bootstrap_samples=2000,
                                           random_state=SEED)
        out[f"{name}/interval/{sql_name}"] = np.array(list(interval.values()))


def positions(out: dict, n_rounds: int, n_actions: int, len_list: int) -> None:
    """Several positions (obp's ``position`` argument, len_list > 1): random distributions
    (Dirichlet), estimates, propensities, rewards and logged positions."""
    rng = np.random.default_rng(SEED)
    action_dist = rng.dirichlet(np.ones(n_actions), size=(n_rounds, len_list))
    action_dist = action_dist.transpose(0, 2, 1)  # (n, n_actions, len_list)
    inputs = {
        "reward": rng.binomial(1, 0.4, n_rounds).astype(float),
        "action": rng.integers(0, n_actions, n_rounds),
        "pscore": rng.uniform(0.05, 1.0, n_rounds),
        "action_dist": action_dist,
        "estimated_rewards_by_reg_model": rng.uniform(size=action_dist.shape),
        "position": rng.integers(0, len_list, n_rounds),
    }
    for key, value in inputs.items():
        out[f"positions/input/{key}"] = np.asarray(value)
    for cls, sql_name, lambdas in SINGLE:
        for lam in lambdas:
            estimator = cls() if lam is None else cls(lambda_=lam)
            out[f"positions/obp/{sql_name}/{lam}"] = np.float64(
                estimator.estimate_policy_value(**inputs))


def slate(out: dict, n_rounds: int) -> None:
    n_unique_action, len_list = 5, 3
    dataset = SyntheticSlateBanditDataset(
        n_unique_action=n_unique_action, len_list=len_list, dim_context=2,
        reward_type="binary", reward_structure="cascade_additive",
        base_reward_function=logistic_reward_function, random_state=SEED,
    )
    feedback = dataset.obtain_batch_bandit_feedback(n_rounds=n_rounds)
    logit = np.random.default_rng(SEED).normal(size=(n_rounds, n_unique_action))
    pscore, pscore_item_position, pscore_cascade = (
        dataset.obtain_pscore_given_evaluation_policy_logit(
            action=feedback["action"], evaluation_policy_logit_=logit,
            return_pscore_item_position=True))
    action_dist = dataset.calc_evaluation_policy_action_dist(
        action=feedback["action"], evaluation_policy_logit_=logit)
    q_hat = np.random.default_rng(SEED + 1).uniform(size=n_rounds * len_list * n_unique_action)
    for key in ("slate_id", "action", "position", "reward", "pscore", "pscore_item_position",
                "pscore_cascade"):
        out[f"slate/input/{key}"] = np.asarray(feedback[key])
    out["slate/input/evaluation_policy_pscore"] = pscore
    out["slate/input/evaluation_policy_pscore_item_position"] = pscore_item_position
    out["slate/input/evaluation_policy_pscore_cascade"] = pscore_cascade
    out["slate/input/evaluation_policy_action_dist"] = action_dist
    out["slate/input/q_hat"] = q_hat
    common = {"slate_id": feedback["slate_id"], "reward": feedback["reward"],
              "position": feedback["position"]}
    out["slate/obp/slate_standard_ips"] = ope.SlateStandardIPS(len_list=len_list)\
        .estimate_policy_value(**common, pscore=feedback["pscore"],
                               evaluation_policy_pscore=pscore)
    out["slate/obp/slate_independent_ips"] = ope.SlateIndependentIPS(len_list=len_list)\
        .estimate_policy_value(**common, pscore_item_position=feedback["pscore_item_position"],
                               evaluation_policy_pscore_item_position=pscore_item_position)
    out["slate/obp/slate_reward_interaction_ips"] = ope.SlateRewardInteractionIPS(
        len_list=len_list).estimate_policy_value(
            **common, pscore_cascade=feedback["pscore_cascade"],
            evaluation_policy_pscore_cascade=pscore_cascade)
    out["slate/obp/slate_cascade_dr"] = ope.SlateCascadeDoublyRobust(
        len_list=len_list, n_unique_action=n_unique_action).estimate_policy_value(
            **common, action=feedback["action"], pscore_cascade=feedback["pscore_cascade"],
            evaluation_policy_pscore_cascade=pscore_cascade, q_hat=q_hat,
            evaluation_policy_action_dist=action_dist)


def main(path: Path) -> None:
    out: dict[str, np.ndarray] = {}
    single_action(out, "binary", "binary", n_rounds=400, n_actions=6, eps=0.3)
    single_action(out, "continuous", "continuous", n_rounds=300, n_actions=4, eps=0.1)
    positions(out, n_rounds=200, n_actions=4, len_list=3)
    slate(out, n_rounds=150)
    np.savez_compressed(path, **out)
    sys.stdout.write(f"wrote {path}: {len(out)} arrays\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("obp_pins.npz"))
