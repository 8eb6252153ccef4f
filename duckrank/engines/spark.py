"""duckrank's metrics as Spark SQL functions: the same numpy kernels, over Arrow batches.

    >>> import duckrank.spark
    >>> duckrank.spark.register(spark)
    >>> spark.sql("select avg(ndcg(rec, truth, 10)) from eval")

``register(spark)`` derives one Spark SQL function per metric record of ``duckrank.metrics``:
an Arrow UDF (``pyspark.sql.functions.arrow_udf``) that receives whole Arrow batches of the
argument columns, runs the record's matching step and numpy ``kernel`` (the same code the tests
check against DuckDB's SQL macros) and returns a DOUBLE column, NULL where the kernel says NaN.
Each ``inputs`` kind is read from its description (``duckrank.metrics.inputs.INPUT_KINDS``:
its Arrow types, numpy matching step and SQL arguments); this module has no table of its own.

SQL surface, as in DuckDB: ``metric(rec, truth [, k] [, option => value ...])``. ``k`` is a
positive integer, ``'all'`` or omitted (= len(rec)); a NULL k gives NULL; anything else is an
error naming the function and the value. The preference-based functions take no k
(``edrc(rec, truth [, discount])``, ``edrc_preferences(system, truth [, discount] [,
likelihood])``, ``spearman(rec, truth)`` ...), so an option may also be given by position there,
as in DuckDB. Options are named arguments (``gain => 'linear'``) and must be constant within a
query.

The binary metrics also have a native form, without Python workers: ``metric_sql(name, rec,
truth, k, **options)`` returns Spark SQL text (``metric`` a ``Column``) that
``duckrank.render.spark_sql`` translates from the record's DuckDB SQL; ``mllib_sql`` gives MLlib
``RankingEvaluator``'s values with it. They are not registered as SQL functions: Spark's SQL
functions need declared parameter types, to which they cast arguments silently (docs/spark.md).

``to_ordered_list`` comes twice (see docs/spark.md for the choice):

* ``to_ordered_list_sql(value, key, options)`` / ``to_ordered_list(...)``: Spark's native
  ``collect_list`` + ``sort_array`` over ``struct(key, value)``, type-generic and without Python,
  as a SQL expression text or a DataFrame ``Column``.
* the SQL aggregate ``to_ordered_list(value [, key] [, options])`` registered by ``register``: an
  Arrow grouped-aggregate UDF. Spark Python UDFs have a fixed return type, so it returns
  ``ARRAY<ordered_list_type>`` (BIGINT unless told otherwise) and, like every grouped-aggregate
  Python UDF, cannot share a GROUP BY with other aggregates.

Both keep every tied row and return the (key, value) pairs sorted ascending, or exactly the
reverse of that order, as ``duckrank.render.ordered_list`` does in DuckDB.

The beyond-accuracy metrics (coverage, novelty, diversity, list similarity, IPS-weighted
accuracy) come as ``beyond_accuracy(recs, metric, k, ...)`` over DataFrames
(``duckrank.engines.spark_beyond``).

Executors need numpy, pyarrow and duckrank importable (docs/spark.md shows how to ship them).
"""

from __future__ import annotations

import decimal
import inspect
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import DataType, _parse_datatype_string

# Re-exported: duckrank.spark.beyond_accuracy.
from duckrank.engines.spark_beyond import beyond_accuracy as beyond_accuracy
from duckrank.metrics import METRICS
from duckrank.metrics.record import Metric
from duckrank.render import spark_sql


def _applies(metric: Metric, rec: pa.DataType, truth: pa.DataType) -> bool:
    """Whether ``metric`` is the overload for these Arrow types. Spark has no overloading and
    its Python UDFs take any column type, so the records sharing a name are told apart here, as
    DuckDB's macro overloads are by the record's ``truth_type`` (a MAP type or a LIST)."""
    wants_map = metric.truth_type.upper().startswith("MAP")
    return metric.kind.accepts(rec, truth) and (
        pa.types.is_map(truth) == wants_map
    )


# --- cut-off -------------------------------------------------------------------------------------

_DECIMAL = r"^[-+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?$"


def _k_error(function: str, value: object) -> ValueError:
    # Same wording as duckrank.matching.sql.cutoff_sql, so both engines fail alike.
    return ValueError(f"{function}: k must be a positive integer or 'all', got {value}")


