"""duckrank.spark on a real local Spark session: the same numbers as DuckDB's macros.

The independent source for every metric value of the binary and graded functions here is DuckDB
running duckrank's SQL macros (native list functions, a different implementation of each
definition than the numpy kernels Spark runs), plus the Hivemall guide's worked example
(the Apache Hivemall user guide, "Evaluation of ranking problems") for the end-to-end query. For
to_ordered_list, DuckDB's to_ordered_list macro is the reference. Every function and call form is
compared as the Spark UDF computes it (the function ``register`` wraps, on Arrow columns), and
one function of each input kind and shape of signature through Spark itself (``_spark_sample``).

The preference-based functions (edrc, edrc_preferences and the rank correlations) have no SQL
form: DuckDB runs the same matching step (duckrank.matching.preferences) and kernels as Python
UDFs. Comparing the engines on them checks Spark's wiring (argument conversion, id kinds, NULL
rows, options, error texts); their values are checked against independent sources in
tests/metrics/test_edrc.py, tests/metrics/test_correlation.py and
tests/metrics/test_properties.py, and here against the paper's Table 2 (Ackerman & Chen, CEUR-WS
Vol-811, paper 11) through Spark.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

pytest.importorskip("pyspark", reason="pip install duckrank[spark]")

import duckdb  # noqa: E402
from pyspark.errors import PySparkException  # noqa: E402

import duckrank  # noqa: E402
from duckrank import spark as duckrank_spark  # noqa: E402
from duckrank.metrics.record import Option  # noqa: E402

USERS = 2_000
PREFERENCE_USERS = 600  # edrc is slower per row, and its wiring needs no more
ITEMS = 40  # few distinct ids, so that lists have hits and duplicates


@pytest.fixture(scope="module")
def spark(spark_session):
    duckrank_spark.register(spark_session)
    return spark_session


@pytest.fixture(scope="module")
def con():
    return duckrank.connect()


def _offsets(rng: np.random.Generator, rows: int, max_len: int) -> np.ndarray:
    """Offsets of lists of 0..max_len elements (so empty lists occur)."""
    return np.concatenate([[0], np.cumsum(rng.integers(0, max_len + 1, rows))]).astype(np.int32)


def _null_rows(rng: np.random.Generator, rows: int) -> pa.Array:
    return pa.array(rng.random(rows) < 0.02)


def _id_lists(rng: np.random.Generator, rows: int, max_len: int) -> pa.ListArray:
    """Ids drawn with replacement (so duplicates occur), about 1% NULL elements, 2% NULL lists."""
    offsets = _offsets(rng, rows, max_len)
    ids = pa.array(rng.integers(0, ITEMS, offsets[-1]), pa.int64(),
                   mask=rng.random(offsets[-1]) < 0.01)
    return pa.ListArray.from_arrays(pa.array(offsets), ids, mask=_null_rows(rng, rows))


def _grade_maps(rng: np.random.Generator, rows: int, max_len: int) -> pa.MapArray:
    """Graded truth: up to max_len distinct ids per row, grades 0..4 (0 = not relevant)."""
    offsets = _offsets(rng, rows, max_len)
    lengths = np.diff(offsets)
    distinct = rng.random((rows, ITEMS)).argsort(axis=1)[:, :max_len]
    ids = distinct[np.arange(max_len) < lengths[:, None]]
    grades = rng.integers(0, 5, offsets[-1]).astype(np.float64)
    return pa.MapArray.from_arrays(pa.array(offsets), pa.array(ids, pa.int64()),
                                   pa.array(grades), mask=_null_rows(rng, rows))


def _grade_lists(rng: np.random.Generator, rows: int, max_len: int, structs: bool) -> pa.ListArray:
    """Hivemall's graded form: grades 0..4, as structs (relscore, itemid) for rec."""
    offsets = _offsets(rng, rows, max_len)
    grades = pa.array(rng.integers(0, 5, offsets[-1]).astype(np.float64))
    if structs:
        ids = pa.array(rng.integers(0, ITEMS, offsets[-1]), pa.int64())
        grades = pa.StructArray.from_arrays([grades, ids], ["relscore", "itemid"])
    return pa.ListArray.from_arrays(pa.array(offsets), grades, mask=_null_rows(rng, rows))


def _preference_lists(rng: np.random.Generator, rows: int, max_len: int) -> pa.ListArray:
    """Lists of (better, worse) structs of two distinct ids, consistent with one hidden order of
    the ids (so without cycles), with repeated pairs, about 1% NULL items, 1% NULL structs and 2%
    NULL lists."""
    offsets = _offsets(rng, rows, max_len)
    pairs = offsets[-1]
    place = rng.permutation(ITEMS)  # the hidden order: id -> place
    a = rng.integers(0, ITEMS, pairs)
    b = (a + rng.integers(1, ITEMS, pairs)) % ITEMS
    better, worse = np.where(place[a] < place[b], a, b), np.where(place[a] < place[b], b, a)
    structs = pa.StructArray.from_arrays(
        [pa.array(ids, pa.int64(), mask=rng.random(pairs) < 0.005) for ids in (better, worse)],
        ["better", "worse"], mask=pa.array(rng.random(pairs) < 0.01),
    )
    return pa.ListArray.from_arrays(pa.array(offsets), structs, mask=_null_rows(rng, rows))


