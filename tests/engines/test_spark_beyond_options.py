"""The peers' options of the beyond-accuracy metrics (tests/metrics/test_beyond_peer_options.py)
on a real local Spark session: the same numbers as the DuckDB macros, which are the reference
(checked there against the records' kernels, hand calculations following the peers' code and
RecTools), on generated data with empty and NULL lists, NULL elements and items absent from
train; and the option that Spark does not take says so."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="pip install duckrank[spark]")

import duckdb  # noqa: E402
from conftest import duckdb_with, spark_frames  # noqa: E402

from duckrank import spark as duckrank_spark  # noqa: E402
from duckrank.render.beyond_accuracy import MACROS  # noqa: E402

K = 4
TOL = 1e-12


def _data() -> dict[str, pa.Table]:
    rng = np.random.default_rng(29)
    recs = [[int(i) for i in rng.integers(0, 16, int(rng.integers(0, 7)))] for _ in range(30)]
    recs[1], recs[2], recs[3] = None, [], [1, None, 1, 14]
    return {
        "recs": pa.table({"user": np.arange(30), "rec": pa.array(recs, pa.list_(pa.int64()))}),
        "train": pa.table({"user": rng.integers(0, 20, 90), "item": rng.integers(0, 12, 90)}),
    }


DATA = _data()

CASES = [
    # (metric, options, the DuckDB query): catalogue metrics give one row, the others per user.
    ("catalog_coverage", {"normalize": False}, "FROM catalog_coverage('recs', 4, normalize := "
     "false)"),
    ("user_coverage", {"normalize": False}, "SELECT user_coverage FROM user_coverage('recs', 4, "
     "normalize := false)"),
    ("exposure_entropy", {"unit": "nats", "per_item": True}, "FROM exposure_entropy('recs', 4, "
     "unit := 'nats', per_item := true)"),
    ("exposure_gini", {"catalog_size": 20, "denominator": "n_minus_1", "complement": True},
     "FROM exposure_gini('recs', 4, catalog_size := 20, denominator := 'n_minus_1', "
     "complement := true)"),
    ("self_information", {"popularity": "interactions", "normalize": True},
     "FROM self_information('recs', 'train', 4, popularity := 'interactions', normalize := "
     "true)"),
    ("long_tail_share", {"tail_ratio": 0.29}, "FROM long_tail_share('recs', 'train', 4, "
     "tail_ratio := 0.29)"),
    ("long_tail_share", {"tail_ratio": 8}, "FROM long_tail_share('recs', 'train', 4, "
     "tail_ratio := 8)"),
]


@pytest.fixture(scope="module")
def frames(spark_session) -> dict:
    return spark_frames(spark_session, DATA)


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    return duckdb_with(MACROS, DATA)


@pytest.mark.parametrize("case", range(len(CASES)), ids=[c[0] for c in CASES])
def test_same_values_as_duckdb(frames, con, case: int) -> None:
    metric, options, query = CASES[case]
    if "train" in query:
        options = {**options, "train": frames["train"]}
    result = duckrank_spark.beyond_accuracy(frames["recs"], metric, K, **options)
    rows = result.select(*(["user"] if "user" in result.columns else []), metric).collect()
    got = {row[0] if len(row) == 2 else None: row[-1] for row in rows}
    expected = {row[0] if len(row) == 2 else None: row[-1]
                for row in con.execute(query).fetchall()}
    assert got.keys() == expected.keys()
    for user, value in expected.items():
        assert got[user] == (None if value is None else pytest.approx(value, abs=TOL)), user


@pytest.mark.parametrize(("metric", "options", "message"), [
    ("catalog_coverage", {"catalog_size": 20, "in_catalog": True},
     "catalog_coverage: in_catalog=True is not in Spark"),
    ("exposure_entropy", {"unit": "bit"}, "exposure_entropy: unit must be one of 'bits', "
     "'nats', got 'bit'"),
    ("exposure_gini", {"catalog_size": 20, "denominator": "n-1"},
     "exposure_gini: denominator must be one of 'n', 'n_minus_1', got 'n-1'"),
    ("exposure_gini", {}, "exposure_gini: give catalog_size, a positive integer"),
    ("exposure_gini", {"catalog_size": 2.5},
     "exposure_gini: catalog_size must be a positive integer, got 2.5"),
    ("user_coverage", {"normalize": None}, "user_coverage: normalize must be true or false"),
    ("long_tail_share", {"tail_ratio": 0}, "long_tail_share: tail_ratio must be a finite number "
     "> 0 or NULL, got 0"),
    ("arp", {"normalize": None}, "arp: normalize must be true or false, got None"),
    ("aclt", {"head": "users"}, "aclt: head must be one of 'interactions', 'items', got 'users'"),
    ("extended_epc", {"threshold": None}, "extended_epc: threshold must be a finite number, got "
     "None"),
])
def test_errors_name_the_function_option_and_value(frames, metric: str, options: dict,
                                                   message: str) -> None:
    if metric in ("long_tail_share", "arp", "aclt", "extended_epc"):
        options = {**options, "train": frames["train"]}
    with pytest.raises(ValueError, match=message):
        duckrank_spark.beyond_accuracy(frames["recs"], metric, K, **options).collect()
