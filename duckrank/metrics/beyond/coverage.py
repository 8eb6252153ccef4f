"""Coverage of the catalogue and of the users: how much of the catalogue the lists show, how
evenly, and how many users get a (full, unrepeated) list."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence

from duckrank.lazy import LazyModule
from duckrank.metrics.beyond.common import (
    _CATALOG,
    _CATALOG_ITEMS,
    _ITEM,
    _K,
    _REC,
    _RECS,
    _USER,
    DEFAULT_PERSISTENCE,
    BeyondMetric,
    Lists,
    _catalog_size,
    _discounted_exposure,
    _exposure_counts,
    _lists_sql,
    _recommended,
    _value,
    _weighted_exposure_counts,
    discount_parameters,
    named_table_sql,
    optional,
    quoted_identifier_sql,
)

np = LazyModule("numpy")

# --- kernels (plain Python/numpy over dicts of lists: the independent check) -----------------


def catalog_coverage_kernel(recs: Lists, k: int, catalog_size: int | None = None,
                            normalize: bool = True,
                            in_catalog: Iterable[Hashable] | None = None) -> float:
    """``in_catalog``: the catalogue's items, when only those recommended items count (the
    catalogue size is then their number)."""
    items = set(_exposure_counts(recs, k))
    if in_catalog is not None:
        catalog = set(in_catalog) - {None}
        items, catalog_size = items & catalog, len(catalog)
    return len(items) / catalog_size if normalize else float(len(items))


def exposure_entropy_kernel(recs: Lists, k: int, discount: str = "none",
                            persistence: float = DEFAULT_PERSISTENCE, unit: str = "bits",
                            per_item: bool = False) -> float:
    counts = np.array(list(_weighted_exposure_counts(recs, k, discount, persistence).values()),
                      dtype=np.float64)
    p = counts / counts.sum()
    entropy = float(-(p * (np.log(p) if unit == "nats" else np.log2(p))).sum())
    return entropy / len(counts) if per_item else entropy


def exposure_gini_kernel(recs: Lists, k: int, catalog_size: int, discount: str = "none",
                         persistence: float = DEFAULT_PERSISTENCE, denominator: str = "n",
                         complement: bool = False) -> float | None:
    counts = list(_weighted_exposure_counts(recs, k, discount, persistence).values())
    x = np.sort(np.array(counts + [0] * (catalog_size - len(counts)), dtype=np.float64))
    ranks = np.arange(1, catalog_size + 1)
    scale = catalog_size - 1 if denominator == "n_minus_1" else catalog_size
    if scale == 0:
        return None
    gini = float(((2 * ranks - catalog_size - 1) * x).sum() / (scale * x.sum()))
    return 1 - gini if complement else gini


def _items(top: list) -> list:
    """The items of a top k (NULL elements are not items)."""
    return [i for i in top if i is not None]


def user_coverage_kernel(recs: Lists, k: int, test_users: Iterable[Hashable] | None = None,
                         full: bool = False, normalize: bool = True
                         ) -> tuple[float | None, int, int]:
    """(share, covered users, users): users are those of ``test_users`` when given, else of
    recs; covered when its top k holds an item (``full``: k items). ``normalize`` false: the
    first value is the covered users too."""
    users = set(recs) if test_users is None else set(test_users) - {None}
    need = k if full else 1

    def covered(user: Hashable) -> bool:
        top = recs.get(user)
        return top is not None and len(_items(list(top)[:k])) >= need

    count = sum(covered(u) for u in users)
    if not normalize:
        return float(count), count, len(users)
    return (count / len(users) if users else None), count, len(users)


def sufficient_reco_kernel(recs: Lists, k: int, deep: bool = False
                           ) -> dict[Hashable, float | None]:
    def value(top: Sequence | None) -> float | None:
        if top is None:
            return None
        n = len(_items(list(top)[:k]))
        return n / k if deep else float(n >= k)

    return {u: value(top) for u, top in recs.items()}


def unrepeated_reco_kernel(recs: Lists, k: int, deep: bool = False
                           ) -> dict[Hashable, float | None]:
    def value(top: Sequence | None) -> float | None:
        items = _items(list(top or [])[:k])
        if not items:
            return None
        distinct = len(set(items))
        return distinct / len(items) if deep else float(distinct == len(items))

    return {u: value(top) for u, top in recs.items()}


# --- the records ------------------------------------------------------------------------------

_SOURCE_SHANI = ("Shani and Gunawardana, 'Evaluating Recommendation Systems', Recommender "
                 "Systems Handbook (2011), section 'Coverage'")

# catalog_coverage's options: RecTools' normalize=False (a count, no catalogue needed) and
# RePlay's Coverage (only the recommended items of the catalogue count).
_NORMALIZE_SHARE = optional("normalize", True, "true: the share of the catalogue; false: the "
                            "count (see formula)", boolean=True)
_IN_CATALOG = optional("in_catalog", False, "true: count only the recommended items that are in "
                       "the catalog table", boolean=True)

CATALOG_COVERAGE = BeyondMetric(
    name="catalog_coverage",
    kind="catalogue",
    summary="Catalogue coverage: the share of the catalogue that appears in some user's top k.",
    formula="|R| / catalogue size, R = the distinct items in the top k of all users (in_catalog "
    ":= true: those of them in the catalog table); normalize := false: |R|",
    undefined="NULL when the catalogue is empty (normalize := true). An error when in_catalog "
    "is true and `catalog` (a table) is not given.",
    conventions="The catalogue size is `catalog_size`, or the number of distinct non-NULL "
    "`item_col` values of the table named by `catalog` (exactly one of the two; neither is "
    "needed with normalize := false unless in_catalog is true). Every recommended item counts, "
    "also one outside the catalogue (the value can then exceed 1), unless in_catalog := true.",
    peers="RecTools CatalogCoverage(k, normalize=True) with its catalog; its default "
    "normalize=False and Elliot ItemCoverage (its cutoff) are normalize := false (counts, from "
    "their source). Microsoft Recommenders catalog_coverage with catalog := its train table (it "
    "takes no k: cut the lists first); RePlay Coverage(k) is in_catalog := true with catalog := "
    "its train table (its docstring example, from its source).",
    source=_SOURCE_SHANI,
    parameters=(_RECS, _K, *_CATALOG, _NORMALIZE_SHARE, _IN_CATALOG, _USER, _REC, _ITEM),
    # One branch reads the catalogue, the other not: the constant option plans the other away,
    # so the default form costs no join. The size is read only under normalize, so a count
    # needs no catalogue.
    sql="WITH x AS (SELECT item FROM "
    f"{_recommended('catalog_coverage')} WHERE NOT {_value('catalog_coverage', _IN_CATALOG)} "
    f"UNION ALL SELECT item FROM {_recommended('catalog_coverage')} WHERE in_catalog AND item "
    f"IN (SELECT c FROM {_CATALOG_ITEMS}))\n"
    "SELECT CASE WHEN in_catalog AND catalog IS NULL THEN error('catalog_coverage: in_catalog "
    ":= true counts the items of the catalog table; give catalog (a table name), got catalog "
    "NULL') WHEN "
    f"{_value('catalog_coverage', _NORMALIZE_SHARE)} THEN count(DISTINCT item) / "
    f"nullif({_catalog_size('catalog_coverage')}, 0) ELSE count(DISTINCT item)::DOUBLE END "
    "AS catalog_coverage FROM x",
    kernel=catalog_coverage_kernel,
)

_UNIT = optional("unit", "bits", "'bits' (log2) or 'nats' (natural log)",
                 choices=("bits", "nats"))
_PER_ITEM = optional("per_item", False, "true: divided by the number of distinct items "
                     "recommended", boolean=True)

EXPOSURE_ENTROPY = BeyondMetric(
    name="exposure_entropy",
    kind="catalogue",
    summary="Distributional coverage: the Shannon entropy (bits) of how often each item is "
    "recommended.",
    formula="-sum over recommended items i of p(i) log2 p(i), p(i) = e(i) / sum_j e(j), e(i) = "
    "the sum over the top-k positions (rank r) holding i of w(r), w the discount (1 by default: "
    "e(i) = the top-k lists holding i); unit := 'nats': ln for log2; per_item := true: "
    "divided by the number of distinct items recommended",
    undefined="NULL when no list holds an item.",
    conventions="Log base 2 (unit := 'bits'); unit := 'nats' takes the natural log (the bits "
    "x ln 2). Items never recommended have p = 0 and add nothing, so no catalogue is needed; "
    "the maximum is log2(catalogue size). per_item := true divides the entropy by the number "
    "of distinct items recommended. discount := 'log' or 'rbp' weighs each appearance by its "
    "rank as ndcg or rbp do (rank-weighted exposure).",
    peers="Microsoft Recommenders distributional_coverage (log2; it takes no k: cut the lists "
    "first). RecBole shannonentropy@k is unit := 'nats', per_item := true when every list "
    "holds k items (it divides the counts by users x k), from its source "
    "(recbole/evaluator/metrics.py).",
    source=_SOURCE_SHANI + ", eq. (21)",
    parameters=(_RECS, _K, *discount_parameters("none"),
                _UNIT, _PER_ITEM, _USER, _REC),
    sql="SELECT sum(n * (log2(t) - log2(n))) / any_value(t) * CASE WHEN "
    f"{_value('exposure_entropy', _UNIT)} = 'nats' THEN ln(2) ELSE 1 END "
    f"/ CASE WHEN {_value('exposure_entropy', _PER_ITEM)} THEN count(*) ELSE 1 END "
    "AS exposure_entropy "
    f"FROM (SELECT n, sum(n) OVER () AS t FROM {_discounted_exposure('exposure_entropy')})",
    kernel=exposure_entropy_kernel,
)

_DENOMINATOR = optional("denominator", "n", "'n' (N, the catalogue size) or 'n_minus_1' (N - 1)",
                        choices=("n", "n_minus_1"))
_COMPLEMENT = optional("complement", False, "true: 1 - the Gini index", boolean=True)

# The Gini index over e (n, r, d, size: the exposures ranked, the distinct items and N).
_GINI = (
    "sum((2 * (size - d + r) - size - 1) * n) / (CASE WHEN "
    f"{_value('exposure_gini', _DENOMINATOR)} = 'n_minus_1' THEN "
    "nullif(max(size) - 1, 0) ELSE max(size) END * sum(n))"
)


def _complemented(fn: str, value: str) -> str:
    """SQL of ``value``, or 1 - it when the complement option is true."""
    return f"CASE WHEN {_value(fn, _COMPLEMENT)} THEN 1 - {value} ELSE {value} END"


EXPOSURE_GINI = BeyondMetric(
    name="exposure_gini",
    kind="catalogue",
    summary="Gini index of how often each catalogue item is recommended (0: evenly; near 1: a "
    "few items get all exposure).",
    formula="G = sum over j = 1..N of (2j - N - 1) x_(j) / (D sum x), x_(1) <= ... <= x_(N) "
    "the exposures of the N catalogue items (items never recommended count as 0), D = N "
    "(denominator := 'n_minus_1': N - 1); complement := true: 1 - G",
    undefined="NULL when no list holds an item; an error when more distinct items were "
    "recommended than the catalogue holds, or, with `catalog` a table, when a recommended item "
    "is not in it (the formula counts the catalogue's items only).",
    conventions="Divides by N (denominator := 'n', the StatsDirect form LensKit uses); "
    "denominator := 'n_minus_1' divides by N - 1 (Shani and Gunawardana), which is NULL for "
    "N = 1. complement := true gives 1 - the value (1: even exposure). Each appearance in a "
    "top k counts 1 by default; discount := 'log' or 'rbp' counts w(rank) instead "
    "(rank-weighted exposure).",
    peers="LensKit's ListGini (lenskit.stats.gini of the number of lists holding each item of "
    "its vocabulary) is this value, from its source; its ExposureGini (default weight "
    "GeometricRankWeight(0.85)) is discount := 'rbp' (persistence 0.85, the default). Not "
    "compared by running LensKit (it pulls torch; hand calculations from its source). Elliot "
    "Gini is denominator := 'n_minus_1', complement := true with its num_items as the "
    "catalogue (elliot/evaluation/metrics/diversity/gini_index, from its source).",
    source=_SOURCE_SHANI + ", Gini index",
    parameters=(_RECS, _K, *_CATALOG, *discount_parameters("none"),
                _DENOMINATOR, _COMPLEMENT, _USER, _REC, _ITEM),
    # An item outside a named catalogue would take the place of a catalogue item counted 0:
    # a wrong number in silence, so it is refused (a catalogue given by size cannot be checked).
    sql=f"WITH x AS (FROM {_discounted_exposure('exposure_gini')}),\n"
    "outside AS (SELECT min(item::VARCHAR) AS item FROM x WHERE catalog IS NOT NULL AND item "
    f"NOT IN (SELECT c FROM {_CATALOG_ITEMS} WHERE c IS NOT NULL)),\n"
    "e AS (SELECT n, row_number() OVER (ORDER BY n) AS r, count(*) OVER () AS d, "
    f"{_catalog_size('exposure_gini')} AS size FROM x)\n"
    "SELECT CASE WHEN (SELECT item FROM outside) IS NOT NULL THEN error('exposure_gini: item ' "
    "|| (SELECT item FROM outside) || ' was recommended but is not in the catalog table "
    "(catalog)') "
    "WHEN max(d) > max(size) THEN error('exposure_gini: ' || max(d) || ' distinct "
    "items were recommended, more than the catalogue size ' || max(size)::BIGINT) "
    f"ELSE {_complemented('exposure_gini', _GINI)} END AS exposure_gini FROM e",
    kernel=exposure_gini_kernel,
)

# --- users: who gets a list, a full one, one without repeats (RecTools' data-quality metrics) ---

_DEEP = optional("deep", False, "false: 1 or 0 per user; true: the share (see formula)",
                 boolean=True)
# The non-NULL items of a row's top k (`top` of _lists_sql). list_count is 2x faster than
# len(list_filter(top, lambda x: x IS NOT NULL)) at 1,000,000 rows, and list_unique 1.15x
# faster than len(list_distinct(top)) (both skip NULL).
_N_ITEMS = "list_count(top)"

# The users to cover (column u): test's user_col values when test is given, none otherwise.
_TEST_USERS = (
    "query(CASE WHEN test IS NULL THEN 'SELECT NULL AS u LIMIT 0' ELSE 'SELECT ' || "
    f"{quoted_identifier_sql('user_col')} || ' AS u FROM ' || {named_table_sql('test')} END)"
)

_FULL_LISTS = optional("full_lists", False, "false: covered with one item; true: with k items",
                       boolean=True)
_NORMALIZE_USERS = optional("normalize", True, "true: user_coverage is the share; false: the "
                            "count", boolean=True)

USER_COVERAGE = BeyondMetric(
    name="user_coverage",
    kind="catalogue",
    summary="User coverage: the share of users whose top k holds an item (with full_lists := true: "
    "k items); normalize := false: their number.",
    formula="|{u in U : top k of u holds at least one item (full_lists: k items)}| / |U|, U the "
    "distinct non-NULL user_col values of `test` when given, else the distinct users of recs; "
    "normalize := false: the numerator alone",
    undefined="NULL when U is empty (normalize := false: 0).",
    conventions="Gives three columns: `user_coverage` (the share; with normalize := false the "
    "count, so that a request gives it), `covered_users` (the count above the line) and `users` "
    "(|U|). A user of `test` without a row in recs, or with a NULL "
    "or empty list, is not covered; a user with several rows in recs is covered when one of "
    "them is. NULL elements are not items (full_lists needs k non-NULL items in rec[1:k]).",
    peers="Elliot UserCoverage is `covered_users`, i.e. normalize := false (any k; its lists "
    "are never cut below one item: it counts the users with a non-empty list) and "
    "UserCoverageAtN is `covered_users` with full_lists := true at its cutoff (counts, from its "
    "source); RecTools CoveredUsers(k).calc(reco, interactions) is `user_coverage` "
    "with test := the interactions table, to 1e-12.",
    source="Ge, Delgado-Battenfeld and Jannach, 'Beyond accuracy: evaluating recommender "
    "systems by coverage and serendipity' (RecSys 2010), prediction coverage over users; "
    "Elliot (Anelli et al., SIGIR 2021) and RecTools 0.19 (rectools.metrics.dq)",
    parameters=(_RECS, _K, optional("test", None, "name of a table whose user_col values are the "
                                    "users to cover (e.g. the test interactions)"),
                _FULL_LISTS, _NORMALIZE_USERS, _USER, _REC),
    # The covered users as a set probed by IN (a mark join), not a GROUP BY of recs joined to
    # the users: 0.17 s against 0.42 s at 1,000,000 users and 5,000,000 test rows.
    sql=f"WITH l AS ({_lists_sql('user_coverage')}),\n"
    f"c AS (SELECT \"user\" FROM l WHERE coalesce({_N_ITEMS} >= CASE WHEN "
    f"{_value('user_coverage', _FULL_LISTS)} THEN kk ELSE 1 END, false)),\n"
    "u AS (SELECT DISTINCT \"user\" AS u FROM l WHERE test IS NULL AND \"user\" IS NOT NULL "
    f"UNION ALL SELECT DISTINCT u FROM {_TEST_USERS} WHERE test IS NOT NULL AND u IS NOT NULL)\n"
    f"SELECT CASE WHEN {_value('user_coverage', _NORMALIZE_USERS)} THEN covered / nullif(users, 0) "
    "ELSE covered::DOUBLE END AS user_coverage, covered AS covered_users, users FROM "
    "(SELECT count(*) FILTER (WHERE m) AS covered, count(*) AS users FROM (SELECT u IN "
    "(SELECT \"user\" FROM c) AS m FROM u))",
    kernel=user_coverage_kernel,
)

SUFFICIENT_RECO = BeyondMetric(
    name="sufficient_reco",
    kind="per_user",
    summary="Whether a user's top k is full: 1 when it holds k items, else 0 (deep := true: "
    "the share of the k positions filled).",
    formula="n = the non-NULL items of rec[1:k]; [n >= k] (deep := true: n / k)",
    undefined="NULL for a NULL list; an empty list gives 0 (it is the case the metric looks "
    "for).",
    conventions="One row per row of recs. A NULL element is an empty position. The mean over "
    "users is the share of users with a full top k.",
    peers="RecTools SufficientReco(k, deep) per user (calc_per_user), to 1e-12 (it gives "
    "integers 0 and 1 where deep is false; a user with no row at all is not in its table).",
    source="RecTools 0.19, rectools.metrics.dq (recommendations data quality)",
    parameters=(_RECS, _K, _DEEP, _USER, _REC),
    sql=f"SELECT \"user\", CASE WHEN top IS NULL THEN NULL WHEN "
    f"{_value('sufficient_reco', _DEEP)} THEN {_N_ITEMS} / kk ELSE "
    f"({_N_ITEMS} >= kk)::DOUBLE END AS sufficient_reco FROM ({_lists_sql('sufficient_reco')})",
    kernel=sufficient_reco_kernel,
)

UNREPEATED_RECO = BeyondMetric(
    name="unrepeated_reco",
    kind="per_user",
    summary="Whether a user's top k is free of repeated items: 1 or 0 (deep := true: the share "
    "of its items that are not a repeat of an item above them).",
    formula="n = the non-NULL items of rec[1:k], d = the distinct ones; [d = n] (deep := true: "
    "d / n)",
    undefined="NULL for a user whose top k holds no item (a NULL or empty list).",
    conventions="One row per row of recs. NULL elements are not items (not repeats either).",
    peers="RecTools UnrepeatedReco(k, deep) per user (calc_per_user), to 1e-12 (it leaves out "
    "a user with no recommendation in the top k, as the NULL here).",
    source="RecTools 0.19, rectools.metrics.dq (recommendations data quality)",
    parameters=(_RECS, _K, _DEEP, _USER, _REC),
    sql="SELECT \"user\", CASE WHEN n = 0 THEN NULL WHEN "
    f"{_value('unrepeated_reco', _DEEP)} THEN d / n ELSE (d = n)::DOUBLE END "
    f"AS unrepeated_reco FROM (SELECT \"user\", coalesce({_N_ITEMS}, 0) AS n, "
    f"list_unique(top) AS d FROM ({_lists_sql('unrepeated_reco')}))",
    kernel=unrepeated_reco_kernel,
)

METRICS: tuple[BeyondMetric, ...] = (CATALOG_COVERAGE, EXPOSURE_ENTROPY, EXPOSURE_GINI,
                                     USER_COVERAGE, SUFFICIENT_RECO, UNREPEATED_RECO)