def cutoff(function: str, k: pa.Array | None, rec_lengths: np.ndarray) -> np.ndarray:
    """Per-row cut-off as float64 (NaN where k is NULL) from a Spark k column.

    ``k`` omitted (None) or ``'all'`` means len(rec); numbers and numeric strings must be positive
    integers, as in the DuckDB macros (which cast k to DOUBLE first).
    """
    if k is None:
        return rec_lengths.astype(np.float64)
    if isinstance(k, pa.ChunkedArray):
        k = k.combine_chunks()
    if pa.types.is_null(k.type):
        return np.full(len(k), np.nan)
    given, is_all = k, np.zeros(len(k), dtype=bool)
    if pa.types.is_string(k.type) or pa.types.is_large_string(k.type):
        is_all = pc.fill_null(pc.equal(k, "all"), False).to_numpy(zero_copy_only=False)
        numbers = pc.utf8_trim_whitespace(pc.if_else(pc.equal(k, "all"), None, k))
        unparsable = pc.invert(pc.match_substring_regex(numbers, _DECIMAL))
        if pc.any(unparsable).as_py():
            raise _k_error(function, pc.filter(k, pc.fill_null(unparsable, False))[0].as_py())
        k = pc.cast(numbers, pa.float64())
    null = given.is_null().to_numpy(zero_copy_only=False)
    values = pc.cast(k, pa.float64()).to_numpy(zero_copy_only=False)
    bad = ~null & ~is_all & ~(np.isfinite(values) & (values >= 1) & (values == np.floor(values)))
    if bad.any():  # NaN and infinity included, as in DuckDB
        raise _k_error(function, given[int(np.argmax(bad))].as_py())
    # A k beyond any list length means the whole list; cap it where float64 is still exact.
    values = np.minimum(values, 2.0**53)
    return np.where(null, np.nan, np.where(is_all, rec_lengths, values))


# --- metrics -------------------------------------------------------------------------------------

def _constant_option(function: str, name: str, values: pa.Array | None, default: object) -> object:
    if values is None:
        return default
    distinct = pc.unique(values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values)
    if len(distinct) != 1:
        raise ValueError(
            f"{function}: option {name} must be one constant per query, got {distinct.to_pylist()}"
        )
    value = distinct[0].as_py()
    # Spark reads a literal such as 3.5 as a DECIMAL; the options are DOUBLEs, as DuckDB's
    # macros cast them (try_cast(option AS DOUBLE)).
    return float(value) if isinstance(value, decimal.Decimal) else value


def _head(lists: pa.Array, lengths: np.ndarray) -> pa.Array:
    """The first ``lengths[r]`` elements of each list. Every metric reads only the top K of rec
    (a duplicate is a miss only when it repeats an earlier item), so matching the top K instead
    of whole lists gives the same values for less work (3x at k = 10 of 100 items)."""
    if isinstance(lists, pa.ChunkedArray):
        lists = lists.combine_chunks()
    offsets = lists.offsets.to_numpy().astype(np.int64)
    if np.array_equal(lengths, np.diff(offsets)):
        return lists
    new_offsets = np.concatenate([[0], np.cumsum(lengths)])
    take = np.arange(new_offsets[-1]) + np.repeat(offsets[:-1] - new_offsets[:-1], lengths)
    offset_type = pa.int64() if pa.types.is_large_list(lists.type) else pa.int32()
    return type(lists).from_arrays(
        pa.array(new_offsets, offset_type), lists.values.take(pa.array(take)),
        mask=lists.is_null(),
    )


