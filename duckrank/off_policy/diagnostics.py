"""Diagnostics of a log's importance weights w_i = pi_e(a_i | x_i) / pi_b(a_i | x_i): what to
look at before trusting an estimate. A few large weights carry an IPS estimate when the
effective sample size is small next to the number of rounds; a mean weight far from 1 means the
logging policy leaves actions the evaluation policy takes unexplored (or the propensities are
wrong); a low support share means the evaluation policy rarely agrees with the logged actions.
"""

from __future__ import annotations

from duckrank.off_policy.record import Diagnostic

_SOURCE_ESS = (
    "Kish (1965), *Survey Sampling*; Owen (2013), *Monte Carlo theory, methods and examples*, "
    "section 9.3"
)

ESS = Diagnostic(
    name="ope_ess",
    summary="The effective sample size of the importance weights (Kish's).",
    aggregate="pow(sum({w}), 2) / nullif(sum({w} * {w}), 0)",
    formula="(sum of w_i)^2 / sum of w_i^2: n when every weight is equal, 1 when one round "
    "carries all the weight",
    undefined="NULL for an empty group and when every w_i = 0.",
    source=_SOURCE_ESS,
)
SUPPORT = Diagnostic(
    name="ope_support",
    summary="The share of the logged rounds whose action the evaluation policy can take.",
    aggregate="avg(CASE WHEN {w} > 0 THEN 1.0 ELSE 0.0 END)",
    formula="(rounds with pi_e(a_i | x_i) > 0) / rounds",
    undefined="NULL for an empty group.",
    source="the support condition of IPS: Owen (2013), section 9.1; obp 0.5.7 "
    "documentation, 'Off-Policy Evaluation' overview",
)
MAX_WEIGHT = Diagnostic(
    name="ope_max_weight",
    summary="The largest importance weight.",
    aggregate="max({w})",
    formula="max over rounds of w_i",
    undefined="NULL for an empty group.",
    source="Owen (2013), section 9.3",
)
MEAN_WEIGHT = Diagnostic(
    name="ope_mean_weight",
    summary="The mean importance weight, the self-normalised estimators' denominator: near 1 "
    "when the propensities are right and the logging policy covers the evaluation policy.",
    aggregate="avg({w})",
    formula="mean over rounds of w_i (its expectation under the logging policy is the "
    "evaluation policy's probability of the actions the logging policy can take: 1 with full "
    "support)",
    undefined="NULL for an empty group.",
    source="Swaminathan and Joachims (NeurIPS 2015), section 4 (the control variate of SNIPS)",
)

DIAGNOSTICS: tuple[Diagnostic, ...] = (ESS, SUPPORT, MAX_WEIGHT, MEAN_WEIGHT)
