"""Popularity bias and item-group fairness (issue 28): how much of the long tail the lists show
(ACLT, APLT), and whether groups of items (the popular head and the long tail, or groups the
user gives) get the same chance to be recommended (RSP) and to be recommended when relevant
(REO), as Elliot computes them.

The head and the tail are computed from the training interactions two ways (``head``):
``'interactions'``, Elliot's (the most popular items, by distinct training users, until they
hold ``head_share`` of the training interactions, 0.8 by default; the item that crosses the
share is in the head), and ``'items'``, the rule of ``long_tail_share`` (the ``head_share``
most popular items by training rows, 0.2 by default, ties with the last one included). Items
absent from train are in neither group.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable

from duckrank.lazy import LazyModule
from duckrank.metrics.beyond import exposure
from duckrank.metrics.beyond.common import (
    _GRADES,
    _GROUP_COL,
    _ITEM,
    _ITEM_GROUPS,
    _K,
    _REC,
    _RECS,
    _THRESHOLD,
    _TRAIN,
    _TRUTH,
    _USER,
    BeyondMetric,
    Lists,
    _column,
    _given_groups_sql,
    _k,
    _top,
    _tops,
    _value,
    checked_sql,
    optional,
    required,
)
from duckrank.options import Bounds

np = LazyModule("numpy")

Pairs = Iterable[tuple[Hashable, Hashable]]
HEADS = ("interactions", "items")
DEFAULT_SHARE = {"interactions": 0.8, "items": 0.2}

# --- kernels (plain Python from Elliot's definitions: the independent check) -------------------


def head_and_tail(train: Pairs, head: str = "interactions", head_share: float | None = None
                  ) -> tuple[set, set]:
    """The popular head and the long tail of the items of train (Elliot's Popularity class for
    'interactions', ties in popularity broken by the item, ascending)."""
    pairs = list(train)
    share = DEFAULT_SHARE[head] if head_share is None else head_share
    if head == "items":
        counts = Counter(i for _, i in pairs if i is not None)
        m = len(counts)
        top = {i for i, n in counts.items()
               if sum(1 for other in counts.values() if other > n) < share * m}
        return top, set(counts) - top
    users = Counter(i for _, i in set(pairs) if i is not None)
    limit = share * sum(users.values())
    top: set = set()
    for item, n in sorted(users.items(), key=lambda x: (-x[1], x[0])):
        top.add(item)
        limit -= n
        if limit <= 0:
            break
    return top, set(users) - top


def _tail_kernel(per_position: bool):
    def kernel(recs: Lists, k: int, train: Pairs, head: str = "interactions",
               head_share: float | None = None) -> dict[Hashable, float | None]:
        _, tail = head_and_tail(train, head, head_share)
        out: dict[Hashable, float | None] = {}
        for user, items in _tops(recs, k).items():
            count = len(set(items) & tail)
            out[user] = None if not items else (count / len(items) if per_position else count)
        return out

    return kernel


aclt_kernel = _tail_kernel(per_position=False)
aplt_kernel = _tail_kernel(per_position=True)


def _std_over_mean(num: dict, den: dict) -> float | None:
    if any(den[g] == 0 for g in den):
        return None
    pr = np.array([num.get(g, 0) / den[g] for g in sorted(den, key=str)], dtype=np.float64)
    return float(np.std(pr) / np.mean(pr)) if np.mean(pr) > 0 else None


def reo_kernel(recs: Lists, truths: Lists, k: int, train: Pairs,
               groups: dict[Hashable, Hashable]) -> float | None:
    """Elliot's REO: per group g, the relevant recommended items of g over the relevant items of
    g the user did not train on, summed over the users with a relevant item; std / mean."""
    seen = set(train)
    num: Counter = Counter()
    den: Counter = Counter({g: 0 for g in set(groups.values())})
    for user, items in _tops(recs, k).items():
        truth = {i for i in (truths.get(user) or []) if i is not None}
        if not truth:
            continue
        for item in set(items) & truth:
            if item in groups:
                num[groups[item]] += 1
        for item in truth:
            if item in groups and (user, item) not in seen:
                den[groups[item]] += 1
    return _std_over_mean(num, den)


def rsp_kernel(recs: Lists, k: int, train: Pairs, groups: dict[Hashable, Hashable]
               ) -> float | None:
    """Elliot's RSP: per group g, the recommended items of g over the items of g the user did
    not train on, summed over the users of recs; std / mean."""
    seen = set(train)
    members: dict = {}
    for item, group in groups.items():
        members.setdefault(group, set()).add(item)
    num: Counter = Counter()
    den: Counter = Counter({g: 0 for g in members})
    for user, items in _tops(recs, k).items():
        for item in set(items):
            if item in groups:
                num[groups[item]] += 1
        for group, of_group in members.items():
            den[group] += sum((user, i) not in seen for i in of_group)
    return _std_over_mean(num, den)


def popularity_groups(train: Pairs, head: str = "interactions",
                      head_share: float | None = None) -> dict[Hashable, str]:
    top, tail = head_and_tail(train, head, head_share)
    return {**{i: "head" for i in top}, **{i: "tail" for i in tail}}


def bias_disparity_kernel(recs: Lists, k: int, train: Pairs,
                          user_groups: dict[Hashable, Hashable],
                          item_groups: dict[Hashable, Hashable]
                          ) -> dict[tuple[Hashable, Hashable], tuple]:
    """Elliot's BiasDisparityBS, BR and BD (Tsintzou et al.): per (user group, item group),
    (bs, br, bd); None where a denominator is 0."""
    size = Counter(item_groups.values())
    share = {c: n / len(item_groups) for c, n in size.items()}

    def bias(rows: Iterable[tuple[Hashable, Hashable]]) -> dict:
        counts: Counter = Counter()
        totals: Counter = Counter()
        for user, item in rows:
            if user in user_groups and item in item_groups:
                counts[user_groups[user], item_groups[item]] += 1
                totals[user_groups[user]] += 1
        return {(g, c): (counts[g, c] / totals[g] / share[c] if totals[g] else None)
                for g in set(user_groups.values()) for c in share}

    bs = bias(set(train))
    br = bias((u, i) for u, items in _tops(recs, k).items() for i in items)
    return {key: (bs[key], br[key], None if bs[key] in (None, 0) or br[key] is None
                  else (br[key] - bs[key]) / bs[key]) for key in bs}


def _mean_absolute_difference(averages: dict) -> float | None:
    """Elliot's MAD: the mean over pairs of groups of |avg_a - avg_b| (None with a group
    without members or fewer than two groups)."""
    values = [averages[g] for g in sorted(averages, key=str)]
    if len(values) < 2 or any(v is None for v in values):
        return None
    return float(np.mean([abs(a - b) for j, b in enumerate(values) for a in values[:j]]))


def _members_mad(values: dict) -> float | None:
    """The MAD between groups of the mean of their members' values (group -> list)."""
    return _mean_absolute_difference({g: (float(np.mean(v)) if v else None)
                                      for g, v in values.items()})


