"""obp's array inputs turned into the columns of a log table (numpy over whole arrays).

obp's estimators take ``action_dist`` and ``estimated_rewards_by_reg_model`` of shape
(n_rounds, n_actions, len_list): the evaluation policy's distribution and the reward model's
estimates over every action at every position. The SQL estimators read one row per round, so
this reduces them to what each round needs, exactly as obp's ``_estimate_round_rewards`` index
them (obp 0.5.7):

* ``action_prob`` = action_dist[i, a_i, p_i];
* ``q_hat`` = estimated_rewards_by_reg_model[i, a_i, p_i];
* ``v_hat`` = np.average(estimated_rewards_by_reg_model[i, :, p_i],
  weights=action_dist[i, :, p_i]), obp's direct-method term (a mean weighted by pi_e, which
  obp requires to sum to 1 over the actions: ``np.allclose``, as here).
"""

from __future__ import annotations

import numpy as np


def _positions(position: np.ndarray | None, n: int, len_list: int) -> np.ndarray:
    if position is None:
        if len_list > 1:
            raise ValueError(
                "off_policy: position is required when action_dist has len_list > 1")
        return np.zeros(n, dtype=np.intp)
    position = np.asarray(position)
    if position.shape != (n,) or not np.issubdtype(position.dtype, np.integer):
        raise ValueError(f"off_policy: position must be {n} integers, got shape "
                         f"{position.shape} of {position.dtype}")
    if n and (position.min() < 0 or position.max() >= len_list):
        raise ValueError(f"off_policy: position must be in [0, {len_list}), got values from "
                         f"{position.min()} to {position.max()}")
    return position


def _distribution(action_dist: np.ndarray, n: int) -> np.ndarray:
    action_dist = np.asarray(action_dist, dtype=np.float64)
    if action_dist.ndim != 3 or action_dist.shape[0] != n:
        raise ValueError(f"off_policy: action_dist must have shape (n_rounds={n}, n_actions, "
                         f"len_list), got {action_dist.shape}")
    if not np.allclose(action_dist.sum(axis=1), 1):
        raise ValueError("off_policy: action_dist must be a probability distribution over the "
                         "actions (each [i, :, p] summing to 1, as obp requires)")
    return action_dist


def bandit_log(
    reward: np.ndarray,
    action: np.ndarray,
    pscore: np.ndarray,
    action_dist: np.ndarray,
    estimated_rewards_by_reg_model: np.ndarray | None = None,
    position: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """The columns ``reward``, ``pscore``, ``action_prob`` (and with a reward model's estimates
    ``q_hat`` and ``v_hat``) of a log table, from obp's arrays (names and shapes as obp's
    ``estimate_policy_values`` takes them)."""
    reward = np.asarray(reward, dtype=np.float64)
    n = len(reward)
    action = np.asarray(action)
    if action.shape != (n,) or not np.issubdtype(action.dtype, np.integer):
        raise ValueError(f"off_policy: action must be {n} integers, got shape {action.shape} "
                         f"of {action.dtype}")
    action_dist = _distribution(action_dist, n)
    if n and (action.min() < 0 or action.max() >= action_dist.shape[1]):
        raise ValueError(f"off_policy: action must be in [0, {action_dist.shape[1]}), got "
                         f"values from {action.min()} to {action.max()}")
    position = _positions(position, n, action_dist.shape[2])
    rounds = np.arange(n)
    columns = {
        "reward": reward,
        "pscore": np.asarray(pscore, dtype=np.float64),
        "action_prob": action_dist[rounds, action, position],
    }
    if estimated_rewards_by_reg_model is not None:
        estimates = np.asarray(estimated_rewards_by_reg_model, dtype=np.float64)
        if estimates.shape != action_dist.shape:
            raise ValueError(
                "off_policy: estimated_rewards_by_reg_model must have action_dist's shape "
                f"{action_dist.shape}, got {estimates.shape}")
        columns["q_hat"] = estimates[rounds, action, position]
        columns["v_hat"] = np.average(
            estimates[rounds, :, position], weights=action_dist[rounds, :, position], axis=1)
    return columns