def _as_text(lists: pa.Array) -> pa.Array:
    if pa.types.is_map(lists.type):
        return lists.cast(pa.map_(pa.string(), pa.float64()))
    if pa.types.is_struct(lists.type.value_type):
        fields = lists.type.value_type
        return lists.cast(pa.list_(pa.struct([(f.name, pa.string()) for f in fields])))
    return lists.cast(pa.list_(pa.string()))


# The input kinds each shape of table is for. Spark picks a function's form by the argument
# types alone, and some forms accept more than their shape (the binary metrics take lists of
# structs as ids, too), so each table is compared on the functions of its kinds.
SHAPES = {
    "ids bigint": {"hits", "grades"},
    "ids string": {"hits", "grades"},
    "graded ids bigint": {"grades", "ranked_grades", "graded_hits", "judged"},
    "graded ids string": {"grades", "ranked_grades", "graded_hits", "judged"},
    "grade lists": {"grade_lists"},
    "preferences bigint": {"preferences"},
    "preferences string": {"preferences"},
    "system preferences bigint": {"system_preferences"},
    "system preferences string": {"system_preferences"},
    "subtopics": {"subtopics"},
}


@pytest.fixture(scope="module")
def eval_tables() -> dict[str, pa.Table]:
    """Random evaluation tables, one per shape of (rec, truth) that duckrank's functions read:
    USERS rows, PREFERENCE_USERS for the preference shapes; the id tables come with BIGINT and
    with STRING ids (the same ids). Columns: uid, the first argument (rec, or system for
    edrc_preferences), truth, and k for the shapes whose functions take one."""
    rng = np.random.default_rng(20260521)
    uid = pa.array(np.arange(USERS), pa.int64())
    # k: NULL for some rows; up to 20, beyond many lists' length.
    k = pa.array(rng.integers(1, 21, USERS), pa.int64(), mask=rng.random(USERS) < 0.05)
    rec = _id_lists(rng, USERS, 15)
    preference_rec = _id_lists(rng, PREFERENCE_USERS, 15)
    shapes = {
        "ids": {"rec": rec, "truth": _id_lists(rng, USERS, 6), "k": k},
        "graded ids": {"rec": rec, "truth": _grade_maps(rng, USERS, 6), "k": k},
        "preferences": {
            "rec": preference_rec, "truth": _preference_lists(rng, PREFERENCE_USERS, 12)
        },
        "system preferences": {
            "system": _preference_lists(rng, PREFERENCE_USERS, 12),
            "truth": _preference_lists(rng, PREFERENCE_USERS, 12),
        },
    }
    tables = {}
    for shape, columns in shapes.items():
        rows = len(columns["truth"])
        tables[f"{shape} bigint"] = pa.table({"uid": uid[:rows], **columns})
        text = {name: _as_text(c) if name != "k" else c for name, c in columns.items()}
        tables[f"{shape} string"] = pa.table({"uid": uid[:rows], **text})
    tables["grade lists"] = pa.table({
        "uid": uid, "rec": _grade_lists(rng, USERS, 15, structs=True),
        "truth": _grade_lists(rng, USERS, 6, structs=False), "k": k,
    })
    # Subtopic qrels (the intent-aware measures): each judged item under one or two of three
    # subtopics, with grades 0..2.
    tables["subtopics"] = pa.table({
        "uid": uid, "rec": _as_text(rec),
        "truth": pa.array(
            [[{"subtopic": f"s{(i + j) % 3}", "item": str(i), "grade": float(i % 3)}
              for i in rng.choice(ITEMS, rng.integers(0, 7), replace=False).tolist()
              for j in range(1 + i % 2)] for _ in range(USERS)],
            pa.list_(pa.struct([("subtopic", pa.string()), ("item", pa.string()),
                                ("grade", pa.float64())]))),
        "k": k,
    })
    assert set(tables) == set(SHAPES)
    return tables


def _first_argument(table: pa.Table) -> pa.ChunkedArray:
    return table.column(1)  # rec, or system


def _functions_for(shape: str, table: pa.Table) -> list[duckrank_spark.SparkFunction]:
    """The functions with a form of the shape's kinds that reads this table's types."""
    found = []
    for function in duckrank_spark.spark_functions().values():
        try:
            metric = function.overload_for(_first_argument(table).type, table["truth"].type)
        except TypeError:
            continue
        if metric.inputs in SHAPES[shape]:
            found.append(function)
    return found


# Non-default option values where "default + 1" is out of range, or where the first other
# choice fails on these rows by design (insufficient_handling 'raise': the lists are short);
# depth (the judged-only measures' cut-off) within the lists, where it cuts: 100,000 would cut
# none and cost ndcg_judged_only's kernel about 5 ms a row.
OTHER_VALUES = {"likelihood": 0.25, "min_grade": 2, "insufficient_handling": "exclude",
                "depth": 5}


