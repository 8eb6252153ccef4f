"""Diversity: inside a user's list (by embeddings, by categories) and across users' lists."""

from __future__ import annotations

import numbers
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass

from duckrank import seeded_hash
from duckrank.lazy import LazyModule
from duckrank.metrics.beyond.common import (
    _ITEM,
    _K,
    _REC,
    _RECS,
    _USER,
    DEFAULT_PERSISTENCE,
    BeyondMetric,
    Lists,
    _column,
    _jaccard_distance,
    _k,
    _one_row_per_item,
    _per_user,
    _positioned,
    _top,
    _tops,
    _weighted_top,
    checked_sql,
    discount_parameters,
    discount_weight,
    optional,
    required,
)
from duckrank.options import POSITIVE_INTEGER, Bounds

np = LazyModule("numpy")

# --- kernels (plain Python/numpy over dicts of lists: the independent check) -----------------


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


def categorical_diversity_kernel(recs: Lists, k: int, categories: dict[Hashable, Hashable]
                                 ) -> dict[Hashable, float | None]:
    def value(items: list[Hashable]) -> float:
        return len({categories[i] for i in items if categories.get(i) is not None}) / k

    return _per_user(recs, k, value)


def rank_biased_entropy_kernel(recs: Lists, k: int,
                               categories: Iterable[tuple[Hashable, Hashable]],
                               discount: str = "rbp", persistence: float = DEFAULT_PERSISTENCE,
                               smoothing: float = 0.0) -> dict[Hashable, float | None]:
    """Shannon entropy (bits) of v(c) = s + sum over the top-k positions r of w(r) / m_i for
    each category c of the item i there (m_i its categories), over every category of the
    table, written out as -sum p log2 p."""
    of_item: dict[Hashable, set] = {}
    for item, category in categories:
        if item is not None and category is not None:
            of_item.setdefault(item, set()).add(category)
    every = set().union(*of_item.values()) if of_item else set()
    out: dict[Hashable, float | None] = {}
    for user, ranked in _positioned(recs, k).items():
        weight: dict[Hashable, float] = {}
        for rank, item in ranked:
            for category in of_item.get(item, ()):
                weight[category] = (weight.get(category, 0.0) + discount_weight(
                    rank, discount, persistence) / len(of_item[item]))
        if not weight:
            out[user] = None
            continue
        values = np.array([weight.get(c, 0.0) + smoothing for c in every], dtype=np.float64)
        p = values[values > 0] / values.sum()
        out[user] = float(-(p * np.log2(p)).sum())
    return out


def inter_user_diversity_kernel(recs: Lists, k: int) -> float | None:
    """The exact value: the mean over every pair of users."""
    users = sorted(recs)
    tops = _tops(recs, k)
    return _mean_pairwise([set(tops[u]) for u in users], _jaccard_distance)


# --- the records ------------------------------------------------------------------------------

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
    parameters=(_RECS, required("embeddings", "name of the table of item embeddings"), _K,
                optional("vector_col", "embedding", "vector column of embeddings"), _USER, _REC,
                _ITEM),
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

_CATEGORY_TABLE = required("categories", "name of the table of item categories")
_CATEGORY_COL = optional("category_col", "category", "category column of categories")

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
    parameters=(_RECS, _CATEGORY_TABLE, _K, _CATEGORY_COL, _USER, _REC, _ITEM),
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

CATEGORICAL_DIVERSITY = BeyondMetric(
    name="categorical_diversity",
    kind="per_user",
    summary="Categorical diversity: the distinct categories of a user's top k, per position.",
    formula="|{cat(i) : i in the top k, i has a category}| / k",
    undefined="NULL for a user whose top k is empty.",
    conventions="Divides by k, also for a list shorter than k (as RePlay does). `categories` "
    "names a table of item_col and category_col, one category per item (an item given twice "
    "is an error); items without one add no category.",
    peers="RePlay CategoricalDiversity(k) per user (its recommendations given as (user, "
    "category, score) rows: one category per recommended item), from its source and docstring "
    "example.",
    source="RePlay 0.22 (replay.metrics.CategoricalDiversity)",
    parameters=(_RECS, _CATEGORY_TABLE, _K, _CATEGORY_COL, _USER, _REC, _ITEM),
    sql="WITH c AS ("
    + _one_row_per_item("categorical_diversity", "categories",
                        f"SELECT {_column('item_col')} AS item, {_column('category_col')} AS cat "
                        "FROM query_table(categories)")
    + ")\n"
    "SELECT t.\"user\", CASE WHEN count(t.item) > 0 THEN count(DISTINCT c.cat) / "
    "any_value(k)::DOUBLE END AS categorical_diversity "
    f"FROM {_top('categorical_diversity')} t LEFT JOIN c ON t.item = c.item GROUP BY t.\"user\"",
    kernel=categorical_diversity_kernel,
)

_SMOOTHING = optional("smoothing", 0, "added to every category's weight", bounds=Bounds(0))

