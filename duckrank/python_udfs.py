"""Metrics that run Python (numpy over whole Arrow batches), for what SQL cannot express well.

Each ``PythonUDF`` is registered as a DuckDB arrow UDF (``type="arrow"``: the function receives
a whole vector of rows as pyarrow arrays). The math lives in pure numpy kernels
(``duckrank.metrics.preference``, ``duckrank.metrics.correlation``); this module only turns Arrow
into their inputs and their results back into Arrow.

DuckDB's Python API has no ANY type and no overloading, so each public function is a TEMP macro
(``session_statements``) that reshapes its arguments natively and calls an internal UDF
``duckrank_<name>`` that sees one fixed signature:

* item ids travel as one list per row, the concatenation of every id argument (``rec || better
  items || worse items``), so DuckDB unifies their types (INTEGER with BIGINT, ...); the UDF
  parameter is a UNION of list types (``ID_LISTS``), which keeps integer ids as integers. Each row's
  ids are turned into small integer codes by one ``dictionary_encode`` of the batch.
* correlations compare rec with the keys of a MAP(VARCHAR, DOUBLE) truth, as the graded metrics do
  (an item matches a key when ``item::VARCHAR`` equals it), so their ids travel as VARCHAR.

The macros are TEMP because a stored macro calling Python would break the database file in a
DuckDB without duckrank, and TEMP macros are private to one connection: call
``duckrank.register(cursor)`` on each cursor. The ``duckrank_*`` UDFs themselves are shared by
every cursor of the database.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from duckrank.definitions import Metric, Option
from duckrank.metrics import METRICS
from duckrank.metrics.correlation import RankedGrades
from duckrank.metrics.preference import (
    Edges,
    PreferenceCycleError,
    PreferenceRows,
    gather_ranges,
)

ID_LISTS = "UNION(i BIGINT[], u UBIGINT[], h HUGEINT[], s VARCHAR[], id UUID[])"


@dataclass(frozen=True)
class PythonUDF:
    name: str
    function: Callable
    parameters: tuple[str, ...]
    return_type: str

    def register(self, con: duckdb.DuckDBPyConnection) -> None:
        con.create_function(
            self.name,
            self.function,
            [duckdb.sqltype(p) for p in self.parameters],
            duckdb.sqltype(self.return_type),
            type="arrow",
            null_handling="special",
        )


# --- Arrow in ------------------------------------------------------------------------------------

def _combined(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values


def _id_lists(ids: pa.Array | pa.ChunkedArray) -> pa.ListArray:
    """The list array inside the UNION argument (every row holds the same member, the one
    DuckDB cast the macro's list to)."""
    ids = _combined(ids)
    if not pa.types.is_union(ids.type):
        return ids
    members = [ids.field(i) for i in range(ids.type.num_fields)]
    used = [m for m in members if m.null_count < len(m)]
    if len(used) > 1:
        raise TypeError("item ids of one call must be of one type")
    return used[0] if used else members[0]


def _valid(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return _combined(values).is_valid().to_numpy(zero_copy_only=False)


def _int_column(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return pc.fill_null(_combined(values), 0).to_numpy(zero_copy_only=False).astype(np.int64)


@dataclass(frozen=True)
class _CodedIds:
    """Every row's id list as integer codes: equal ids share a code within a batch, -1 is NULL."""

    codes: np.ndarray
    starts: np.ndarray  # flat index of each row's first id
    dictionary: pa.Array

    @property
    def span(self) -> int:
        """A multiplier that makes ``row * span + code`` unique per (row, id)."""
        return len(self.dictionary) + 1

    def part(self, begin: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row, flat index) of the ids at row positions begin .. begin + length - 1."""
        row = np.repeat(np.arange(len(length)), length)
        return row, gather_ranges(self.starts + begin, length)

    def name(self, code: int) -> str:
        value = self.dictionary[code].as_py()
        return repr(value) if isinstance(value, str) else str(value)


def _coded_ids(lists: pa.ListArray) -> _CodedIds:
    offsets = lists.offsets.to_numpy().astype(np.int64)
    values = lists.values.slice(offsets[0], offsets[-1] - offsets[0])
    encoded = values.dictionary_encode()
    codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    return _CodedIds(codes, offsets[:-1] - offsets[0], encoded.dictionary)


def _first_seen(keys: np.ndarray) -> tuple[np.ndarray, pa.Array]:
    """Dense codes of ``keys`` numbered in order of first appearance, and the distinct keys in
    that order (Arrow's hash-based dictionary encoding: no sort)."""
    encoded = pa.array(keys, type=pa.int64()).dictionary_encode()
    return encoded.indices.to_numpy().astype(np.int64), encoded.dictionary


def _code_in(keys: np.ndarray, dictionary: pa.Array) -> np.ndarray:
    """The code of each key in ``dictionary`` (from ``_first_seen``), -1 where absent."""
    found = pc.index_in(pa.array(keys, type=pa.int64()), value_set=dictionary)
    return pc.fill_null(found, -1).to_numpy(zero_copy_only=False).astype(np.int64)


def _struct_fields(type_name: str) -> int | None:
    """The number of fields of a ``STRUCT(...)[]`` or ``TUPLE(...)[]`` as DuckDB's typeof() spells
    it; None for any other type (a NULL argument)."""
    inner = type_name.removesuffix("[]")
    if not inner.startswith(("STRUCT(", "TUPLE(")):
        return None
    depth, fields, quoted = 0, 1, False
    for char in inner[inner.index("(") + 1 : -1]:
        quoted ^= char == '"'
        if not quoted:
            depth += (char == "(") - (char == ")")
            fields += char == "," and depth == 0
    return fields


def _check_pairs(function: str, argument: str, type_names: pa.Array | pa.ChunkedArray) -> None:
    names = pc.drop_null(_combined(type_names))
    name = names[0].as_py() if len(names) else None
    if name is not None and _struct_fields(name) not in (None, 2):
        raise ValueError(
            f"{function}: {argument} must be a list of two-field structs (preferred item, "
            f"other item); got {name}"
        )


@dataclass(frozen=True)
class _Items:
    """The distinct non-NULL ids of one part of every row, numbered 0, 1, ... across the batch
    in row-major order of first appearance, so each row's items are consecutive and in the order
    the row lists them."""

    dictionary: pa.Array  # the (row, id) keys, by item number
    row: np.ndarray  # per item
    code: np.ndarray  # per item: its id's code in the batch's _CodedIds
    position: np.ndarray  # per item: where it first appears in its row's list
    first: np.ndarray  # per row: number of its first item
    counts: np.ndarray  # per row: number of its items

    def find(self, row: np.ndarray, code: np.ndarray, span: int) -> np.ndarray:
        """The item number of each (row, id code), -1 where the row has no such item."""
        return _code_in(row * span + code, self.dictionary)

    def names(self, ids: _CodedIds, row: int, local: list[int]) -> list[str]:
        return [ids.name(int(c)) for c in self.code[self.first[row] + np.array(local)]]


def _items(coded: _CodedIds, begin: np.ndarray, length: np.ndarray) -> _Items:
    row, at = coded.part(begin, length)
    code = coded.codes[at]
    named = code >= 0
    row, at, code = row[named], at[named], code[named]
    item, dictionary = _first_seen(row * coded.span + code)
    first_time = item > np.r_[-1, np.maximum.accumulate(item)[:-1]]  # numbers grow by one
    counts = np.bincount(row[first_time], minlength=len(length))
    return _Items(
        dictionary,
        row[first_time],
        code[first_time],
        (at - coded.starts[row])[first_time],
        np.r_[0, np.cumsum(counts)[:-1]].astype(np.int64),
        counts,
    )


def _pairs(
    coded: _CodedIds, begin: np.ndarray, length: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, preferred id code, other id code) of the pairs stored as ``length`` preferred items
    from ``begin`` followed by as many other items; pairs with a NULL item are left out."""
    row, better_at = coded.part(begin, length)
    _, worse_at = coded.part(begin + length, length)
    better, worse = coded.codes[better_at], coded.codes[worse_at]
    named = (better >= 0) & (worse >= 0)
    return row[named], better[named], worse[named]


def _self_preference(
    function: str, argument: str, ids: _CodedIds, codes: np.ndarray, same: np.ndarray
) -> None:
    if same.any():
        raise ValueError(
            f"{function}: {argument} prefers item {ids.name(int(codes[same][0]))} to itself "
            "(a cycle of one item)"
        )


def _lengths(*columns: pa.Array) -> tuple[np.ndarray, ...]:
    """Each length column as int64 with 0 on rows where any of them is NULL, and the validity."""
    valid = np.logical_and.reduce([_valid(c) for c in columns])
    return valid, *(np.where(valid, _int_column(c), 0) for c in columns)


def _ranked_preferences(
    function: str, ids: pa.Array, rec_len: pa.Array, truth_len: pa.Array
) -> tuple[PreferenceRows, _CodedIds, _Items]:
    """edrc(rec, truth): the row's list is rec || truth's preferred items || their other items.
    Nodes are the items of V numbered in rec's order, so a lower node is preferred."""
    lists = _id_lists(ids)
    valid, n_rec, n_truth = _lengths(rec_len, truth_len)
    valid &= _valid(lists)
    n_rec, n_truth = np.where(valid, n_rec, 0), np.where(valid, n_truth, 0)
    coded = _coded_ids(lists)
    rec = _items(coded, np.zeros(len(lists), dtype=np.int64), n_rec)

    row, better_code, worse_code = _pairs(coded, n_rec, n_truth)
    better, worse = rec.find(row, better_code, coded.span), rec.find(row, worse_code, coded.span)
    ranked = (better >= 0) & (worse >= 0)
    _self_preference(function, "truth", coded, better_code, ranked & (better == worse))
    row, better, worse = row[ranked], better[ranked], worse[ranked]

    in_v = np.zeros(len(rec.row), dtype=bool)
    in_v[better] = in_v[worse] = True
    node_of_item = np.cumsum(in_v) - 1
    nodes = _Items(
        rec.dictionary, rec.row[in_v], rec.code[in_v], rec.position[in_v],
        *_row_starts(np.bincount(rec.row[in_v], minlength=len(lists))),
    )
    truth = Edges(
        row, node_of_item[better] - nodes.first[row], node_of_item[worse] - nodes.first[row]
    )
    return PreferenceRows(nodes.counts, truth, None, valid), coded, nodes


def _row_starts(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.r_[0, np.cumsum(counts)[:-1]].astype(np.int64), counts


def _both_preferences(
    function: str, ids: pa.Array, system_len: pa.Array, truth_len: pa.Array
) -> tuple[PreferenceRows, _CodedIds, _Items]:
    """edrc_preferences(system, truth): the row's list is system's preferred items || system's
    other items || truth's preferred items || truth's other items. Nodes are the items of the
    system's preferences."""
    lists = _id_lists(ids)
    valid, n_system, n_truth = _lengths(system_len, truth_len)
    valid &= _valid(lists)
    n_system, n_truth = np.where(valid, n_system, 0), np.where(valid, n_truth, 0)
    coded = _coded_ids(lists)
    span = coded.span
    nodes = _items(coded, np.zeros(len(lists), dtype=np.int64), 2 * n_system)

    def local(row: np.ndarray, code: np.ndarray) -> np.ndarray:
        item = nodes.find(row, code, span)
        return np.where(item >= 0, item - nodes.first[row], -1)

    s_row, s_better, s_worse = _pairs(coded, np.zeros(len(lists), dtype=np.int64), n_system)
    _self_preference(function, "system", coded, s_better, s_better == s_worse)
    system = Edges(s_row, local(s_row, s_better), local(s_row, s_worse))
    t_row, t_better, t_worse = _pairs(coded, 2 * n_system, n_truth)
    better, worse = local(t_row, t_better), local(t_row, t_worse)
    ranked = (better >= 0) & (worse >= 0)
    _self_preference(function, "truth", coded, t_better, ranked & (t_better == t_worse))
    truth = Edges(t_row[ranked], better[ranked], worse[ranked])
    return PreferenceRows(nodes.counts, truth, system, valid), coded, nodes


def _ranked_grades(
    function: str, ids: pa.Array, rec_len: pa.Array, grades: pa.Array
) -> RankedGrades:
    """spearman & co: the row's list is rec's items as VARCHAR || truth's keys; ``grades`` are
    truth's values in key order."""
    lists, grade_lists = _id_lists(ids), _combined(grades)
    valid, n_rec = _lengths(rec_len)
    valid &= _valid(lists) & _valid(grade_lists)
    n_rec = np.where(valid, n_rec, 0)
    n_truth = np.where(valid, pc.fill_null(pc.list_value_length(grade_lists), 0).to_numpy(), 0)
    coded = _coded_ids(lists)

    grade_offsets = grade_lists.offsets.to_numpy().astype(np.int64)
    flat_grades = pc.fill_null(
        grade_lists.values.slice(grade_offsets[0], grade_offsets[-1] - grade_offsets[0]), np.nan
    ).to_numpy(zero_copy_only=False)
    truth_grade = flat_grades[gather_ranges(grade_offsets[:-1] - grade_offsets[0], n_truth)]
    truth_row, key_at = coded.part(n_rec, n_truth)
    bad = np.flatnonzero(~np.isfinite(truth_grade))
    if bad.size:
        grade = truth_grade[bad[0]]
        raise ValueError(
            f"{function}: the grade of item {coded.name(int(coded.codes[key_at[bad[0]]]))} in "
            f"truth must be a finite number, got {'NULL or NaN' if np.isnan(grade) else grade}"
        )

    rec = _items(coded, np.zeros(len(lists), dtype=np.int64), n_rec)
    item = rec.find(truth_row, coded.codes[key_at], coded.span)
    item_grade = np.full(len(rec.row), np.nan)
    item_grade[item[item >= 0]] = truth_grade[item >= 0]
    compared = ~np.isnan(item_grade)  # rec items the truth grades, in rec order
    counts = np.bincount(rec.row[compared], minlength=len(lists))
    return RankedGrades(item_grade[compared], np.r_[0, np.cumsum(counts)].astype(np.int64), valid)


# --- Arrow out and the registered functions ------------------------------------------------------

def _as_arrow(values: np.ndarray) -> pa.Array:
    return pa.array(values, type=pa.float64(), mask=np.isnan(values))


def _option_values(option: Option, column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    column = _combined(column)
    if isinstance(option.default, str):
        return np.asarray(column.to_numpy(zero_copy_only=False), dtype=object)
    return pc.fill_null(column.cast(pa.float64()), np.nan).to_numpy(zero_copy_only=False)


def _option_type(option: Option) -> str:
    return "VARCHAR" if isinstance(option.default, str) else "DOUBLE"


def _preference_function(metric: Metric, convert: Callable, sides: tuple[str, ...]) -> Callable:
    def function(ids, system_len, truth_len, *rest):
        type_names, option_columns = rest[: len(sides)], rest[len(sides) :]
        for side, names in zip(sides, type_names, strict=True):
            _check_pairs(metric.name, side, names)
        rows, coded, nodes = convert(metric.name, ids, system_len, truth_len)
        options = {
            o.name: _option_values(o, c)
            for o, c in zip(metric.options, option_columns, strict=True)
        }
        try:
            values = metric.kernel(rows, **options)
        except PreferenceCycleError as cycle:
            names = nodes.names(coded, cycle.row, cycle.nodes)
            raise ValueError(
                f"{metric.name}: {cycle.side} preferences have a cycle: "
                + " > ".join([*names, names[0]])
            ) from None
        except ValueError as error:
            raise ValueError(f"{metric.name}: {error}") from None
        return _as_arrow(values)

    return function


def _grades_function(metric: Metric) -> Callable:
    def function(ids, rec_len, grades):
        return _as_arrow(metric.kernel(_ranked_grades(metric.name, ids, rec_len, grades)))

    return function


def _first(items: str) -> str:
    return f"list_transform({items}, lambda p: struct_extract_at(p, 1))"


def _second(items: str) -> str:
    return f"list_transform({items}, lambda p: struct_extract_at(p, 2))"


def _udf_and_macro(metric: Metric) -> tuple[PythonUDF, str]:
    udf = f"duckrank_{metric.name}"
    options = [o.name for o in metric.options]
    option_types = tuple(_option_type(o) for o in metric.options)
    if metric.inputs == "preferences":
        parameters = (ID_LISTS, "BIGINT", "BIGINT", "VARCHAR", *option_types)
        function = _preference_function(metric, _ranked_preferences, ("truth",))
        args = [f"rec || {_first('truth')} || {_second('truth')}", "len(rec)", "len(truth)",
                "typeof(truth)"]
    elif metric.inputs == "system_preferences":
        parameters = (ID_LISTS, "BIGINT", "BIGINT", "VARCHAR", "VARCHAR", *option_types)
        function = _preference_function(metric, _both_preferences, ("system", "truth"))
        args = [
            f"{_first('system')} || {_second('system')} || {_first('truth')} || {_second('truth')}",
            "len(system)", "len(truth)", "typeof(system)", "typeof(truth)",
        ]
    else:  # ranked_grades
        parameters = ("VARCHAR[]", "BIGINT", "DOUBLE[]")
        function = _grades_function(metric)
        args = ["list_transform(rec, lambda x: x::VARCHAR) || map_keys(truth)", "len(rec)",
                "map_values(truth)"]
    # DuckDB counts the function's parameters: give the variadic adapters an exact signature.
    function.__signature__ = inspect.Signature([
        inspect.Parameter(f"arg{i}", inspect.Parameter.POSITIONAL_ONLY)
        for i in range(len(parameters))
    ])
    truth = f"truth {metric.truth_type}" if metric.truth_type else "truth"
    defaults = "".join(f", {o.name} := {o.sql_default()}" for o in metric.options)
    header = f"{metric.name}({metric.first_argument}, {truth}{defaults})"
    macro = f"CREATE OR REPLACE TEMP MACRO {header} AS {udf}({', '.join([*args, *options])})"
    return PythonUDF(udf, function, parameters, "DOUBLE"), macro


PYTHON_INPUTS = ("preferences", "system_preferences", "ranked_grades")
PYTHON_METRICS: tuple[Metric, ...] = tuple(m for m in METRICS if m.inputs in PYTHON_INPUTS)
_REGISTERED = [_udf_and_macro(m) for m in PYTHON_METRICS]

UDFS: list[PythonUDF] = [udf for udf, _ in _REGISTERED]


def session_statements() -> list[str]:
    """TEMP macros that call the UDFs above (never stored in a database file)."""
    return [macro for _, macro in _REGISTERED]