@dataclass(frozen=True)
class SparkFunction:
    """One Spark SQL function: the records sharing a ``name``, in ``METRICS`` order."""

    name: str
    overloads: tuple[Metric, ...]

    @property
    def option_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(o.name for m in self.overloads for o in m.options))

    @property
    def takes_k(self) -> bool:
        return any(m.cutoff for m in self.overloads)

    def overload_for(self, rec: pa.DataType, truth: pa.DataType) -> Metric:
        for metric in self.overloads:
            if _applies(metric, rec, truth):
                return metric
        forms = "; ".join(
            f"{self.name}({m.kind.arguments}{' [, k]' if m.cutoff else ''})"
            for m in self.overloads
        )
        raise TypeError(f"{self.name}: no form takes rec {rec} and truth {truth}; forms: {forms}")

    def evaluate(
        self, rec: pa.Array, truth: pa.Array, k: pa.Array | None = None, **options: pa.Array | None
    ) -> pa.Array:
        """The function over one Arrow batch, as the Spark UDF computes it: DOUBLE, NULL where
        the kernel gives NaN."""
        metric = self.overload_for(rec.type, truth.type)
        known = {o.name: o for o in metric.options}
        for name, values in options.items():
            if values is not None and name not in known:
                raise ValueError(
                    f"{self.name}: option {name} does not apply to the form "
                    f"{self.name}({metric.kind.arguments})"
                )
        settings = {
            name: _constant_option(self.name, name, options.get(name), option.default)
            for name, option in known.items()
        }
        kind = metric.kind
        cut = None
        if metric.cutoff:
            rec_lengths = pc.fill_null(pc.list_value_length(rec), 0).to_numpy(
                zero_copy_only=False
            )
            cut = cutoff(self.name, k, rec_lengths)
            rec = _head(rec, np.minimum(np.nan_to_num(cut), rec_lengths).astype(np.int64))
        elif k is not None:
            raise ValueError(f"{self.name} takes no k: {metric.signature}")
        matched = kind.match(rec, truth, cut, self.name, settings)
        result = kind.run(metric.name, metric.kernel, matched, settings)
        if metric.result_type == "VARCHAR":  # relstring: text, None where NULL
            return pa.array(result, type=pa.string())
        values = np.asarray(result, dtype=np.float64)
        return pa.array(values, type=pa.float64(), mask=np.isnan(values))

    def batch_function(self) -> Callable[..., pa.Array]:
        """``evaluate`` with the SQL signature (rec, truth, k=None, option=None, ...), k left out
        for functions without a cut-off and rec named as the records name it (``system``): Spark
        reads the parameters to accept positional and named arguments and to let the optional
        ones be left out."""
        parameter = inspect.Parameter
        first = self.overloads[0].first_argument
        names = [(first, parameter.empty), ("truth", parameter.empty)]
        names += [("k", None)] if self.takes_k else []
        names += [(name, None) for name in self.option_names]
        signature = inspect.Signature(
            [parameter(n, parameter.POSITIONAL_OR_KEYWORD, default=d, annotation=pa.Array)
             for n, d in names],
            return_annotation=pa.Array,
        )

        usage = f"{self.name}({first}, truth" + "".join(f" [, {n}]" for n, _ in names[2:]) + ")"

        def evaluate(*args: pa.Array, **kwargs: pa.Array) -> pa.Array:
            try:
                arguments = signature.bind(*args, **kwargs).arguments
            except TypeError as error:  # Spark does not check the arguments against the UDF
                raise TypeError(f"{self.name}: {error}; call it as {usage}") from None
            return self.evaluate(arguments.pop(first), arguments.pop("truth"), **arguments)

        evaluate.__name__ = self.name
        evaluate.__signature__ = signature
        return evaluate


def spark_functions() -> dict[str, SparkFunction]:
    """The Spark SQL functions ``register`` creates, by name."""
    by_name: dict[str, list[Metric]] = {}
    for metric in METRICS:
        if metric.kernel is not None:
            by_name.setdefault(metric.name, []).append(metric)
    return {name: SparkFunction(name, tuple(records)) for name, records in by_name.items()}


def unsupported_metrics() -> list[Metric]:
    """Records that have no Spark function (no kernel): trec_eval's preference measures
    (``duckrank.metrics.prefs``), whose counting runs in DuckDB; every input kind is read from
    ``duckrank.metrics.inputs``, so a record with a kernel always has one."""
    return [m for m in METRICS if m.kernel is None]


# --- native forms: Spark SQL expressions from the records ---------------------------------------

def native_metrics() -> list[str]:
    """The metrics with a native Spark SQL form (``metric_sql``): the binary ``hits`` records
    whose DuckDB SQL ``duckrank.render.spark_sql`` translates."""
    return list(spark_sql.spark_sql_records())