def _python_value(option: Option) -> object:
    """A non-default value of an option within its domain, as a Python constant."""
    if option.name in OTHER_VALUES:
        return OTHER_VALUES[option.name]
    if option.choices:
        return next(c for c in option.choices if c != option.default)
    if option.default is None:  # a count read from outside the list (catalog_size, depth)
        return next(v for v in (100_000, 50, 5)
                    if option.bounds is None or option.bounds.accepts(v))
    if option.bounds is not None and not option.bounds.accepts(option.default + 1):
        return option.default / 2
    return option.default + 1


def _counts(metric) -> list[Option]:
    """The options whose default (NULL) makes every value NULL, by design."""
    return [o for o in metric.options if o.default is None]


def _forms(function: duckrank_spark.SparkFunction, table: pa.Table) -> dict[str, tuple]:
    """The forms each function is called in: per-row k, k omitted, constant k (for functions
    with a cut-off), and non-default options; each as (the arguments after rec and truth: a
    column name or a constant, {option: value})."""
    metric = function.overload_for(_first_argument(table).type, table["truth"].type)
    # A count read from outside the list (mcc's catalog_size, the partial AUCs' negatives) is
    # NULL by default, and so is every value without it: it is given in every form.
    counts = {o.name: _python_value(o) for o in _counts(metric)}
    forms = {"omitted": ((), counts)}
    if metric.cutoff:
        forms |= {"k": (("k",), counts), "fixed": ((5,), counts)}
    if metric.options:
        forms["options"] = (("k",) if metric.cutoff else (),
                            {o.name: _python_value(o) for o in metric.options})
    return forms


def _call(function: duckrank_spark.SparkFunction, table: pa.Table, form: tuple,
          named: str) -> str:
    """A form as SQL (``named`` is the engine's named-argument arrow: ':=' in DuckDB, '=>' in
    Spark)."""
    arguments, options = form
    first = function.overload_for(_first_argument(table).type, table["truth"].type).first_argument
    named_options = [f"{option} {named} {value!r}" for option, value in options.items()]
    parts = [first, "truth", *map(str, arguments), *named_options]
    return f"{function.name}({', '.join(parts)})"


def _batch_value(function: duckrank_spark.SparkFunction, table: pa.Table, form: tuple) -> pa.Array:
    """A form as the Spark UDF computes it without Spark: the function ``register`` wraps, on the
    table's Arrow columns (a constant as a column of it, as Spark passes a literal)."""
    arguments, options = form

    def constant(value: object) -> pa.Array:
        return pa.array([value] * table.num_rows)

    positional = [table[a].combine_chunks() if isinstance(a, str) else constant(a)
                  for a in arguments]  # a column's name, or a constant k
    return function.batch_function()(
        _first_argument(table).combine_chunks(), table["truth"].combine_chunks(), *positional,
        **{name: constant(value) for name, value in options.items()})


def _spark_sample(functions: list[duckrank_spark.SparkFunction],
                  table: pa.Table) -> list[duckrank_spark.SparkFunction]:
    """The first function of each input kind and shape of signature (cut-off, options and the
    Python types of their values, counts, result type): what Spark's wiring depends on (the
    overload picked by the argument types, the conversion of columns and literals, named
    arguments, NULL rows, the result's type). Every Spark UDF's query costs Spark about 0.1 s
    of analysis and a Python worker's round trip, so the rest are compared without Spark."""
    sample: dict[tuple, duckrank_spark.SparkFunction] = {}
    for function in functions:
        metric = function.overload_for(_first_argument(table).type, table["truth"].type)
        options = tuple(sorted({type(_python_value(o)).__name__ for o in metric.options}))
        key = (metric.inputs, bool(metric.cutoff), options, bool(_counts(metric)),
               metric.result_type)
        sample.setdefault(key, function)
    return list(sample.values())


def _assert_same(column: str, want: pa.Array, have: pa.Array, rows: int) -> None:
    if pa.types.is_string(want.type):  # relstring: text, compared as such
        assert have.to_pylist() == want.to_pylist(), column
        return
    want, have = want.cast(pa.float64()), have.cast(pa.float64())
    assert have.is_null().equals(want.is_null()), column
    np.testing.assert_allclose(
        pc.fill_null(have, 0.0).to_numpy(), pc.fill_null(want, 0.0).to_numpy(),
        rtol=1e-12, atol=1e-15, err_msg=column,
    )
    # The table must exercise both defined values and NULLs.
    assert 0 < want.null_count < rows, column


def _select(functions: list[duckrank_spark.SparkFunction], table: pa.Table, named: str) -> str:
    columns = ", ".join(
        f"{_call(function, table, form, named)} AS {function.name}__{name}"
        for function in functions for name, form in _forms(function, table).items()
    )
    return f"SELECT uid, {columns} FROM eval_spark_test"


