"""The single-action estimators of obp 0.5.7 (``obp.ope.estimators``) as records: one logged
action per round, its reward, the two policies' probabilities of it, and where the estimator
needs one a reward model's estimates (``duckrank.off_policy.record`` for the inputs).

Each record restates the formula of obp's ``_estimate_round_rewards`` for that class (read from
obp 0.5.7's source); ``estimate_policy_value`` is the mean of the rounds' values. Where obp's
arithmetic gives NaN (0 / 0 in a shrinkage weight when w = 0) the record defines the value as
the limit 0 and says so: such a round is one the evaluation policy never takes.
"""

from __future__ import annotations

import math

from duckrank.off_policy.record import OBP, Estimator
from duckrank.off_policy.sql_text import INFINITY
from duckrank.options import Bounds, Option

_EMPTY = "NULL for an empty group (no rounds)."
_NORMALISED_EMPTY = (
    "NULL for an empty group, and when every logged action has pi_e(a_i | x_i) = 0 "
    "(sum of w = 0; obp gives NaN)."
)


# obp's lambda_ is a threshold on the weights, where infinity means none (the default of ips, dr
# and switch_dr), or the sub-Gaussian correction's weight; never NaN or NULL. Both read as
# intervals, infinity written as an end where it is one: "a number in [0, inf]".
_THRESHOLD = Bounds(0.0, math.inf, finite=False, interval=True)
_WEIGHT = Bounds(0.0, 1.0, finite=False, interval=True)


def _lambda(default: float, bounds: Bounds, doc: str) -> Option:
    return Option("lambda_", default, doc, bounds=bounds)


CLIPPING = _lambda(math.inf, _THRESHOLD, "obp's lambda_: importance weights above it are "
                   "clipped to it, w' = min(w, lambda_); the default, infinity, clips nothing")
SWITCH = _lambda(math.inf, _THRESHOLD, "obp's lambda_ (tau in Wang et al.): rounds with w > "
                 "lambda_ drop the weighted term and keep the reward model's v_hat alone")
SHRINKAGE = _lambda(0.0, _THRESHOLD, "obp's lambda_: the shrinkage w' = lambda_ w / (w^2 + "
                    "lambda_); 0 (obp's default) gives w' = 0, the direct method, and infinity "
                    "w' = w, plain DR")
SUB_GAUSSIAN = _lambda(
    0.0, _WEIGHT,
    "obp's lambda_: the power-mean correction w' = w / (1 - lambda_ + lambda_ w); 0 (obp's "
    "default) gives w' = w, 1 gives w' = 1 where w > 0",
)

# w' for each transform, SQL over {w} (the importance weight) and {lam} (the hyperparameter: the
# macro's parameter lambda_, or a request's value).
_CLIPPED = "least({w}, {lam})"
_SWITCHED = "(CASE WHEN {w} <= {lam} THEN {w} ELSE 0.0 END)"
_SHRUNK = (
    f"(CASE WHEN {{lam}} = {INFINITY} THEN {{w}} WHEN {{w}} = 0 THEN 0.0 "
    "ELSE {lam} * {w} / ({w} * {w} + {lam}) END)"
)
_SUB_GAUSSIAN = "(CASE WHEN {w} = 0 THEN 0.0 ELSE {w} / (1 - {lam} + {lam} * {w}) END)"
_PLAIN = "{w}"

