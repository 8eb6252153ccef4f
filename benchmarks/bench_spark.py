"""Spark throughput of duckrank's metrics (local[2]) beside DuckDB's, on the same Parquet data.

    .venv/bin/python -m benchmarks.bench_spark [--users 100000] [--ids bigint varchar] [--k 10 100]

For each id type and cut-off it times ``SELECT avg(<ndcg expression>) FROM eval`` with:

* duckdb macro: duckrank's pure-SQL macro in DuckDB (2 threads), the reference throughput;
* spark arrow_udf: ``duckrank.spark.register`` (Arrow UDF over the numpy kernel), what users get;
* spark pandas_udf: the same kernel behind a pandas UDF, to show why arrow_udf was chosen;
* spark native HOF: ndcg in Spark's own SQL (transform / aggregate / array_contains), the
  baseline a Python UDF has to beat or explain;
* spark no-op arrow_udf: an Arrow UDF that returns zeros, the cost of shipping the lists to Python;
* spark scan: a native expression that reads every value the metric needs (the scan floor).

* spark native SQL: ``duckrank.spark.metric_sql`` (the record's SQL translated to Spark SQL by
  ``duckrank.render.spark_sql``), what a Spark user should call for the binary metrics.

A second block times duckrank's native SQL against Spark MLlib's ``RankingMetrics`` (through
``pyspark.ml.evaluation.RankingEvaluator``, its DataFrame entry point, which runs in the JVM) on
one cached DataFrame of DOUBLE ids (the type ``RankingEvaluator`` requires; BIGINT ids cast
once, exact below 2^53): ndcg@k, map@k, precision@k and recall@k, with duckrank's options set to
MLlib's conventions and its per-row values averaged as MLlib averages them (a NULL row, empty
truth, counts as 0), next to the scan floor on the same DataFrame. ``--quick``: 10,000 users,
BIGINT ids, k = 10, one run.

The table is cached in Spark memory (and loaded into a DuckDB table) before timing, so no run
includes Parquet decoding. Each figure is the median of ``--runs`` runs after one warm-up; every
ndcg variant is checked row by row against DuckDB's before it is timed. The machine is shared
with other work: keep runs modest and read the figures as ratios.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import duckrank
from benchmarks.data import dataset
from duckrank import spark as duckrank_spark

NDCG = duckrank_spark.spark_functions()["ndcg"]
NOT_NDCG = ("spark no-op arrow_udf", "spark scan")


def native_ndcg_sql(k: int) -> str:
    """duckrank's binary ndcg (duplicates and NULL elements are misses, n = distinct non-NULL
    truth items, NULL when n = 0) in Spark SQL higher-order functions."""
    n = "size(array_compact(array_distinct(truth)))"
    dcg = (
        f"aggregate(transform(slice(rec, 1, {k}), (x, i) -> CASE WHEN x IS NOT NULL "
        "AND array_contains(truth, x) AND array_position(rec, x) = i + 1 "
        "THEN 1.0D / log2(i + 2) ELSE 0.0D END), 0.0D, (a, b) -> a + b)"
    )
    idcg = f"aggregate(sequence(1, least({k}, {n})), 0.0D, (a, i) -> a + 1.0D / log2(i + 1))"
    return f"CASE WHEN rec IS NULL OR truth IS NULL OR {n} = 0 THEN NULL ELSE {dcg} / {idcg} END"


def _pandas_ndcg(rec: pd.Series, truth: pd.Series, k: pd.Series) -> pd.Series:
    """The kernel behind a pandas UDF: Spark hands over pandas Series of numpy arrays, which must
    go back to Arrow lists for the matching step."""
    values = NDCG.evaluate(pa.array(rec), pa.array(truth), pa.array(k))
    return pd.Series(values.to_numpy(zero_copy_only=False))


def _no_op(rec: pa.Array, truth: pa.Array, k: pa.Array) -> pa.Array:
    return pa.array(np.zeros(len(rec)))


def spark_session() -> SparkSession:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("duckrank-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "4g")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    duckrank_spark.register(spark)
    spark.udf.register("ndcg_pandas", F.pandas_udf(_pandas_ndcg, "double"))
    spark.udf.register("no_op_arrow", F.arrow_udf(_no_op, "double"))
    return spark


def _median_seconds(run: Callable[[], object], runs: int) -> float:
    run()  # warm-up: Python workers, JIT, caches
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _max_difference(spark: SparkSession, con: duckdb.DuckDBPyConnection, expression: str,
                    k: int) -> float:
    """Largest |Spark - DuckDB| over all rows (inf when NULLs differ)."""
    got = spark.sql(f"SELECT uid, {expression} AS v FROM eval ORDER BY uid").toArrow()
    want = con.sql(f"SELECT uid, ndcg(rec, truth, {k}) AS v FROM eval ORDER BY uid").arrow()
    if isinstance(want, pa.RecordBatchReader):
        want = want.read_all()
    have_v = got["v"].combine_chunks().cast(pa.float64())
    want_v = want["v"].combine_chunks().cast(pa.float64())
    if not have_v.is_null().equals(want_v.is_null()):
        return float("inf")
    have = have_v.to_numpy(zero_copy_only=False)
    expected = want_v.to_numpy(zero_copy_only=False)
    return float(np.nanmax(np.abs(have - expected))) if len(have) else 0.0


def bench(users: int, ids: str, ks: list[int], runs: int, spark: SparkSession) -> list[dict]:
    path = dataset(users, ids)
    con = duckrank.connect(config={"threads": 2})
    con.execute(f"CREATE OR REPLACE TABLE eval AS SELECT * FROM read_parquet('{path}')")
    frame = spark.read.parquet(str(path)).repartition(2).cache()
    frame.count()
    frame.createOrReplaceTempView("eval")

    results = []
    for k in ks:
        spark_variants = {
            "spark arrow_udf": f"ndcg(rec, truth, {k})",
            "spark pandas_udf": f"ndcg_pandas(rec, truth, {k})",
            "spark native HOF": native_ndcg_sql(k),
            "spark native SQL (duckrank.spark.metric_sql)": duckrank_spark.metric_sql("ndcg", k=k),
            "spark no-op arrow_udf": f"no_op_arrow(rec, truth, {k})",
            "spark scan": f"aggregate(slice(rec, 1, {k}), 0L, (a, x) -> a + hash(x)) "
            "+ aggregate(truth, 0L, (a, x) -> a + hash(x))",
        }
        duck_seconds = _median_seconds(
            lambda k=k: con.execute(f"SELECT avg(ndcg(rec, truth, {k})) FROM eval").fetchall(), runs
        )
        results.append({"ids": ids, "k": k, "strategy": "duckdb macro (2 threads)",
                        "seconds": duck_seconds, "check": "reference"})
        for strategy, expression in spark_variants.items():
            check = "-"
            if strategy not in NOT_NDCG:
                check = f"max diff {_max_difference(spark, con, expression, k):.1e}"
            query = f"SELECT avg({expression}) FROM eval"
            seconds = _median_seconds(lambda q=query: spark.sql(q).collect(), runs)
            results.append({"ids": ids, "k": k, "strategy": strategy, "seconds": seconds,
                            "check": check})
    frame.unpersist()
    con.close()
    for row in results:
        row["rows/s"] = users / row["seconds"]
    return results


def scan_sql(k: int) -> str:
    """A query that reads every value the metrics need (the top k of rec and all of truth)."""
    return (f"avg(aggregate(slice(rec, 1, {k}), 0L, (a, x) -> a + hash(x)) "
            "+ aggregate(truth, 0L, (a, x) -> a + hash(x)))")


# pyspark.mllib's RankingMetrics (RDD API) method per RankingEvaluator metric name.
RDD_METHODS = {"ndcgAtK": "ndcgAt", "meanAveragePrecisionAtK": "meanAveragePrecisionAt",
               "precisionAtK": "precisionAt", "recallAtK": "recallAt"}


def _jvm_cpu_seconds(spark: SparkSession) -> float:
    """CPU seconds used so far by the local Spark JVM (driver and executors: local mode), the
    steadier measure on a shared machine. Python workers are other processes: not counted."""
    pid = spark.sparkContext._gateway.proc.pid
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _timed(spark: SparkSession, run: Callable[[], object], runs: int) -> tuple[float, float]:
    """(median wall seconds, median JVM CPU seconds) of ``runs`` runs after a warm-up."""
    run()
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu = time.perf_counter(), _jvm_cpu_seconds(spark)
        run()
        walls.append(time.perf_counter() - wall)
        cpus.append(_jvm_cpu_seconds(spark) - cpu)
    return statistics.median(walls), statistics.median(cpus)


def bench_mllib(users: int, k: int, runs: int, spark: SparkSession, rdd: bool) -> list[dict]:
    """The MLlib block; with ``rdd``, also pyspark.mllib's ``RankingMetrics`` over the same
    DataFrame's rows (``frame.rdd``: every row goes through Python), timed once without a
    warm-up (it takes 10 to 20 times longer than the rest)."""
    from pyspark.ml.evaluation import RankingEvaluator
    from pyspark.mllib.evaluation import RankingMetrics

    frame = (
        spark.read.parquet(str(dataset(users, "bigint")))
        .select(F.col("rec").cast("array<double>").alias("rec"),
                F.col("truth").cast("array<double>").alias("truth"))
        .repartition(2).cache()
    )
    frame.count()
    frame.createOrReplaceTempView("eval_double")

    def query(expression: str) -> Callable[[], object]:
        return lambda: spark.sql(f"SELECT {expression} FROM eval_double").collect()

    scan, scan_cpu = _timed(spark, query(scan_sql(k)), runs)
    results = [{"metric": "scan", "strategy": "spark scan (reads the same columns)",
                "seconds": scan, "cpu": scan_cpu, "value": float("nan")}]
    for metric in duckrank_spark.MLLIB:
        evaluator = RankingEvaluator(predictionCol="rec", labelCol="truth", metricName=metric, k=k)
        ours_sql = duckrank_spark.mllib_sql(metric, k)
        ours = spark.sql(f"SELECT {ours_sql} FROM eval_double").collect()[0][0]
        theirs = evaluator.evaluate(frame)
        seconds, cpu = _timed(spark, query(ours_sql), runs)
        results.append({"metric": metric, "strategy": "duckrank native SQL",
                        "seconds": seconds, "cpu": cpu, "value": ours})
        seconds, cpu = _timed(spark, lambda e=evaluator: e.evaluate(frame), runs)
        results.append({"metric": metric, "strategy": "MLlib RankingEvaluator",
                        "seconds": seconds, "cpu": cpu, "value": theirs})
        if rdd:
            start, cpu = time.perf_counter(), _jvm_cpu_seconds(spark)
            pairs = frame.rdd.map(lambda row: (row.rec, row.truth))
            value = getattr(RankingMetrics(pairs), RDD_METHODS[metric])(k)
            results.append({"metric": metric, "strategy": "MLlib RankingMetrics (RDD, 1 run)",
                            "seconds": time.perf_counter() - start,
                            "cpu": _jvm_cpu_seconds(spark) - cpu, "value": value})
    frame.unpersist()
    for row in results:
        row["vs scan"] = row["seconds"] / scan
        row["cpu vs scan"] = row["cpu"] / scan_cpu
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--ids", nargs="+", default=["bigint", "varchar"])
    parser.add_argument("--k", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--blocks", nargs="+", default=["ndcg", "mllib"],
                        help="ndcg: the strategies table; mllib: duckrank against MLlib")
    parser.add_argument("--mllib-rdd", action="store_true",
                        help="also time pyspark.mllib's RankingMetrics over the DataFrame's rows")
    parser.add_argument("--quick", action="store_true",
                        help="10,000 users, BIGINT ids, k = 10, one run")
    args = parser.parse_args()
    if args.quick:
        args.users, args.ids, args.k, args.runs = 10_000, ["bigint"], [10], 1

    import pyspark

    spark = spark_session()
    print(f"# duckrank Spark benchmark: {args.users} users, rec 100 ids, truth 1..30 ids; "
          f"Spark {pyspark.__version__} local[2], DuckDB {duckdb.__version__} 2 threads, "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} cpus (shared machine: "
          "figures are medians of a few runs, read them as ratios)")
    if "ndcg" in args.blocks:
        print("| ids | k | strategy | median s | rows/s | check vs DuckDB |")
        print("|---|---|---|---|---|---|")
    for ids in args.ids if "ndcg" in args.blocks else []:
        for row in bench(args.users, ids, args.k, args.runs, spark):
            print(f"| {row['ids']} | {row['k']} | {row['strategy']} | {row['seconds']:.3f} | "
                  f"{row['rows/s'] / 1e6:.2f} M | {row['check']} |", flush=True)
    for k in args.k if "mllib" in args.blocks else []:
        print(f"\n# duckrank native SQL vs MLlib RankingEvaluator, {args.users} users, DOUBLE ids, "
              f"k = {k}")
        print("| metric | strategy | median s | x scan | JVM CPU s | CPU x scan | value |")
        print("|---|---|---|---|---|---|---|")
        rows = bench_mllib(args.users, k, args.runs, spark, args.mllib_rdd)
        for row in rows:
            print(f"| {row['metric']} | {row['strategy']} | {row['seconds']:.3f} | "
                  f"{row['vs scan']:.2f} | {row['cpu']:.2f} | {row['cpu vs scan']:.2f} | "
                  f"{row['value']:.12f} |", flush=True)
        ours = {row["metric"]: row for row in rows if row["strategy"] == "duckrank native SQL"}
        for row in rows:
            if row["strategy"].startswith("MLlib"):
                mine = ours[row["metric"]]
                print(f"# {row['metric']}: {row['strategy']} / duckrank: time "
                      f"{row['seconds'] / mine['seconds']:.1f}x, JVM CPU "
                      f"{row['cpu'] / max(mine['cpu'], 1e-9):.1f}x; duckrank / scan: time "
                      f"{mine['vs scan']:.2f}x, CPU {mine['cpu vs scan']:.2f}x; |difference| "
                      f"{abs(mine['value'] - row['value']):.1e}", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