def test_every_metric_has_a_spark_function():
    """But trec_eval's preference measures, which count in DuckDB (duckrank.metrics.prefs)."""
    assert duckrank_spark.unsupported_metrics() == list(duckrank.metrics.prefs.METRICS)
    every = {m.name for m in duckrank.metrics.METRICS if m.inputs != "prefs"}
    assert set(duckrank_spark.spark_functions()) == every


def test_every_function_is_compared(eval_tables):
    compared = {f.name for shape, table in eval_tables.items()
                for f in _functions_for(shape, table)}
    assert compared == set(duckrank_spark.spark_functions())


@pytest.mark.parametrize("shape", list(SHAPES))
def test_spark_matches_duckdb_for_every_metric(spark, con, eval_tables, shape):
    table = eval_tables[shape]
    functions = _functions_for(shape, table)
    con.register("eval_spark_test", table)
    expected = con.sql(_select(functions, table, ":=")).arrow()
    if isinstance(expected, pa.RecordBatchReader):
        expected = expected.read_all()
    expected = expected.sort_by("uid")
    assert expected["uid"].to_pylist() == table["uid"].to_pylist()
    # Every function and form as the UDF computes it, on the table's rows in their order.
    for function in functions:
        for name, form in _forms(function, table).items():
            column = f"{function.name}__{name}"
            _assert_same(column, expected[column].combine_chunks(),
                         _batch_value(function, table, form), table.num_rows)
    # Through Spark, a sample of them. Sorted here rather than by ORDER BY, which would cost
    # Spark a shuffle.
    spark.createDataFrame(table).createOrReplaceTempView("eval_spark_test")
    got = spark.sql(_select(_spark_sample(functions, table), table, "=>")).toArrow().sort_by("uid")
    assert got["uid"].to_pylist() == table["uid"].to_pylist()
    for column in got.column_names[1:]:
        _assert_same(column, expected[column].combine_chunks(), got[column].combine_chunks(),
                     table.num_rows)


def test_hivemall_guide_example(spark):
    # The Hivemall guide: rec = [1, 3, 2, 6] (built by to_ordered_list(itemid, score, '-reverse')),
    # truth = [1, 2, 4]; the guide's table for top-4 (max_k) and top-2.
    spark.createDataFrame(
        [(u, i, s) for u in (1, 2, 3) for i, s in ((1, 10.0), (3, 8.0), (2, 6.0), (6, 2.0))],
        "userid bigint, itemid bigint, score double",
    ).createOrReplaceTempView("dummy_rec")
    spark.createDataFrame(
        [(u, i) for u in (1, 2, 3) for i in (1, 2, 4)], "userid bigint, itemid bigint"
    ).createOrReplaceTempView("dummy_truth")
    row = spark.sql(
        """
        WITH truth AS (
          SELECT userid, collect_set(itemid) AS truth FROM dummy_truth GROUP BY userid
        ), rec AS (
          SELECT userid, to_ordered_list(itemid, score, '-reverse') AS rec
          FROM dummy_rec GROUP BY userid
        ), ev AS (
          SELECT rec, truth, size(rec) AS max_k FROM rec JOIN truth USING (userid)
        )
        SELECT avg(recall_at(rec, truth, max_k)), avg(recall_at(rec, truth, 2)),
               avg(precision_at(rec, truth, max_k)), avg(precision_at(rec, truth, 2)),
               avg(average_precision(rec, truth, max_k)), avg(average_precision(rec, truth, 2)),
               avg(auc(rec, truth, max_k)), avg(auc(rec, truth, 2)),
               avg(mrr(rec, truth, max_k)), avg(mrr(rec, truth, 2)),
               avg(ndcg(rec, truth, max_k)), avg(ndcg(rec, truth, 2)),
               first(rec)
        FROM ev
        """
    ).collect()[0]
    assert row[-1] == [1, 3, 2, 6]
    guide = [
        0.6666666666666666, 0.3333333333333333,  # Recall
        0.5, 0.5,  # Precision
        0.5555555555555555, 0.3333333333333333,  # MAP
        0.75, 1.0,  # AUC
        1.0, 1.0,  # MRR
        0.7039180890341349, 0.6131471927654585,  # NDCG
    ]
    assert list(row[:-1]) == pytest.approx(guide, rel=1e-15)


def test_k_forms(spark):
    # rec = [1, 2, 3], truth = [2]: precision = 1/3 over all, 1/2 at k = 2 (hand calculation).
    row = spark.sql(
        "SELECT precision_at(array(1L, 2L, 3L), array(2L)),"
        " precision_at(array(1L, 2L, 3L), array(2L), 'all'),"
        " precision_at(array(1L, 2L, 3L), array(2L), k => 2),"
        " precision_at(array(1L, 2L, 3L), array(2L), '2'),"
        " precision_at(array(1L, 2L, 3L), array(2L), CAST(NULL AS INT)),"
        " precision_at(array(1L, 2L, 3L), array(2L), NULL),"
        " precision_at(CAST(NULL AS ARRAY<BIGINT>), array(2L), 2),"
        " precision_at(array(1L, 2L, 3L), array(2L), 1e30)"
    ).collect()[0]
    third = pytest.approx(1 / 3)
    assert list(row) == [third, third, 0.5, 0.5, None, None, None, third]


