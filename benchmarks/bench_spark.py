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

A third block (``--blocks families``) times the newer families on Spark against the peer a user
would pick, one table (``bench_families``):

* trec_eval's measures (P_10, recall_100, map and ndcg in duckrank's native Spark SQL, bpref
  through its Arrow UDF, the only Spark form of a judged measure; one at a time and all in one
  pass) against pytrec_eval (pytrec-eval-terrier: trec_eval 9.0.8's C code, single-machine,
  one Python thread on the driver over dicts). Its dicts are built, timed, from the same rows
  collected to the driver as Arrow (the collection is printed, not counted); its time per
  measure is the evaluator's construction (it copies the qrels), ``evaluate`` and the mean.
  Every per-query value is compared with duckrank's before timing.
* beyond-accuracy (catalog_coverage, exposure_gini, self_information) through
  ``duckrank.spark.beyond_accuracy`` against duckrank's own DuckDB macros on the same tables (2
  threads): no peer that has them (RecTools, RePlay, Recommenders) installs beside PySpark in
  this venv; benchmarks/RESULTS.md has RecTools against the DuckDB macros.
* fusion (rrf, sum = CombSUM, min-max normalisation) through ``duckrank.engines.spark_fusion.fuse``
  (written to Spark's ``noop`` sink: every fused row computed) against ranx's ``fuse``, on
  ``--systems`` runs of ``--queries`` queries x 100 items (benchmarks/bench_fusion.py's data);
  ranx's time is its Runs built from pandas frames in memory plus the fusion (numba compiled by a
  warm-up). Fused scores and ranks are compared on 200 queries first (that query, the same
  plan with a filter, is Spark's warm-up). Each method twice: the
  runs cached as the other blocks cache (round robin), and cached hash-partitioned by query
  (then fuse's windows and aggregate need no shuffle).

Spark figures: median wall and JVM CPU of ``--runs`` runs after a warm-up. The peers run in
this process: wall and this process's CPU; DuckDB median of ``--runs`` after a warm-up,
pytrec_eval and ranx median of ``--peer-runs`` (default 1: seconds each, compiled code with
nothing to warm up but ranx's numba compilation, done first on small runs).

The table is cached in Spark memory (and loaded into a DuckDB table) before timing, so no run
includes Parquet decoding. Each figure is the median of ``--runs`` runs after one warm-up; every
ndcg variant is checked row by row against DuckDB's before it is timed. The machine is shared
with other work: keep runs modest and read the figures as ratios.
"""

from __future__ import annotations

import argparse
import math
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
import pyarrow.compute as pc
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


def _timed(spark: SparkSession, run: Callable[[], object], runs: int, warm_up: bool = True
           ) -> tuple[float, float]:
    """(median wall seconds, median JVM CPU seconds) of ``runs`` runs after a warm-up (unless
    the caller has just run the same thing)."""
    if warm_up:
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


# --- The newer families against their peers (issue 32, part 4, second half) --------------------

# trec_eval measure -> (duckrank metric, k, options): the calls of duckrank trec_eval
# (duckrank.reports.trec_eval.measures) for binary qrels, each in duckrank's native Spark SQL.
TREC_NATIVE = {
    "P_10": ("precision_at", 10, {"denominator": "k"}),
    "recall_100": ("recall_at", 100, {}),
    "map": ("average_precision", None, {}),
    "ndcg": ("ndcg", None, {}),
}
# The judged qrels: truth's items grade 1 and, as judged non-relevant (grade 0), every fifth
# recommended item (positions 1, 6, 11, ...) that is not relevant: bpref reads them.
GRADES_SQL = ("map_concat(map_from_arrays(truth, transform(truth, x -> 1)), map_from_arrays("
              "filter(rec, (x, i) -> i % 5 = 0 AND NOT array_contains(truth, x)), "
              "transform(filter(rec, (x, i) -> i % 5 = 0 AND NOT array_contains(truth, x)), "
              "x -> 0)))")
PEER_BUILD = "peer build s"


def _peer_timed(run: Callable[[], object], runs: int) -> tuple[float, float, object]:
    """(median wall, median CPU seconds of this process, the last result) of ``runs`` runs, no
    warm-up: the peers run in this Python process (Spark idle meanwhile)."""
    walls, cpus, result = [], [], None
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        result = run()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), result


def _workers_cpu_seconds(spark: SparkSession) -> float:
    """CPU seconds of the Spark JVM's live descendants (PySpark's daemon and its Python workers,
    with the reaped workers' time in their parent's cutime/cstime): what an Arrow UDF costs
    beyond the JVM."""
    jvm, children = spark.sparkContext._gateway.proc.pid, {}
    stats = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(entry.name)] = fields
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    total, todo = 0, list(children.get(jvm, []))
    while todo:
        pid = todo.pop()
        total += sum(int(f) for f in stats[pid][11:15])
        todo.extend(children.get(pid, []))
    return total / os.sysconf("SC_CLK_TCK")


def _trec_dicts(table: pa.Table) -> tuple[dict, dict]:
    """pytrec_eval's input from the rows on the driver: run {query: {doc: score}}, the score
    falling with the rank (trec_eval sorts by score), and qrels {query: {doc: grade}}."""
    uids = [str(u) for u in table["uid"].to_pylist()]
    recs = pc.cast(table["rec"], pa.list_(pa.string())).to_pylist()
    grades = table["grades"].to_pylist()
    run = {u: dict(zip(r, map(float, range(len(r), 0, -1)), strict=True))
           for u, r in zip(uids, recs, strict=True)}
    qrels = {u: {str(d): g for d, g in pairs} for u, pairs in zip(uids, grades, strict=True)}
    return run, qrels


def bench_trec(users: int, runs: int, peer_runs: int, spark: SparkSession) -> list[dict]:
    """trec_eval's measures: duckrank on Spark against pytrec_eval on the driver."""
    import pytrec_eval

    frame = (spark.read.parquet(str(dataset(users, "bigint")))
             .select("uid", "rec", "truth", F.expr(GRADES_SQL).alias("grades"))
             .repartition(2).cache())
    frame.count()
    frame.createOrReplaceTempView("trec")
    expressions = {m: duckrank_spark.metric_sql(name, k=k, **options)
                   for m, (name, k, options) in TREC_NATIVE.items()}
    expressions["bpref"] = "bpref(rec, grades)"
    forms = {m: "native SQL" for m in TREC_NATIVE} | {"bpref": "Arrow UDF"}

    start = time.perf_counter()
    table = frame.select("uid", "rec", "grades").toArrow()
    print(f"# trec_eval: {users} queries x 100 documents; collecting the cached rows to the "
          f"driver (toArrow) for pytrec_eval: {time.perf_counter() - start:.2f} s, not counted",
          flush=True)
    build = _peer_timed(lambda: _trec_dicts(table), 1)
    run, qrels = build[2]

    # Every per-query value, before any timing.
    columns = ", ".join(f"{e} AS `{m}`" for m, e in expressions.items())
    ours = spark.sql(f"SELECT uid, {columns} FROM trec").toArrow().to_pydict()
    theirs = pytrec_eval.RelevanceEvaluator(qrels, set(expressions)).evaluate(run)
    worst = {m: max(abs(v - theirs[str(u)][m]) for u, v in zip(ours["uid"], ours[m], strict=True))
             for m in expressions}
    assert len(theirs) == len(ours["uid"]) == users
    del ours

    def peer(measures: set[str]) -> Callable[[], dict[str, float]]:
        def evaluate() -> dict[str, float]:
            values = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
            return {m: math.fsum(v[m] for v in values.values()) / len(values) for m in measures}
        return evaluate

    rows = []
    cases = [(m, [m]) for m in expressions] + [(f"all {len(expressions)} in one pass",
                                                 list(expressions))]
    for label, measures in cases:
        query = "SELECT " + ", ".join(f"avg({expressions[m]})" for m in measures) + " FROM trec"
        mine = spark.sql(query).collect()[0]  # also the warm-up
        workers = _workers_cpu_seconds(spark)
        wall, cpu = _timed(spark, lambda q=query: spark.sql(q).collect(), runs, warm_up=False)
        workers = (_workers_cpu_seconds(spark) - workers) / runs
        peer_wall, peer_cpu, means = _peer_timed(peer(set(measures)), peer_runs)
        check = "; ".join(f"mean diff {abs(mine[i] - means[m]):.0e}, per query <= "
                          f"{worst[m]:.0e}" for i, m in enumerate(measures)) \
            if len(measures) == 1 else "as above"
        form = forms[measures[0]] if len(measures) == 1 else \
            f"{len(TREC_NATIVE)} native SQL + 1 Arrow UDF"
        if "bpref" in measures:
            form += f" (+ {workers:.2f} s Python workers' CPU per run)"
        rows.append({"family": "trec_eval", "measure": label, "form": form, "wall": wall,
                     "cpu": cpu, "peer": "pytrec_eval (driver, 1 thread)", PEER_BUILD: build[0],
                     "peer wall": peer_wall, "peer cpu": peer_cpu, "check": check,
                     "value": mine[0] if len(measures) == 1 else float("nan")})
    frame.unpersist()
    return rows


def bench_beyond(users: int, runs: int, spark: SparkSession, k: int = 10,
                 items: int = 100_000) -> list[dict]:
    """Beyond-accuracy: ``duckrank.spark.beyond_accuracy`` against duckrank's DuckDB macros on
    the same tables (bench_beyond_accuracy.py's generator: Zipf-like popularity)."""
    from benchmarks.bench_beyond_accuracy import SEED, _lists, _zipf_items
    from duckrank.spark import beyond_accuracy

    interactions = 10 * users
    rng = np.random.default_rng(SEED)
    recs = pa.table({"user": np.arange(users),
                     "rec": _lists(rng, users, k, items).cast(pa.list_(pa.int64()))})
    train = pa.table({"user": rng.integers(0, users, interactions),
                      "item": _zipf_items(rng, interactions, items)})
    con = duckrank.connect(config={"threads": 2})
    for name, table in (("recs", recs), ("train", train)):
        con.register("arrow_in", table)
        con.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM arrow_in")
        con.unregister("arrow_in")
    spark_recs = spark.createDataFrame(recs).repartition(2).cache()
    spark_train = spark.createDataFrame(train).repartition(2).cache()
    spark_recs.count(), spark_train.count()
    print(f"# beyond-accuracy: {users} users x top {k}, {items}-item catalogue, {interactions} "
          "training interactions", flush=True)

    cases = {
        "catalog_coverage": ({"catalog_size": items}, False,
                             f"SELECT catalog_coverage FROM catalog_coverage('recs', {k}, "
                             f"catalog_size := {items})"),
        "exposure_gini": ({"catalog_size": items}, False,
                          f"SELECT exposure_gini FROM exposure_gini('recs', {k}, "
                          f"catalog_size := {items})"),
        "self_information": ({"train": spark_train}, True,
                             "SELECT avg(self_information) FROM self_information('recs', "
                             f"'train', {k})"),
    }
    rows = []
    for metric, (options, per_user, sql) in cases.items():
        def ours(metric: str = metric, options: dict = options, per_user: bool = per_user
                 ) -> float:
            result = beyond_accuracy(spark_recs, metric, k, **options)
            if per_user:
                result = result.agg(F.avg(metric))
            return result.collect()[0][0]

        mine = ours()
        theirs = con.execute(sql).fetchall()[0][0]
        wall, cpu = _timed(spark, ours, runs)
        con.execute(sql).fetchall()  # the warm-up
        peer_wall, peer_cpu, _ = _peer_timed(lambda q=sql: con.execute(q).fetchall(), runs)
        rows.append({"family": "beyond-accuracy", "measure": metric,
                     "form": "beyond_accuracy (DataFrame ops)", "wall": wall, "cpu": cpu,
                     "peer": "duckrank DuckDB macro (2 threads)", PEER_BUILD: 0.0,
                     "peer wall": peer_wall, "peer cpu": peer_cpu, "value": mine,
                     "check": f"diff {abs(mine - theirs):.0e}"})
    spark_recs.unpersist()
    spark_train.unpersist()
    con.close()
    return rows


FUSION_CASES = {"rrf": {"k": 60}, "sum": {}}


def _fusion_check(ours: list, theirs: dict[str, dict[str, float]]) -> str:
    """Scores to 1e-9 and ranks (ranx's scores ordered as duckrank documents: score descending,
    ties by item text descending) on the sampled queries."""
    mine: dict[str, dict[str, tuple[float, int]]] = {}
    for row in ours:
        mine.setdefault(row["query"], {})[row["item"]] = (row["score"], row["rank"])
    assert mine.keys() == theirs.keys(), "fused queries differ"
    worst, pairs, misranked = 0.0, 0, 0
    for query, scores in theirs.items():
        assert mine[query].keys() == scores.keys(), f"fused items differ for {query}"
        by_item = sorted(scores.items(), key=lambda t: t[0], reverse=True)
        ordered = sorted(by_item, key=lambda t: -t[1])
        for rank, (item, score) in enumerate(ordered, 1):
            worst = max(worst, abs(mine[query][item][0] - score))
            misranked += mine[query][item][1] != rank
            pairs += 1
    assert worst <= 1e-9, f"fused scores differ by {worst}"
    return (f"{len(theirs)} queries, {pairs} items: score diff <= {worst:.0e}, "
            f"{misranked} ranks differ")


def bench_fusion_spark(queries: int, systems: int, runs: int, peer_runs: int,
                       spark: SparkSession) -> list[dict]:
    """Fusion: ``spark_fusion.fuse`` against ranx's ``fuse`` on the same runs."""
    from functools import reduce

    from ranx import Run
    from ranx import fuse as ranx_fuse

    from benchmarks.bench_fusion import _frame, write_runs
    from duckrank.engines.spark_fusion import fuse

    os.environ.pop("NUMBA_DISABLE_JIT", None)
    paths, _ = write_runs(queries, systems, 100)
    small, _ = write_runs(50, systems, 10)
    union = reduce(lambda a, b: a.unionByName(b), [
        spark.read.parquet(str(p)).select(F.lit(p.stem).alias("system"), "query", "item",
                                          "score") for p in paths])
    # As the other blocks cache it (round robin), and cached hash-partitioned by query: then
    # fuse's windows and aggregate (by (system, query), (query, item), query) need no shuffle.
    layouts = {"": union.repartition(2).cache(),
               ", input partitioned by query": union.repartition(2, "query").cache()}
    for frame in layouts.values():
        frame.count()
    frames = [_frame(p) for p in paths]
    print(f"# fusion: {systems} runs x {queries} queries x 100 items, min-max normalisation",
          flush=True)

    def ranx_runs(pandas_frames: list) -> list:
        return [Run.from_df(f, q_id_col="query", doc_id_col="item", score_col="score",
                            name=p.stem) for f, p in zip(pandas_frames, paths, strict=True)]

    for method, params in FUSION_CASES.items():  # numba compiles here
        ranx_fuse(ranx_runs([_frame(p) for p in small]), norm="min-max", method=method,
                  params=params)
    sample = [f"q{i}" for i in range(0, queries, max(1, queries // 200))][:200]
    rows = []
    for method, params in FUSION_CASES.items():
        built = ranx_runs(frames)
        fused = ranx_fuse(built, norm="min-max", method=method, params=params)
        theirs = {q: dict(fused.run[q]) for q in sample}
        build_wall, _, _ = _peer_timed(lambda: ranx_runs(frames), peer_runs)
        peer_wall, peer_cpu, _ = _peer_timed(lambda m=method, q=params, b=built: ranx_fuse(
            b, norm="min-max", method=m, params=q), peer_runs)
        for layout, frame in layouts.items():
            ours = fuse(frame, method, norm="min-max", params=params).where(
                F.col("query").isin(sample)).collect()
            check = _fusion_check(ours, theirs)

            def run(method: str = method, params: dict = params, frame=frame) -> None:
                fuse(frame, method, norm="min-max", params=params).write.format("noop").mode(
                    "overwrite").save()

            wall, cpu = _timed(spark, run, runs, warm_up=False)  # the check's plan warmed it
            label = ("sum (CombSUM)" if method == "sum" else method) + layout
            rows.append({"family": "fusion", "measure": label,
                         "form": "spark_fusion.fuse -> noop sink", "wall": wall, "cpu": cpu,
                         "peer": "ranx fuse (numba, driver)", PEER_BUILD: build_wall,
                         "peer wall": peer_wall, "peer cpu": peer_cpu, "check": check,
                         "value": float("nan")})
    for frame in layouts.values():
        frame.unpersist()
    return rows


def bench_families(users: int, queries: int, systems: int, runs: int, peer_runs: int,
                   spark: SparkSession) -> None:
    print(f"\n# the newer families on Spark against their peers; Spark and DuckDB: median of "
          f"{runs} runs after a warm-up; pytrec_eval and ranx: median of {peer_runs}; the peers "
          "run in this process (peer CPU: this process's)")
    print("| family | measure | duckrank Spark form | Spark wall s | JVM CPU s | peer | "
          "peer build s | peer wall s | peer CPU s | peer / duckrank wall (with build; "
          "without) | check |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for block in (lambda: bench_trec(users, runs, peer_runs, spark),
                  lambda: bench_beyond(users, runs, spark),
                  lambda: bench_fusion_spark(queries, systems, runs, peer_runs, spark)):
        for row in block():
            with_build = (row[PEER_BUILD] + row["peer wall"]) / row["wall"]
            print(f"| {row['family']} | {row['measure']} | {row['form']} | {row['wall']:.3f} | "
                  f"{row['cpu']:.2f} | {row['peer']} | {row[PEER_BUILD]:.2f} | "
                  f"{row['peer wall']:.3f} | {row['peer cpu']:.2f} | {with_build:.2f}x; "
                  f"{row['peer wall'] / row['wall']:.2f}x | {row['check']} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--ids", nargs="+", default=["bigint", "varchar"])
    parser.add_argument("--k", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--blocks", nargs="+", default=["ndcg", "mllib"],
                        help="ndcg: the strategies table; mllib: duckrank against MLlib; "
                        "families: trec_eval measures, beyond-accuracy and fusion against "
                        "their peers")
    parser.add_argument("--queries", type=int, default=10_000,
                        help="families block: the fusion runs' queries")
    parser.add_argument("--systems", type=int, default=3,
                        help="families block: the runs fused")
    parser.add_argument("--peer-runs", type=int, default=1,
                        help="families block: timed runs of pytrec_eval and ranx")
    parser.add_argument("--mllib-rdd", action="store_true",
                        help="also time pyspark.mllib's RankingMetrics over the DataFrame's rows")
    parser.add_argument("--quick", action="store_true",
                        help="10,000 users, BIGINT ids, k = 10, one run (families: 1,000 "
                        "fusion queries)")
    args = parser.parse_args()
    if args.quick:
        args.users, args.ids, args.k, args.runs = 10_000, ["bigint"], [10], 1
        args.queries = 1_000

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
    if "families" in args.blocks:
        bench_families(args.users, args.queries, args.systems, args.runs, args.peer_runs,
                       spark)
    spark.stop()


if __name__ == "__main__":
    main()