def _items_mad(gain: dict, count: Counter, item_groups: dict) -> float | None:
    """The MAD between item groups of the mean over their items of gain / slots."""
    per_group: dict = {g: [] for g in set(item_groups.values())}
    for item, total in gain.items():
        if item in item_groups:
            per_group[item_groups[item]].append(total / count[item])
    return _members_mad(per_group)


def _scored(recs: Lists, scores: Lists, truths: Lists, k: int):
    """(user, [(item, score)] of the top k) for the users with a relevant item."""
    for user, items in recs.items():
        if any(i is not None for i in (truths.get(user) or [])):
            pairs = zip(list(items or [])[:k], list(scores.get(user) or [])[:k], strict=False)
            yield user, [(i, s) for i, s in pairs if i is not None]


def user_mad_rating_kernel(recs: Lists, scores: Lists, truths: Lists, k: int,
                           user_groups: dict) -> float | None:
    """Elliot's UserMADrating: per user group, the mean over its users of the mean predicted
    score of their top k (users with a relevant item); MAD between the groups."""
    sums: dict = {g: [] for g in set(user_groups.values())}
    for user, pairs in _scored(recs, scores, truths, k):
        if user in user_groups and pairs:
            sums[user_groups[user]].append(float(np.mean([s for _, s in pairs])))
    return _members_mad(sums)


def item_mad_rating_kernel(recs: Lists, scores: Lists, truths: Lists, k: int,
                           item_groups: dict) -> float | None:
    """Elliot's ItemMADrating: per item, the predicted scores where it was recommended to a
    user who finds it relevant, summed, over the times it was recommended (users with a
    relevant item); per item group the mean over its items; MAD between the groups."""
    gain: dict = {}
    count: Counter = Counter()
    for user, pairs in _scored(recs, scores, truths, k):
        truth = set(truths[user])
        for item, score in pairs:
            count[item] += 1
            gain[item] = gain.get(item, 0.0) + (score if item in truth else 0.0)
    return _items_mad(gain, count, item_groups)


def _graded_users(recs: Lists, grades: dict, k: int, threshold: float):
    """(user, top k, gain of an item) for the users with a grade of at least threshold; gain =
    Elliot's discounted relevance 2^(grade - threshold + 1) - 1 (0 below threshold)."""
    for user, items in recs.items():
        graded = {i: g for i, g in (grades.get(user) or {}).items() if g is not None}
        gains = {i: 2.0 ** (g - threshold + 1) - 1 for i, g in graded.items() if g >= threshold}
        if gains:
            yield user, list(items or [])[:k], gains


