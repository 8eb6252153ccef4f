"""The slate (ranking) estimators of obp 0.5.7 (``obp.ope.estimators_slate``) as records: a
log with one row per (slate, position), the reward observed at that position, and the two
policies' probabilities of what was shown, in the form each estimator needs.

obp's SlateStandardIPS, SlateIndependentIPS and SlateRewardInteractionIPS share one formula
(``BaseSlateInverseProbabilityWeighting._estimate_round_rewards``): the sum over rows of
r_{s,l} pi_e / pi_b, divided by the number of distinct slates; they differ only in which
probability the row carries (``pscore`` and ``action_prob`` here, obp's ``pscore*`` and
``evaluation_policy_pscore*``):

* ``slate_standard_ips``: the probability of the whole slate (the same on every row of a slate,
  obp's ``pscore``);
* ``slate_independent_ips``: the marginal probability of the row's item at its position
  (obp's ``pscore_item_position``);
* ``slate_reward_interaction_ips``: the probability of the slate's items at positions 1..l
  (obp's ``pscore_cascade``).

``slate_cascade_dr`` (obp's SlateCascadeDoublyRobust, Kiyohara et al., WSDM 2022) reads the
cascade probabilities of the row and of the previous position of its slate (1 at the first:
``lag(pscore, 1, 1.0) OVER (PARTITION BY slate_id ORDER BY position)``; obp takes them from the
previous row of its sorted arrays), ``q_hat``, the reward model's Q_l for the logged item, and
``v_hat``, sum over items a of pi_e(a | x, a_1..a_{l-1}) Q_l(a), obp's
``(evaluation_policy_action_dist * q_hat)`` summed over the items.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from duckrank.off_policy.record import DOMAINS, OBP, argument
from duckrank.off_policy.sql_text import checked, number

OBP_SLATE = OBP.replace("estimators", "estimators_slate")


def checked_slate(fn: str) -> str:
    """The argument ``slate_id``, checked: any type, never NULL."""
    return checked(fn, "slate_id", "{a} IS NOT NULL", "not NULL")


def _weight(fn: str, prefix: str = "") -> str:
    """action_prob / pscore (with ``prefix``: of the previous position), both checked."""
    pscore, action_prob = f"{prefix}pscore", f"{prefix}action_prob"
    return (f"({number(fn, action_prob, *DOMAINS['action_prob'])} / "
            f"{number(fn, pscore, *DOMAINS['pscore'])})")


@dataclass(frozen=True)
class SlateEstimator:
    """A slate estimator: the sum over the log's rows of ``term`` (SQL over the checked
    arguments) divided by the number of distinct slates."""

    name: str
    obp_class: str
    obp_name: str
    summary: str
    inputs: tuple[str, ...]
    probabilities: str
    formula: str
    undefined: str
    source: str
    whole_slate: bool = False  # pscore and action_prob are the slate's: one value per slate

    @property
    def parameter_list(self) -> str:
        return ", ".join(self.inputs)

    def one_value_per_slate(self, slates: str, pscore: str, action_prob: str,
                            body: str) -> str:
        """``body`` (an aggregate), or an error when a slate has two ``pscore`` or
        ``action_prob`` values (obp checks the same: 'pscore must be unique in each slate').
        ``slates``: the SQL of the number of slates of the group."""
        if not self.whole_slate:
            return body
        fn = self.name
        return (
            f"CASE WHEN count(DISTINCT ({checked_slate(fn)}, {pscore})) <> {slates} THEN "
            f"error('{fn}: pscore must be the same on every row of a slate (the slate''s "
            "probability)') "
            f"WHEN count(DISTINCT ({checked_slate(fn)}, {action_prob})) <> {slates} THEN "
            f"error('{fn}: action_prob must be the same on every row of a slate (the "
            f"slate''s probability)') ELSE {body} END"
        )

    @property
    def signature(self) -> str:
        return f"{self.name}({self.parameter_list})"

    @property
    def reads_reward_model(self) -> bool:
        return "q_hat" in self.inputs

    def term(self, args: Mapping[str, str] | None = None) -> str:
        """A row's term: r w, or w (r - q_hat) + w_prev v_hat. ``args``: the SQL of
        ``reward``, ``q_hat``, ``v_hat``, ``w`` and ``prev_w`` (default: the macro's arguments,
        checked in place)."""
        fn = self.name
        if args is None:
            args = {"reward": argument(fn, "reward"), "q_hat": argument(fn, "q_hat"),
                    "v_hat": argument(fn, "v_hat"), "w": _weight(fn),
                    "prev_w": _weight(fn, "prev_")}
        if not self.reads_reward_model:
            return f"{args['reward']} * {args['w']}"
        return f"{args['w']} * ({args['reward']} - {args['q_hat']}) + {args['prev_w']} * " \
            f"{args['v_hat']}"

    @property
    def sql(self) -> str:
        slates = f"count(DISTINCT {checked_slate(self.name)})"
        return self.one_value_per_slate(slates, "pscore", "action_prob",
                                        f"sum({self.term()}) / {slates}")


_IPS_INPUTS = ("slate_id", "reward", "pscore", "action_prob")
_IPS_FORMULA = (
    "sum over rows of r_{s,l} action_prob_{s,l} / pscore_{s,l}, divided by the number of "
    "distinct slates"
)
_UNDEFINED = (
    "NULL for an empty group. A NULL, NaN or out-of-range argument is an error naming it."
)

SLATE_STANDARD_IPS = SlateEstimator(
    name="slate_standard_ips", obp_class="SlateStandardIPS", obp_name="sips",
    summary="Standard IPS over whole slates: every position weighted by the slate's "
    "probability ratio.",
    inputs=_IPS_INPUTS,
    probabilities="pscore and action_prob: the logging and evaluation policies' probabilities "
    "of the whole slate, the same on every row of the slate (obp: pscore, "
    "evaluation_policy_pscore)",
    formula=_IPS_FORMULA,
    undefined=_UNDEFINED + " Two pscore (or action_prob) values in one slate are an error, as "
    "in obp.",
    source=f"Li, Kim and Zitouni (WSDM 2015); {OBP_SLATE}.SlateStandardIPS",
    whole_slate=True,
)
SLATE_INDEPENDENT_IPS = SlateEstimator(
    name="slate_independent_ips", obp_class="SlateIndependentIPS", obp_name="iips",
    summary="Independent IPS: each position weighted by the ratio of its item's marginal "
    "probabilities at that position (assumes position-wise independent rewards).",
    inputs=_IPS_INPUTS,
    probabilities="pscore and action_prob: the two policies' marginal probabilities of the "
    "row's item at the row's position (obp: pscore_item_position, "
    "evaluation_policy_pscore_item_position)",
    formula=_IPS_FORMULA, undefined=_UNDEFINED,
    source=f"Li et al. (KDD 2018); {OBP_SLATE}.SlateIndependentIPS",
)
SLATE_REWARD_INTERACTION_IPS = SlateEstimator(
    name="slate_reward_interaction_ips", obp_class="SlateRewardInteractionIPS",
    obp_name="rips",
    summary="Reward-interaction IPS: each position weighted by the ratio of the cascade "
    "probabilities of the items down to it (assumes the cascade model).",
    inputs=_IPS_INPUTS,
    probabilities="pscore and action_prob: the two policies' probabilities of the slate's items "
    "at positions 1..l (obp: pscore_cascade, evaluation_policy_pscore_cascade)",
    formula=_IPS_FORMULA, undefined=_UNDEFINED,
    source=f"McInerney et al. (KDD 2020); {OBP_SLATE}.SlateRewardInteractionIPS",
)
SLATE_CASCADE_DR = SlateEstimator(
    name="slate_cascade_dr", obp_class="SlateCascadeDoublyRobust", obp_name="cascade-dr",
    summary="Cascade doubly robust: RIPS with a reward model as control variate, position by "
    "position.",
    inputs=("slate_id", "reward", "pscore", "action_prob", "prev_pscore", "prev_action_prob",
            "q_hat", "v_hat"),
    probabilities="pscore and action_prob: the cascade probabilities of positions 1..l; "
    "prev_pscore and prev_action_prob: those of positions 1..l-1 (1 at the first position)",
    formula="sum over rows of w_{s,l} (r_{s,l} - q_hat_{s,l}) + w_{s,l-1} v_hat_{s,l}, w = "
    "action_prob / pscore and w_{s,0} = prev_action_prob / prev_pscore = 1, divided by the "
    "number of distinct slates",
    undefined=_UNDEFINED,
    source=f"Kiyohara et al. (WSDM 2022); {OBP_SLATE}.SlateCascadeDoublyRobust",
)

SLATE_ESTIMATORS: tuple[SlateEstimator, ...] = (
    SLATE_STANDARD_IPS, SLATE_INDEPENDENT_IPS, SLATE_REWARD_INTERACTION_IPS, SLATE_CASCADE_DR)