DM = Estimator(
    name="dm", obp_class="DirectMethod", obp_name="dm",
    summary="The direct method: the reward model's value of the evaluation policy.",
    transform=None, baseline=True, residual=False, self_normalised=False, hyperparameter=None,
    formula="mean over rounds of v_hat_i",
    undefined=_EMPTY,
    source=f"Beygelzimer and Langford (KDD 2009); {OBP}.DirectMethod",
)
IPS = Estimator(
    name="ips", obp_class="InverseProbabilityWeighting", obp_name="ipw",
    summary="Inverse propensity scoring (obp's IPW), with obp's optional weight clipping.",
    transform=_CLIPPED, baseline=False, residual=False, self_normalised=False,
    hyperparameter=CLIPPING,
    formula="mean over rounds of min(w_i, lambda_) r_i",
    undefined=_EMPTY,
    source=f"Precup, Sutton and Singh (ICML 2000); Strehl et al. (NeurIPS 2010); "
    f"{OBP}.InverseProbabilityWeighting",
)
SNIPS = Estimator(
    name="snips", obp_class="SelfNormalizedInverseProbabilityWeighting", obp_name="snipw",
    summary="Self-normalised inverse propensity scoring (obp's SNIPW): the weights rescaled to "
    "mean 1.",
    transform=_PLAIN, baseline=False, residual=False, self_normalised=True,
    hyperparameter=None,
    formula="sum over rounds of w_i r_i / sum over rounds of w_i (obp: mean of w_i r_i / "
    "mean(w)); no clipping (obp's SNIPW ignores lambda_)",
    undefined=_NORMALISED_EMPTY,
    source=f"Swaminathan and Joachims (NeurIPS 2015); {OBP}."
    "SelfNormalizedInverseProbabilityWeighting",
)
DR = Estimator(
    name="dr", obp_class="DoublyRobust", obp_name="dr",
    summary="Doubly robust: the direct method corrected by the weighted residuals of the "
    "logged actions, with obp's optional weight clipping.",
    transform=_CLIPPED, baseline=True, residual=True, self_normalised=False,
    hyperparameter=CLIPPING,
    formula="mean over rounds of v_hat_i + min(w_i, lambda_) (r_i - q_hat_i)",
    undefined=_EMPTY,
    source=f"Dudik, Langford and Li (ICML 2011); {OBP}.DoublyRobust",
)
SNDR = Estimator(
    name="sndr", obp_class="SelfNormalizedDoublyRobust", obp_name="sndr",
    summary="Self-normalised doubly robust: DR with the weights rescaled to mean 1.",
    transform=_PLAIN, baseline=True, residual=True, self_normalised=True, hyperparameter=None,
    formula="mean of v_hat_i + sum of w_i (r_i - q_hat_i) / sum of w_i (obp: the mean over "
    "rounds of v_hat_i + w_i (r_i - q_hat_i) / mean(w)); no clipping (obp's SNDR ignores "
    "lambda_)",
    undefined=_NORMALISED_EMPTY,
    source=f"Kallus and Uehara (NeurIPS 2019); {OBP}.SelfNormalizedDoublyRobust",
)
SWITCH_DR = Estimator(
    name="switch_dr", obp_class="SwitchDoublyRobust", obp_name="switch-dr",
    summary="Switch-DR: DR in rounds whose weight is at most lambda_, the direct method in the "
    "others.",
    transform=_SWITCHED, baseline=True, residual=True, self_normalised=False,
    hyperparameter=SWITCH,
    formula="mean over rounds of v_hat_i + [w_i <= lambda_] w_i (r_i - q_hat_i)",
    undefined=_EMPTY,
    source=f"Wang, Agarwal and Dudik (ICML 2017); {OBP}.SwitchDoublyRobust",
)
DR_OS = Estimator(
    name="dr_os", obp_class="DoublyRobustWithShrinkage", obp_name="dr-os",
    summary="DR with optimistic shrinkage of the weights.",
    transform=_SHRUNK, baseline=True, residual=True, self_normalised=False,
    hyperparameter=SHRINKAGE,
    formula="mean over rounds of v_hat_i + w'_i (r_i - q_hat_i), w'_i = lambda_ w_i / (w_i^2 + "
    "lambda_) (w'_i = w_i when lambda_ is infinite; w'_i = 0 when w_i = 0, where obp's "
    "0 / 0 gives NaN at lambda_ = 0)",
    undefined=_EMPTY,
    source=f"Su, Dimakopoulou, Krishnamurthy and Dudik (ICML 2020); "
    f"{OBP}.DoublyRobustWithShrinkage",
)
SG_IPS = Estimator(
    name="sg_ips", obp_class="SubGaussianInverseProbabilityWeighting", obp_name="sg-ipw",
    summary="Sub-Gaussian IPS: the weights corrected by a power mean.",
    transform=_SUB_GAUSSIAN, baseline=False, residual=False, self_normalised=False,
    hyperparameter=SUB_GAUSSIAN,
    formula="mean over rounds of w'_i r_i, w'_i = w_i / (1 - lambda_ + lambda_ w_i) (w'_i = 0 "
    "when w_i = 0, where obp's 0 / 0 gives NaN at lambda_ = 1)",
    undefined=_EMPTY,
    source=f"Metelli, Russo and Restelli (NeurIPS 2021); "
    f"{OBP}.SubGaussianInverseProbabilityWeighting",
)
SG_DR = Estimator(
    name="sg_dr", obp_class="SubGaussianDoublyRobust", obp_name="sg-dr",
    summary="Sub-Gaussian DR: DR with the power-mean corrected weights of sg_ips.",
    transform=_SUB_GAUSSIAN, baseline=True, residual=True, self_normalised=False,
    hyperparameter=SUB_GAUSSIAN,
    formula="mean over rounds of v_hat_i + w'_i (r_i - q_hat_i), w'_i as in sg_ips",
    undefined=_EMPTY,
    source=f"Metelli, Russo and Restelli (NeurIPS 2021); {OBP}.SubGaussianDoublyRobust",
)

ESTIMATORS: tuple[Estimator, ...] = (DM, IPS, SNIPS, DR, SNDR, SWITCH_DR, DR_OS, SG_IPS, SG_DR)