def user_mad_ranking_kernel(recs: Lists, grades: dict, k: int, user_groups: dict,
                            threshold: float = 1) -> float | None:
    """Elliot's UserMADranking: per user group, the mean nDCG (Elliot's: discounted gains,
    1 / log2(rank + 1), 0 without a gain) of its users; MAD between the groups."""
    sums: dict = {g: [] for g in set(user_groups.values())}
    for user, top, gains in _graded_users(recs, grades, k, threshold):
        if user not in user_groups:
            continue
        dcg = sum(gains.get(i, 0.0) / np.log2(r + 2) for r, i in enumerate(top) if i is not None)
        ideal = sorted(gains.values(), reverse=True)[:k]
        idcg = sum(g / np.log2(r + 2) for r, g in enumerate(ideal))
        sums[user_groups[user]].append(dcg / idcg if dcg > 0 else 0.0)
    return _members_mad(sums)


def item_mad_ranking_kernel(recs: Lists, grades: dict, k: int, item_groups: dict,
                            threshold: float = 1) -> float | None:
    """Elliot's ItemMADranking: per item, its discounted gains over the slots holding it (users
    with a gain), per item group the mean over its items; MAD between the groups."""
    gain: dict = {}
    count: Counter = Counter()
    for _, top, gains in _graded_users(recs, grades, k, threshold):
        for item in top:
            if item is not None:
                count[item] += 1
                gain[item] = gain.get(item, 0.0) + gains.get(item, 0.0)
    return _items_mad(gain, count, item_groups)


# --- SQL --------------------------------------------------------------------------------------

_HEAD = (
    optional("head", "interactions", "how the popular head is chosen: 'interactions' (Elliot's) "
             "or 'items'", choices=HEADS),
    optional("head_share", None, "the head's share: of the interactions (default 0.8) or of the "
             "items (default 0.2)", bounds=Bounds(0, 1, interval=True, nullable=True)),
)


def _train_pairs_sql() -> str:
    """tr(u, item): the distinct training pairs (Elliot counts a repeated pair once)."""
    return (f"tr AS (SELECT DISTINCT {_column('user_col')} AS u, {_column('item_col')} AS item "
            "FROM query_table(train) WHERE item IS NOT NULL)")


def _groups_sql(fn: str) -> str:
    """g(item, grp): 'head' or 'tail' for every item of train, by the head option (needs tr)."""
    head, head_share = _HEAD
    share = (f"coalesce({_value(fn, head_share)}, CASE WHEN head = 'items' THEN "
             f"{DEFAULT_SHARE['items']} ELSE {DEFAULT_SHARE['interactions']} END)")
    # The branches below are chosen by h, read from `share`, so that the checks run: a filter
    # on the constant head alone was planned away (DuckDB 1.4) and a bad head gave no error.
    return (
        f"share AS (SELECT {share} AS s, {_value(fn, head)} AS h),\n"
        "users_of AS (SELECT item, count(*) AS n FROM tr GROUP BY item),\n"
        f"rows_of AS (SELECT {_column('item_col')} AS item, count(*) AS n FROM query_table(train) "
        "WHERE item IS NOT NULL GROUP BY item),\n"
        # Elliot: add items, most popular first, until the share of interactions is reached.
        "by_interactions AS (SELECT item, sum(n) OVER (ORDER BY n DESC, item ROWS BETWEEN "
        "UNBOUNDED PRECEDING AND 1 PRECEDING) AS before, sum(n) OVER () AS total FROM users_of),\n"
        "by_items AS (SELECT item, rank() OVER (ORDER BY n DESC) - 1 AS above, count(*) OVER () "
        "AS m FROM rows_of),\n"
        # The first item is in the head whatever the share (Elliot adds, then checks).
        "g AS (SELECT item, CASE WHEN before IS NULL OR (SELECT s FROM share) * total - before > "
        "0 THEN 'head' ELSE 'tail' END AS grp FROM by_interactions WHERE (SELECT h FROM share) "
        "= 'interactions' UNION ALL SELECT item, CASE WHEN above < (SELECT s FROM share) * m "
        "THEN 'head' ELSE 'tail' END FROM by_items WHERE (SELECT h FROM share) = 'items')"
    )


def _tail_sql(fn: str, per_position: bool) -> str:
    value = "count(DISTINCT t.item) FILTER (WHERE g.grp = 'tail')"
    if per_position:
        value += " / count(t.item)"
    return (f"WITH {_train_pairs_sql()},\n{_groups_sql(fn)}\n"
            f"SELECT t.\"user\", CASE WHEN count(t.item) > 0 THEN {value} END AS {fn} "
            f"FROM {_top(fn)} t LEFT JOIN g ON t.item = g.item GROUP BY t.\"user\"")


# std / mean of the groups' probabilities p (NULL when a group has no denominator).
_STD_OVER_MEAN = ("SELECT CASE WHEN count(p) = count(*) THEN stddev_pop(p) / nullif(avg(p), 0) "
                  "END AS {fn}, count(*) AS groups FROM pr")