@pytest.mark.parametrize("k", ["0", "-1", "2.5", "'ten'", "CAST('NaN' AS DOUBLE)"])
def test_bad_k_is_an_error_naming_function_and_value(spark, k):
    with pytest.raises(PySparkException) as error:
        spark.sql(f"SELECT ndcg(array(1L, 2L), array(2L), {k})").collect()
    value = "nan" if "NaN" in k else k.strip("'")
    assert f"ndcg: k must be a positive integer or 'all', got {value}" in str(error.value)


def test_mixed_id_kinds_are_an_error(spark):
    with pytest.raises(PySparkException, match=r"ndcg: no form takes rec list<element: int64"):
        spark.sql("SELECT ndcg(array(1L, 2L), array('2'))").collect()


# --- edrc and the rank correlations ---------------------------------------------------------------

def _pairs(pairs: str, text: bool = False) -> str:
    """Spark SQL for a list of (better, worse) pairs written 'a>b c>d', ids BIGINT or STRING."""
    def literal(item: str) -> str:
        return f"'{item}'" if text else f"{item}L"

    return "array(" + ", ".join(
        "named_struct('better', {}, 'worse', {})".format(*map(literal, pair.split(">")))
        for pair in pairs.split()
    ) + ")"


def test_paper_table2_through_spark(spark):
    # Ackerman & Chen, CEUR-WS Vol-811, paper 11, Table 2: truth A > B > C > D (grades A 5, B 4, C
    # 3, D 2), system B, A, C, D. tau_ap = 1/3 (paper, section 3.2), and edrc with the 'ap' discount
    # equals it on complete orders; spearman 0.8, kendall_tau 2/3, fcp 5/6 (hand calculations in
    # tests/metrics/test_correlation.py).
    rec = "array('B', 'A', 'C', 'D')"
    truth = _pairs("A>B B>C C>D", text=True)
    grades = "map('A', 5.0D, 'B', 4.0D, 'C', 3.0D, 'D', 2.0D)"
    system = _pairs("B>A A>C C>D", text=True)  # the system's order as a chain of preferences
    row = spark.sql(
        f"SELECT edrc({rec}, {truth}, 'ap'),"
        f" edrc(rec => {rec}, truth => {truth}, discount => 'ap'),"
        f" edrc_preferences(system => {system}, truth => {truth}, discount => 'ap'),"
        f" spearman({rec}, {grades}), kendall_tau({rec}, {grades}),"
        f" ap_correlation({rec}, {grades}), fcp({rec}, {grades})"
    ).collect()[0]
    assert list(row) == pytest.approx([1 / 3, 1 / 3, 1 / 3, 0.8, 2 / 3, 1 / 3, 5 / 6], abs=1e-12)


def _duckdb_message(con, sql: str) -> str:
    with pytest.raises(duckdb.Error) as error:
        con.execute(sql).fetchall()
    # The Python UDFs' messages come after "ValueError: ", the native step's after DuckDB's
    # "Invalid Input Error: ".
    return re.split(r"ValueError: |Invalid Input Error: ", str(error.value))[-1]


@pytest.mark.parametrize(
    ("spark_sql", "duckdb_sql"),
    [
        (f"edrc(array(1L, 2L), {_pairs('1>2 2>1')})", "edrc([1, 2], [(1, 2), (2, 1)])"),
        (f"edrc(array('x', 'y', 'z', 'w'), {_pairs('w>x x>y y>z z>x', text=True)})",
         "edrc(['x', 'y', 'z', 'w'], [('w', 'x'), ('x', 'y'), ('y', 'z'), ('z', 'x')])"),
        (f"edrc_preferences({_pairs('1>2 2>3 3>1')}, {_pairs('1>2')})",
         "edrc_preferences([(1, 2), (2, 3), (3, 1)], [(1, 2)])"),
        (f"edrc(array('a', 'b'), {_pairs('a>b b>b', text=True)})",
         "edrc(['a', 'b'], [('a', 'b'), ('b', 'b')])"),
        (f"edrc(array(1L, 2L), {_pairs('1>2')}, 'log')", "edrc([1, 2], [(1, 2)], 'log')"),
        (f"edrc_preferences({_pairs('1>2')}, {_pairs('1>2')}, likelihood => 1.5)",
         "edrc_preferences([(1, 2)], [(1, 2)], likelihood := 1.5)"),
        ("spearman(array('a', 'b'), map('a', 1.0D, 'b', CAST('NaN' AS DOUBLE)))",
         "spearman(['a', 'b'], map(['a', 'b'], [1.0, 'NaN'::DOUBLE]))"),
    ],
)
def test_preference_errors_are_duckdbs(spark, con, spark_sql, duckdb_sql):
    # Cycles naming their items, self-preferences, bad options and grades: DuckDB's message text.
    message = _duckdb_message(con, f"SELECT {duckdb_sql}")
    with pytest.raises(PySparkException) as error:
        spark.sql(f"SELECT {spark_sql}").collect()
    assert message in str(error.value)


