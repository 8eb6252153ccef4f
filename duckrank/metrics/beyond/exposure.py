"""Expected exposure (Diaz, Mitra, Ekstrand, Biega and Carterette, CIKM 2020): how far the
exposure a user's (sampled) rankings give each item, or each group of items, is from equal
exposure of the relevant items under an RBP browsing model. Listed with the fairness family
(``duckrank.metrics.beyond.fairness``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence

from duckrank.metrics.beyond.common import (
    _GROUP_COL,
    _ITEM,
    _ITEM_GROUPS,
    _K,
    _REC,
    _RECS,
    _TRUTH,
    _USER,
    BeyondMetric,
    Lists,
    _column,
    _given_groups_sql,
    checked_sql,
    optional,
)
from duckrank.options import PROPORTION

# --- kernels (plain Python from the paper's definitions: the independent check) ---------------


def _sampled_exposure(recs: Iterable[tuple[Hashable, Sequence | None]], truths: Lists, k: int,
                      persistence: float):
    """Diaz et al. (2020), per user (rows of ``recs`` = sampled rankings): (user, e, relevant,
    target), e(d) the mean over samples of p^(rank - 1) (top k) and target = (1 - p^m) /
    (m (1 - p)) for each of the m relevant items; (user, None, ...) without a relevant item."""
    samples: dict[Hashable, list] = {}
    for user, rec in recs:
        samples.setdefault(user, []).append(rec)
    for user, lists in samples.items():
        relevant = {i for i in (truths.get(user) or []) if i is not None}
        if not relevant:
            yield user, None, relevant, None
            continue
        exposure: dict = {}
        for rec in lists:
            for rank, item in enumerate(list(rec or [])[:k], start=1):
                if item is not None:
                    exposure[item] = exposure.get(item, 0.0) + persistence ** (rank - 1) / len(
                        lists)
        m = len(relevant)
        yield user, exposure, relevant, (1 - persistence ** m) / (m * (1 - persistence))


def _losses(exposure: dict, ideal: dict) -> tuple[float, float, float]:
    """(EE-L, EE-D, EE-R) of the exposure and target vectors (dicts, absent = 0)."""
    keys = set(exposure) | set(ideal)
    return (sum((exposure.get(i, 0.0) - ideal.get(i, 0.0)) ** 2 for i in keys),
            sum(x * x for x in exposure.values()),
            sum(exposure.get(i, 0.0) * t for i, t in ideal.items()))


def expected_exposure_kernel(recs: Iterable[tuple[Hashable, Sequence | None]], truths: Lists,
                             k: int, persistence: float = 0.5
                             ) -> dict[Hashable, tuple | None]:
    """Per user (EE-L, EE-D, EE-R) over the items."""
    return {user: None if exposure is None else _losses(exposure, dict.fromkeys(relevant, target))
            for user, exposure, relevant, target in _sampled_exposure(recs, truths, k, persistence)}


def group_expected_exposure_kernel(recs: Iterable[tuple[Hashable, Sequence | None]],
                                   truths: Lists, k: int, groups: dict[Hashable, Hashable],
                                   persistence: float = 0.5) -> dict[Hashable, tuple | None]:
    """Per user (EE-L, EE-D, EE-R) over the item groups: each group's exposure and target the
    sums of its items' (items without a group left out)."""
    out: dict[Hashable, tuple | None] = {}
    for user, exposure, relevant, target in _sampled_exposure(recs, truths, k, persistence):
        if exposure is None:
            out[user] = None
            continue
        summed: Counter = Counter()
        ideal: Counter = Counter()
        for item, value in exposure.items():
            if item in groups:
                summed[groups[item]] += value
        for item in relevant:
            if item in groups:
                ideal[groups[item]] += target
        out[user] = _losses(dict(summed), dict(ideal))
    return out


# --- SQL and the records ----------------------------------------------------------------