def _reo_sql(fn: str, groups: str) -> str:
    """Elliot's REO over the groups g: per group, the distinct relevant items of the users' top
    k over their relevant items they did not train on (users with a relevant item only)."""
    return (
        f"WITH {_train_pairs_sql()},\n{groups},\n"
        f"users AS (SELECT {_column('user_col')} AS \"user\", "
        f"list_distinct({_column('truth_col')}) AS truth FROM query_table(recs)),\n"
        "rel AS (SELECT \"user\", unnest(truth) AS item FROM users WHERE len(truth) > 0),\n"
        "hit AS (SELECT DISTINCT t.\"user\", t.item FROM "
        f"{_top(fn)} t JOIN users u ON t.\"user\" = u.\"user\" "
        "WHERE t.item IS NOT NULL AND list_contains(u.truth, t.item)),\n"
        "num AS (SELECT g.grp, count(*) AS n FROM hit JOIN g ON hit.item = g.item "
        "GROUP BY g.grp),\n"
        "den AS (SELECT g.grp, count(*) AS n FROM rel JOIN g ON rel.item = g.item LEFT JOIN tr "
        "ON tr.u = rel.\"user\" AND tr.item = rel.item WHERE tr.u IS NULL GROUP BY g.grp),\n"
        "pr AS (SELECT coalesce(num.n, 0) / nullif(den.n, 0) AS p FROM (SELECT DISTINCT grp "
        "FROM g) gg LEFT JOIN num ON gg.grp = num.grp LEFT JOIN den ON gg.grp = den.grp)\n"
        + _STD_OVER_MEAN.format(fn=fn)
    )


def _rsp_sql(fn: str, groups: str) -> str:
    """Elliot's RSP over the groups g: per group, the distinct items of the users' top k over
    the items of the group the users did not train on (every user of recs)."""
    return (
        f"WITH {_train_pairs_sql()},\n{groups},\n"
        f"users AS (SELECT DISTINCT {_column('user_col')} AS \"user\" FROM query_table(recs) "
        "WHERE \"user\" IS NOT NULL),\n"
        "num AS (SELECT g.grp, count(*) AS n FROM (SELECT DISTINCT \"user\", item FROM "
        f"{_top(fn)} WHERE item IS NOT NULL) x JOIN g ON x.item = g.item GROUP BY g.grp),\n"
        "size AS (SELECT grp, count(*) AS n FROM g GROUP BY grp),\n"
        "seen AS (SELECT g.grp, count(*) AS n FROM tr JOIN users ON tr.u = users.\"user\" "
        "JOIN g ON tr.item = g.item GROUP BY g.grp),\n"
        "pr AS (SELECT coalesce(num.n, 0) / nullif((SELECT count(*) FROM users) * size.n - "
        "coalesce(seen.n, 0), 0) AS p FROM size LEFT JOIN num ON size.grp = num.grp "
        "LEFT JOIN seen ON size.grp = seen.grp)\n"
        + _STD_OVER_MEAN.format(fn=fn)
    )


# --- the records ------------------------------------------------------------------------------

_SOURCE_ABDOLLAHPOURI = ("Abdollahpouri, Burke and Mobasher, 'Managing popularity bias in "
                         "recommender systems with personalized re-ranking' (FLAIRS 2019); "
                         "Elliot (Anelli et al., SIGIR 2021) ACLT and APLT")
_SOURCE_ZHU = ("Zhu, Wang and Caverlee, 'Measuring and mitigating item under-recommendation "
               "bias in personalized ranking systems' (SIGIR 2020), RSP and REO; Elliot "
               "(Anelli et al., SIGIR 2021)")
_HEAD_CONVENTIONS = ("The head: see `head` (Elliot's 'interactions': most popular first by "
                     "distinct training users, ties by item id ascending, until the head holds "
                     "head_share of the distinct training pairs; 'items': the head_share most "
                     "popular items by training rows, ties included). Items absent from train "
                     "are in neither group.")
_UNDEFINED_RATIO = ("NULL when a group has no denominator (no item of the group could be "
                    "counted: Elliot gives NaN) or when every probability is 0.")

def _tail_record(name: str, per_position: bool, **text: str) -> BeyondMetric:
    """ACLT or APLT (``per_position``): the same inputs and SQL, their own texts."""
    return BeyondMetric(
        name=name, kind="per_user", source=_SOURCE_ABDOLLAHPOURI,
        parameters=(_RECS, _TRAIN, _K, *_HEAD, _USER, _REC, _ITEM),
        sql=_tail_sql(name, per_position), kernel=aplt_kernel if per_position else aclt_kernel,
        **text)


ACLT = _tail_record(
    "aclt", per_position=False,
    summary="Average coverage of long-tail items: how many distinct long-tail items a user's "
    "top k holds.",
    formula="|set(top k) & tail|, tail = the training items outside the popular head",
    undefined="NULL for a user whose top k is empty (Elliot would give 0).",
    conventions=_HEAD_CONVENTIONS + " The mean over users is Elliot's ACLT (its users are those "
    "with a list).",
    peers="Elliot ACLT per user (head 'interactions', head_share 0.8), from its source "
    "(elliot/evaluation/metrics/bias/aclt, popularity_utils); checked by hand calculations.",
)

