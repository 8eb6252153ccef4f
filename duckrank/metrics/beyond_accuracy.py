"""Beyond-accuracy metrics (issue 17): coverage, popularity and novelty, diversity, and the
similarity of two systems' lists. One ``BeyondMetric`` record per metric: formula, conventions,
peers, source, the SQL body that ``duckrank.render.beyond_accuracy`` turns into a DuckDB macro,
and a numpy/Python kernel that is the tests' independent check.

Why these are not ``record.Metric``s: most need data that is not in the row (training
interactions, item embeddings, categories, a catalogue) and several are one number over all users.
Copying a catalogue-sized MAP into every row would cost O(users x catalogue); instead the metrics
that read such tables are *table macros* over ``query_table(name)``: they unnest each user's top k
once (``duckrank_top_items``) and join it with the side table, so the work is O(users x k +
catalogue) and runs in DuckDB's parallel hash joins and aggregates. The list-similarity metrics
need only the two lists of a row, so they are scalar macros like the accuracy metrics.

Kinds (``BeyondMetric.kind``):

* ``"catalogue"``: a table macro giving one row for the whole recommendations table;
* ``"per_user"``: a table macro giving one row per user of the recommendations table, ``user``
  and the value (NULL where undefined, so that ``avg`` skips it as it skips undefined accuracy);
* ``"pair"``: a scalar macro of two lists, one value per row.

Shared input conventions (every table macro): ``recs`` names a table or view (as a string) with
a user column (``user_col``, default ``'user'``) and a LIST column of recommended items, best
first (``rec_col``, default ``'rec'``); the top k is ``rec[1:k]``. Side tables name their item
column ``item_col`` (default ``'item'``; training interactions also use ``user_col``). A user with
an empty or NULL list has a row (value NULL). NULL elements are not items (their positions still
count as ranks). Lists are assumed to hold each item once, as the peers assume; a repeated item
counts at each of its positions.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from duckrank import seeded_hash

Lists = dict[Hashable, Sequence[Hashable] | None]


@dataclass(frozen=True)
class Parameter:
    """A macro parameter; ``default`` None means it must be given (positional)."""

    name: str
    doc: str
    default: str | None = None


@dataclass(frozen=True)
class BeyondMetric:
    name: str
    kind: str
    summary: str
    formula: str
    undefined: str
    conventions: str
    peers: str
    source: str
    parameters: tuple[Parameter, ...]
    sql: str
    kernel: Callable[..., object]

    @property
    def signature(self) -> str:
        """How the macro is called: ``catalog_coverage(recs, k, catalog := NULL, ...)``."""
        return f"{self.name}({self.parameter_list})"

    @property
    def parameter_list(self) -> str:
        return ", ".join(
            p.name if p.default is None else f"{p.name} := {p.default}" for p in self.parameters
        )


# --- shared SQL -------------------------------------------------------------------------------


def _column(parameter: str) -> str:
    """The column whose name is the value of a macro parameter, matched exactly (``COLUMNS('x')``
    alone is a regular expression: 'rec' would also pick 'rec_b')."""
    return f"COLUMNS(lambda c: c = {parameter})"


def _k_sql(fn: str) -> str:
    """k checked and as BIGINT; ``fn`` is SQL text giving the function's name."""
    return (
        f"CASE WHEN k IS NULL OR k < 1 OR k <> trunc(k) THEN error({fn} || ': k must be a "
        f"positive integer, got ' || coalesce(k::VARCHAR, 'NULL')) ELSE k::BIGINT END"
    )


def _k(name: str) -> str:
    return _k_sql(f"'{name}'")


def _unit_check(fn: str, name: str, low: str, high: str, closed: bool) -> str:
    """An error unless ``name`` lies in [low, high] (``closed``) or (low, high)."""
    outside = (f"{name} < {low} OR {name} > {high}" if closed
               else f"{name} <= {low} OR {name} >= {high}")
    interval = f"[{low}, {high}]" if closed else f"({low}, {high})"
    return (
        f"CASE WHEN {name} IS NULL OR {outside} THEN error('{fn}: {name} must be a number in "
        f"{interval}, got ' || coalesce({name}::VARCHAR, 'NULL')) END"
    )


def _top_items_macro(name: str, truth: bool) -> str:
    """Each user's top k, one row per position: (user, item, pos), and with ``truth`` also
    ``truth`` (the row's truth_col list, for the metrics that need relevance). A user whose top k
    is empty gets one row (pos and item NULL), so that the per-user macros give it a row with a
    NULL value."""
    extra_parameter, extra_column, passed = (
        (", truth_col", f", {_column('truth_col')} AS truth", ", truth") if truth else ("", "", "")
    )
    return (
        f"CREATE OR REPLACE MACRO {name}(fn, recs, k, user_col, rec_col{extra_parameter}) "
        "AS TABLE\n"
        f"SELECT \"user\"{passed}, unnest(CASE WHEN coalesce(len(top), 0) = 0 THEN [NULL] "
        "ELSE top END) AS item,\n"
        "  unnest(CASE WHEN coalesce(len(top), 0) = 0 THEN [NULL] ELSE range(1, len(top) + 1) "
        "END) AS pos\n"
        # The list is sliced a level up: DuckDB 1.4 and 1.5 cannot parse COLUMNS(...)[1:k].
        f"FROM (SELECT \"user\", r[1:{_k_sql('fn')}] AS top{passed} FROM (SELECT "
        f"{_column('user_col')} AS \"user\", {_column('rec_col')} AS r{extra_column} "
        "FROM query_table(recs)))"
    )