def metric_sql(name: str, rec: str = "rec", truth: str = "truth", k: int | str | None = None,
               **options: object) -> str:
    """Spark SQL text of the binary metric ``name`` (list truth) as Spark's own expressions, for
    any id type: ``spark.sql(f"select avg({metric_sql('ndcg', k=10)}) from eval")``. It runs in
    the JVM, without Python workers, and gives the registered function's values.

    ``rec`` and ``truth`` are column names or Spark SQL expressions; ``k`` a positive integer,
    ``'all'`` or None (the whole of rec), or another string: a column or expression holding a
    per-row k (checked per row, NULL k gives NULL). Options are Python constants
    (``denominator='k'``); a bad one is a ValueError here, with the text of DuckDB's."""
    k_sql = _quoted(k) if isinstance(k, str) and k != "all" else k
    return spark_sql.metric_sql(name, _quoted(rec), _quoted(truth), k_sql, **options)


# MLlib's RankingEvaluator metric -> (duckrank metric, options giving MLlib's convention), as
# MLlib's RankingMetrics computes them: precisionAtK divides the hits in the top min(k, len(rec))
# by k; meanAveragePrecisionAtK divides the sum of precisions at the hits by min(k, |truth|);
# ndcgAtK's ideal DCG holds min(k, |truth|) hits (its discount 1 / ln(i + 2) is duckrank's
# 1 / log2(i + 1) times ln 2, which cancels in the ratio); recallAtK divides by |truth|. MLlib
# scores a row with an empty truth 0 and averages over every row; it counts a repeated hit in
# rec again, where duckrank counts it as a miss (the values agree on lists without repeats).
MLLIB = {
    "ndcgAtK": ("ndcg", {}),
    "meanAveragePrecisionAtK": ("average_precision", {"denominator": "min_k_truth"}),
    "precisionAtK": ("precision_at", {"denominator": "k"}),
    "recallAtK": ("recall_at", {}),
}


def mllib_sql(metric: str, k: int, rec: str = "rec", truth: str = "truth") -> str:
    """Spark SQL aggregate giving MLlib's ``RankingEvaluator`` value of ``metric`` (a name of
    ``MLLIB``) with duckrank's native form: the per-row value under MLlib's convention, averaged
    as MLlib averages (NULL, an empty truth, counts as 0)."""
    if metric not in MLLIB:
        raise ValueError(f"mllib_sql: metric must be one of {', '.join(MLLIB)}, got {metric!r}")
    name, options = MLLIB[metric]
    return f"avg(coalesce({metric_sql(name, rec, truth, k, **options)}, 0D))"


def metric(name: str, rec: str = "rec", truth: str = "truth", k: int | str | None = None,
           **options: object) -> Column:
    """``metric_sql`` as a DataFrame ``Column``:
    ``df.select(F.avg(metric("ndcg", "rec", "truth", 10)))``."""
    return F.expr(metric_sql(name, rec, truth, k, **options))


# --- to_ordered_list -----------------------------------------------------------------------------

@dataclass(frozen=True)
class OrderedOptions:
    """Hivemall's ``to_ordered_list`` options (its UDAF's ``-k``, ``-reverse``, ``-dedup``)."""

    k: int | None = None
    reverse: bool = False
    dedup: bool = False

    @property
    def descending(self) -> bool:
        # No option: ascending. -k n (n > 0) keeps the n largest, descending. -reverse flips both.
        return self.reverse != (self.k is not None and self.k > 0)


_KNOWN_OPTIONS = "-k n, -reverse, -reverse_order, -dedup"


def parse_ordered_options(options: str | None, function: str = "to_ordered_list") -> OrderedOptions:
    """Parse an options string, with the errors of duckrank.render.ordered_list's DuckDB macros."""
    tokens = (options or "").split()
    k: int | None = None
    reverse = dedup = False
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token == "-k":
            text = tokens[i + 1] if i + 1 < len(tokens) else ""
            try:
                k = int(text)
            except ValueError:
                k = 0
            if k == 0:
                raise ValueError(
                    f"{function}: option -k needs a non-zero integer, got '{text}' in options "
                    f"'{options}'"
                )
            i += 1
        elif token in ("-reverse", "-reverse_order"):
            reverse = True
        elif token == "-dedup":
            dedup = True
        elif token in ("-kv_map", "-kv", "-vk_map", "-vk"):
            raise ValueError(
                f"{function}: option {token} returns a MAP, which duckrank.spark does not build; "
                "use map_from_entries over the ordered list"
            )
        else:
            raise ValueError(
                f"{function}: unknown option '{token}' in options '{options}'; known options: "
                f"{_KNOWN_OPTIONS}"
            )
        i += 1
    return OrderedOptions(k=k, reverse=reverse, dedup=dedup)