APLT = _tail_record(
    "aplt", per_position=True,
    summary="Average percentage of long-tail items: the distinct long-tail items of a user's "
    "top k over its items.",
    formula="|set(top k) & tail| / |top k|, |top k| the items in it (repeats counted)",
    undefined="NULL for a user whose top k is empty.",
    conventions=_HEAD_CONVENTIONS + " With head := 'items' it is long_tail_share for lists "
    "without repeats.",
    peers="Elliot APLT per user (head 'interactions', head_share 0.8), from its source; "
    "checked by hand calculations.",
)

# Equal opportunity (REO: the chance of a group's relevant items to be recommended) and
# statistical parity (RSP: of all its items), each over the popular head and the long tail
# (pop_reo, pop_rsp) or over the groups of item_groups (reo, rsp): (what it equalises, the
# items counted, P_g's numerator and denominator, the parameters it adds, its SQL, its kernel).
_PARITY = {
    "reo": ("equal opportunity", "relevant items", "|set(top k) & truth & g| / sum over users of "
            "|truth & g - train_u|, over the users whose truth holds an item", (_TRUTH,), _reo_sql,
            reo_kernel),
    "rsp": ("statistical parity", "items", "|set(top k) & g| / sum over users of |g - train_u|, "
            "over the users of recs", (), _rsp_sql, rsp_kernel),
}


def _parity(kind: str, popularity: bool) -> BeyondMetric:
    """The record of ``kind`` (``_PARITY``) over the head and the tail (``popularity``) or over
    the groups of item_groups: one definition for the four macros."""
    what, items, share, truth, sql, kernel = _PARITY[kind]
    name = f"pop_{kind}" if popularity else kind
    elliot = kind.upper()
    if popularity:
        summary = (f"Popularity-based ranking-based {what}: how unequal the chance of the head's "
                   f"and the tail's {items} to be recommended is (0: equal).")
        formula = ("std(P_head, P_tail) / mean(P_head, P_tail) (std over the groups, not n - 1), "
                   f"P_g = sum over users of {share}")
        conventions = (_HEAD_CONVENTIONS + " train_u = the user's training items. Gives `groups` "
                       f"too (2). Elliot's ExtendedPop{elliot} is head_share := its pop_ratio.")
        peers = f"Elliot Pop{elliot} and ExtendedPop{elliot}, from their source"
        groups, tables = _groups_sql(name), (_TRAIN, _K, *_HEAD)
    else:
        summary = (f"Ranking-based {what} over item groups the user gives (0: every group's "
                   f"{items} are as likely to be recommended).")
        formula = (f"std_g(P_g) / mean_g(P_g) over the groups of item_groups, P_g as in "
                   f"pop_{kind}")
        conventions = ("Items without a group are left out; train is read for the users' "
                       "training items. Gives `groups` (the number of groups).")
        peers = f"Elliot {elliot} (its clustering_file as item_groups), from its source"
        groups, tables = _given_groups_sql(name), (_TRAIN, _ITEM_GROUPS, _K, _GROUP_COL)
    return BeyondMetric(
        name=name, kind="catalogue", summary=summary, formula=formula,
        undefined=_UNDEFINED_RATIO, conventions=conventions,
        peers=peers + "; checked by hand calculations and the kernel.", source=_SOURCE_ZHU,
        parameters=(_RECS, *tables, *truth, _USER, _REC, _ITEM), sql=sql(name, groups),
        kernel=kernel)


POP_REO, POP_RSP = _parity("reo", popularity=True), _parity("rsp", popularity=True)
REO, RSP = _parity("reo", popularity=False), _parity("rsp", popularity=False)

_USER_GROUPS = required("user_groups", "name of a table of user_col and user_group_col, one "
                        "group per user")
_USER_GROUP_COL = optional("user_group_col", "group", "group column of user_groups")


def _user_groups_sql(fn: str) -> str:
    """ug(u, grp) from the user_groups table, one group per user (a user given twice is an
    error: the joins would count it twice)."""
    return ("ug AS (SELECT u, grp FROM (SELECT *, count(*) OVER (PARTITION BY u) AS n FROM "
            f"(SELECT DISTINCT {_column('user_col')} AS u, {_column('user_group_col')} AS grp "
            "FROM query_table(user_groups))) WHERE CASE WHEN u IS NOT NULL AND n > 1 THEN "
            f"error('{fn}: user_groups holds user ' || u::VARCHAR || ' more than once') "
            "ELSE u IS NOT NULL AND grp IS NOT NULL END)")