TOP_ITEMS = _top_items_macro("duckrank_top_items", truth=False)
TOP_ITEMS_WITH_TRUTH = _top_items_macro("duckrank_top_items_truth", truth=True)

# How often each item is in a top k, over all users.
EXPOSURE = (
    "CREATE OR REPLACE MACRO duckrank_exposure(fn, recs, k, user_col, rec_col) AS TABLE\n"
    "SELECT item, count(*)::DOUBLE AS n "
    "FROM duckrank_top_items(fn, recs, k, user_col, rec_col) WHERE item IS NOT NULL GROUP BY item"
)

def quoted_identifier_sql(parameter: str) -> str:
    """SQL text giving the value of a macro parameter as a quoted identifier, for a query()
    string: a column name, never SQL."""
    return f"'\"' || replace({parameter}, '\"', '\"\"') || '\"'"


def named_table_sql(parameter: str) -> str:
    """SQL text giving ``query_table('<value>')`` for a query() string: the table named by a
    macro parameter, as a string literal (quotes doubled) that query_table reads as a name ('my
    table', 's.t', '"a.b"'), never as SQL. Spliced in as it is, a value bound as a query
    parameter ran as SQL (a subquery read a file), and a name that needs quoting failed. query()
    is there only because query_table(NULL) does not bind: the caller reads the table when the
    parameter is not NULL."""
    return f"'query_table(''' || replace({parameter}, '''', '''''') || ''')'"


# The catalogue's items (column c): the item_col values of the table named by catalog, none
# when it is NULL.
_CATALOG_ITEMS = (
    "query(CASE WHEN catalog IS NULL THEN 'SELECT NULL AS c LIMIT 0' ELSE 'SELECT ' || "
    f"{quoted_identifier_sql('item_col')} || ' AS c FROM ' || {named_table_sql('catalog')} END)"
)

# The catalogue size: given as a number, or the distinct non-NULL items of a table's column.
CATALOG_SIZE = (
    "CREATE OR REPLACE MACRO duckrank_catalog_size(fn, catalog, catalog_size, item_col) AS\n"
    "CASE WHEN catalog IS NULL AND catalog_size IS NULL THEN error(fn || ': give catalog (a "
    "table name) or catalog_size (a number of items)')\n"
    "  WHEN catalog IS NOT NULL AND catalog_size IS NOT NULL THEN error(fn || ': give catalog or "
    "catalog_size, not both')\n"
    "  WHEN catalog_size < 1 OR catalog_size <> trunc(catalog_size) THEN error(fn || ': "
    "catalog_size must be a positive integer, got ' || catalog_size::VARCHAR)\n"
    f"  ELSE coalesce(catalog_size, (SELECT count(DISTINCT c) FROM {_CATALOG_ITEMS}))::DOUBLE END"
)

HELPERS = (TOP_ITEMS, TOP_ITEMS_WITH_TRUTH, EXPOSURE, CATALOG_SIZE)

_RECS = Parameter("recs", "name of the table or view of recommendations (a string)")
_K = Parameter("k", "cut-off: the top k of each list (a positive integer)")
_USER = Parameter("user_col", "user column of recs (and of train)", "'user'")
_REC = Parameter("rec_col", "LIST column of recs, best first", "'rec'")
_ITEM = Parameter("item_col", "item column of the side table", "'item'")
_CATALOG = (
    Parameter("catalog", "name of a table of the catalogue's items (distinct item_col values)",
              "NULL"),
    Parameter("catalog_size", "the number of items in the catalogue", "NULL"),
)
_TRAIN = Parameter("train", "name of the table of training interactions (user_col, item_col)")


def _top(fn: str) -> str:
    return f"duckrank_top_items('{fn}', recs, k, user_col, rec_col)"


def _exposure(fn: str) -> str:
    return f"duckrank_exposure('{fn}', recs, k, user_col, rec_col)"


def _catalog_size(fn: str) -> str:
    return f"duckrank_catalog_size('{fn}', catalog, catalog_size, item_col)"


def _one_row_per_item(fn: str, table: str, rows: str) -> str:
    """``rows`` (a query with an ``item`` column, read from the side table ``table``), refusing
    an item given twice: the join would count it twice, a wrong number without a sign."""
    return (
        f"SELECT * EXCLUDE (duckrank_rows) FROM (SELECT *, count(*) OVER (PARTITION BY item) "
        f"AS duckrank_rows FROM ({rows})) WHERE CASE WHEN item IS NOT NULL AND duckrank_rows > 1 "
        f"THEN error('{fn}: {table} holds item ' || item::VARCHAR || ' more than once') "
        "ELSE true END"
    )


def _train_items() -> str:
    return f"SELECT {_column('item_col')} AS item FROM query_table(train)"


# --- kernels (plain Python/numpy over dicts of lists: the independent check) -----------------


def _tops(recs: Lists, k: int) -> dict[Hashable, list[Hashable]]:
    return {u: [i for i in (items or [])[:k] if i is not None] for u, items in recs.items()}


def _exposure_counts(recs: Lists, k: int) -> Counter:
    return Counter(i for items in _tops(recs, k).values() for i in items)


def catalog_coverage_kernel(recs: Lists, k: int, catalog_size: int) -> float:
    return len(_exposure_counts(recs, k)) / catalog_size


def exposure_entropy_kernel(recs: Lists, k: int) -> float:
    counts = np.array(list(_exposure_counts(recs, k).values()), dtype=np.float64)
    p = counts / counts.sum()
    return float(-(p * np.log2(p)).sum())


