"""duckrank.spark.beyond_accuracy on a real local Spark session: the same numbers as the DuckDB
macros (the reference: they are checked against the records' kernels, hand calculations and the
peers in tests/metrics/test_beyond_accuracy.py and tests/metrics/test_debiased.py) on small
generated data with empty and NULL lists, NULL elements, items absent from train and repeated
training pairs; and hand calculations for ild_embedding and inter_user_diversity."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="pip install duckrank[spark]")

import duckdb  # noqa: E402
from conftest import duckdb_with, spark_beyond_values  # noqa: E402

from duckrank import seeded_hash  # noqa: E402
from duckrank import spark as duckrank_spark  # noqa: E402
from duckrank.render.beyond_accuracy import MACROS  # noqa: E402

K = 4
TOL = 1e-12


def _data() -> dict[str, pa.Table]:
    rng = np.random.default_rng(17)
    weights = 1.0 / np.arange(1, 21)
    weights /= weights.sum()
    users = 40
    recs = [[int(i) for i in rng.choice(20, int(rng.integers(0, 7)), replace=False, p=weights)]
            for _ in range(users)]
    truth = [[int(i) for i in rng.choice(20, int(rng.integers(0, 4)), replace=False)]
             for _ in range(users)]
    recs[1], truth[2] = None, None
    recs[3] = [1, None, 2]
    other = [[int(i) for i in rng.choice(20, int(rng.integers(1, 6)), replace=False)]
             for _ in range(users)]
    train_users = rng.integers(0, users, 200)
    train_items = rng.choice(18, 200, p=weights[:18] / weights[:18].sum())
    list_type = pa.list_(pa.int64())
    # Items 0-15 have a vector, 16 a zero vector (left out), 17 a NULL one; 18, 19 none.
    vectors = [[float(x) for x in rng.normal(size=3)] for _ in range(16)] + [[0.0] * 3, None]
    return {
        "recs": pa.table({"user": np.arange(users), "rec": pa.array(recs, list_type),
                          "truth": pa.array(truth, list_type)}),
        "other": pa.table({"user": np.arange(0, users, 2),
                           "rec": pa.array(other[::2], list_type)}),
        "train": pa.table({"user": np.append(train_users, train_users[0]),
                           "item": np.append(train_items, train_items[0])}),
        "categories": pa.table({"item": np.arange(18), "category": [
            "abc"[i % 3] for i in range(18)]}),
        "props": pa.table({"item": np.arange(20), "propensity": np.linspace(0.05, 1, 20)}),
        "embeddings": pa.table({"item": np.arange(18),
                                "embedding": pa.array(vectors, pa.list_(pa.float64()))}),
    }


DATA = _data()


@pytest.fixture(scope="module")
def spark(spark_session):
    return spark_session


@pytest.fixture(scope="module")
def frames(spark) -> dict:
    return {name: spark.createDataFrame(table.to_pylist() if name in ("recs", "other",
                                                                      "embeddings")
                                        else table.to_pandas(), schema=None)
            for name, table in DATA.items()}


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    return duckdb_with(MACROS, DATA)


def _close(got, expected) -> None:
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected, abs=TOL, rel=TOL)


CASES = [
    # (metric, Spark options, the DuckDB query), per-user ones giving (user, value) rows
    ("catalog_coverage", {"catalog_size": 25}, "FROM catalog_coverage('recs', 4, "
     "catalog_size := 25)"),
    ("exposure_entropy", {}, "FROM exposure_entropy('recs', 4)"),
    ("exposure_gini", {"catalog_size": 25}, "FROM exposure_gini('recs', 4, catalog_size := 25)"),
    ("arp", {"train": "train", "normalize": True}, "FROM arp('recs', 'train', 4, "
     "normalize := true)"),
    ("self_information", {"train": "train"}, "FROM self_information('recs', 'train', 4)"),
    ("self_information", {"train": "train", "normalize": True}, "FROM self_information("
     "'recs', 'train', 4, normalize := true)"),
    ("long_tail_share", {"train": "train", "head_share": 0.3}, "FROM long_tail_share('recs', "
     "'train', 4, head_share := 0.3)"),
    ("ild_category", {"categories": "categories"}, "FROM ild_category('recs', 'categories', 4)"),
    ("ild_embedding", {"embeddings": "embeddings"}, "FROM ild_embedding('recs', 'embeddings', "
     "4)"),
    # 40 users: 780 pairs, all of them (exact) with pairs := 1000, else sampled: a value equal
    # to 1e-12 over 300 sampled pairs means the same pairs. The seeds are typed INTEGER (-7) and
    # BIGINT (2^40) by DuckDB, which hashes the two types differently.
    ("inter_user_diversity", {"pairs": 1000}, "SELECT inter_user_diversity FROM "
     "inter_user_diversity('recs', 4, pairs := 1000)"),
    ("inter_user_diversity", {"pairs": 300, "seed": -7}, "SELECT inter_user_diversity FROM "
     "inter_user_diversity('recs', 4, pairs := 300, seed := -7)"),
    ("inter_user_diversity", {"pairs": 300, "seed": 2**40}, "SELECT inter_user_diversity FROM "
     f"inter_user_diversity('recs', 4, pairs := 300, seed := {2**40})"),
    ("serendipity", {"train": "train", "catalog_size": 25}, "FROM serendipity('recs', 'train', "
     "4, catalog_size := 25)"),
    ("overlap_at", {"other": "other"}, "SELECT user, overlap_at(r.rec, o.rec, 4) FROM recs r "
     "JOIN other o USING (user)"),
    ("jaccard_at", {"other": "other"}, "SELECT user, jaccard_at(r.rec, o.rec, 4) FROM recs r "
     "JOIN other o USING (user)"),
    ("rbo", {"other": "other", "p": 0.8, "variant": "ext"}, "SELECT user, rbo(r.rec, o.rec, 4, "
     "p := 0.8, variant := 'ext') FROM recs r JOIN other o USING (user)"),
    ("ips_recall", {"train": "train", "min_propensity": 0.05}, "FROM ips_recall('recs', 4, "
     "train := 'train', min_propensity := 0.05)"),
    ("ips_precision", {"propensities": "props", "estimator": "ips"}, "FROM ips_precision("
     "'recs', 4, propensities := 'props', estimator := 'ips')"),
    ("ips_ndcg", {"train": "train", "gamma": 1.5, "min_propensity": 0.1}, "FROM ips_ndcg("
     "'recs', 4, train := 'train', gamma := 1.5, min_propensity := 0.1)"),
]


@pytest.fixture(scope="module")
def spark_values(frames) -> dict[int, dict]:
    """Every case's Spark result, computed in one Spark job (a union of the cases' rows):
    case -> {user: value} (user None for a catalogue metric)."""
    return spark_beyond_values(frames, CASES, K)


@pytest.mark.parametrize("case", range(len(CASES)), ids=[c[0] for c in CASES])
def test_same_values_as_duckdb(spark_values, con, case: int) -> None:
    expected = con.execute(CASES[case][2]).fetchall()
    got = spark_values[case]
    if len(expected[0]) == 1:  # a catalogue metric: one value
        assert list(got) == [None]
        _close(got[None], expected[0][0])
    else:
        assert got.keys() == {row[0] for row in expected}
        for user, value in expected:
            _close(got[user], value)


def test_errors_name_the_function_and_value(frames) -> None:
    recs = frames["recs"]
    for call, message in (
        (lambda: duckrank_spark.beyond_accuracy(recs, "arp", 0, train=frames["train"]),
         "arp: k must be a positive integer, got 0"),
        (lambda: duckrank_spark.beyond_accuracy(recs, "ild", 3),
         "unknown beyond-accuracy metric on Spark 'ild'"),
        (lambda: duckrank_spark.beyond_accuracy(recs, "inter_user_diversity", 3, seed=1.5),
         "inter_user_diversity: seed must be an integer of an integer type \\(at most 64 "
         "bits\\), got 1.5"),
        (lambda: duckrank_spark.beyond_accuracy(recs, "inter_user_diversity", 3, pairs=0),
         "inter_user_diversity: pairs must be a positive integer, got 0"),
        (lambda: duckrank_spark.beyond_accuracy(recs, "ips_recall", 3, train=frames["train"]),
         "ips_recall: item 1[89] of the truth of user [0-9]+ has no propensity"),
        (lambda: duckrank_spark.beyond_accuracy(recs, "arp", 3, train=frames["train"], x=1),
         "arp: unknown option\\(s\\) x"),
        (lambda: duckrank_spark.beyond_accuracy(recs, "exposure_gini", 3, catalog_size=2),
         "exposure_gini: [0-9]+ distinct items were recommended, more than the catalogue "
         "size 2"),
    ):
        with pytest.raises(ValueError, match=message):
            call()


@pytest.mark.parametrize("seed", [0, 42, -7, -2**31, 2**31, 2**40, -2**40, 2**63 - 1])
def test_hash_is_the_sql_hash(seed: int) -> None:
    """The pairs are drawn from duckrank's seeded hash of (seed, j, 0/1): its numpy form, which
    Spark uses, equals the SQL form DuckDB computes (tests/test_seeded_hash.py pins both)."""
    j = np.arange(0, 10**6, 997, dtype=np.int64)
    rows = duckdb.sql(f"SELECT {seeded_hash.sql(str(seed), 'j', '0')}, "
                      f"{seeded_hash.sql(str(seed), 'j', '1')} FROM "
                      "(SELECT range AS j FROM range(0, 1000000, 997)) ORDER BY j").fetchall()
    assert [int(h) for h in seeded_hash.of_integers(seed, j, 0)] == [row[0] for row in rows]
    assert [int(h) for h in seeded_hash.of_integers(seed, j, 1)] == [row[1] for row in rows]


def test_sampled_inter_user_diversity_row_is_duckdbs(frames, con) -> None:
    """The whole row (value, pairs_used, exact) for sampled pairs, against the DuckDB macro."""
    got = duckrank_spark.beyond_accuracy(frames["recs"], "inter_user_diversity", K, pairs=200,
                                         seed=3).collect()
    expected = con.execute("FROM inter_user_diversity('recs', 4, pairs := 200, seed := 3)"
                           ).fetchall()
    assert [tuple(row) for row in got][0][1:] == expected[0][1:]
    _close(got[0][0], expected[0][0])


def test_hand_calculation(spark) -> None:
    """ild_embedding: user 1's top 5 is a = (1, 0), a zero vector (left out), b = (0, 1),
    c = (1, 1), an item without a vector (left out): distances 1 - cos are a-b 1, a-c and b-c
    1 - 1/sqrt(2), mean (3 - sqrt(2)) / 3. User 2 has one item with a vector: NULL.
    inter_user_diversity at k = 2: tops {1, 2} (from [1, 2, 9]), {2, 3}, {} and NULL (as {}):
    pairs 1-2: 1 - 1/3; 1-3, 1-4, 2-3, 2-4: 1; 3-4: both empty, left out; mean (2/3 + 4) / 5
    = 14/15 over 5 pairs, exact (6 pairs <= 100,000)."""
    recs = spark.createDataFrame(
        [(1, [10, 13, 11, 12, 14]), (2, [10, 14]), (3, None)], "user long, rec array<long>")
    embeddings = spark.createDataFrame(
        [(10, [1.0, 0.0]), (11, [0.0, 1.0]), (12, [1.0, 1.0]), (13, [0.0, 0.0])],
        "item long, embedding array<double>")
    ild = dict(duckrank_spark.beyond_accuracy(recs, "ild_embedding", 5,
                                              embeddings=embeddings).collect())
    assert ild.keys() == {1, 2, 3} and ild[2] is None and ild[3] is None
    assert ild[1] == pytest.approx((3 - math.sqrt(2)) / 3, abs=TOL)
    lists = spark.createDataFrame([(1, [1, 2, 9]), (2, [3, 2]), (3, []), (4, None)],
                                  "user long, rec array<long>")
    row = duckrank_spark.beyond_accuracy(lists, "inter_user_diversity", 2).collect()[0]
    assert row["inter_user_diversity"] == pytest.approx(14 / 15, abs=TOL)
    assert (row["pairs_used"], row["exact"]) == (5, True)


def test_ild_embedding_refuses_what_duckdb_refuses(spark) -> None:
    """Vectors of different lengths in one list (the macro's error), a NULL element (DuckDB's
    list_dot_product refuses it) and an item given twice."""
    recs = spark.createDataFrame([(1, [10, 11])], "user long, rec array<long>")

    def ild(rows: list) -> list:
        embeddings = spark.createDataFrame(rows, "item long, embedding array<double>")
        return duckrank_spark.beyond_accuracy(recs, "ild_embedding", 2,
                                              embeddings=embeddings).collect()

    with pytest.raises(Exception, match="ild_embedding: the vectors of the items of user 1 "
                                        "differ in length"):
        ild([(10, [1.0, 0.0]), (11, [1.0, 0.0, 1.0])])
    with pytest.raises(ValueError, match="ild_embedding: the embedding of item 11 holds a NULL"):
        ild([(10, [1.0, 0.0]), (11, [1.0, None])])
    with pytest.raises(ValueError, match="ild_embedding: embeddings holds item 10 more than "
                                         "once"):
        ild([(10, [1.0, 0.0]), (10, [0.0, 1.0])])