RANK_BIASED_ENTROPY = BeyondMetric(
    name="rank_biased_entropy",
    kind="per_user",
    summary="Rank-biased entropy: the Shannon entropy (bits) of the categories of a user's top "
    "k, each position weighted by its rank discount.",
    formula="-sum over the categories c of the table of p(c) log2 p(c), p(c) = v(c) / sum v, "
    "v(c) = smoothing + sum over the top-k positions r of w(r) / m_i for each category c of "
    "the item i at r (m_i = the item's categories), w the discount (default 'rbp': "
    "persistence^(r - 1), persistence 0.85)",
    undefined="NULL for a user whose top k holds no item with a category.",
    conventions="Log base 2; 0 log 0 = 0. `categories` may give an item several categories (one "
    "row each): each gets 1/m_i of the item's weight. Items without a category add nothing "
    "(their positions keep their ranks). smoothing (>= 0, default 0) is added to every category "
    "of the table. discount := 'none' gives the plain category entropy.",
    peers="LensKit RankBiasedEntropy(attribute) (GeometricRankWeight(0.85)) is smoothing := "
    "1e-6 over the dataset's categories, and LensKit Entropy is discount := 'none', smoothing "
    ":= 1e-6 (LensKit adds 1e-6 to every category; from its source, lenskit/metrics/ranking/"
    "_entropy.py: not run, it pulls torch).",
    source="LensKit 2026.4 (lenskit.metrics.RankBiasedEntropy); rank-biased weighting of "
    "Moffat and Zobel, 'Rank-biased precision' (ACM TOIS 2008)",
    parameters=(_RECS, _CATEGORY_TABLE, _K, *discount_parameters("rbp"),
                _SMOOTHING,
                _CATEGORY_COL, _USER, _REC, _ITEM),
    sql=f"WITH c AS (SELECT DISTINCT {_column('item_col')} AS item, {_column('category_col')} "
    "AS cat FROM query_table(categories)),\n"
    "m AS (SELECT item, cat, 1.0 / count(*) OVER (PARTITION BY item) AS share FROM c "
    "WHERE item IS NOT NULL AND cat IS NOT NULL),\n"
    f"s AS (SELECT {checked_sql('rank_biased_entropy', 'smoothing::DOUBLE', _SMOOTHING)} AS s, "
    "(SELECT count(DISTINCT cat) FROM m) AS n),\n"
    "e AS (SELECT t.\"user\", m.cat, sum(t.w * m.share) AS e FROM "
    f"{_weighted_top('rank_biased_entropy')} t JOIN m ON t.item = m.item "
    "GROUP BY t.\"user\", m.cat),\n"
    "h AS (SELECT e.\"user\", log2(sum(e.e) + any_value(s.s) * any_value(s.n)) - (sum((e.e + "
    "s.s) * log2(e.e + s.s)) + CASE WHEN any_value(s.s) > 0 THEN (any_value(s.n) - count(*)) "
    "* any_value(s.s) * log2(any_value(s.s)) ELSE 0 END) / (sum(e.e) + any_value(s.s) * "
    "any_value(s.n)) AS h FROM e CROSS JOIN s GROUP BY e.\"user\")\n"
    f"SELECT r.\"user\", h.h AS rank_biased_entropy FROM (SELECT {_column('user_col')} AS "
    "\"user\" FROM query_table(recs)) r LEFT JOIN h ON r.\"user\" = h.\"user\"",
    kernel=rank_biased_entropy_kernel,
)

@dataclass(frozen=True)
class IntegerTyped(Bounds):
    """A whole number of an integer *type* within 64 bits: duckrank's seeded hash reads an
    integer's bits but another type's text, so a seed 1.0 (a DECIMAL or a DOUBLE) would draw
    other pairs than 1, in silence."""

    low: float | None = -2**63
    high: float | None = 2**63 - 1
    whole: bool = True
    words: str = "an integer of an integer type (at most 64 bits)"

    def tests_sql(self, option: str) -> list[str]:
        return [f"typeof({option}) NOT IN ({seeded_hash.SQL_INTEGER_TYPES})"]

    def accepts(self, value: object) -> bool:
        return isinstance(value, numbers.Integral) and super().accepts(value)


_SAMPLING = (optional("pairs", 100000, "pairs of users to sample", bounds=POSITIVE_INTEGER),
             optional("seed", 0, "sampling seed", bounds=IntegerTyped()))

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
    parameters=(_RECS, _K, *_SAMPLING, _USER, _REC),
    sql="WITH s AS (SELECT row_number() OVER (ORDER BY \"user\") AS i, top FROM (SELECT "
    f"{_column('user_col')} AS \"user\", list_distinct(coalesce({_column('rec_col')}, [])[1:"
    f"{_k('inter_user_diversity')}]) AS top FROM query_table(recs))),\n"
    "n AS (SELECT count(*) AS n, count(*) * (count(*) - 1) // 2 <= pairs AS exact FROM s),\n"
    "j AS (SELECT range AS j FROM range("
    f"{checked_sql('inter_user_diversity', 'pairs::BIGINT', *_SAMPLING)})),\n"
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


METRICS: tuple[BeyondMetric, ...] = (ILD_EMBEDDING, ILD_CATEGORY, INTER_USER_DIVERSITY,
                                     CATEGORICAL_DIVERSITY, RANK_BIASED_ENTROPY)