# The training pairs and the top-k positions counted per (user group, item group), over the
# users with a group and the items with a group (Elliot's BiasDisparityBS and BR).
_BIAS = ("{name} AS (SELECT ug.grp AS ugrp, ig.grp, count(*) AS n FROM {rows} x "
         "JOIN ug ON x.u = ug.u JOIN ig ON x.item = ig.item GROUP BY ug.grp, ig.grp)")

BIAS_DISPARITY = BeyondMetric(
    name="bias_disparity",
    kind="per_group",
    summary="Bias disparity: how much more (or less) a group of users is recommended a group of "
    "items than it chose them in training (Elliot's BiasDisparityBS, BR and BD).",
    formula="for user group g and item group c: B(g, c) = (n(g, c) / sum_c' n(g, c')) / P(c), "
    "P(c) = |items of c| / |items with a group|; bs: n = distinct training pairs, br: n = "
    "positions of the top k; bd = (br - bs) / bs",
    undefined="bs or br NULL when the user group has no counted pair (Elliot: NaN); bd NULL "
    "where bs is NULL or 0.",
    conventions="One row per (user group, item group): `user_group`, `item_group`, `bs`, `br`, "
    "`bd`. Users without a group and items without a group are left out; each table gives one "
    "group per user (item), an id given twice is an error. A repeated item in a top k counts at "
    "each position (Elliot's rule).",
    peers="Elliot BiasDisparityBS, BiasDisparityBR and BiasDisparityBD (its user and item "
    "clustering files as user_groups and item_groups), from its source; checked by hand "
    "calculations and the kernel.",
    source="Tsintzou, Pitoura and Tsaparas, 'Bias disparity in recommendation systems' "
    "(RMSE workshop, RecSys 2018); Elliot (Anelli et al., SIGIR 2021)",
    parameters=(_RECS, _TRAIN, _USER_GROUPS, _ITEM_GROUPS, _K, _GROUP_COL, _USER_GROUP_COL,
                _USER, _REC, _ITEM),
    sql=f"WITH {_train_pairs_sql()},\n"
    + _given_groups_sql("bias_disparity").replace("g AS (", "ig AS (", 1) + ",\n"
    + _user_groups_sql("bias_disparity") + ",\n"
    "pc AS (SELECT grp, count(*) / sum(count(*)) OVER () AS p FROM ig GROUP BY grp),\n"
    + _BIAS.format(name="src", rows="tr") + ",\n"
    + _BIAS.format(name="rec", rows=f"(SELECT \"user\" AS u, item FROM {_top('bias_disparity')} "
                   "WHERE item IS NOT NULL)") + ",\n"
    "b AS (SELECT pairs.ugrp, pairs.grp, coalesce(src.n, 0) / nullif(sum(coalesce(src.n, 0)) "
    "OVER (PARTITION BY pairs.ugrp), 0) / pairs.p AS bs, coalesce(rec.n, 0) / "
    "nullif(sum(coalesce(rec.n, 0)) OVER (PARTITION BY pairs.ugrp), 0) / pairs.p AS br "
    "FROM (SELECT DISTINCT ug.grp AS ugrp, pc.grp, pc.p FROM ug CROSS JOIN pc) pairs "
    "LEFT JOIN src ON src.ugrp = pairs.ugrp AND src.grp = pairs.grp "
    "LEFT JOIN rec ON rec.ugrp = pairs.ugrp AND rec.grp = pairs.grp)\n"
    "SELECT ugrp AS user_group, grp AS item_group, bs, br, (br - bs) / nullif(bs, 0) AS bd "
    "FROM b ORDER BY ugrp, grp",
    kernel=bias_disparity_kernel,
)

# --- MAD between groups of users or items (Elliot's UserMADrating, ItemMADrating) --------------

_SCORES = optional("scores_col", "score", "LIST column of recs: the predicted score of each "
                   "item of rec_col, in its order")
_SOURCE_MAD = ("Zhu, Wang and Caverlee (SIGIR 2020) and Deldjoo et al., 'A flexible framework "
               "for evaluating user and item fairness' (TOIS 2021), MAD; Elliot (Anelli et al., "
               "SIGIR 2021) UserMADrating and ItemMADrating")
_MAD_UNDEFINED = ("NULL with fewer than two groups, or when a group has no member counted "
                  "(Elliot: NaN).")
_MAD_CONVENTIONS = (" Only users whose truth holds an item are read (Elliot's rule). Positions "
                    "holding NULL are left out with their scores; scores_col must have a score "
                    "per element of rec_col (an error otherwise). Not an evaluate request (its "
                    "lists carry no scores): call it in SQL or Spark.")