# The per-item expected exposure both expected-exposure macros read: r(user, top, truth), one
# row per sampled ranking; u(user, samples, truth), the user's truth read once; x(user, item,
# x), the sum over the user's samples of persistence^(rank - 1) of each item of a top k (divide
# by samples for the expected exposure).
def _exposure_sql(fn: str) -> str:
    return (
        f"r AS (SELECT \"user\", l[1:{checked_sql(fn, 'k::BIGINT', _PERSISTENCE, _K)}] AS top, "
        f"truth FROM (SELECT {_column('user_col')} AS \"user\", "
        f"{_column('rec_col')} AS l, {_column('truth_col')} AS truth FROM query_table(recs))),\n"
        "u AS (SELECT \"user\", count(*) AS samples, list_distinct(any_value(truth)) AS truth "
        "FROM r GROUP BY \"user\"),\n"
        "x AS (SELECT \"user\", item, sum(pow(persistence, pos - 1)) AS x FROM (SELECT "
        "\"user\", unnest(top) AS item, generate_subscripts(top, 1) AS pos FROM r) WHERE item "
        "IS NOT NULL GROUP BY \"user\", item)"
    )


# e*(d) of each of a user's m relevant items, in u.
_TARGET = "(1 - pow(persistence, len(u.truth))) / (len(u.truth) * (1 - persistence))"
_SOURCE_DIAZ = ("Diaz, Mitra, Ekstrand, Biega and Carterette, 'Evaluating stochastic rankings "
                "with expected exposure' (CIKM 2020, doi:10.1145/3340531.3411962), section 4")
_PERSISTENCE = optional("persistence", 0.5, "the RBP persistence p (the browsing model's "
                        "patience)", bounds=PROPORTION)

EXPECTED_EXPOSURE = BeyondMetric(
    name="expected_exposure",
    kind="per_user",
    summary="Expected exposure loss (Diaz et al. 2020): how far the exposure a user's rankings "
    "give each item is from equal exposure of the relevant items (0: ideal).",
    formula="EE-L = ||e - e*||^2 = EE-D - 2 EE-R + ||e*||^2, EE-D = ||e||^2, EE-R = e . e*; "
    "e(d) = mean over the user's rows (sampled rankings) of p^(rank(d) - 1) for d in the top k "
    "(0 elsewhere), e*(d) = (1 - p^m) / (m (1 - p)) for the m distinct relevant items (0 for the "
    "others), p = persistence",
    undefined="NULL for a user whose truth is NULL or holds no item.",
    conventions="Gives `expected_exposure` (EE-L), `disparity` (EE-D) and `relevance` (EE-R). "
    "Each row of recs is one ranking; several rows of a user are samples of a stochastic "
    "policy (their truth is read from one of them). RBP browsing with persistence p (default "
    "0.5); binary relevance. The unnormalised forms of the paper; no peer library is compared.",
    peers="No peer library here has it (TREC Fair Ranking's evaluation script is not a "
    "package); checked by hand calculations and the kernel.",
    source=_SOURCE_DIAZ,
    parameters=(_RECS, _K, _PERSISTENCE, _TRUTH, _USER, _REC),
    sql=f"WITH {_exposure_sql('expected_exposure')},\n"
    f"s AS (SELECT u.\"user\", len(u.truth) AS m, {_TARGET} AS target, "
    "sum((x.x / u.samples) ^ 2) AS d, coalesce(sum(x.x / u.samples) FILTER (WHERE "
    "list_contains(u.truth, x.item)), 0) AS hit FROM u LEFT JOIN x ON u.\"user\" = x.\"user\" "
    "GROUP BY u.\"user\", u.truth)\n"
    "SELECT \"user\", CASE WHEN m > 0 THEN coalesce(d, 0) - 2 * hit * target + m * target ^ 2 "
    "END AS expected_exposure, CASE WHEN m > 0 THEN coalesce(d, 0) END AS disparity, "
    "CASE WHEN m > 0 THEN hit * target END AS relevance FROM s",
    kernel=expected_exposure_kernel,
)

