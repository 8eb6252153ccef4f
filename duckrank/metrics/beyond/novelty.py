"""Popularity and novelty: how popular, how new to the users, how far in the long tail the
recommended items are, and serendipity."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterable

from duckrank.lazy import LazyModule
from duckrank.metrics.beyond.common import (
    _CATALOG,
    _GRADES,
    _ITEM,
    _K,
    _REC,
    _RECS,
    _THRESHOLD,
    _TRAIN,
    _TRUTH,
    _USER,
    DEFAULT_PERSISTENCE,
    BeyondMetric,
    Lists,
    _catalog_size,
    _column,
    _discounted_mean,
    _per_user,
    _positioned,
    _top,
    _train_items,
    _value,
    _weighted_top,
    _when_invalid,
    checked_sql,
    discount_parameters,
    discount_weight,
    optional,
)
from duckrank.options import Bounds

np = LazyModule("numpy")

# --- kernels (plain Python/numpy over dicts of lists: the independent check) -----------------


def arp_kernel(recs: Lists, k: int, train: Iterable[tuple[Hashable, Hashable]],
               normalize: bool = False, discount: str = "none",
               persistence: float = DEFAULT_PERSISTENCE) -> dict[Hashable, float | None]:
    pairs = list(train)
    counts = Counter(i for _, i in pairs)
    scale = len(pairs) if normalize else 1
    return _discounted_mean(recs, k, lambda i: counts[i] / scale, discount, persistence)


def self_information_kernel(recs: Lists, k: int, train: Iterable[tuple[Hashable, Hashable]],
                            normalize: bool = False, discount: str = "none",
                            persistence: float = DEFAULT_PERSISTENCE, popularity: str = "users"
                            ) -> dict[Hashable, float | None]:
    rows = list(train)
    if popularity == "interactions":
        # Microsoft Recommenders' novelty: an item absent from train adds 0.
        counts = Counter(i for _, i in rows if i is not None)
        total = sum(counts.values())

        def novelty(i: Hashable) -> float:
            return -math.log2(counts[i] / total) if i in counts else 0.0
    else:
        pairs = set(rows)
        total = len({u for u, _ in pairs})
        users = Counter(i for _, i in pairs)

        def novelty(i: Hashable) -> float:
            return -math.log2(max(users[i], 1) / total)
    scale = math.log2(total) if normalize else 1.0
    if scale == 0:
        return {u: None for u in recs}
    return _discounted_mean(recs, k, lambda i: novelty(i) / scale, discount, persistence)


def _expected_novelty(recs: Lists, truths: dict, k: int, novelty: Callable[[Hashable], float],
                      discount: str, persistence: float, threshold: float | None = None
                      ) -> dict[Hashable, float | None]:
    """Vargas and Castells (2011), eq. (7): per user, sum over the top k of w(r) rel(i) nov(i)
    / sum of w(r). Binary (``threshold`` None): rel = [i in the truth list]; graded (truths of
    item -> grade): Elliot's discounted relevance 2^(grade - threshold + 1) - 1 for a grade of
    at least threshold, else 0. NULL for a user without a relevant item."""
    out: dict[Hashable, float | None] = {}
    for user, ranked in _positioned(recs, k).items():
        if threshold is None:
            gain = {i: 1.0 for i in (truths.get(user) or []) if i is not None}
        else:
            gain = {i: 2.0 ** (g - threshold + 1) - 1 for i, g in (truths.get(user) or {}).items()
                    if i is not None and g is not None and g >= threshold}
        weights = [discount_weight(r, discount, persistence) for r, _ in ranked]
        out[user] = (sum(w * gain.get(i, 0.0) * novelty(i) for w, (_, i)
                         in zip(weights, ranked, strict=True)) / sum(weights)
                     if ranked and gain else None)
    return out


def epc_kernel(recs: Lists, truths: dict, k: int, train: Iterable[tuple[Hashable, Hashable]],
               discount: str = "log", persistence: float = DEFAULT_PERSISTENCE,
               threshold: float | None = None) -> dict[Hashable, float | None]:
    """nov(i) = 1 - users(i) / N (1 for an item absent from train); ``threshold``: graded
    truths (extended_epc)."""
    pairs = set(train)
    n_users = len({u for u, _ in pairs})
    users = Counter(i for _, i in pairs if i is not None)
    return _expected_novelty(recs, truths, k, lambda i: 1 - users[i] / n_users, discount,
                             persistence, threshold)


def efd_kernel(recs: Lists, truths: dict, k: int, train: Iterable[tuple[Hashable, Hashable]],
               discount: str = "log", persistence: float = DEFAULT_PERSISTENCE,
               threshold: float | None = None) -> dict[Hashable, float | None]:
    """nov(i) = -log2(users(i) / sum_j users(j)); an item absent from train gets the largest
    value of a training item; ``threshold``: graded truths (extended_efd)."""
    users = Counter(i for _, i in set(train) if i is not None)
    total = sum(users.values())
    largest = -math.log2(min(users.values()) / total)
    return _expected_novelty(recs, truths, k, lambda i: -math.log2(users[i] / total)
                             if i in users else largest, discount, persistence, threshold)


def long_tail_share_kernel(recs: Lists, k: int, train: Iterable[tuple[Hashable, Hashable]],
                           head_share: float = 0.2, tail_ratio: float | None = None
                           ) -> dict[Hashable, float | None]:
    counts = Counter(i for _, i in train)
    if tail_ratio is not None:
        # RecBole's TailPercentage.get_tail: a count threshold above 1, else the least popular
        # share (ties by item id), at least one item; untrained items are not in its counts.
        ranked = sorted((n, i) for i, n in counts.items() if i is not None)
        tail = ({i for n, i in ranked if n <= tail_ratio} if tail_ratio > 1 else
                {i for _, i in ranked[:max(int(len(ranked) * tail_ratio), 1)]})
        return _per_user(recs, k, lambda items: float(np.mean([i in tail for i in items])))
    m = len(counts)
    head = {i for i, n in counts.items()
            if sum(1 for other in counts.values() if other > n) < head_share * m}
    return _per_user(recs, k, lambda items: float(np.mean([i not in head for i in items])))


def serendipity_kernel(recs: Lists, truths: Lists, k: int,
                       train: Iterable[tuple[Hashable, Hashable]], catalog_size: int
                       ) -> dict[Hashable, float | None]:
    counts = Counter(i for _, i in train)
    levels = sorted(set(counts.values()), reverse=True)  # popularity rank: dense, 1 = most
    pop_rank = {i: levels.index(n) + 1 for i, n in counts.items()}
    n = catalog_size
    out: dict[Hashable, float | None] = {}
    for user, items in recs.items():
        truth = truths.get(user)
        terms = [
            max((n + 1 - r) / n - ((n + 1 - pop_rank[i]) / n if i in pop_rank else 0.0), 0.0)
            * (i in truth)
            for r, i in enumerate((items or [])[:k], start=1) if i is not None
        ] if truth is not None else []
        out[user] = float(np.mean(terms)) if terms else None
    return out



# --- the records ------------------------------------------------------------------------------

_NORMALIZE = optional("normalize", False, "see conventions", boolean=True)

ARP = BeyondMetric(
    name="arp",
    kind="per_user",
    summary="Average recommendation popularity: the mean training popularity of a user's top k.",
    formula="sum over the items i of the top k (rank r) of w(r) pop(i) / sum of w(r), pop(i) = "
    "training interactions with i, w the discount (1 by default: the mean); with normalize := "
    "true, divided by the number of training interactions",
    undefined="NULL for a user whose top k is empty.",
    conventions="An item absent from train has popularity 0. Interactions are rows of train "
    "(a repeated user-item pair counts again), as in RecTools. Mean over the items present in "
    "the top k (min(k, len(rec)) of them). discount := 'log' or 'rbp' weighs rank r as ndcg "
    "or rbp do (Vargas and Castells' rank-aware form, normalised by the weights' sum).",
    peers="RecTools AvgRecPopularity(k, normalize) per user (calc_per_user), to 1e-12; Elliot "
    "ARP is the same mean over its per-user lists (from its source).",
    source="Abdollahpouri, Burke and Mobasher, 'Managing popularity bias in recommender systems "
    "with personalized re-ranking' (FLAIRS 2019), ARP",
    parameters=(_RECS, _TRAIN, _K, _NORMALIZE, *discount_parameters("none"), _USER, _REC,
                _ITEM),
    sql=f"WITH pop AS ({_train_items()}),\n"
    "counts AS (SELECT item, count(*)::DOUBLE AS n FROM pop WHERE item IS NOT NULL GROUP BY item)\n"
    "SELECT t.\"user\", sum(t.w * coalesce(c.n, 0)) / sum(t.w) / "
    f"CASE WHEN {_value('arp', _NORMALIZE)} THEN (SELECT count(item) FROM pop) ELSE 1 END "
    "AS arp\n"
    f"FROM {_weighted_top('arp')} t LEFT JOIN counts c ON t.item = c.item GROUP BY t.\"user\"",
    kernel=arp_kernel,
)

_POPULARITY = optional("popularity", "users", "'users' (distinct training users of the item) "
                       "or 'interactions' (its training interactions)",
                       choices=("users", "interactions"))

SELF_INFORMATION = BeyondMetric(
    name="self_information",
    kind="per_user",
    summary="Novelty as mean self-information (mean inverse user frequency) of a user's top k.",
    formula="sum over the items i of the top k (rank r) of w(r) (-log2(users(i) / N)) / sum of "
    "w(r), users(i) = distinct training users of i, N = distinct training users, w the discount "
    "(1 by default: the mean); with normalize := true, divided by log2(N). popularity := "
    "'interactions': users(i) is the training interactions with i and N all training "
    "interactions (rows of train with an item)",
    undefined="NULL for a user whose top k is empty, and with normalize := true when N = 1.",
    conventions="Log base 2. An item absent from train counts as seen by one user (RecTools' "
    "and RePlay's rule), so its novelty is log2(N), the largest; with popularity := "
    "'interactions' its novelty is 0 (Microsoft Recommenders' rule). Mean over the items "
    "present in the top k; discount := 'log' or 'rbp' weighs rank r as ndcg or rbp do.",
    peers="RecTools MeanInvUserFreq(k) per user, to 1e-12. RePlay Surprisal(k) equals "
    "normalize := true when every list has at least k items (RePlay divides by k). Microsoft "
    "Recommenders novelty is popularity := 'interactions' averaged over the users when every "
    "list holds k items (it averages over all recommendations, and takes no k: cut the lists "
    "first), from its source (recommenders/evaluation/python_evaluation.py).",
    source="Zhou et al., 'Solving the apparent diversity-accuracy dilemma of recommender "
    "systems' (PNAS 2010), novelty as self-information",
    parameters=(_RECS, _TRAIN, _K, _NORMALIZE, *discount_parameters("none"),
                _POPULARITY, _USER, _REC, _ITEM),
    # users(i) counts the distinct (user, item) pairs per item: one hash set of the pairs
    # instead of a count(DISTINCT) per item, which held a set per item (3x the peak memory at
    # 100,000 users x 500,000 interactions: 63 MB against 21 MB, same time). The constant
    # popularity option plans the other branch of users away.
    sql=f"WITH tr AS (SELECT {_column('user_col')} AS u, {_column('item_col')} AS item "
    "FROM query_table(train)),\n"
    "users AS (SELECT item, count(u)::DOUBLE AS n FROM (SELECT DISTINCT u, item FROM tr) "
    f"WHERE {_value('self_information', _POPULARITY)} = 'users' AND item IS NOT NULL GROUP BY "
    "item UNION ALL SELECT item, count(*)::DOUBLE FROM tr WHERE popularity = 'interactions' AND "
    "item IS NOT NULL GROUP BY item),\n"
    "total AS (SELECT (CASE WHEN popularity = 'interactions' THEN count(item) ELSE "
    "count(DISTINCT u) END)::DOUBLE AS n FROM tr)\n"
    "SELECT t.\"user\", sum(t.w * CASE WHEN popularity = 'interactions' THEN "
    "coalesce(-log2(s.n / (SELECT n FROM total)), 0) ELSE -log2(coalesce(s.n, 1) / (SELECT n "
    "FROM total)) END) / sum(t.w) / "
    f"CASE WHEN {_value('self_information', _NORMALIZE)} THEN nullif(log2((SELECT n FROM "
    "total)), 0) ELSE 1 END "
    "AS self_information\n"
    f"FROM {_weighted_top('self_information')} t LEFT JOIN users s ON t.item = s.item "
    "GROUP BY t.\"user\"",
    kernel=self_information_kernel,
)

# Vargas and Castells' expected novelty (RecSys 2011, eq. 7 with binary relevance and their
# normalising constant C = 1 / sum of the discounts): EPC and EFD differ only in nov(i).
_SOURCE_VARGAS = ("Vargas and Castells, 'Rank and relevance in novelty and diversity metrics for "
                  "recommender systems' (RecSys 2011), eq. (7) with C = 1 / sum of disc(r); "
                  "Elliot (Anelli et al., SIGIR 2021) EPC and EFD")
_EXPECTED_UNDEFINED = ("NULL for a user whose top k is empty or whose truth is NULL or empty "
                       "(Elliot leaves out users without relevant items).")


def _train_users_sql() -> str:
    """users(i): the distinct training users of each item (u, item) as n; total: N."""
    return (f"tr AS (SELECT DISTINCT {_column('user_col')} AS u, {_column('item_col')} AS item "
            "FROM query_table(train)),\n"
            "users AS (SELECT item, count(u)::DOUBLE AS n FROM tr WHERE item IS NOT NULL "
            "GROUP BY item)")


# rel(i) and "the user has a relevant item", from a LIST truth (binary) or a MAP truth of grades
# (Elliot's discounted relevance 2^(grade - threshold + 1) - 1; map_keys/map_values read a MAP
# the same way in DuckDB 1.4 and 2.0).
_BINARY = ("list_contains(t.truth, t.item)::INTEGER",
           "coalesce(list_count(any_value(t.truth)), 0) > 0")
_GRADE = "map_values(t.truth)[list_position(map_keys(t.truth), t.item)]"
_GRADED = (f"CASE WHEN {_GRADE} >= threshold THEN 2 ^ ({_GRADE} - threshold + 1) - 1 ELSE 0 END",
           "len(list_filter(map_values(any_value(t.truth)), lambda g: g >= threshold)) > 0")


def _expected_sql(fn: str, novelty: str, graded: bool = False) -> str:
    """sum of w(r) rel(i) nov(i) / sum of w(r) per user, ``novelty`` the SQL of nov(i) over
    s.n (the item's training users, NULL for an item absent from train)."""
    rel, defined = _GRADED if graded else _BINARY
    if graded:
        defined = checked_sql(fn, defined, _THRESHOLD)
    return (
        f"SELECT t.\"user\", CASE WHEN {defined} THEN sum(t.w * ({rel}) * ({novelty})) / "
        f"sum(t.w) END AS {fn}\nFROM {_weighted_top(fn, truth=True)} t LEFT JOIN users s ON "
        "t.item = s.item GROUP BY t.\"user\""
    )


_EPC_NOVELTY = "1 - coalesce(s.n, 0) / (SELECT nullif(n, 0) FROM total)"
_EFD_NOVELTY = "-log2(coalesce(s.n, (SELECT least FROM total)) / (SELECT n FROM total))"
_GRADED_CONVENTIONS = (" Extended form: truth_col is a MAP of item -> grade and rel(i) = "
                       "2^(grade - threshold + 1) - 1 for a grade of at least threshold, else 0 "
                       "(Elliot's discounted relevance); a user without such a grade is NULL. "
                       "Not an evaluate request (its lists carry no grades): call it in SQL or "
                       "Spark.")


def _expected(name: str, graded: bool) -> BeyondMetric:
    """epc and efd, and their Extended forms over graded truth (Elliot's ExtendedEPC and
    ExtendedEFD with relevance: discounted)."""
    epc = name.endswith("epc")
    fn = ("extended_" if graded else "") + name
    novelty = ("1 - users(i) / N, N = distinct training users (1 for an item absent from train)"
               if epc else "-log2(users(i) / sum_j users(j)) (an item absent from train: the "
               "largest, -log2(min_j users(j) / sum_j users(j)))")
    rel = ("2^(grade(i) - threshold + 1) - 1 when grade(i) >= threshold, else 0" if graded
           else "[i in truth_col]")
    return BeyondMetric(
        name=fn,
        kind="per_user",
        summary=("Expected popularity complement" if epc else "Expected free discovery")
        + (" with graded relevance" if graded else "") + ": the rank-discounted "
        + ("share of a user's top k that is relevant and unseen by the training users." if epc
           else "inverse collection frequency of the relevant items of a user's top k."),
        formula=f"sum over the items i of the top k (rank r) of w(r) rel(i) nov(i) / sum of "
        f"w(r), rel(i) = {rel}, nov(i) = {novelty}, users(i) = distinct training users of i, "
        "w the discount (default 'log': 1 / log2(r + 1))",
        undefined=_EXPECTED_UNDEFINED + " NULL for every user when train is empty.",
        conventions="Log base 2. The denominator sums the discounts of the positions that hold "
        "an item (relevant or not). discount := 'none' gives the plain mean, 'rbp' Vargas and "
        "Castells' other browsing model." + (_GRADED_CONVENTIONS if graded else ""),
        peers=f"Elliot {'Extended' if graded else ''}{'EPC' if epc else 'EFD'}"
        + (" (relevance: discounted)" if graded else " (and its Extended form with the default "
           "binary relevance)") + " per user, from its source (Elliot is not on PyPI: checked "
        "by hand calculations).",
        source=_SOURCE_VARGAS,
        parameters=(_RECS, _TRAIN, _K, *discount_parameters("log"),
                    *((_THRESHOLD, _GRADES) if graded else (_TRUTH,)), _USER, _REC, _ITEM),
        sql=f"WITH {_train_users_sql()},\n" + (
            "total AS (SELECT count(DISTINCT u)::DOUBLE AS n FROM tr)\n" if epc else
            "total AS (SELECT sum(n) AS n, min(n) AS least FROM users)\n")
        + _expected_sql(fn, _EPC_NOVELTY if epc else _EFD_NOVELTY, graded),
        kernel=epc_kernel if epc else efd_kernel,
        truth="map" if graded else "list",
    )


EPC, EFD = _expected("epc", graded=False), _expected("efd", graded=False)
EXTENDED_EPC, EXTENDED_EFD = _expected("epc", graded=True), _expected("efd", graded=True)

# RecBole's tail (TailPercentage): tail_ratio > 1 is a count threshold, else the least popular
# floor(tail_ratio x M) items (at least one), ties by item. tail_ratio is read as a DOUBLE: a
# literal such as 0.29 is a DECIMAL in DuckDB, and 0.29 x 100 would be exactly 29 there where
# RecBole's float product (28.999...) cuts to 28.
_RATIO = "tail_ratio::DOUBLE"
_TAIL_RATIO = optional("tail_ratio", None, "NULL, or RecBole's tail: a share of the train items "
                       "in (0, 1] or a count threshold above 1 (see formula)",
                       bounds=Bounds(0, open_low=True, nullable=True))
_HEAD_SHARE = optional("head_share", 0.2, "share of train items in the head",
                       bounds=Bounds(0, 1, interval=True))
_RECBOLE_TAIL = (
    "SELECT item FROM (SELECT item, n, row_number() OVER (ORDER BY n, item) AS r, count(*) OVER "
    "() AS m FROM counts) WHERE tail_ratio IS NOT NULL AND CASE "
    f"{_when_invalid('long_tail_share', [_TAIL_RATIO])} WHEN {_RATIO} > 1 THEN n <= {_RATIO} "
    f"ELSE r <= greatest(floor(m * {_RATIO}), 1) END"
)

LONG_TAIL_SHARE = BeyondMetric(
    name="long_tail_share",
    kind="per_user",
    summary="The share of a user's top k that is in the long tail (not among the most popular "
    "training items).",
    formula="|{i in top k : i in tail}| / |top k|; tail = every item outside the head, head = "
    "the ceil(head_share x M) most popular of the M items in train (by interactions), items "
    "tied with the last one included; with tail_ratio given: tail = the items of train with at "
    "most tail_ratio interactions when tail_ratio > 1, else the max(floor(tail_ratio x M), 1) "
    "least popular items of train, ties broken by item_col ascending",
    undefined="NULL for a user whose top k is empty.",
    conventions="Items absent from train are in the tail (with tail_ratio given: not in it, "
    "RecBole's rule). head_share defaults to 0.2 (the 'short head' of 20% of items) and is not "
    "read when tail_ratio is given. Popularity counts rows of train.",
    peers="RecBole tailpercentage@k is tail_ratio := its tail_ratio (default 0.1) when every "
    "list holds k items and its internal item ids are the item_col values (they break its "
    "ties), from its source (recbole/evaluator/metrics.py TailPercentage). RePlay and RecTools "
    "have no such metric; the default form is checked by hand calculation.",
    source="Abdollahpouri, Burke and Mobasher (FLAIRS 2019), APLT (average percentage of long "
    "tail items)",
    parameters=(_RECS, _TRAIN, _K, _HEAD_SHARE, _TAIL_RATIO, _USER, _REC, _ITEM),
    # One join for both forms: the items of the set that decides (the head, or RecBole's tail),
    # marked with the share they add; the constant tail_ratio plans the other set away.
    sql=f"WITH counts AS (SELECT item, count(*) AS n FROM ({_train_items()}) "
    "WHERE item IS NOT NULL GROUP BY item),\n"
    "head AS (SELECT item FROM (SELECT item, rank() OVER (ORDER BY n DESC) AS r, "
    "count(*) OVER () AS m FROM counts) WHERE r - 1 < "
    f"{checked_sql('long_tail_share', 'head_share', _HEAD_SHARE)} * m),\n"
    "marked AS (SELECT item, 0.0 AS tail FROM head WHERE tail_ratio IS NULL UNION ALL SELECT "
    f"item, 1.0 AS tail FROM ({_RECBOLE_TAIL}))\n"
    "SELECT t.\"user\", avg(CASE WHEN t.item IS NULL THEN NULL ELSE coalesce(m.tail, CASE WHEN "
    "tail_ratio IS NULL THEN 1.0 ELSE 0.0 END) END) AS long_tail_share\n"
    f"FROM {_top('long_tail_share')} t LEFT JOIN marked m ON t.item = m.item GROUP BY t.\"user\"",
    kernel=long_tail_share_kernel,
)

SERENDIPITY = BeyondMetric(
    name="serendipity",
    kind="per_user",
    summary="Serendipity: relevant items ranked higher for the user than popularity ranks them "
    "for everyone.",
    formula="mean over the items i of the top k (position r) of max(p(r) - pu(i), 0) * rel(i), "
    "p(r) = (N + 1 - r) / N, pu(i) = (N + 1 - poprank(i)) / N (0 for an item absent from train), "
    "poprank = dense rank of training interactions, most first; N the catalogue size; rel(i) = "
    "1 when i is in the row's truth_col list",
    undefined="NULL for a user whose top k is empty or whose truth is NULL (an empty truth "
    "gives 0).",
    conventions="recs holds each user's truth next to the list (truth_col, a LIST of relevant "
    "items, as the accuracy metrics take it). Popularity counts rows of train; items with the "
    "same count share a rank. Mean over the items present in the top k.",
    peers="RecTools Serendipity(k) per user (calc_per_user), to 1e-12; RecTools gives 0 to a "
    "user without test interactions where duckrank needs an empty truth list for that. RePlay's "
    "Unexpectedness (items not in a baseline's list) is 1 - overlap_at(rec, baseline, k) for "
    "lists of at least k items (RePlay divides by k and gives 0 to a missing list).",
    source="Murakami, Mori and Orihara, 'Metrics for evaluating the serendipity of recommendation "
    "lists' (JSAI 2007), as RecTools defines it",
    parameters=(_RECS, _TRAIN, _K, *_CATALOG, _TRUTH, _USER, _REC, _ITEM),
    sql=f"WITH counts AS (SELECT item, count(*) AS n FROM ({_train_items()}) "
    "WHERE item IS NOT NULL GROUP BY item),\n"
    "ranks AS (SELECT item, dense_rank() OVER (ORDER BY n DESC) AS pop_rank FROM counts),\n"
    f"size AS (SELECT {_catalog_size('serendipity')} AS n)\n"
    "SELECT t.\"user\", avg(CASE WHEN t.item IS NOT NULL THEN greatest((size.n + 1 - t.pos) "
    "/ size.n - coalesce((size.n + 1 - r.pop_rank) / size.n, 0.0), 0.0) "
    "* list_contains(t.truth, t.item)::INTEGER END) AS serendipity\n"
    "FROM duckrank_top_items_truth('serendipity', recs, k, user_col, rec_col, truth_col) t "
    "LEFT JOIN ranks r ON t.item = r.item CROSS JOIN size GROUP BY t.\"user\"",
    kernel=serendipity_kernel,
)


METRICS: tuple[BeyondMetric, ...] = (ARP, SELF_INFORMATION, LONG_TAIL_SHARE, SERENDIPITY,
                                     EPC, EFD, EXTENDED_EPC, EXTENDED_EFD)
