"""duckrank.spark.beyond_accuracy on a real local Spark session: the same numbers as the DuckDB
macros (the reference: they are checked against the records' kernels, hand calculations and the
peers in tests/metrics/test_beyond_accuracy.py and tests/metrics/test_debiased.py) on small
generated data with empty and NULL lists, NULL elements, items absent from train and repeated
training pairs."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="pip install duckrank[spark]")

import duckdb  # noqa: E402

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
    }


DATA = _data()


@pytest.fixture(scope="module")
def spark(spark_session):
    return spark_session


@pytest.fixture(scope="module")
def frames(spark) -> dict:
    return {name: spark.createDataFrame(table.to_pandas() if name != "recs" and name != "other"
                                        else table.to_pylist(), schema=None)
            for name, table in DATA.items()}


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    for statement in MACROS:
        connection.execute(statement)
    for name, table in DATA.items():
        connection.register(f"{name}_arrow", table)
        connection.execute(f"CREATE TABLE {name} AS FROM {name}_arrow")
    return connection


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
    from functools import reduce

    from pyspark.sql import functions as F

    parts = []
    for case, (metric, options, _) in enumerate(CASES):
        spark_options = {k: frames[v] if isinstance(v, str) and v in frames else v
                         for k, v in options.items()}
        result = duckrank_spark.beyond_accuracy(frames["recs"], metric, K, **spark_options)
        user = F.col("user") if "user" in result.columns else F.lit(None).cast("bigint")
        parts.append(result.select(F.lit(case).alias("case"), user.alias("user"),
                                   F.col(metric).cast("double").alias("value")))
    values: dict[int, dict] = {case: {} for case in range(len(CASES))}
    for row in reduce(lambda a, b: a.unionByName(b), parts).collect():
        values[row["case"]][row["user"]] = row["value"]
    return values


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
        (lambda: duckrank_spark.beyond_accuracy(recs, "ild_embedding", 3),
         "unknown beyond-accuracy metric on Spark 'ild_embedding'"),
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