def exposure_gini_kernel(recs: Lists, k: int, catalog_size: int) -> float:
    counts = list(_exposure_counts(recs, k).values())
    x = np.sort(np.array(counts + [0] * (catalog_size - len(counts)), dtype=np.float64))
    ranks = np.arange(1, catalog_size + 1)
    return float(((2 * ranks - catalog_size - 1) * x).sum() / (catalog_size * x.sum()))


def _per_user(recs: Lists, k: int, value: Callable[[list[Hashable]], float | None]
              ) -> dict[Hashable, float | None]:
    return {u: (value(items) if items else None) for u, items in _tops(recs, k).items()}


def arp_kernel(recs: Lists, k: int, train: Iterable[tuple[Hashable, Hashable]],
               normalize: bool = False) -> dict[Hashable, float | None]:
    pairs = list(train)
    counts = Counter(i for _, i in pairs)
    scale = len(pairs) if normalize else 1
    return _per_user(recs, k, lambda items: float(np.mean([counts[i] for i in items])) / scale)


def self_information_kernel(recs: Lists, k: int, train: Iterable[tuple[Hashable, Hashable]],
                            normalize: bool = False) -> dict[Hashable, float | None]:
    pairs = set(train)
    n_users = len({u for u, _ in pairs})
    users = Counter(i for _, i in pairs)
    scale = math.log2(n_users) if normalize else 1.0

    def value(items: list[Hashable]) -> float | None:
        if scale == 0:
            return None
        return float(np.mean([-math.log2(max(users[i], 1) / n_users) for i in items])) / scale

    return _per_user(recs, k, value)


def long_tail_share_kernel(recs: Lists, k: int, train: Iterable[tuple[Hashable, Hashable]],
                           head_share: float = 0.2) -> dict[Hashable, float | None]:
    counts = Counter(i for _, i in train)
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


def _mean_pairwise(values: list, distance: Callable[[object, object], float | None]
                   ) -> float | None:
    d = [distance(a, b) for j, b in enumerate(values) for a in values[:j]]
    d = [x for x in d if x is not None]
    return float(np.mean(d)) if d else None


def _cosine_distance(a: np.ndarray | None, b: np.ndarray | None) -> float | None:
    if a is None or b is None or not np.any(a) or not np.any(b):
        return None
    return 1.0 - float(a @ b) / (float(np.linalg.norm(a)) * float(np.linalg.norm(b)))


def ild_embedding_kernel(recs: Lists, k: int, embeddings: dict[Hashable, Sequence[float]]
                         ) -> dict[Hashable, float | None]:
    vectors = {i: np.asarray(v, dtype=np.float64) for i, v in embeddings.items()}
    return _per_user(recs, k, lambda items: _mean_pairwise(
        [vectors.get(i) for i in items], _cosine_distance))


def ild_category_kernel(recs: Lists, k: int, categories: dict[Hashable, Hashable]
                        ) -> dict[Hashable, float | None]:
    def value(items: list[Hashable]) -> float | None:
        known = [categories[i] for i in items if categories.get(i) is not None]
        return _mean_pairwise(known, lambda a, b: float(a != b))

    return _per_user(recs, k, value)


def _jaccard_distance(a: set, b: set) -> float | None:
    union = len(a | b)
    return None if union == 0 else 1.0 - len(a & b) / union


def inter_user_diversity_kernel(recs: Lists, k: int) -> float | None:
    """The exact value: the mean over every pair of users."""
    users = sorted(recs)
    tops = _tops(recs, k)
    return _mean_pairwise([set(tops[u]) for u in users], _jaccard_distance)


def overlap_kernel(rec: Sequence | None, other: Sequence | None, k: int) -> float | None:
    if rec is None or other is None:
        return None
    top, reference = [i for i in rec[:k] if i is not None], set(other[:k])
    return None if not top else sum(i in reference for i in top) / len(top)


def jaccard_kernel(rec: Sequence | None, other: Sequence | None, k: int) -> float | None:
    if rec is None or other is None:
        return None
    distance = _jaccard_distance(set(rec[:k]) - {None}, set(other[:k]) - {None})
    return None if distance is None else 1.0 - distance


def rbo_kernel(rec: Sequence | None, other: Sequence | None, k: int, p: float = 0.9,
               variant: str = "min") -> float | None:
    """Webber, Moffat and Zobel (2010): eq. (11) for 'min', eq. (32) for 'ext', and for
    'prefix' the sum of eq. (7) stopped at depth k, from the overlaps X_d = |rec[:d] & other[:d]|
    written out literally."""
    if rec is None or other is None:
        return None
    a, b = list(rec[:k]), list(other[:k])
    if not a or not b:
        return None

    def x(d: int) -> int:
        return len(set(a[:d]) & set(b[:d]))

    if variant == "prefix":
        return (1 - p) * sum(p ** (d - 1) * x(d) / d for d in range(1, k + 1))
    if variant == "min":
        return (1 - p) / p * (sum((x(d) - x(k)) * p ** d / d for d in range(1, k + 1))
                              - x(k) * math.log(1 - p))
    s, ll = min(len(a), len(b)), max(len(a), len(b))
    sum1 = sum(x(d) / d * p ** d for d in range(1, ll + 1))
    sum2 = sum(x(s) * (d - s) / (s * d) * p ** d for d in range(s + 1, ll + 1))
    return (1 - p) / p * (sum1 + sum2) + ((x(ll) - x(s)) / ll + x(s) / s) * p ** ll


# --- the records ------------------------------------------------------------------------------

_SOURCE_SHANI = ("Shani and Gunawardana, 'Evaluating Recommendation Systems', Recommender "
                 "Systems Handbook (2011), section 'Coverage'")