def test_preference_argument_errors(spark, con):
    # A struct of three fields: DuckDB's message up to the type, which each engine spells its
    # own way.
    message = _duckdb_message(con, "SELECT edrc([1, 2], [{'user': 9, 'a': 1, 'b': 2}])")
    assert message.startswith("edrc: truth must be a list of two-field structs")
    with pytest.raises(PySparkException) as error:
        spark.sql(
            "SELECT edrc(array(1L, 2L), array(named_struct('user', 9L, 'a', 1L, 'b', 2L)))"
        ).collect()
    assert message.split("; got")[0] + "; got list<element: struct<user: int64" in str(error.value)
    # Ids of one kind, and no k.
    with pytest.raises(PySparkException, match="edrc: no form takes rec list<element: int64"):
        spark.sql(f"SELECT edrc(array(1L, 2L), {_pairs('1>2', text=True)})").collect()
    with pytest.raises(PySparkException, match=r"kendall_tau: too many positional arguments; "
                       r"call it as kendall_tau\(rec, truth\)"):
        spark.sql("SELECT kendall_tau(array(1L), map(1L, 1.0D), 5)").collect()


# --- to_ordered_list ----------------------------------------------------------------------------

OPTIONS = [None, "-reverse", "-k 3", "-k -3", "-k 3 -reverse", "-k -2 -reverse_order", "-dedup",
           "-reverse -dedup -k 4", "-k 100"]


@pytest.fixture(scope="module")
def long_table(spark, con) -> pa.Table:
    """300 groups of 0..12 (item, score) rows with many tied scores, repeated pairs and NULLs."""
    rng = np.random.default_rng(7)
    rows = 2_000
    table = pa.table({
        "uid": pa.array(rng.integers(0, 300, rows), pa.int64()),
        "item": pa.array(rng.integers(0, 8, rows), pa.int64(), mask=rng.random(rows) < 0.05),
        "score": pa.array(rng.integers(0, 4, rows) / 2, pa.float64(),
                          mask=rng.random(rows) < 0.05),
    })
    con.register("long_spark_test", table)
    spark.createDataFrame(table).createOrReplaceTempView("long_spark_test")
    return table


def _arguments(value: str, key: str | None, options: str | None) -> str:
    return ", ".join([value, *([key] if key else []), *([f"'{options}'"] if options else [])])


def _duckdb_lists(con, value: str, key: str | None, options: str | None) -> dict:
    sql = f"SELECT uid, to_ordered_list({_arguments(value, key, options)}) FROM long_spark_test"
    return dict(con.sql(sql + " GROUP BY uid").fetchall())


@pytest.mark.parametrize("key", ["score", None])
def test_to_ordered_list_matches_duckdb(spark, con, long_table, key):
    # Every option set in one query per engine (each query costs a shuffle).
    expected = {options: _duckdb_lists(con, "item", key, options) for options in OPTIONS}
    forms = {
        "native": [duckrank_spark.to_ordered_list_sql("item", key, o) for o in OPTIONS],
        "arrow aggregate": [f"to_ordered_list({_arguments('item', key, o)})" for o in OPTIONS],
    }
    for form, expressions in forms.items():
        rows = spark.sql(
            f"SELECT uid, {', '.join(expressions)} FROM long_spark_test GROUP BY uid"
        ).collect()
        for column, options in enumerate(OPTIONS, start=1):
            got = {row[0]: row[column] for row in rows}
            assert got == expected[options], (form, options)
    # The data exercise ties, repeated pairs and groups left empty by NULLs.
    assert any(v is None for v in expected[None].values()) or key is None


def test_to_ordered_list_dataframe_form(spark, long_table, con):
    df = spark.table("long_spark_test")
    got = dict(
        df.groupBy("uid").agg(duckrank_spark.to_ordered_list("item", "score", "-reverse")).collect()
    )
    assert got == _duckdb_lists(con, "item", "score", "-reverse")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("-k 0", "to_ordered_list: option -k needs a non-zero integer, got '0'"),
        ("-top", "to_ordered_list: unknown option '-top'"),
        ("-kv_map", "to_ordered_list: option -kv_map returns a MAP"),
    ],
)
def test_to_ordered_list_bad_options(spark, long_table, options, message):
    with pytest.raises(ValueError, match=message):
        duckrank_spark.to_ordered_list_sql("item", "score", options)
    with pytest.raises(PySparkException, match=message):
        spark.sql(
            f"SELECT to_ordered_list(item, score, '{options}') FROM long_spark_test GROUP BY uid"
        ).collect()