def to_ordered_list_sql(value: str, key: str | None = None, options: str | None = None) -> str:
    """Spark SQL text of a native ``to_ordered_list`` aggregate over the SQL expressions ``value``
    and ``key`` (key = value when omitted), for use in a GROUP BY query.

    ``collect_list`` skips the NULL structs built for rows whose key or value is NULL;
    ``sort_array`` orders the structs by key, then value (so ties come out by value); an empty
    group gives NULL.
    """
    opts = parse_ordered_options(options)
    key = value if key is None else key
    pairs = (
        f"collect_list(CASE WHEN ({key}) IS NOT NULL AND ({value}) IS NOT NULL "
        f"THEN named_struct('k', {key}, 'v', {value}) END)"
    )
    kept = f"array_distinct({pairs})" if opts.dedup else pairs
    ordered = f"sort_array({kept}, {'false' if opts.descending else 'true'})"
    if opts.k is not None:
        ordered = f"slice({ordered}, 1, {abs(opts.k)})"
    return f"(CASE WHEN size({pairs}) = 0 THEN NULL ELSE transform({ordered}, e -> e.v) END)"


def to_ordered_list(value: str, key: str | None = None, options: str | None = None) -> Column:
    """DataFrame form of ``to_ordered_list_sql``:
    ``df.groupBy("user").agg(to_ordered_list("item", "score", "-reverse").alias("rec"))``.
    ``value`` and ``key`` are column names or Spark SQL expressions."""
    return F.expr(to_ordered_list_sql(_quoted(value), None if key is None else _quoted(key),
                                      options))


def _quoted(column: str) -> str:
    return f"`{column}`" if column.isidentifier() else column


def _ordered_list_aggregate(value_type: pa.DataType) -> Callable[..., pa.Scalar]:
    """The Arrow grouped-aggregate behind the SQL ``to_ordered_list``: one call per group."""

    def aggregate(
        value: pa.Array, key: pa.Array = None, options: pa.Array = None
    ) -> pa.Scalar | None:
        if options is None and key is not None and pa.types.is_string(key.type):
            key, options = None, key  # (value, 'options'), as the DuckDB macro reads it
        text = _constant_option("to_ordered_list", "options", options, "")
        opts = parse_ordered_options(text)
        pairs = pa.table({"k": value if key is None else key, "v": value}).drop_null()
        order = "descending" if opts.descending else "ascending"
        pairs = pairs.take(pc.sort_indices(pairs, [("k", order), ("v", order)]))
        if opts.dedup and pairs.num_rows > 1:
            repeated = np.concatenate([[False], pc.and_(
                pc.equal(pairs["k"][1:], pairs["k"][:-1]),
                pc.equal(pairs["v"][1:], pairs["v"][:-1])).to_numpy(zero_copy_only=False)])
            pairs = pairs.filter(pa.array(~repeated))
        if pairs.num_rows == 0:
            # Spark's worker wraps the result in pa.array([result]), which fails on a NULL
            # ListScalar but takes None.
            return None
        if opts.k is not None:
            pairs = pairs.slice(0, abs(opts.k))
        return pa.scalar(pairs["v"].combine_chunks().cast(value_type), pa.list_(value_type))

    return aggregate


# --- registration --------------------------------------------------------------------------------

def register(spark: SparkSession, *, ordered_list_type: str = "bigint") -> list[str]:
    """Register every duckrank metric and ``to_ordered_list`` as Spark SQL functions of this
    session; returns the registered names.

    ``ordered_list_type`` is the element type of the SQL ``to_ordered_list`` aggregate's result
    (a Spark DDL type such as ``'bigint'`` or ``'string'``); the native ``to_ordered_list_sql``
    needs no such choice.
    """
    names = []
    for name, function in spark_functions().items():
        returns = "string" if function.overloads[0].result_type == "VARCHAR" else "double"
        udf = F.arrow_udf(function.batch_function(), returns)
        spark.udf.register(name, udf)
        names.append(name)
    element: DataType = _parse_datatype_string(ordered_list_type)
    aggregate = F.arrow_udf(
        _ordered_list_aggregate(to_arrow_type(element)), f"array<{ordered_list_type}>"
    )
    spark.udf.register("to_ordered_list", aggregate)
    names.append("to_ordered_list")
    return names