CATALOG_COVERAGE = BeyondMetric(
    name="catalog_coverage",
    kind="catalogue",
    summary="Catalogue coverage: the share of the catalogue that appears in some user's top k.",
    formula="|distinct items in the top k of all users| / catalogue size",
    undefined="NULL when the catalogue is empty.",
    conventions="The catalogue size is `catalog_size`, or the number of distinct non-NULL "
    "`item_col` values of the table named by `catalog` (exactly one of the two). Every "
    "recommended item counts, also one outside the catalogue (the value can then exceed 1).",
    peers="RecTools CatalogCoverage(k, normalize=True) with its catalog; Microsoft Recommenders "
    "catalog_coverage with catalog := its train table (it takes no k: cut the lists first); "
    "RePlay Coverage counts only recommended items that are in its train table.",
    source=_SOURCE_SHANI,
    parameters=(_RECS, _K, *_CATALOG, _USER, _REC, _ITEM),
    sql=f"SELECT count(*) / nullif({_catalog_size('catalog_coverage')}, 0) AS catalog_coverage "
    f"FROM {_exposure('catalog_coverage')}",
    kernel=catalog_coverage_kernel,
)

EXPOSURE_ENTROPY = BeyondMetric(
    name="exposure_entropy",
    kind="catalogue",
    summary="Distributional coverage: the Shannon entropy (bits) of how often each item is "
    "recommended.",
    formula="-sum over recommended items i of p(i) log2 p(i), p(i) = (top-k lists holding i) / "
    "(items in all top-k lists)",
    undefined="NULL when no list holds an item.",
    conventions="Log base 2. Items never recommended have p = 0 and add nothing, so no catalogue "
    "is needed; the maximum is log2(catalogue size).",
    peers="Microsoft Recommenders distributional_coverage (log2; it takes no k: cut the lists "
    "first).",
    source=_SOURCE_SHANI + ", eq. (21)",
    parameters=(_RECS, _K, _USER, _REC),
    sql="SELECT sum(n * (log2(t) - log2(n))) / any_value(t) AS exposure_entropy "
    f"FROM (SELECT n, sum(n) OVER () AS t FROM {_exposure('exposure_entropy')})",
    kernel=exposure_entropy_kernel,
)

EXPOSURE_GINI = BeyondMetric(
    name="exposure_gini",
    kind="catalogue",
    summary="Gini index of how often each catalogue item is recommended (0: evenly; near 1: a "
    "few items get all exposure).",
    formula="sum over j = 1..N of (2j - N - 1) x_(j) / (N sum x), x_(1) <= ... <= x_(N) the "
    "exposures of the N catalogue items (items never recommended count as 0)",
    undefined="NULL when no list holds an item; an error when more distinct items were "
    "recommended than the catalogue holds, or, with `catalog` a table, when a recommended item "
    "is not in it (the formula counts the catalogue's items only).",
    conventions="Divides by N (the StatsDirect form LensKit uses), not N - 1 (Shani and "
    "Gunawardana): multiply by N / (N - 1) for that one. Each appearance in a top k counts 1 "
    "(no rank discount).",
    peers="LensKit's ListGini (lenskit.stats.gini of the number of lists holding each item of "
    "its vocabulary) is this value, from its source; its ExposureGini weighs each position by "
    "p^(rank - 1) first. Not compared by running LensKit (not a test dependency here).",
    source=_SOURCE_SHANI + ", Gini index",
    parameters=(_RECS, _K, *_CATALOG, _USER, _REC, _ITEM),
    # An item outside a named catalogue would take the place of a catalogue item counted 0:
    # a wrong number in silence, so it is refused (a catalogue given by size cannot be checked).
    sql=f"WITH x AS (FROM {_exposure('exposure_gini')}),\n"
    "outside AS (SELECT min(item::VARCHAR) AS item FROM x WHERE catalog IS NOT NULL AND item "
    f"NOT IN (SELECT c FROM {_CATALOG_ITEMS} WHERE c IS NOT NULL)),\n"
    "e AS (SELECT n, row_number() OVER (ORDER BY n) AS r, count(*) OVER () AS d, "
    f"{_catalog_size('exposure_gini')} AS size FROM x)\n"
    "SELECT CASE WHEN (SELECT item FROM outside) IS NOT NULL THEN error('exposure_gini: item ' "
    "|| (SELECT item FROM outside) || ' was recommended but is not in the catalog table "
    "(catalog)') "
    "WHEN max(d) > max(size) THEN error('exposure_gini: ' || max(d) || ' distinct "
    "items were recommended, more than the catalogue size ' || max(size)::BIGINT) "
    "ELSE sum((2 * (size - d + r) - size - 1) * n) / (max(size) * sum(n)) END AS exposure_gini "
    "FROM e",
    kernel=exposure_gini_kernel,
)

_NORMALIZE = Parameter("normalize", "see conventions", "false")

ARP = BeyondMetric(
    name="arp",
    kind="per_user",
    summary="Average recommendation popularity: the mean training popularity of a user's top k.",
    formula="mean over the items i of the top k of pop(i), pop(i) = training interactions with "
    "i; with normalize := true, divided by the number of training interactions",
    undefined="NULL for a user whose top k is empty.",
    conventions="An item absent from train has popularity 0. Interactions are rows of train "
    "(a repeated user-item pair counts again), as in RecTools. Mean over the items present in "
    "the top k (min(k, len(rec)) of them).",
    peers="RecTools AvgRecPopularity(k, normalize) per user (calc_per_user), to 1e-12.",
    source="Abdollahpouri, Burke and Mobasher, 'Managing popularity bias in recommender systems "
    "with personalized re-ranking' (FLAIRS 2019), ARP",
    parameters=(_RECS, _TRAIN, _K, _NORMALIZE, _USER, _REC, _ITEM),
    sql=f"WITH pop AS ({_train_items()}),\n"
    "counts AS (SELECT item, count(*)::DOUBLE AS n FROM pop WHERE item IS NOT NULL GROUP BY item)\n"
    "SELECT t.\"user\", avg(CASE WHEN t.item IS NOT NULL THEN coalesce(c.n, 0) END) / "
    "CASE WHEN normalize THEN (SELECT count(item) FROM pop) ELSE 1 END AS arp\n"
    f"FROM {_top('arp')} t LEFT JOIN counts c ON t.item = c.item GROUP BY t.\"user\"",
    kernel=arp_kernel,
)