def test_string_ordered_list_needs_its_type(spark, long_table):
    # The SQL aggregate's element type is fixed at registration (Spark UDFs have one return type).
    spark.sql("SELECT uid, CAST(item AS STRING) AS item, score FROM long_spark_test") \
        .createOrReplaceTempView("long_string_test")
    duckrank_spark.register(spark, ordered_list_type="string")
    try:
        got = spark.sql(
            "SELECT to_ordered_list(item, score, '-k 2') FROM long_string_test WHERE uid = 1"
        ).collect()[0][0]
        native = spark.sql(
            f"SELECT {duckrank_spark.to_ordered_list_sql('item', 'score', '-k 2')} "
            "FROM long_string_test WHERE uid = 1"
        ).collect()[0][0]
        assert got == native
        assert all(isinstance(v, str) for v in got)
    finally:
        duckrank_spark.register(spark)


# --- native Spark SQL forms (duckrank.render.spark_sql) ------------------------------------------
# Expected values: DuckDB running duckrank's macros (the records' DuckDB SQL, or the native C
# matching step), and the numpy kernels that the Arrow UDFs run, on the same generated rows
# (duplicates, NULL elements, NULL and empty lists, NULL k, k beyond the list length).

def _native_calls(name: str, forms: tuple[str, ...]) -> dict[str, tuple[str, str]]:
    """(DuckDB call, Spark native expression) per form: per-row k, omitted, constant, options."""
    metric = duckrank_spark.spark_sql.spark_sql_records()[name]
    counts = {o.name: _python_value(o) for o in _counts(metric)}
    given = "".join(f", {option} := {value!r}" for option, value in counts.items())
    calls = {
        "k": (f"{name}(rec, truth, k{given})", duckrank_spark.metric_sql(name, k="k", **counts)),
        "omitted": (f"{name}(rec, truth{given})", duckrank_spark.metric_sql(name, **counts)),
        "fixed": (f"{name}(rec, truth, 5{given})", duckrank_spark.metric_sql(name, k=5, **counts)),
    }
    if metric.options:
        values = {o.name: _python_value(o) for o in metric.options}
        duck = ", ".join(f"{option} := {value!r}" for option, value in values.items())
        calls["options"] = (f"{name}(rec, truth, 5, {duck})",
                            duckrank_spark.metric_sql(name, k=5, **values))
    return {form: call for form, call in calls.items() if form in forms}


CORE_NATIVE = ("precision_at", "recall_at", "average_precision", "mrr", "hitrate", "ndcg", "auc")
NATIVE_ROWS = 3_000  # Spark's analysis of the wide query, not the rows, is most of the time


def test_native_forms_cover_the_binary_metrics():
    assert set(CORE_NATIVE) <= set(duckrank_spark.native_metrics())


@pytest.mark.parametrize("shape, names, forms", [
    # Every translated record with a per-row k and with options, BIGINT ids; the core ones with
    # a constant and an omitted k, and with strings (the SQL does not depend on the id type, only
    # Spark's comparisons do).
    ("ids bigint", None, ("k", "options")),
    ("ids bigint", CORE_NATIVE, ("omitted", "fixed")),
    ("ids string", CORE_NATIVE, ("k",)),
])
def test_native_sql_matches_duckdb_and_kernels(spark, con, eval_tables, shape, names, forms):
    table = eval_tables[shape].slice(0, NATIVE_ROWS)
    calls = {f"{name}__{form}": pair for name in names or duckrank_spark.native_metrics()
             for form, pair in _native_calls(name, forms).items()}
    con.register("eval_native_test", table)
    expected = con.sql("SELECT uid, " + ", ".join(
        f"{duck} AS {column}" for column, (duck, _) in calls.items()
    ) + " FROM eval_native_test").arrow()
    if isinstance(expected, pa.RecordBatchReader):
        expected = expected.read_all()
    expected = expected.sort_by("uid")
    spark.createDataFrame(table).createOrReplaceTempView("eval_native_test")
    got = spark.sql("SELECT uid, " + ", ".join(
        f"{native} AS {column}" for column, (_, native) in calls.items()
    ) + " FROM eval_native_test").toArrow().sort_by("uid")
    functions = duckrank_spark.spark_functions()
    rec, truth, k = (table[c].combine_chunks() for c in ("rec", "truth", "k"))
    for column in calls:
        name, form = column.split("__")
        want, have = (t[column].combine_chunks().cast(pa.float64()) for t in (expected, got))
        # The numpy kernel on the same rows (no Spark), for the per-row k.
        counts = {o.name: pa.array([_python_value(o)] * len(k))
                  for o in _counts(duckrank_spark.spark_sql.spark_sql_records()[name])}
        kernel = functions[name].evaluate(rec, truth, k, **counts) if form == "k" else want
        for reference in (want, kernel.take(pc.sort_indices(table["uid"]))):
            assert have.is_null().equals(reference.is_null()), column
            np.testing.assert_allclose(
                pc.fill_null(have, 0.0).to_numpy(), pc.fill_null(reference, 0.0).to_numpy(),
                rtol=1e-12, atol=1e-15, err_msg=column,
            )
        assert 0 < want.null_count < table.num_rows, column


