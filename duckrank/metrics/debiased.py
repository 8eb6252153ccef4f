"""Debiased (inverse-propensity weighted) accuracy for logged implicit feedback (issue 17):
``ips_recall``, ``ips_precision`` and ``ips_ndcg``, records of the same kind as the other
beyond-accuracy metrics (``duckrank.metrics.beyond_accuracy.BeyondMetric``, per-user table
macros rendered by ``duckrank.render.beyond_accuracy``).

Why weights: logged interactions are missing not at random. A popular item is more likely to be
shown and so to be logged as relevant; the plain average over the logged relevant items
(Yang et al. call it the average-over-all evaluator) rewards recommending popular items. Weighting
each logged relevant item by 1 / p(i), p(i) the probability that a relevant (user, item) pair is
logged, makes the sum over the logged items an unbiased (Horvitz-Thompson) estimate of the sum
over all relevant items (Schnabel et al., ICML 2016; Yang et al., RecSys 2018).

Where p(i) comes from (exactly one of the two):

* ``propensities``: a table the user gives, (item_col, propensity_col), one row per item, each
  propensity in (0, 1];
* ``train``: estimated from a training interactions table as Yang et al.'s popularity power law,
  p(i) = (n_i / max_j n_j) ^ ((gamma + 1) / 2), n_i the training rows of item i. The scale (the
  most popular item has p = 1) is Saito et al.'s (WSDM 2020); gamma = 0 (the default) gives
  their exponent 0.5.

The estimators, per user u with logged relevant items T_u (the distinct non-NULL items of the
row's truth list) and weights w_i = 1 / p(i):

* ``'ips'``: the metric with every logged relevant item counted w_i times;
* ``'snips'`` (the default): the same divided by the mean of w_i over T_u (the weights are
  rescaled to average 1 within the user: the self-normalised, Hajek form, which does not depend
  on the propensities' scale and for recall is Yang et al.'s and Saito et al.'s per-user SNIPS,
  sum of w over hits / sum of w over T_u).

With equal propensities both give duckrank's unweighted metric (recall_at, precision_at with
denominator 'k', ndcg), which the tests check.

The SQL is O(users x |truth|): each logged relevant item is looked up in the user's top k
(``list_position``) and joined with the per-item propensities (O(catalogue)), never a catalogue
per row.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable

from duckrank.metrics.beyond_accuracy import (
    _ITEM,
    _K,
    _REC,
    _RECS,
    _USER,
    BeyondMetric,
    Lists,
    Parameter,
    _column,
    _k,
    _one_row_per_item,
    named_table_sql,
    optional,
    quoted_identifier_sql,
)
from duckrank.metrics.record import Bounds, Option, option_errors_sql

DEFAULT_GAMMA = 0.0
ESTIMATORS = ("ips", "snips")
# The options with a domain, in the order the macros check them (``option_errors_sql``); their
# Python twin is ``duckrank.metrics.record.check_options`` over the same, with the same text.
OPTIONS = (
    Option("gamma", DEFAULT_GAMMA, "popularity exponent: p = (n / max n) ^ ((gamma + 1) / 2)",
           bounds=Bounds(-1, open_low=True)),
    Option("estimator", "snips", "'snips' or 'ips'", choices=ESTIMATORS),
    Option("min_propensity", 0, "propensities are clipped below to this",
           bounds=Bounds(0, 1, interval=True)),
)


# --- kernels (plain Python from the formulas: the tests' independent check) ------------------


def popularity_propensities(train: Iterable[tuple[Hashable, Hashable]],
                            gamma: float = DEFAULT_GAMMA) -> dict[Hashable, float]:
    """p(i) = (n_i / max n) ^ ((gamma + 1) / 2), n_i the training rows of item i."""
    counts = Counter(i for _, i in train if i is not None)
    top = max(counts.values())
    return {i: (n / top) ** ((gamma + 1) / 2) for i, n in counts.items()}


def _discount(rank: int) -> float:
    return 1.0 / math.log2(rank + 1)


def ips_kernel(metric: str, recs: Lists, truths: Lists, k: int,
               propensities: dict[Hashable, float], estimator: str = "snips",
               min_propensity: float = 0.0) -> dict[Hashable, float | None]:
    """Per user: the weighted metric ('recall', 'precision' or 'ndcg') over the logged relevant
    items, weights 1 / max(p(i), min_propensity)."""
    out: dict[Hashable, float | None] = {}
    for user, items in recs.items():
        relevant = {i for i in (truths.get(user) or []) if i is not None}
        if not relevant:
            out[user] = None
            continue
        top = list(items or [])[:k]
        weight = {i: 1.0 / max(propensities.get(i, 0.0), min_propensity) for i in relevant}
        rank = {i: top.index(i) + 1 for i in relevant if i in top}
        if metric == "recall":
            value = sum(weight[i] for i in rank) / len(relevant)
        elif metric == "precision":
            value = sum(weight[i] for i in rank) / k
        else:
            ideal = sum(_discount(r) for r in range(1, min(k, len(relevant)) + 1))
            value = sum(weight[i] * _discount(r) for i, r in rank.items()) / ideal
        mean_weight = sum(weight.values()) / len(relevant)
        out[user] = value / mean_weight if estimator == "snips" else value
    return out


# --- SQL ------------------------------------------------------------------------------------


def _source(fn: str) -> str:
    """(item, p) from the table named by ``propensities`` or estimated from ``train``; query()
    reads a table only when it is named (``named_table_sql``)."""
    given = (
        "query(CASE WHEN propensities IS NULL THEN 'SELECT NULL AS item, NULL::DOUBLE AS p "
        f"LIMIT 0' ELSE 'SELECT ' || {quoted_identifier_sql('item_col')} || ' AS item, ' || "
        f"{quoted_identifier_sql('propensity_col')} || '::DOUBLE AS p FROM ' || "
        f"{named_table_sql('propensities')} END)"
    )
    logged = (
        "query(CASE WHEN train IS NULL THEN 'SELECT NULL AS item LIMIT 0' ELSE 'SELECT ' || "
        f"{quoted_identifier_sql('item_col')} || ' AS item FROM ' || {named_table_sql('train')} "
        "END)"
    )
    checked_given = _one_row_per_item(fn, "propensities", f"SELECT item, p FROM {given}")
    return (
        "SELECT item, CASE WHEN p IS NULL OR p <= 0 OR p > 1 THEN error("
        f"'{fn}: the propensity of item ' || item::VARCHAR || ' must be in (0, 1], got ' || "
        "coalesce(p::VARCHAR, 'NULL')) ELSE p END AS p "
        f"FROM ({checked_given}) WHERE item IS NOT NULL\n"
        "UNION ALL SELECT item, pow(n / max(n) OVER (), (gamma + 1) / 2) AS p FROM (SELECT item, "
        f"count(*)::DOUBLE AS n FROM {logged} WHERE item IS NOT NULL GROUP BY item)"
    )


def _options_check(fn: str) -> str:
    """NULL when the options are valid, else an error naming the function, option and value."""
    domains = "".join(f"\n  WHEN {invalid} THEN {error}"
                      for invalid, error in option_errors_sql(fn, OPTIONS))
    return (
        "CASE WHEN (propensities IS NULL) = (train IS NULL) THEN error("
        f"'{fn}: give propensities (a table of item and propensity) or train (a table of "
        f"training interactions), exactly one'){domains} END"
    )


def _ips_sql(fn: str, value: str) -> str:
    """The per-user macro body. ``value`` is the 'ips' estimate from the per-user aggregates
    n (logged relevant items), hits_w (sum of w over hits), dcg_w (sum of w / log2(rank + 1)
    over hits), and k; 'snips' divides it by the mean weight sw / n."""
    return (
        f"WITH p AS ({_source(fn)}),\n"
        # One row per (user, logged relevant item); a user without one keeps a row (item NULL)
        # so that it gets a NULL value, as in the other per-user macros.
        f"t AS (SELECT \"user\", unnest(CASE WHEN coalesce(len(rel), 0) = 0 THEN [NULL] "
        "ELSE rel END) AS item, top FROM (SELECT \"user\", list_distinct(tr) AS rel, "
        f"r[1:{_k(fn)}] AS top FROM (SELECT {_column('user_col')} AS \"user\", "
        f"{_column('rec_col')} AS r, {_column('truth_col')} AS tr FROM query_table(recs) "
        f"WHERE coalesce({_options_check(fn)}, true)))),\n"
        "w AS (SELECT t.\"user\", t.item, coalesce(list_position(t.top, t.item), 0) AS pos, "
        "CASE WHEN t.item IS NULL THEN NULL WHEN greatest(coalesce(p.p, 0), min_propensity) = 0 "
        # The argument, not its value: called from Python or the command line, the value is a
        # view made for the call (duckrank_beyond_<uuid>), which names nothing the user gave.
        f"THEN error('{fn}: item ' || t.item::VARCHAR || ' of the truth of user ' || "
        "t.\"user\"::VARCHAR || ' has no propensity: it is not in ' || CASE WHEN propensities "
        "IS NULL THEN 'train (the training interactions the propensities are estimated from)' "
        "ELSE 'propensities (the table of propensities)' END || '; give min_propensity to weigh "
        "such items') "
        "ELSE 1 / greatest(coalesce(p.p, 0), min_propensity) END AS w "
        "FROM t LEFT JOIN p ON t.item = p.item),\n"
        "a AS (SELECT \"user\", count(item)::DOUBLE AS n, sum(w) AS sw, "
        "coalesce(sum(CASE WHEN pos > 0 THEN w END), 0) AS hits_w, "
        "coalesce(sum(CASE WHEN pos > 0 THEN w / log2(pos + 1) END), 0) AS dcg_w "
        "FROM w GROUP BY \"user\")\n"
        f"SELECT \"user\", CASE WHEN n = 0 THEN NULL ELSE ({value}) * CASE WHEN estimator = "
        f"'snips' THEN n / sw ELSE 1 END END AS {fn} FROM a"
    )


_SOURCE_NOTE = (
    "Schnabel et al., 'Recommendations as treatments: debiasing learning and evaluation' (ICML "
    "2016), IPS and SNIPS estimators; Yang et al., 'Unbiased offline recommender evaluation for "
    "missing-not-at-random implicit feedback' (RecSys 2018), the per-user IPS/SNIPS form and "
    "the propensity p(i) proportional to n_i ^ ((gamma + 1) / 2); Saito et al., 'Unbiased "
    "recommender learning from missing-not-at-random implicit feedback' (WSDM 2020) and its "
    "published code, p(i) = (n_i / max n) ^ 0.5 (gamma = 0)"
)
_CONVENTIONS = (
    "recs holds each user's logged relevant items next to the list (truth_col, a LIST, as "
    "serendipity takes it); they are taken as a set (repeats and NULLs dropped). Propensities "
    "come from exactly one of `propensities` (a table of item_col and propensity_col, one row "
    "per item, each in (0, 1], else an error) or `train` (p(i) = (n_i / max n) ^ ((gamma + 1) "
    "/ 2), n_i = rows of train with item i: Yang et al.'s power law, scaled so that the most "
    "popular item has p = 1 as in Saito et al.; default gamma = 0, their exponent 0.5; gamma > "
    "-1). Weights are w = 1 / max(p, min_propensity): `min_propensity` (default 0) clips large "
    "weights (Saito et al.'s code uses 0.01) and gives a weight to a relevant item that has no "
    "propensity (absent from the table or from train), which without it is an error. "
    "estimator 'snips' (default) divides the 'ips' value by the mean weight of the user's "
    "logged relevant items (the Hajek, self-normalised form: independent of the propensities' "
    "scale); with equal propensities both give the unweighted metric. A single user's value "
    "can exceed 1 when its hits have above-average weights; the mean over users is the "
    "estimate. RecTools' debiasing (DebiasConfig) is not this: it down-samples popular items' "
    "interactions at random (pandas `sample`), which SQL cannot reproduce draw for draw."
)


def _parameters() -> tuple[Parameter, ...]:
    return (
        _RECS, _K,
        optional("propensities", None, "name of a table of item_col and propensity_col"),
        optional("train", None, "name of a table of training interactions (item_col) to "
                 "estimate the propensities from"),
        *map(Parameter, OPTIONS),
        optional("truth_col", "truth", "LIST column of recs: the user's logged relevant items"),
        optional("propensity_col", "propensity", "propensity column of propensities"),
        _USER, _REC, _ITEM,
    )


def _record(name: str, summary: str, formula: str, undefined: str, peers: str, value: str,
            metric: str) -> BeyondMetric:
    def kernel(recs: Lists, truths: Lists, k: int, propensities: dict[Hashable, float],
               estimator: str = "snips", min_propensity: float = 0.0
               ) -> dict[Hashable, float | None]:
        return ips_kernel(metric, recs, truths, k, propensities, estimator, min_propensity)

    return BeyondMetric(
        name=name, kind="per_user", summary=summary,
        formula=formula + "; w_i = 1 / max(p(i), min_propensity); 'snips' divides by "
        "mean_{i in T} w_i",
        undefined=undefined, conventions=_CONVENTIONS, peers=peers, source=_SOURCE_NOTE,
        parameters=_parameters(), sql=_ips_sql(name, value), kernel=kernel,
    )


_UNDEFINED = "NULL for a user whose truth list is NULL or holds no item."

IPS_RECALL = _record(
    "ips_recall",
    "Inverse-propensity weighted recall@k for logged (missing-not-at-random) feedback.",
    "'ips': sum over the logged relevant items i in the top k of w_i / |T|; 'snips': sum over "
    "them of w_i / sum over T of w_i",
    _UNDEFINED + " An empty top k gives 0.",
    "Saito et al.'s published recall_at_k (from its source) is 'snips' with "
    "min_propensity := 0.01. recpack has IPS hits only (see ips_precision).",
    "hits_w / n",
    "recall",
)

IPS_PRECISION = _record(
    "ips_precision",
    "Inverse-propensity weighted precision@k for logged (missing-not-at-random) feedback.",
    "'ips': sum over the logged relevant items i in the top k of w_i / k; 'snips': the same "
    "divided by the mean weight",
    _UNDEFINED + " Divides by k (precision_at(..., denominator := 'k')), so an empty top k "
    "gives 0.",
    "recpack IPSHitRateK (per user the sum over hits of 1 / p(i), p(i) the item's share of "
    "the interactions it is fitted on, the inverse capped at 10,000) is k x this with "
    "estimator := 'ips', those propensities as a table and min_propensity := 1e-4: checked "
    "against it to 1e-12 (its mean leaves out users without a truth, as avg() does here).",
    "hits_w / k",
    "precision",
)

IPS_NDCG = _record(
    "ips_ndcg",
    "Inverse-propensity weighted nDCG@k for logged (missing-not-at-random) feedback.",
    "'ips': sum over the logged relevant items i in the top k (rank r_i) of w_i / log2(r_i + "
    "1), divided by the ideal DCG of min(k, |T|) hits, sum_{j=1..min(k,|T|)} 1 / log2(j + 1)",
    _UNDEFINED + " An empty top k gives 0.",
    "No peer has this normalisation. Saito et al.'s published dcg_at_k divides the weighted DCG "
    "by the sum of the weights (no ideal DCG) and leaves rank 2 undiscounted.",
    "dcg_w / list_sum(list_transform(range(1, least(k, n)::BIGINT + 1), "
    "lambda j: 1 / log2(j + 1)))",
    "ndcg",
)

METRICS: tuple[BeyondMetric, ...] = (IPS_RECALL, IPS_PRECISION, IPS_NDCG)