# (user, item, s, truth): the scored top k of each user with a relevant item.
_SCORED = (
    "scored AS (SELECT \"user\", item, s, truth FROM (SELECT \"user\", truth, unnest(r) AS "
    "item, unnest(sc) AS s FROM (SELECT \"user\", truth, l[1:{k}] AS r, CASE WHEN l IS NULL "
    "THEN NULL WHEN coalesce(len(x), -1) = len(l) THEN x[1:{k}] ELSE error('{fn}: scores_col "
    "must hold one score per item of rec_col, "
    "user ' || \"user\"::VARCHAR || ' has ' || len(l) || ' items and ' || coalesce(len(x), 0) "
    f"|| ' scores') END AS sc FROM (SELECT {_column('user_col')} AS \"user\", "
    f"{_column('rec_col')} AS l, {_column('scores_col')} AS x, {_column('truth_col')} AS truth "
    "FROM query_table(recs)) WHERE list_count(truth) > 0)) WHERE item IS NOT NULL)"
)
# ga(grp, a): per group of {groups} (every group, also one whose members have no value), the
# mean of the values v(v) of its members, v's {key} being the group table's {member}.
_GROUP_AVERAGES = ("ga AS (SELECT gs.grp, avg(v.v) AS a FROM (SELECT DISTINCT grp FROM {groups}) "
                   "gs LEFT JOIN {groups} ON {groups}.grp = gs.grp LEFT JOIN v ON v.{key} = "
                   "{groups}.{member} GROUP BY gs.grp)\n")
# MAD over the groups' averages `a` in ga(grp, a).
_MAD = ("SELECT CASE WHEN count(*) FILTER (WHERE x.a IS NULL OR y.a IS NULL) = 0 THEN "
        "avg(abs(x.a - y.a)) END AS {fn} FROM ga x JOIN ga y ON x.grp < y.grp")


USER_MAD_RATING = BeyondMetric(
    name="user_mad_rating",
    kind="catalogue",
    summary="Mean absolute difference between groups of users of the mean predicted score of "
    "their top k (0: every group scored alike).",
    formula="mean over pairs of user groups (a, b) of |A_a - A_b|, A_g = the mean over the "
    "users of g of the mean of the scores of their top k",
    undefined=_MAD_UNDEFINED,
    conventions="user_groups gives one group per user (an id given twice is an error); users "
    "without a group are left out." + _MAD_CONVENTIONS,
    peers="Elliot UserMADrating (its user clustering file as user_groups), from its source; "
    "checked by hand calculations and the kernel.",
    source=_SOURCE_MAD,
    parameters=(_RECS, _USER_GROUPS, _K, _SCORES, _TRUTH, _USER_GROUP_COL, _USER, _REC),
    sql="WITH " + _SCORED.format(k=_k("user_mad_rating"), fn="user_mad_rating") + ",\n"
    + _user_groups_sql("user_mad_rating") + ",\n"
    "v AS (SELECT \"user\", avg(s) AS v FROM scored GROUP BY \"user\"),\n"
    + _GROUP_AVERAGES.format(groups="ug", key="\"user\"", member="u")
    + _MAD.format(fn="user_mad_rating"),
    kernel=user_mad_rating_kernel,
)

ITEM_MAD_RATING = BeyondMetric(
    name="item_mad_rating",
    kind="catalogue",
    summary="Mean absolute difference between groups of items of the score they get where "
    "they are relevant (0: every group alike).",
    formula="mean over pairs of item groups (a, b) of |A_a - A_b|, A_g = the mean over the "
    "recommended items i of g of (sum over the top-k slots holding i of score [i relevant]) / "
    "(slots holding i)",
    undefined=_MAD_UNDEFINED,
    conventions="item_groups gives one group per item (an id given twice is an error); items "
    "without a group are left out." + _MAD_CONVENTIONS,
    peers="Elliot ItemMADrating (its item clustering file as item_groups), from its source; "
    "checked by hand calculations and the kernel.",
    source=_SOURCE_MAD,
    parameters=(_RECS, _ITEM_GROUPS, _K, _SCORES, _TRUTH, _GROUP_COL, _USER, _REC, _ITEM),
    sql="WITH " + _SCORED.format(k=_k("item_mad_rating"), fn="item_mad_rating") + ",\n"
    + _given_groups_sql("item_mad_rating") + ",\n"
    "v AS (SELECT item, sum(CASE WHEN list_contains(truth, item) THEN s ELSE 0 END) / count(*) "
    "AS v FROM scored GROUP BY item),\n"
    + _GROUP_AVERAGES.format(groups="g", key="item", member="item")
    + _MAD.format(fn="item_mad_rating"),
    kernel=item_mad_rating_kernel,
)

_GAIN = ("CASE WHEN {g} >= threshold THEN 2 ^ ({g} - threshold + 1) - 1 ELSE 0 END")
_GRADE_OF = "map_values(truth)[list_position(map_keys(truth), {i})]"
_MAD_RANKING_CONVENTIONS = (
    " truth_col is a MAP of item -> grade; an item's gain is Elliot's discounted relevance "
    "2^(grade - threshold + 1) - 1 for a grade of at least threshold, else 0; only users with "
    "such a grade are read. Not an evaluate request (its lists carry no grades): call it in "
    "SQL or Spark.")