SELF_INFORMATION = BeyondMetric(
    name="self_information",
    kind="per_user",
    summary="Novelty as mean self-information (mean inverse user frequency) of a user's top k.",
    formula="mean over the items i of the top k of -log2(users(i) / N), users(i) = distinct "
    "training users of i, N = distinct training users; with normalize := true, divided by "
    "log2(N)",
    undefined="NULL for a user whose top k is empty, and with normalize := true when N = 1.",
    conventions="Log base 2. An item absent from train counts as seen by one user (RecTools' "
    "and RePlay's rule), so its novelty is log2(N), the largest. Mean over the items present in "
    "the top k.",
    peers="RecTools MeanInvUserFreq(k) per user, to 1e-12. RePlay Surprisal(k) equals "
    "normalize := true when every list has at least k items (RePlay divides by k). Microsoft "
    "Recommenders novelty uses interactions / all interactions (not users / users), gives cold "
    "items 0 and averages over all recommendations: a different number.",
    source="Zhou et al., 'Solving the apparent diversity-accuracy dilemma of recommender "
    "systems' (PNAS 2010), novelty as self-information",
    parameters=(_RECS, _TRAIN, _K, _NORMALIZE, _USER, _REC, _ITEM),
    # users(i) counts the distinct (user, item) pairs per item: one hash set of the pairs
    # instead of a count(DISTINCT) per item, which held a set per item (3x the peak memory at
    # 100,000 users x 500,000 interactions: 63 MB against 21 MB, same time).
    sql=f"WITH tr AS (SELECT {_column('user_col')} AS u, {_column('item_col')} AS item "
    "FROM query_table(train)),\n"
    "users AS (SELECT item, count(u)::DOUBLE AS n FROM (SELECT DISTINCT u, item FROM tr) "
    "WHERE item IS NOT NULL GROUP BY item),\n"
    "total AS (SELECT count(DISTINCT u)::DOUBLE AS n FROM tr)\n"
    "SELECT t.\"user\", avg(CASE WHEN t.item IS NOT NULL THEN "
    "-log2(coalesce(s.n, 1) / (SELECT n FROM total)) END) / "
    "CASE WHEN normalize THEN nullif(log2((SELECT n FROM total)), 0) ELSE 1 END "
    "AS self_information\n"
    f"FROM {_top('self_information')} t LEFT JOIN users s ON t.item = s.item "
    "GROUP BY t.\"user\"",
    kernel=self_information_kernel,
)

LONG_TAIL_SHARE = BeyondMetric(
    name="long_tail_share",
    kind="per_user",
    summary="The share of a user's top k that is in the long tail (not among the most popular "
    "training items).",
    formula="|{i in top k : i not in head}| / |top k|, head = the ceil(head_share x M) most "
    "popular of the M items in train (by interactions), items tied with the last one included",
    undefined="NULL for a user whose top k is empty.",
    conventions="Items absent from train are in the tail. head_share defaults to 0.2 (the "
    "'short head' of 20% of items). Popularity counts rows of train.",
    peers="No peer has it (RePlay and RecTools do not); checked by hand calculation.",
    source="Abdollahpouri, Burke and Mobasher (FLAIRS 2019), APLT (average percentage of long "
    "tail items)",
    parameters=(_RECS, _TRAIN, _K, Parameter("head_share", "share of train items in the head",
                                             "0.2"), _USER, _REC, _ITEM),
    sql=f"WITH counts AS (SELECT item, count(*) AS n FROM ({_train_items()}) "
    "WHERE item IS NOT NULL GROUP BY item),\n"
    "head AS (SELECT item FROM (SELECT item, rank() OVER (ORDER BY n DESC) AS r, "
    "count(*) OVER () AS m FROM counts) WHERE r - 1 < "
    f"coalesce({_unit_check('long_tail_share', 'head_share', '0', '1', closed=True)}, "
    "head_share) * m)\n"
    "SELECT t.\"user\", avg(CASE WHEN t.item IS NULL THEN NULL WHEN h.item IS NULL THEN 1.0 "
    "ELSE 0.0 END) AS long_tail_share\n"
    f"FROM {_top('long_tail_share')} t LEFT JOIN head h ON t.item = h.item GROUP BY t.\"user\"",
    kernel=long_tail_share_kernel,
)