GROUP_EXPECTED_EXPOSURE = BeyondMetric(
    name="group_expected_exposure",
    kind="per_user",
    summary="Expected exposure loss over groups of items (Diaz et al. 2020): how far the "
    "exposure a user's rankings give each group of items is from the group's part of equal "
    "exposure of the relevant items (0: ideal).",
    formula="EE-L = sum over groups g of (E_g - E*_g)^2, EE-D = sum_g E_g^2, EE-R = sum_g E_g "
    "E*_g; E_g = sum over the items d of g of e(d), E*_g = sum over the items d of g of e*(d) = "
    "(relevant items of g) (1 - p^m) / (m (1 - p)), e and e* as in expected_exposure (m: the "
    "user's distinct relevant items, grouped or not), p = persistence",
    undefined="NULL for a user whose truth is NULL or holds no item. A user none of whose "
    "recommended items has a group gets EE-D = EE-R = 0 and EE-L = ||E*||^2.",
    conventions="Gives `group_expected_exposure` (EE-L over the groups), `disparity` (EE-D: "
    "how unequally the groups are exposed, whatever the relevance) and `relevance` (EE-R). "
    "item_groups gives one group per item (an id given twice is an error); an item without a "
    "group adds to no group (its exposure and its target are left out), but counts in m, the "
    "relevant items that share the target. Each row of recs is one ranking; several rows of a "
    "user are samples of a stochastic policy (their truth is read from one of them). RBP "
    "browsing with persistence p (default 0.5); binary relevance; the unnormalised forms.",
    peers="No peer library here has it (the TREC 2020 Fair Ranking track's evaluation, over "
    "author groups, is not a package); checked by hand calculations and the kernel.",
    source=_SOURCE_DIAZ + ": a group's exposure is the sum of its items' (the group form, "
    "E = A e with A the groups' membership matrix)",
    parameters=(_RECS, _ITEM_GROUPS, _K, _PERSISTENCE, _GROUP_COL, _TRUTH, _USER, _REC, _ITEM),
    sql=f"WITH {_exposure_sql('group_expected_exposure')},\n"
    + _given_groups_sql("group_expected_exposure") + ",\n"
    # Per (user, group): the summed exposure and the relevant items, a group present on
    # either side (recommended or relevant) once.
    "ge AS (SELECT x.\"user\", g.grp, sum(x.x) AS x FROM x JOIN g ON x.item = g.item "
    "GROUP BY x.\"user\", g.grp),\n"
    "gt AS (SELECT rel.\"user\", g.grp, count(*) AS n FROM (SELECT \"user\", unnest(truth) AS "
    "item FROM u) rel JOIN g ON rel.item = g.item GROUP BY rel.\"user\", g.grp),\n"
    "eg AS (SELECT coalesce(ge.\"user\", gt.\"user\") AS \"user\", coalesce(ge.x, 0) AS x, "
    "coalesce(gt.n, 0) AS n FROM ge FULL JOIN gt ON ge.\"user\" = gt.\"user\" AND "
    "ge.grp = gt.grp),\n"
    f"s AS (SELECT u.\"user\", len(u.truth) AS m, sum((eg.x / u.samples - eg.n * {_TARGET}) ^ "
    f"2) AS l, sum((eg.x / u.samples) ^ 2) AS d, sum(eg.x / u.samples * eg.n * {_TARGET}) AS r "
    "FROM u LEFT JOIN eg ON u.\"user\" = eg.\"user\" GROUP BY u.\"user\", u.truth)\n"
    "SELECT \"user\", CASE WHEN m > 0 THEN coalesce(l, 0) END AS group_expected_exposure, "
    "CASE WHEN m > 0 THEN coalesce(d, 0) END AS disparity, CASE WHEN m > 0 THEN coalesce(r, 0) "
    "END AS relevance FROM s",
    kernel=group_expected_exposure_kernel,
)


METRICS: tuple[BeyondMetric, ...] = (EXPECTED_EXPOSURE, GROUP_EXPECTED_EXPOSURE)
