"""The record of an off-policy estimator or diagnostic: its SQL name, the Open Bandit Pipeline
(obp) class it reproduces, its inputs, hyperparameter, formula in words, what it gives on NULL,
empty and zero-propensity input, its source, and the SQL text the macros are made of.

Every single-action estimator of obp 0.5.x has the same shape (obp.ope.estimators, each
class's ``_estimate_round_rewards``): a round's value is

    [v_hat_i +] w'_i * (r_i [- q_hat_i]) [/ mean_j w_j]

with w_i = pi_e(a_i | x_i) / pi_b(a_i | x_i) the importance weight of the logged action, w' a
transform of it (clipped, switched, shrunk), the reward model's terms present or not, and the
self-normalised estimators dividing by the mean weight of the log. The record states those
four choices; the SQL of the aggregate, the per-round SQL (for standard errors and bootstrap
intervals) and the docs are derived from them, so no estimator's formula is written twice.

Inputs (one row per logged round; docs/off-policy.md):

* ``reward``: r_i, the observed reward, a finite number;
* ``pscore``: pi_b(a_i | x_i), the logging policy's probability of the logged action, in (0, 1];
* ``action_prob``: pi_e(a_i | x_i), the evaluation policy's probability of the logged action
  (at the logged position), in [0, 1];
* ``q_hat``: q^(x_i, a_i), a reward model's estimate for the logged action (obp's
  ``estimated_rewards_by_reg_model[i, a_i, position_i]``);
* ``v_hat``: sum_a pi_e(a | x_i) q^(x_i, a), the reward model's value of the evaluation policy
  in the round's context (obp's ``np.average(q_hat[i, :, pos], weights=action_dist[i, :, pos])``):
  the one input that needs the evaluation policy's distribution over all actions.

A NULL, NaN or out-of-range input in any round is an error naming the function, the argument and
the value (a dropped round would change the estimate in silence: filter rows with WHERE first).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from duckrank.off_policy.sql_text import finite, number
from duckrank.options import Option, sql_number

OBP = "Open Bandit Pipeline (obp) 0.5.7, obp.ope.estimators"

# The argument domains, in the words of the errors and the docs.
DOMAINS = {
    "reward": (finite("{a}"), "a finite number"),
    "pscore": ("{a} > 0 AND {a} <= 1", "in (0, 1]"),
    "action_prob": ("{a} >= 0 AND {a} <= 1", "in [0, 1]"),
    "q_hat": (finite("{a}"), "a finite number"),
    "v_hat": (finite("{a}"), "a finite number"),
}
DOCS = {
    "reward": "r_i, the observed reward of the logged round",
    "pscore": "pi_b(a_i | x_i), the logging policy's probability of the logged action",
    "action_prob": "pi_e(a_i | x_i), the evaluation policy's probability of the logged action",
    "q_hat": "q^(x_i, a_i), the reward model's estimate for the logged action",
    "v_hat": "sum over actions a of pi_e(a | x_i) q^(x_i, a), the reward model's value of the "
    "evaluation policy in the round's context",
}


def argument(fn: str, name: str) -> str:
    """The argument ``name`` of the macro ``fn``, checked row by row."""
    valid, domain = DOMAINS[name]
    return number(fn, name, valid, domain)


def weight(fn: str) -> str:
    """w_i = pi_e(a_i | x_i) / pi_b(a_i | x_i), both arguments checked."""
    return f"({argument(fn, 'action_prob')} / {argument(fn, 'pscore')})"


Arguments = Mapping[str, str]


def checked_arguments(fn: str) -> dict[str, str]:
    """The SQL of each input (and ``w``, the importance weight) checked in place, row by row:
    the macros' form."""
    return {**{name: argument(fn, name) for name in DOMAINS}, "w": weight(fn)}


def plain_arguments() -> dict[str, str]:
    """The inputs as plain column names (and ``w``): for a query whose inputs were checked
    once, in a subquery, before several estimators read them (``duckrank.off_policy``)."""
    return {**{name: name for name in DOMAINS}, "w": "w"}