ILD_EMBEDDING = BeyondMetric(
    name="ild_embedding",
    kind="per_user",
    summary="Intra-list diversity: the mean cosine distance between the items of a user's top k.",
    formula="mean over pairs of positions i < j of the top k of 1 - cos(e_i, e_j)",
    undefined="NULL for a user with fewer than two items that have a (non-zero) embedding.",
    conventions="`embeddings` names a table of item_col and vector_col (a LIST or ARRAY of "
    "numbers, read as DOUBLE; one row per item: an item given twice is an error). A pair with "
    "an item that has no embedding, or a zero vector, is left out of the mean. Computed as "
    "1 - (|sum u_i|^2 - m) / (m (m - 1)) over the m vectors u_i scaled to length 1 (the mean "
    "of the pairs' dot products: the same number as the pairwise dot / (|a| |b|) but for the "
    "last bits); vectors of different lengths in one list are an error.",
    peers="Microsoft Recommenders user_diversity(item_sim_measure='item_feature_vector') per "
    "user, to 1e-12 (it drops users with one item; RecTools IntraListDiversity has only Hamming "
    "distances and gives 0 there).",
    source="Ziegler, McNee, Konstan and Lausen, 'Improving recommendation lists through topic "
    "diversification' (WWW 2005)",
    parameters=(_RECS, Parameter("embeddings", "name of the table of item embeddings"), _K,
                Parameter("vector_col", "vector column of embeddings", "'embedding'"), _USER,
                _REC, _ITEM),
    # With unit vectors u_i, the sum over pairs i < j of cos = (|sum_i u_i|^2 - m) / 2: each
    # user needs the sum of its m vectors, dimension by dimension (one GROUP BY over the
    # unnested components), not its m (m - 1) / 2 pairs. The pairs with their vectors joined
    # cost 2.6x the time, and DuckDB, misjudging the size of the unnested lists, hashed the
    # 45,000,000 pairs of 1,000,000 users with both vectors: 17 GB.
    sql="WITH e AS (SELECT item, list_transform(v, lambda x: x / norm) AS u FROM ("
    + _one_row_per_item("ild_embedding", "embeddings", f"SELECT {_column('item_col')} AS item, "
                        f"CAST({_column('vector_col')} AS DOUBLE[]) AS v, sqrt(list_dot_product("
                        "v, v)) AS norm FROM query_table(embeddings)")
    + ") WHERE norm > 0),\n"
    f"t AS (SELECT * FROM {_top('ild_embedding')} WHERE item IS NOT NULL),\n"
    "s AS (SELECT \"user\", dim, sum(x) AS s, count(*) AS m FROM (SELECT t.\"user\", "
    "unnest(e.u) AS x, unnest(range(len(e.u))) AS dim FROM t JOIN e ON t.item = e.item) "
    "GROUP BY \"user\", dim),\n"
    "d AS (SELECT \"user\", CASE WHEN min(m) <> max(m) THEN error('ild_embedding: the "
    "vectors of the items of user ' || \"user\" || ' differ in length') ELSE 1 - (sum(s * s) "
    "- max(m)) / nullif(max(m) * (max(m) - 1), 0) END AS ild_embedding FROM s "
    "GROUP BY \"user\")\n"
    f"SELECT r.\"user\", d.ild_embedding FROM (SELECT {_column('user_col')} AS \"user\" "
    "FROM query_table(recs)) r LEFT JOIN d ON r.\"user\" = d.\"user\"",
    kernel=ild_embedding_kernel,
)

ILD_CATEGORY = BeyondMetric(
    name="ild_category",
    kind="per_user",
    summary="Intra-list diversity by category: the share of pairs in a user's top k whose items "
    "are of different categories.",
    formula="mean over pairs of positions i < j of [cat(i) <> cat(j)] "
    "= (m^2 - sum_c m_c^2) / (m (m - 1)), m_c the items of category c, m their sum",
    undefined="NULL for a user with fewer than two items that have a category.",
    conventions="`categories` names a table of item_col and category_col, one category per "
    "item (an item given twice is an error); items without one are left out. Computed from "
    "per-category counts: O(k) per user.",
    peers="RecTools IntraListDiversity with PairwiseHammingDistanceCalculator over one-hot "
    "categories gives twice this value (two features differ per pair). RePlay "
    "CategoricalDiversity is another metric (distinct categories / k).",
    source="Ziegler et al. (WWW 2005), with a 0/1 category distance",
    parameters=(_RECS, Parameter("categories", "name of the table of item categories"), _K,
                Parameter("category_col", "category column of categories", "'category'"),
                _USER, _REC, _ITEM),
    sql="WITH c AS ("
    + _one_row_per_item("ild_category", "categories", f"SELECT {_column('item_col')} AS item, "
                        f"{_column('category_col')} AS cat FROM query_table(categories)")
    + "),\n"
    "per AS (SELECT t.\"user\", c.cat, count(c.cat)::DOUBLE AS n FROM "
    f"{_top('ild_category')} t LEFT JOIN c ON t.item = c.item GROUP BY t.\"user\", c.cat)\n"
    "SELECT \"user\", (sum(n) ^ 2 - sum(n ^ 2)) / nullif(sum(n) * (sum(n) - 1), 0) "
    "AS ild_category FROM per GROUP BY \"user\"",
    kernel=ild_category_kernel,
)

