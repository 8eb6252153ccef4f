"""Register duckrank's statistical tests (``duckrank.stats``) as DuckDB aggregates.

DuckDB's Python API has no aggregate UDFs, so each test is a TEMP macro whose body is the
aggregates of the test's summary (``duckrank.stats.record.Summary``: counts and sums, or
``list()`` of the group's values), computed natively on all threads, passed to one Python scalar
UDF (arrow: a whole batch of groups per call) that runs the test's numpy kernel and returns the
STRUCT. A macro containing aggregates is itself an aggregate: ``GROUP BY`` works, and a query
without one gets one row.

    SELECT metric, paired_ttest(b, a), wilcoxon(b, a) FROM per_user GROUP BY metric

Values are typed DOUBLE, so any numeric column works (DuckDB casts it); a VARCHAR or BOOLEAN
column is refused by DuckDB's binder with "Macro paired_ttest() does not support the supplied
arguments". The labels of the tests over many systems (``system``, ``topic``: ``LABELLED``,
``BLOCKED``) are untyped and cast to VARCHAR; their UDF gets each group's rows as one list of
structs and codes the labels once per batch (``_labelled_groups``). Options arrive in the UDF
as ``option::VARCHAR``, whatever their SQL type, and are checked there
(``duckrank.stats.record.Option.parse``), so a bad value is reported as the user wrote it, with
the function's and the option's names.

The UDFs live on the database instance (every cursor shares them, they are never stored); the
macros are TEMP, private to the connection: a stored macro calling Python would break the
database file in a DuckDB without duckrank. ``duckrank.register`` registers them with the metrics'
Python functions.

Interrupts: the resampling macros of a connection pass its Python ``id`` to their UDF
(``session_statements(con)``), and the kernels stop between blocks of trials when that
connection was interrupted since the call began (``duckrank.engines.interrupts``). Ctrl-C reaches
a kernel running on the thread that ran the query as Python's KeyboardInterrupt, between blocks.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from duckrank.engines.interrupts import stop_on_interrupt
from duckrank.engines.udf import PythonUDF
from duckrank.matching.arrays import combined
from duckrank.stats import TESTS
from duckrank.stats.record import BLOCKED, LABELLED, LABELS, Field, LabelledRows, StatTest

Column = pa.Array | pa.ChunkedArray


def udf_name(test: StatTest) -> str:
    return f"duckrank_stats_{test.name}"


def _numbers(column: Column, sql_type: str) -> np.ndarray:
    """A BIGINT or DOUBLE column as numpy (NULL: 0 or NaN; a group of no pairs has n = 0 and
    NULL sums)."""
    if sql_type == "BIGINT":
        return pc.fill_null(combined(column), 0).to_numpy(zero_copy_only=False)
    filled = pc.fill_null(combined(column).cast(pa.float64()), np.nan)
    return filled.to_numpy(zero_copy_only=False)


def _lists(field: Field, groups: Sequence[Any]) -> pa.Array:
    """A list field (one value per pair of systems) over the groups; NaN becomes NULL."""
    if field.sql_type == "VARCHAR[]":
        return pa.array([list(g) for g in groups], type=pa.list_(pa.string()))
    values = [np.asarray(g, dtype=np.float64) for g in groups]
    flat = np.concatenate(values) if values else np.empty(0)
    offsets = np.cumsum([0, *map(len, values)]).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets),
                                    pa.array(flat, type=pa.float64(), mask=np.isnan(flat)))


def _struct(test: StatTest, fields: dict[str, Sequence[Any] | np.ndarray]) -> pa.StructArray:
    """The kernel's fields as the test's STRUCT; NaN becomes NULL."""
    arrays = []
    for field in test.fields:
        if field.sql_type.endswith("[]"):
            arrays.append(_lists(field, fields[field.name]))
            continue
        values = np.asarray(fields[field.name], dtype=np.float64)
        if field.sql_type == "BIGINT":  # NaN: undefined (degrees of freedom of no data)
            missing = np.isnan(values)
            arrays.append(pa.array(np.where(missing, 0, values).astype(np.int64),
                                   mask=missing if missing.any() else None))
        else:
            arrays.append(pa.array(values, type=pa.float64(), mask=np.isnan(values)))
    return pa.StructArray.from_arrays(arrays, names=[f.name for f in test.fields])


def _batch_function(test: StatTest) -> Callable[..., pa.StructArray]:
    """One kernel call for a whole batch of groups (the moments of ``paired_ttest``)."""

    def function(*columns: Column) -> pa.StructArray:
        arrays = {
            name: _numbers(column, sql_type)
            for (name, _, sql_type), column in zip(test.summary.aggregates, columns, strict=True)
        }
        return _struct(test, test.kernel(**arrays))

    return function


def _codes(labels: pa.Array) -> tuple[np.ndarray, list[str]]:
    """Labels as codes into their distinct values, sorted (one dictionary encoding for every
    group of the batch)."""
    encoded = pc.dictionary_encode(labels)
    names = encoded.dictionary.to_pylist()
    order = np.argsort(np.array(names, dtype=object), kind="stable")
    rank = np.empty(len(names), dtype=np.int64)
    rank[order] = np.arange(len(names))
    return rank[encoded.indices.to_numpy(zero_copy_only=False)], [names[i] for i in order]


def _labelled_groups(lists: pa.ListArray) -> list[LabelledRows]:
    """Each group's (x, system[, topic]) rows as ``LabelledRows``: codes of the labels present
    in the group, names sorted, the rows in the order ``list()`` gathered them (the sums over
    them may differ in their last bits with DuckDB's threads, as ``avg``'s do; sorting a
    million rows to fix them would cost more than the test)."""
    rows = lists.values
    x = pc.fill_null(rows.field("x"), np.nan).to_numpy(zero_copy_only=False)
    columns = {name: _codes(rows.field(name)) for name in ("s", "t")
               if rows.type.get_field_index(name) >= 0}
    offsets = lists.offsets.to_numpy()
    valid = lists.is_valid().to_numpy(zero_copy_only=False)
    groups = []
    for i in range(len(lists)):
        part = slice(offsets[i], offsets[i + 1]) if valid[i] else slice(0, 0)
        local = {}
        for name, (codes, names) in columns.items():
            # The codes present, renumbered 0.. in their (sorted) order: O(rows), no sort.
            used = np.flatnonzero(np.bincount(codes[part], minlength=len(names)))
            renumber = np.zeros(len(names), dtype=np.int64)
            renumber[used] = np.arange(len(used))
            local[name] = (renumber[codes[part]], tuple(names[j] for j in used))
        topic = local.get("t")
        groups.append(LabelledRows(x[part], local["s"][0], local["s"][1],
                                   None if topic is None else topic[0],
                                   () if topic is None else topic[1]))
    return groups


def _labelled_function(test: StatTest) -> Callable[..., pa.StructArray]:
    """One kernel call per group of (x, system[, topic]) rows (``LABELLED``, ``BLOCKED``)."""

    def function(lists: Column, *option_columns: Column) -> pa.StructArray:
        texts = [combined(c).to_pylist() for c in option_columns]
        results = []
        for i, rows in enumerate(_labelled_groups(combined(lists))):
            options = {option.name: option.parse(test.name, column[i])
                       for option, column in zip(test.options, texts, strict=True)}
            results.append(test.kernel(rows, **options))
        return _struct(test, {f.name: [row[f.name] for row in results] for f in test.fields})

    return function


def _group_function(test: StatTest) -> Callable[..., pa.StructArray]:
    """One kernel call per group, on its values sorted (a canonical order: ``list()`` gathers
    them in whatever order DuckDB's threads met the rows). An interruptible test's last
    argument is the connection's id (``interrupts.stop_on_interrupt``)."""

    def function(lists: Column, *option_columns: Column) -> pa.StructArray:
        extra = {}
        if test.interruptible:
            *option_columns, connections = option_columns
            connection = combined(connections)[0].as_py() if len(connections) else 0
            extra["stop"] = stop_on_interrupt(test.name, connection or 0)
        lists = combined(lists)
        offsets = lists.offsets.to_numpy()
        values = lists.values.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
        valid = lists.is_valid().to_numpy(zero_copy_only=False)
        texts = [combined(c).to_pylist() for c in option_columns]
        rows = []
        for i in range(len(lists)):
            group = np.sort(values[offsets[i] : offsets[i + 1]]) if valid[i] else np.empty(0)
            options = {
                option.name: option.parse(test.name, column[i])
                for option, column in zip(test.options, texts, strict=True)
            }
            rows.append(test.kernel(group, **options, **extra))
        return _struct(test, {f.name: [row[f.name] for row in rows] for f in test.fields})

    return function


def _udf_parameters(test: StatTest) -> list[str]:
    return ([sql_type for _, _, sql_type in test.summary.aggregates]
            + ["VARCHAR"] * len(test.options) + ["UBIGINT"] * test.interruptible)


def macro_statement(test: StatTest, connection: int = 0) -> str:
    """The TEMP macro that makes ``test`` an SQL aggregate; ``connection``: the id of the
    connection it is made on, for an interruptible test (0: not interruptible)."""
    names = {argument: argument for argument in test.summary.arguments}
    # Values are DOUBLE (any numeric column); labels any type (compared as text).
    arguments = ", ".join(a if a in LABELS else f"{a} DOUBLE" for a in test.summary.arguments)
    defaults = "".join(f", {o.name} := {o.default!r}" for o in test.options)
    udf_arguments = [*test.summary.sql(**names), *(f"{o.name}::VARCHAR" for o in test.options)]
    if test.interruptible:
        udf_arguments.append(f"{connection}::UBIGINT")
    return (
        f"CREATE OR REPLACE TEMP MACRO {test.name}({arguments}{defaults}) AS "
        f"{udf_name(test)}({', '.join(udf_arguments)})"
    )


def _udf(test: StatTest) -> PythonUDF:
    parameters = _udf_parameters(test)
    if test.summary in (LABELLED, BLOCKED):
        function = _labelled_function(test)
    elif test.summary.per_group:
        function = _group_function(test)
    else:
        function = _batch_function(test)
    # DuckDB counts the function's parameters: give the variadic adapter an exact signature.
    function.__signature__ = inspect.Signature([
        inspect.Parameter(f"arg{i}", inspect.Parameter.POSITIONAL_ONLY)
        for i in range(len(parameters))
    ])
    return PythonUDF(udf_name(test), function, tuple(parameters), test.returns)


# Registered with the metrics' Python functions by ``duckrank.engines.duckdb.register``.
UDFS = [_udf(test) for test in TESTS]


def session_statements(con: duckdb.DuckDBPyConnection | None = None) -> list[str]:
    """The TEMP macros that make the tests SQL aggregates, for the registering connection
    ``con`` (without it, ``con.interrupt()`` waits for a resampling run to finish)."""
    return [macro_statement(test, 0 if con is None else id(con)) for test in TESTS]