@dataclass(frozen=True)
class Estimator:
    """An off-policy estimator of a policy's value from a log of single actions.

    ``transform``: the SQL of w' from ``{w}`` (the importance weight) and ``{lam}`` (the
    hyperparameter, obp's ``lambda_``: an option of ``duckrank.options``, a constant of the
    query); None for the direct method (no weight). ``baseline``: v_hat is added;
    ``residual``: the weight multiplies r - q_hat instead of r; ``self_normalised``: the
    weighted term is divided by the mean of w over the group."""

    name: str
    obp_class: str
    obp_name: str
    summary: str
    transform: str | None
    baseline: bool
    residual: bool
    self_normalised: bool
    hyperparameter: Option | None
    formula: str
    undefined: str
    source: str

    @property
    def inputs(self) -> tuple[str, ...]:
        names = () if self.transform is None else ("reward", "pscore", "action_prob")
        return names + (("q_hat",) if self.residual else ()) + (
            ("v_hat",) if self.baseline else ())

    @property
    def parameter_list(self) -> str:
        extra = (f", {self.hyperparameter.name} := {self.hyperparameter.sql_default()}"
                 if self.hyperparameter else "")
        return ", ".join(self.inputs) + extra

    @property
    def signature(self) -> str:
        return f"{self.name}({self.parameter_list})"

    def _weighted(self, args: Arguments, lam: str) -> str:
        """w' (r or r - q_hat), hyperparameter ``lam``."""
        transformed = self.transform.format(w=args["w"], lam=lam)
        target = f"({args['reward']} - {args['q_hat']})" if self.residual else args["reward"]
        return f"{transformed} * {target}"

    def _hyperparameter(self, value: float | None) -> str:
        """The hyperparameter as SQL: the macro's parameter, or a request's value (checked in
        Python, ``duckrank.off_policy.requests``)."""
        if self.hyperparameter is None:
            return ""
        return self.hyperparameter.name if value is None else sql_number(value)

    def round_sql(self, mean_weight: str = "mean_weight", value: float | None = None,
                  args: Arguments | None = None) -> str:
        """The round's value (obp's ``_estimate_round_rewards``); for a self-normalised
        estimator ``mean_weight`` is the SQL of the group's mean weight (a window or a join).
        ``value``: the hyperparameter's value (default: the macro's parameter); ``args``: the
        inputs' SQL (default: checked in place)."""
        args = checked_arguments(self.name) if args is None else args
        baseline = args["v_hat"] if self.baseline else None
        if self.transform is None:
            return baseline
        weighted = self._weighted(args, self._hyperparameter(value))
        if self.self_normalised:
            weighted = f"{weighted} / {mean_weight}"
        return weighted if baseline is None else f"{baseline} + {weighted}"

    def aggregate_sql(self, value: float | None = None, args: Arguments | None = None) -> str:
        """The aggregate: the mean of the rounds' values; for a self-normalised estimator
        mean(v_hat) + sum(w' (r [- q_hat])) / sum(w), NULL when sum(w) = 0. ``value`` and
        ``args`` as for ``round_sql``."""
        args = checked_arguments(self.name) if args is None else args
        if not self.self_normalised:
            body = f"avg({self.round_sql(value=value, args=args)})"
        else:
            ratio = (f"sum({self._weighted(args, self._hyperparameter(value))}) / "
                     f"nullif(sum({args['w']}), 0)")
            body = f"avg({args['v_hat']}) + {ratio}" if self.baseline else ratio
        if self.hyperparameter is None or value is not None:
            return body
        # The macro's parameter, checked once per query (a request's value was checked before).
        invalid, error = self.hyperparameter.error_sql(self.name)
        return f"CASE WHEN {invalid} THEN {error} ELSE {body} END"

    @property
    def sql(self) -> str:
        """The macro's body."""
        return self.aggregate_sql()


@dataclass(frozen=True)
class Diagnostic:
    """A summary of the importance weights w_i = action_prob / pscore of a log: ``aggregate``,
    SQL over ``{w}`` (the checked weight)."""

    name: str
    summary: str
    aggregate: str
    formula: str
    undefined: str
    source: str
    inputs: tuple[str, ...] = ("pscore", "action_prob")

    @property
    def parameter_list(self) -> str:
        return ", ".join(self.inputs)

    @property
    def signature(self) -> str:
        return f"{self.name}({self.parameter_list})"

    def aggregate_sql(self, args: Arguments | None = None) -> str:
        """The aggregate over ``args`` (default: the inputs checked in place)."""
        return self.aggregate.format(w=(checked_arguments(self.name) if args is None
                                        else args)["w"])

    @property
    def sql(self) -> str:
        return self.aggregate_sql()