# Pairs of users, numbered 1..n in the order of their ids. All n (n - 1) / 2 pairs when they are
# at most `pairs` (pair j -> (a, b) by inverting j = a (a - 1) / 2 + b); otherwise `pairs` pairs
# drawn with replacement from duckrank's seeded hash of (seed, j): the same seed and data give the
# same pairs whatever the threads, the DuckDB version and the engine.
INTER_USER_DIVERSITY = BeyondMetric(
    name="inter_user_diversity",
    kind="catalogue",
    summary="Diversity across users: the mean Jaccard distance between two users' top-k sets.",
    formula="mean over pairs of users (u, v) of 1 - |T_u & T_v| / |T_u | T_v|, all pairs when "
    "there are at most `pairs` of them, else `pairs` pairs drawn at random",
    undefined="NULL with fewer than two users; a pair of two empty (or NULL) lists is left out.",
    conventions="Sampling is reproducible by `seed`, an integer (pairs from duckrank's seeded "
    "hash of (seed, j), users numbered in the order of their ids): the same data and seed give "
    "the same value in every DuckDB version and in Spark. Gives `pairs_used` (pairs in the "
    "mean) and `exact` (whether all pairs were used).",
    peers="No peer has it for lists (RecTools, RePlay and Recommenders do not); checked against "
    "the exact mean over all pairs.",
    source="Zhou et al. (PNAS 2010), personalisation as the mean inter-list distance",
    parameters=(_RECS, _K, Parameter("pairs", "pairs of users to sample", "100000"),
                Parameter("seed", "sampling seed", "0"), _USER, _REC),
    sql="WITH s AS (SELECT row_number() OVER (ORDER BY \"user\") AS i, top FROM (SELECT "
    f"{_column('user_col')} AS \"user\", list_distinct(coalesce({_column('rec_col')}, [])[1:"
    f"{_k('inter_user_diversity')}]) AS top FROM query_table(recs))),\n"
    "n AS (SELECT count(*) AS n, count(*) * (count(*) - 1) // 2 <= pairs AS exact FROM s),\n"
    "j AS (SELECT range AS j FROM range(CASE WHEN pairs IS NULL OR pairs < 1 OR pairs <> "
    "trunc(pairs) THEN error('inter_user_diversity: pairs must be a positive integer, got ' || "
    "coalesce(pairs::VARCHAR, 'NULL')) "
    f"WHEN typeof(seed) NOT IN ({seeded_hash.SQL_INTEGER_TYPES}) "
    "THEN error('inter_user_diversity: seed must be an integer (at most 64 bits), got ' || "
    "coalesce(seed::VARCHAR, 'NULL') || ' of type ' || "
    "typeof(seed)) ELSE pairs::BIGINT END)),\n"
    "p AS (SELECT CASE WHEN n.exact THEN floor((1 + sqrt(1 + 8 * j)) / 2)::BIGINT + 1 "
    f"ELSE 1 + {seeded_hash.sql('seed', 'j', '0')} % n.n END AS a, "
    "CASE WHEN n.exact THEN j - (floor((1 + sqrt(1 + 8 * j)) / 2)::BIGINT "
    "* (floor((1 + sqrt(1 + 8 * j)) / 2)::BIGINT - 1)) // 2 + 1 "
    f"ELSE 1 + {seeded_hash.sql('seed', 'j', '1')} % (n.n - 1) END AS b0 "
    "FROM j, n WHERE n.n >= 2 AND (NOT n.exact OR j < n.n * (n.n - 1) // 2)),\n"
    "q AS (SELECT a, CASE WHEN (SELECT exact FROM n) OR b0 < a THEN b0 ELSE b0 + 1 END AS b "
    "FROM p)\n"
    "SELECT avg(d) AS inter_user_diversity, count(d) AS pairs_used, "
    "(SELECT exact FROM n) AS exact FROM (SELECT 1 - len(list_intersect(x.top, y.top)) "
    "/ nullif(len(x.top) + len(y.top) - len(list_intersect(x.top, y.top)), 0) AS d "
    "FROM q JOIN s x ON x.i = q.a JOIN s y ON y.i = q.b)",
    kernel=inter_user_diversity_kernel,
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
    parameters=(_RECS, _TRAIN, _K, *_CATALOG,
                Parameter("truth_col", "LIST column of recs: the user's relevant items",
                          "'truth'"), _USER, _REC, _ITEM),
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

_PAIR_PARAMETERS = (
    Parameter("rec", "a system's list, best first"),
    Parameter("other", "the other system's list for the same user"),
    _K,
)

OVERLAP_AT = BeyondMetric(
    name="overlap_at",
    kind="pair",
    summary="Overlap@k: the share of rec's top k that is also in other's top k.",
    formula="|rec[1:k] & other[1:k]| / |rec[1:k]| (= |A & B| / k when both have k items); "
    "NULL elements are not items",
    undefined="NULL when rec or other is NULL or rec is empty.",
    conventions="A user absent from one side has no list there (NULL); to count it as 0, as "
    "RecTools does, pass coalesce(other, []).",
    peers="RecTools Intersection(k) per user (calc_per_user), to 1e-12.",
    source="RecTools Intersection; the share-of-overlap form of Webber et al. (2010), section 2",
    parameters=_PAIR_PARAMETERS,
    sql="CASE WHEN rec IS NULL OR other IS NULL THEN NULL ELSE len(list_filter(rec[1:"
    f"{_k('overlap_at')}], lambda x: list_contains(other[1:k], x))) "
    "/ nullif(len(list_filter(rec[1:k], lambda x: x IS NOT NULL)), 0) END",
    kernel=overlap_kernel,
)

JACCARD_AT = BeyondMetric(
    name="jaccard_at",
    kind="pair",
    summary="Jaccard similarity of two systems' top-k sets.",
    formula="|A & B| / |A | B|, A, B the distinct items of rec[1:k], other[1:k]",
    undefined="NULL when a list is NULL or both top k are empty.",
    conventions="Sets: order and repeats inside the top k do not matter; NULL elements are not "
    "items.",
    peers="No peer has it per user; checked by hand calculation and the kernel.",
    source="Jaccard (1912)",
    parameters=_PAIR_PARAMETERS,
    # The common items are counted once per row (the second lambda level binds the count):
    # list_filter with list_contains on top-k lists is 3x faster than list_intersect here.
    sql="CASE WHEN rec IS NULL OR other IS NULL THEN NULL ELSE list_transform([struct_pack("
    f"a := list_distinct(rec[1:{_k('jaccard_at')}]), b := list_distinct(other[1:k]))], "
    "lambda s: list_transform([len(list_filter(s.a, lambda x: list_contains(s.b, x)))], "
    "lambda c: c / nullif(len(s.a) + len(s.b) - c, 0))[1])[1] END",
    kernel=jaccard_kernel,
)

# X_d = |rec[:d] & other[:d]| = the common items whose larger position of the two is <= d:
# those larger positions (m) are found once per row, then each X_d is a count over them.
_X = "len(list_filter(q.m, lambda v: v <= d))"
_RBO_PREFIX = (
    f"(1 - p) * list_sum(list_transform(range(1, q.k + 1), lambda d: pow(p, d - 1) * {_X} / d))"
)
# X_k = len(q.m): the lists are cut at k, so every common item is within depth k.
_RBO_MIN = (
    "(1 - p) / p * (list_sum(list_transform(range(1, q.k + 1), lambda d: "
    f"({_X} - len(q.m)) * pow(p, d) / d)) - len(q.m) * ln(1 - p))"
)
_RBO_EXT = (
    "(1 - p) / p * (list_sum(list_transform(range(1, q.l + 1), lambda d: "
    f"{_X} / d * pow(p, d))) + coalesce(list_sum(list_transform(range(q.s + 1, q.l + 1), "
    "lambda d: q.xs * (d - q.s) / (q.s * d) * pow(p, d))), 0)) "
    "+ ((q.xl - q.xs) / q.l + q.xs / q.s) * pow(p, q.l)"
)
RBO = BeyondMetric(
    name="rbo",
    kind="pair",
    summary="Rank-biased overlap of two systems' rankings (Webber, Moffat and Zobel 2010).",
    formula="X_d = |rec[1:d] & other[1:d]|; variant 'min' (eq. 11, the lower bound at depth k: "
    "no item beyond depth k agrees): (1 - p) / p (sum_{d=1..k} (X_d - X_k) p^d / d - X_k "
    "ln(1 - p)); 'prefix' (the sum of eq. 7 stopped at k, below 'min' by the weight of the "
    "agreements X_k / d beyond k): (1 - p) sum_{d=1..k} p^(d-1) X_d / d; 'ext' (eq. 32, "
    "extrapolated, lists of lengths s <= l after the cut at k): (1 - p) / p (sum_{d=1..l} "
    "X_d / d p^d + sum_{d=s+1..l} X_s (d - s) / (s d) p^d) + ((X_l - X_s) / l + X_s / s) p^l",
    undefined="NULL when a list is NULL or either top k is empty.",
    conventions="p (persistence) in (0, 1), default 0.9. 'min' and 'prefix' are evaluated to "
    "depth k even when the lists are shorter (a shorter list adds nothing beyond its end); 'ext' "
    "to the longer list's length. Identical lists of k items give 1 with 'ext', less with "
    "'min' and 'prefix' (only an infinite agreement reaches 1). The residual and maximum forms "
    "(eq. 30) are not given. Lists without repeats, as the paper assumes.",
    peers="LensKit rank_biased_overlap (weights p^(d-1) over d = 1..k, default p = 0.85) is the "
    "weighted mean of the agreements X_d / d, which is 'prefix' / (1 - p^k) (from its source; "
    "LensKit is not a test dependency).",
    source="Webber, Moffat and Zobel, 'A similarity measure for indefinite rankings', ACM TOIS "
    "28(4), 2010: eq. (11) and (32)",
    parameters=(*_PAIR_PARAMETERS, Parameter("p", "persistence", "0.9"),
                Parameter("variant", "'min', 'ext' or 'prefix'", "'min'")),
    sql=f"CASE WHEN coalesce({_unit_check('rbo', 'p', '0', '1', closed=False)}, "
    "variant NOT IN ('min', 'ext', 'prefix') OR variant IS NULL) THEN error('rbo: variant must "
    "be ''min'', ''ext'' or ''prefix'', got ' || coalesce(variant, 'NULL')) "
    "WHEN rec IS NULL OR other IS NULL THEN NULL ELSE list_transform([struct_pack("
    f"a := rec[1:{_k('rbo')}], b := other[1:k])], lambda r: list_transform([struct_pack("
    "k := k, s := least(len(r.a), len(r.b)), l := greatest(len(r.a), len(r.b)), "
    "m := list_filter(list_transform(r.a, lambda x, i: CASE WHEN list_position(r.b, x) > 0 "
    "THEN greatest(i, list_position(r.b, x)) END), lambda v: v IS NOT NULL))], lambda q0: "
    "list_transform([struct_pack(k := q0.k, s := q0.s, l := q0.l, m := q0.m, "
    "xs := len(list_filter(q0.m, lambda v: v <= q0.s)), "
    "xl := len(list_filter(q0.m, lambda v: v <= q0.l)))], lambda q: "
    f"CASE WHEN q.s = 0 THEN NULL WHEN variant = 'min' THEN {_RBO_MIN} "
    f"WHEN variant = 'prefix' THEN {_RBO_PREFIX} ELSE {_RBO_EXT} END)[1])"
    "[1])[1] END",
    kernel=rbo_kernel,
)

METRICS: tuple[BeyondMetric, ...] = (
    CATALOG_COVERAGE, EXPOSURE_ENTROPY, EXPOSURE_GINI,
    ARP, SELF_INFORMATION, LONG_TAIL_SHARE,
    ILD_EMBEDDING, ILD_CATEGORY, INTER_USER_DIVERSITY,
    OVERLAP_AT, JACCARD_AT, RBO,
    SERENDIPITY,
)