TRANSLATED = [
    "[10, 20, 30][2]", "[10, 20][0]", "[10, 20][5]", "[1, 2, 3, 4][2:3]", "range(1, 4)",
    "range(3, 1)", "list_transform([5, 6], lambda x, i: i * x)", "1.0 / 3", "7 // 2",
    "list_sum(list_filter([1, 2, 3], lambda x: x > 5))", "list_sum([1.5, 2.5])", "trunc(-2.5)",
    "CASE WHEN 'a' = 'b' THEN 1 ELSE 2 END", "list_count([1, NULL, 3])",
    "list_position([4, 5, 4], 4)", "isfinite(2.0)", "'it''s ' || 2::VARCHAR",
]


def test_translated_expressions_give_duckdbs_values(spark, con):
    # Expected: DuckDB evaluating the same text (1-based indexes, NULL sums of nothing, ranges
    # that end before they start, DOUBLE division of decimal literals, quotes in strings).
    translated = [duckrank_spark.spark_sql.translate(e) for e in TRANSLATED]
    want = con.execute("SELECT " + ", ".join(TRANSLATED)).fetchone()
    have = spark.sql("SELECT " + ", ".join(translated)).collect()[0]
    for expression, text, duck, ours in zip(TRANSLATED, translated, want, have, strict=True):
        if isinstance(duck, float):
            assert ours == pytest.approx(duck, rel=1e-15), (expression, text)
        else:
            assert ours == duck, (expression, text)


def test_untranslatable_sql_keeps_the_arrow_udf():
    with pytest.raises(duckrank_spark.spark_sql.Untranslatable, match="list_slice"):
        duckrank_spark.spark_sql.translate("list_slice(x, 1, 2)")
    # A metric without a Spark SQL form is refused by name.
    with pytest.raises(ValueError, match="spearman: no Spark SQL form"):
        duckrank_spark.metric_sql("spearman")


def test_native_errors_name_function_and_value(spark):
    with pytest.raises(ValueError, match="ndcg: k must be a positive integer or 'all', got 0"):
        duckrank_spark.metric_sql("ndcg", k=0)
    with pytest.raises(ValueError, match="precision_at: denominator must be one of"):
        duckrank_spark.metric_sql("precision_at", denominator="all")
    with pytest.raises(ValueError, match="ndcg: unknown option gains"):
        duckrank_spark.metric_sql("ndcg", gains="linear")
    with pytest.raises(ValueError, match="ndcg: base applies to discount := 'jarvelin' only"):
        duckrank_spark.metric_sql("ndcg", base=3)
    # A per-row k is checked per row, with DuckDB's text.
    expression = duckrank_spark.metric_sql("ndcg", "r", "t", "kk")
    with pytest.raises(PySparkException,
                       match=re.escape("ndcg: k must be a positive integer or 'all', got 0")):
        spark.sql(f"SELECT {expression} FROM VALUES (array(1, 2), array(2), 0) AS v(r, t, kk)"
                  ).collect()


# Spark's own RankingMetricsSuite (mllib/src/test/.../RankingMetricsSuite.scala): three users,
# the third with an empty truth, and its expected values.
MLLIB_ROWS = [
    ([float(i) for i in rec], [float(i) for i in truth]) for rec, truth in [
        ([1, 6, 2, 7, 8, 3, 9, 10, 4, 5], [1, 2, 3, 4, 5]),
        ([4, 1, 5, 6, 2, 7, 3, 8, 9, 10], [1, 2, 3]),
        ([1, 2, 3, 4, 5], []),
    ]
]
MLLIB_SUITE = [
    ("precisionAtK", 1, 1 / 3), ("precisionAtK", 2, 1 / 3), ("precisionAtK", 4, 0.75 / 3),
    ("precisionAtK", 5, 0.8 / 3), ("precisionAtK", 10, 0.8 / 3), ("precisionAtK", 15, 8 / 45),
    ("ndcgAtK", 3, 1 / 3),
]


def test_mllib_ranking_metrics_under_their_conventions(spark):
    from pyspark.ml.evaluation import RankingEvaluator

    frame = spark.createDataFrame(MLLIB_ROWS, "rec array<double>, truth array<double>")
    frame.createOrReplaceTempView("mllib_rows")
    # Against MLlib itself for each metric, at a k beyond the shortest rec (5 items).
    live = [(metric, 7) for metric in duckrank_spark.MLLIB]
    cases = [(metric, k) for metric, k, _ in MLLIB_SUITE] + live
    ours = spark.sql("SELECT " + ", ".join(duckrank_spark.mllib_sql(m, k) for m, k in cases)
                     + " FROM mllib_rows").collect()[0]
    expected = [value for _, _, value in MLLIB_SUITE] + [
        RankingEvaluator(predictionCol="rec", labelCol="truth", metricName=metric,
                         k=k).evaluate(frame)
        for metric, k in live
    ]
    for case, have, want in zip(cases, ours, expected, strict=True):
        assert have == pytest.approx(want, abs=1e-12), case