def _graded_lists_sql(fn: str) -> str:
    """gl(user, top, truth): the top k and the graded truth of each user with a gain."""
    graded = checked_sql(fn, "len(list_filter(map_values(truth), lambda x: x >= threshold)) > 0",
                         _THRESHOLD)
    return (f"gl AS (SELECT \"user\", l[1:{_k(fn)}] AS top, k::BIGINT AS kk, truth FROM "
            f"(SELECT {_column('user_col')} AS \"user\", {_column('rec_col')} AS l, "
            f"{_column('truth_col')} AS truth FROM query_table(recs)) WHERE {graded})")


USER_MAD_RANKING = BeyondMetric(
    name="user_mad_ranking",
    kind="catalogue",
    summary="Mean absolute difference between groups of users of their mean nDCG with graded "
    "relevance (0: every group served alike).",
    formula="mean over pairs of user groups (a, b) of |A_a - A_b|, A_g = the mean over the users "
    "of g of DCG / IDCG (0 when DCG = 0): DCG = sum over the top k (rank r) of gain(i) / "
    "log2(r + 1), IDCG = the same over the user's gains sorted down, cut at k",
    undefined=_MAD_UNDEFINED,
    conventions="user_groups gives one group per user (an id given twice is an error); users "
    "without a group are left out." + _MAD_RANKING_CONVENTIONS,
    peers="Elliot UserMADranking (its user clustering file as user_groups), from its source; "
    "checked by hand calculations and the kernel.",
    source=_SOURCE_MAD.replace("UserMADrating and ItemMADrating", "UserMADranking"),
    parameters=(_RECS, _USER_GROUPS, _K, _THRESHOLD, _GRADES, _USER_GROUP_COL, _USER, _REC),
    sql=f"WITH {_graded_lists_sql('user_mad_ranking')},\n"
    + _user_groups_sql("user_mad_ranking") + ",\n"
    "d AS (SELECT \"user\", coalesce(list_sum(list_transform(top, lambda i, r: CASE WHEN i IS "
    "NULL THEN 0 ELSE coalesce(" + _GAIN.format(g=_GRADE_OF.format(i="i")) + ", 0) END / "
    "log2(r + 1))), 0) AS dcg, list_sum(list_transform(list_reverse_sort(list_transform("
    "list_filter(map_values(truth), lambda x: x >= threshold), lambda x: "
    + _GAIN.format(g="x") + "))[1:kk], lambda x, r: x / log2(r + 1))) AS idcg FROM gl),\n"
    "v AS (SELECT \"user\", CASE WHEN dcg > 0 THEN dcg / idcg ELSE 0 END AS v FROM d),\n"
    + _GROUP_AVERAGES.format(groups="ug", key="\"user\"", member="u")
    + _MAD.format(fn="user_mad_ranking"),
    kernel=user_mad_ranking_kernel,
    truth="map",
)

ITEM_MAD_RANKING = BeyondMetric(
    name="item_mad_ranking",
    kind="catalogue",
    summary="Mean absolute difference between groups of items of the graded gain they bring "
    "where they are recommended (0: every group alike).",
    formula="mean over pairs of item groups (a, b) of |A_a - A_b|, A_g = the mean over the "
    "recommended items i of g of (sum over the top-k slots holding i of gain(i)) / (slots "
    "holding i)",
    undefined=_MAD_UNDEFINED,
    conventions="item_groups gives one group per item (an id given twice is an error); items "
    "without a group are left out." + _MAD_RANKING_CONVENTIONS,
    peers="Elliot ItemMADranking (its item clustering file as item_groups), from its source; "
    "checked by hand calculations and the kernel.",
    source=_SOURCE_MAD.replace("UserMADrating and ItemMADrating", "ItemMADranking"),
    parameters=(_RECS, _ITEM_GROUPS, _K, _THRESHOLD, _GRADES, _GROUP_COL, _USER, _REC, _ITEM),
    sql=f"WITH {_graded_lists_sql('item_mad_ranking')},\n"
    + _given_groups_sql("item_mad_ranking") + ",\n"
    "slots AS (SELECT item, coalesce(" + _GAIN.format(g=_GRADE_OF.format(i="item")) + ", 0) AS "
    "gain FROM (SELECT truth, unnest(top) AS item FROM gl) WHERE item IS NOT NULL),\n"
    "v AS (SELECT item, sum(gain) / count(*) AS v FROM slots GROUP BY item),\n"
    + _GROUP_AVERAGES.format(groups="g", key="item", member="item")
    + _MAD.format(fn="item_mad_ranking"),
    kernel=item_mad_ranking_kernel,
    truth="map",
)

# The expected-exposure records (their own module) are listed with this family, in this place.
METRICS: tuple[BeyondMetric, ...] = (ACLT, APLT, POP_REO, POP_RSP, REO, RSP, BIAS_DISPARITY,
                                     *exposure.METRICS, USER_MAD_RATING, ITEM_MAD_RATING,
                                     USER_MAD_RANKING, ITEM_MAD_RANKING)
