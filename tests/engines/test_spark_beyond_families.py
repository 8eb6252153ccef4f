"""duckrank.spark.beyond_accuracy for the families of issue 28 (user coverage and data quality,
rank-discounted novelty, category diversity, popularity bias and item-group fairness) on a real
local Spark session: the same numbers as the DuckDB macros, which are the reference (they are
checked against the records' kernels, hand calculations and the peers in
tests/metrics/test_beyond_coverage.py, test_beyond_novelty.py and test_beyond_fairness.py), on
small generated data with repeated items, NULL elements, empty and NULL lists and test users
without a list. All cases run in one Spark job."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="pip install duckrank[spark]")

import duckdb  # noqa: E402
from conftest import duckdb_with, spark_beyond_values, spark_frames  # noqa: E402

from duckrank import spark as duckrank_spark  # noqa: E402
from duckrank.render.beyond_accuracy import MACROS  # noqa: E402

K = 3
TOL = 1e-12


def _data() -> dict[str, pa.Table]:
    rng = np.random.default_rng(28)
    users = 30
    recs = [[int(i) for i in rng.integers(0, 10, int(rng.integers(0, 6)))] for _ in range(users)]
    recs[1], recs[2], recs[3] = None, [], [4, None, 4, 5]
    truth = [[int(i) for i in rng.choice(12, int(rng.integers(0, 4)), replace=False)]
             for _ in range(users)]
    truth[4] = None
    test_users = [u for u in range(36) if u % 5 != 2]
    list_type = pa.list_(pa.int64())
    # Items 0..7 have a category (0..2 a second one in "many"); items 8, 9 none.
    return {
        "recs": pa.table({"user": np.arange(users), "rec": pa.array(recs, list_type),
                          "truth": pa.array(truth, list_type)}),
        "test": pa.table({"user": test_users, "item": [u % 7 for u in test_users]}),
        "train": pa.table({"user": rng.integers(0, 15, 80), "item": rng.integers(0, 9, 80)}),
        "one": pa.table({"item": np.arange(8), "category": ["abc"[i % 3] for i in range(8)]}),
        "user_groups": pa.table({"user": np.arange(0, 36, 2), "group": [
            "mf"[u % 4 // 2] for u in range(0, 36, 2)]}),
        "many": pa.table({"item": [*range(8), 0, 1, 2],
                          "category": [*("abc"[i % 3] for i in range(8)), "d", "d", "a"]}),
    }


DATA = _data()

CASES = [
    # (metric, Spark options, the DuckDB query), per-user ones giving (user, value) rows
    ("user_coverage", {}, "SELECT user_coverage FROM user_coverage('recs', 3)"),
    ("user_coverage", {"test": "test", "full_lists": True}, "SELECT user_coverage FROM "
     "user_coverage('recs', 3, test := 'test', full_lists := true)"),
    ("sufficient_reco", {}, "FROM sufficient_reco('recs', 3)"),
    ("sufficient_reco", {"deep": True}, "FROM sufficient_reco('recs', 3, deep := true)"),
    ("unrepeated_reco", {}, "FROM unrepeated_reco('recs', 3)"),
    ("unrepeated_reco", {"deep": True}, "FROM unrepeated_reco('recs', 3, deep := true)"),
    ("arp", {"train": "train", "discount": "rbp", "persistence": 0.6},
     "FROM arp('recs', 'train', 3, discount := 'rbp', persistence := 0.6)"),
    ("self_information", {"train": "train", "discount": "log"},
     "FROM self_information('recs', 'train', 3, discount := 'log')"),
    ("epc", {"train": "train"}, "FROM epc('recs', 'train', 3)"),
    ("efd", {"train": "train", "discount": "none"}, "FROM efd('recs', 'train', 3, "
     "discount := 'none')"),
    ("exposure_entropy", {"discount": "log"}, "FROM exposure_entropy('recs', 3, "
     "discount := 'log')"),
    ("exposure_gini", {"catalog_size": 12, "discount": "rbp"}, "FROM exposure_gini('recs', 3, "
     "catalog_size := 12, discount := 'rbp')"),
    ("categorical_diversity", {"categories": "one"}, "FROM categorical_diversity('recs', "
     "'one', 3)"),
    ("rank_biased_entropy", {"categories": "many", "smoothing": 1e-6}, "FROM "
     "rank_biased_entropy('recs', 'many', 3, smoothing := 1e-6)"),
    ("aclt", {"train": "train"}, "FROM aclt('recs', 'train', 3)"),
    ("aplt", {"train": "train", "head": "items", "head_share": 0.3}, "FROM aplt('recs', "
     "'train', 3, head := 'items', head_share := 0.3)"),
    ("pop_reo", {"train": "train"}, "SELECT pop_reo FROM pop_reo('recs', 'train', 3)"),
    ("pop_rsp", {"train": "train", "head_share": 0.5}, "SELECT pop_rsp FROM pop_rsp('recs', "
     "'train', 3, head_share := 0.5)"),
    ("reo", {"train": "train", "item_groups": "one", "group_col": "category"}, "SELECT reo FROM "
     "reo('recs', 'train', 'one', 3, group_col := 'category')"),
    ("rsp", {"train": "train", "item_groups": "one", "group_col": "category"}, "SELECT rsp FROM "
     "rsp('recs', 'train', 'one', 3, group_col := 'category')"),
    ("expected_exposure", {"persistence": 0.7}, "SELECT user, expected_exposure FROM "
     "expected_exposure('recs', 3, persistence := 0.7)"),
    # The item ids as the scores (one per element of rec, NULL where rec holds NULL).
    ("user_mad_rating", {"user_groups": "user_groups", "scores_col": "rec"}, "FROM "
     "user_mad_rating('recs', 'user_groups', 3, scores_col := 'rec')"),
    ("item_mad_rating", {"item_groups": "one", "group_col": "category", "scores_col": "rec"},
     "FROM item_mad_rating('recs', 'one', 3, scores_col := 'rec', group_col := 'category')"),
]


@pytest.fixture(scope="module")
def frames(spark_session) -> dict:
    return spark_frames(spark_session, DATA)


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    return duckdb_with(MACROS, DATA)


@pytest.fixture(scope="module")
def spark_values(frames) -> dict[int, dict]:
    """case -> {user: value} (user None for a catalogue metric), from one union of the cases."""
    return spark_beyond_values(frames, CASES, K)


@pytest.mark.parametrize("case", range(len(CASES)), ids=[c[0] for c in CASES])
def test_same_values_as_duckdb(spark_values, con, case: int) -> None:
    expected = con.execute(CASES[case][2]).fetchall()
    got = spark_values[case]
    if len(expected[0]) == 1:  # a catalogue metric: one value
        assert list(got) == [None]
        assert got[None] == pytest.approx(expected[0][0], abs=TOL)
    else:
        assert got.keys() == {row[0] for row in expected}
        for user, value in expected:
            assert got[user] == (None if value is None else pytest.approx(value, abs=TOL)), user


def test_bias_disparity_rows_are_duckdbs(frames, con) -> None:
    expected = con.execute("FROM bias_disparity('recs', 'train', 'user_groups', 'one', 3, "
                           "group_col := 'category')").fetchall()
    got = duckrank_spark.beyond_accuracy(
        frames["recs"], "bias_disparity", K, train=frames["train"],
        user_groups=frames["user_groups"], item_groups=frames["one"], group_col="category")
    rows = {(r["user_group"], r["item_group"]): (r["bs"], r["br"], r["bd"]) for r in got.collect()}
    assert rows.keys() == {(g, c) for g, c, *_ in expected}
    for g, c, *values in expected:
        for value, want in zip(rows[g, c], values, strict=True):
            assert value == (None if want is None else pytest.approx(want, abs=TOL)), (g, c)


@pytest.mark.parametrize(("metric", "groups"), [
    ("extended_epc", {}), ("extended_efd", {}),
    ("user_mad_ranking", {"user_groups": "user_groups"}),
    ("item_mad_ranking", {"item_groups": "one", "group_col": "category"})])
def test_graded_forms_read_map_truth_as_duckdb(frames, con, metric: str, groups: dict) -> None:
    """Grades truth % 3 (0 is below the threshold 1), as a MAP on both sides."""
    from pyspark.sql import functions as F

    con.execute("CREATE OR REPLACE TABLE graded AS SELECT user, rec, CASE WHEN truth IS NOT "
                "NULL THEN MAP(truth, list_transform(truth, lambda x: x % 3)) END AS truth "
                "FROM recs")
    graded = frames["recs"].withColumn("truth", F.when(F.col("truth").isNotNull(), (
        F.map_from_arrays("truth", F.transform("truth", lambda x: x % 3)))))
    if groups:
        table = groups.get("user_groups") or groups["item_groups"]
        named = ", group_col := 'category'" if "group_col" in groups else ""
        expected = {None: con.execute(f"FROM {metric}('graded', '{table}', 3{named})")
                    .fetchall()[0][0]}
        options = {k: frames.get(v, v) for k, v in groups.items()}
        got = {None: duckrank_spark.beyond_accuracy(graded, metric, K, **options)
               .collect()[0][0]}
    else:
        expected = dict(con.execute(f"FROM {metric}('graded', 'train', 3, discount := 'rbp')")
                        .fetchall())
        got = {r["user"]: r[metric] for r in duckrank_spark.beyond_accuracy(
            graded, metric, K, train=frames["train"], discount="rbp").collect()}
    assert got.keys() == expected.keys()
    for user, value in expected.items():
        assert got[user] == (None if value is None else pytest.approx(value, abs=TOL)), user


def test_flags_are_checked(frames) -> None:
    with pytest.raises(ValueError, match="sufficient_reco: deep must be true or false, got 1"):
        duckrank_spark.beyond_accuracy(frames["recs"], "sufficient_reco", K, deep=1)
