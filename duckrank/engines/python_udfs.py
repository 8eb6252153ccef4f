"""Metrics that run Python (numpy over whole Arrow batches), for what SQL cannot express well.

Each ``PythonUDF`` is registered as a DuckDB arrow UDF (``type="arrow"``: the function receives
a whole vector of rows as pyarrow arrays). The math lives in pure numpy kernels
(``duckrank.metrics.preference``, ``duckrank.metrics.correlation``) and the step that turns
(rec, truth) into their input in ``duckrank.matching.preferences`` (shared with Spark); this
module only turns the macros' arguments back into (rec, truth) Arrow lists and the results into
Arrow.

DuckDB's Python API has no ANY type and no overloading, so each public function is a TEMP macro
(``session_statements``) that reshapes its arguments natively and calls an internal UDF
``duckrank_<name>`` that sees one fixed signature:

* item ids travel as one list per row, the concatenation of every id argument (``rec || better
  items || worse items``), so DuckDB unifies their types (INTEGER with BIGINT, ...); the UDF
  parameter is a UNION of list types (``ID_LISTS``), which keeps integer ids as integers; the
  UDF cuts each row's list back into its arguments by their lengths (vectorised takes).
* DuckDB's Arrow export of that UNION costs about as much as the matching itself, so each UDF is
  registered twice: ``duckrank_<name>_int`` is the same Python function with the ids as
  ``BIGINT[]``, and the macro picks it with ``CASE WHEN typeof(...)`` when every id argument is
  of an integer type BIGINT holds exactly (``INTEGER_LISTS``). DuckDB folds the CASE per query
  (typeof is a constant), so only one branch runs; both must bind (a cast to BIGINT[] binds for
  any list), and the general branch binds first so that a bad argument fails as it always did.
* correlations compare rec with the keys of a MAP truth by their text, as the graded metrics do
  (an item matches a key when ``item::VARCHAR`` equals ``key::VARCHAR``), so their ids travel as
  VARCHAR, unless rec and the keys are both integers (text equality is integer equality there).
* when the native step is loaded in the connection's database (``session_statements(native=True)``),
  a first branch sends ids it handles (every id argument an integer list BIGINT holds, or every
  one VARCHAR[]) to its functions (``NATIVE_PREFIX``, matching/native/edrc.c and correlation.c),
  which read DuckDB's vectors in place: no Arrow export, no Python. Other ids keep the UDFs; the
  values and error messages are the same either way.

The macros are TEMP because a stored macro calling Python would break the database file in a
DuckDB without duckrank, and TEMP macros are private to one connection: call
``duckrank.register(cursor)`` on each cursor. The ``duckrank_*`` UDFs themselves are shared by
every cursor of the database.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from duckrank.engines.udf import PythonUDF
from duckrank.matching.arrays import combined, gather_ranges
from duckrank.matching.preferences import (
    match_preferences,
    match_ranked_grades,
    match_system_preferences,
    pairs_type_error,
    run_preference_kernel,
)
from duckrank.metrics import METRICS
from duckrank.metrics.inputs import check_engine
from duckrank.metrics.prefs import batch_values
from duckrank.metrics.record import Metric, Option
from duckrank.render.quoting import quote_literal

ID_LISTS = "UNION(i BIGINT[], u UBIGINT[], h HUGEINT[], s VARCHAR[], id UUID[])"
# What typeof() says of the id lists that travel as BIGINT[] unchanged (UBIGINT may not fit).
INTEGER_LISTS = ("TINYINT[]", "SMALLINT[]", "INTEGER[]", "BIGINT[]", "UTINYINT[]",
                 "USMALLINT[]", "UINTEGER[]")
# The native step's functions (matching/native/edrc.c, correlation.c), by their qualified name so
# that a macro of the same name in the database cannot stand in for them.
NATIVE_PREFIX = "system.main.duckrank_native_"


# --- Arrow in: the macros' reshaped arguments back into (rec, truth) Arrow lists -----------------

def _id_lists(ids: pa.Array | pa.ChunkedArray) -> pa.ListArray:
    """The list array inside the UNION argument (every row holds the same member, the one
    DuckDB cast the macro's list to)."""
    ids = combined(ids)
    if not pa.types.is_union(ids.type):
        return ids
    members = [ids.field(i) for i in range(ids.type.num_fields)]
    used = [m for m in members if m.null_count < len(m)]
    if len(used) > 1:
        raise TypeError("item ids of one call must be of one type")
    return used[0] if used else members[0]


def _valid(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return combined(values).is_valid().to_numpy(zero_copy_only=False)


def _int_column(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return pc.fill_null(combined(values), 0).to_numpy(zero_copy_only=False).astype(np.int64)


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
    """The macro passes only the first two fields of each struct, so their number is checked on
    the argument's typeof() text."""
    names = pc.drop_null(combined(type_names))
    name = names[0].as_py() if len(names) else None
    if name is not None and _struct_fields(name) not in (None, 2):
        raise pairs_type_error(function, argument, name)


def _segments(
    ids: pa.Array | pa.ChunkedArray, *length_columns: pa.Array | pa.ChunkedArray,
    repeats: tuple[int, ...],
) -> list[pa.ListArray]:
    """Split each row's id list into consecutive segments: ``repeats[i]`` segments of
    ``length_columns[i]`` ids each, in order. A row where the list or a length is NULL is NULL
    in every segment."""
    lists = _id_lists(ids)
    valid = _valid(lists) & np.logical_and.reduce([_valid(c) for c in length_columns])
    lengths = [
        length
        for column, count in zip(length_columns, repeats, strict=True)
        for length in [np.where(valid, _int_column(column), 0)] * count
    ]
    row_start = lists.offsets.to_numpy().astype(np.int64)[:-1]
    starts = row_start + np.cumsum([np.zeros_like(row_start), *lengths[:-1]], axis=0)
    # One take lays out every segment's ids, segment after segment.
    values = lists.values.take(pa.array(gather_ranges(starts.ravel(), np.concatenate(lengths))))
    mask = pa.array(~valid)
    segments, begin = [], 0
    for length in lengths:
        offsets = np.concatenate([[0], np.cumsum(length)])
        segments.append(pa.ListArray.from_arrays(
            pa.array(offsets, pa.int32()), values.slice(begin, offsets[-1]), mask=mask
        ))
        begin += offsets[-1]
    return segments


def _preference_list(better: pa.ListArray, worse: pa.ListArray) -> pa.ListArray:
    """Two segments of equal lengths as one list of (preferred, other) structs."""
    pairs = pa.StructArray.from_arrays([better.values, worse.values], ["preferred", "other"])
    return pa.ListArray.from_arrays(better.offsets, pairs, mask=better.is_null())


def _rec_and_preferences(
    ids: pa.Array, rec_len: pa.Array, truth_len: pa.Array
) -> tuple[pa.ListArray, pa.ListArray]:
    """edrc: each row's ids are rec || truth's preferred items || their other items."""
    rec, better, worse = _segments(ids, rec_len, truth_len, repeats=(1, 2))
    return rec, _preference_list(better, worse)


def _two_preference_lists(
    ids: pa.Array, system_len: pa.Array, truth_len: pa.Array
) -> tuple[pa.ListArray, pa.ListArray]:
    """edrc_preferences: each row's ids are system's preferred items || system's other items ||
    truth's preferred items || truth's other items."""
    s_better, s_worse, t_better, t_worse = _segments(
        ids, system_len, truth_len, repeats=(2, 2)
    )
    return _preference_list(s_better, s_worse), _preference_list(t_better, t_worse)


def _rec_and_grade_map(
    ids: pa.Array, rec_len: pa.Array, grades: pa.Array
) -> tuple[pa.ListArray, pa.MapArray]:
    """The correlations: each row's ids are rec as VARCHAR || truth's keys; ``grades`` are
    truth's values in key order."""
    grade_lists = combined(grades)
    key_len = pc.list_value_length(grade_lists)
    rec, keys = _segments(ids, rec_len, key_len, repeats=(1, 1))
    grade_offsets = grade_lists.offsets.to_numpy().astype(np.int64)
    items = grade_lists.values.take(
        pa.array(gather_ranges(grade_offsets[:-1], np.diff(keys.offsets.to_numpy())))
    )
    return rec, pa.MapArray.from_arrays(keys.offsets, keys.values, items, mask=keys.is_null())


# --- Arrow out and the registered functions ------------------------------------------------------

def _as_arrow(values: np.ndarray) -> pa.Array:
    return pa.array(values, type=pa.float64(), mask=np.isnan(values))


def _option_values(option: Option, column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    column = combined(column)
    if isinstance(option.default, str):
        return np.asarray(column.to_numpy(zero_copy_only=False), dtype=object)
    return pc.fill_null(column.cast(pa.float64()), np.nan).to_numpy(zero_copy_only=False)


def _option_type(option: Option) -> str:
    return "VARCHAR" if isinstance(option.default, str) else "DOUBLE"


def _preference_function(
    metric: Metric, arguments: Callable, match: Callable, sides: tuple[str, ...]
) -> Callable:
    def function(ids, system_len, truth_len, *rest):
        type_names, option_columns = rest[: len(sides)], rest[len(sides) :]
        for side, names in zip(sides, type_names, strict=True):
            _check_pairs(metric.name, side, names)
        matched = match(*arguments(ids, system_len, truth_len), metric.name)
        options = {
            o.name: _option_values(o, c)
            for o, c in zip(metric.options, option_columns, strict=True)
        }
        return _as_arrow(run_preference_kernel(metric.name, metric.kernel, matched, **options))

    return function


def _grades_function(metric: Metric) -> Callable:
    def function(ids, rec_len, grades):
        try:
            matched = match_ranked_grades(*_rec_and_grade_map(ids, rec_len, grades), metric.name)
        except ValueError:
            # The correlations match and name items by their text (docs/graded.md): a batch of
            # integer ids that fails is redone as text, so the error names item '2', not 2.
            ids = combined(ids)
            if pa.types.is_integer(ids.type.value_type):
                text = ids.cast(pa.list_(pa.string()))
                match_ranked_grades(*_rec_and_grade_map(text, rec_len, grades), metric.name)
            raise
        return _as_arrow(metric.kernel(matched))

    return function


def _first(items: str) -> str:
    return f"list_transform({items}, lambda p: struct_extract_at(p, 1))"


def _second(items: str) -> str:
    return f"list_transform({items}, lambda p: struct_extract_at(p, 2))"


@dataclass(frozen=True)
class _Shape:
    """How a metric's macro reshapes its arguments for its UDF: the UDF's parameters and
    function, the SQL id lists in the order the UDF cuts them (``parts``), the ids as the
    general UDF takes them, its other arguments, and the native step's call (``native``: the
    arguments after its function's name, memory_limit added when the macro is made; "" for
    none)."""

    parameters: tuple[str, ...]
    function: Callable
    parts: list[str]
    ids: str
    args: list[str]
    native: str


def _option_types(metric: Metric) -> tuple[str, ...]:
    return tuple(_option_type(o) for o in metric.options)


def _preferences_shape(metric: Metric) -> _Shape:
    options = [o.name for o in metric.options]
    parts = ["rec", _first("truth"), _second("truth")]
    return _Shape(
        (ID_LISTS, "BIGINT", "BIGINT", "VARCHAR", *_option_types(metric)),
        _preference_function(metric, _rec_and_preferences, match_preferences, ("truth",)),
        parts, " || ".join(parts), ["len(rec)", "len(truth)", "typeof(truth)"],
        f"{NATIVE_PREFIX}{metric.name}(rec, truth, typeof(truth), {', '.join(options)}",
    )


def _system_preferences_shape(metric: Metric) -> _Shape:
    options = [o.name for o in metric.options]
    parts = [_first("system"), _second("system"), _first("truth"), _second("truth")]
    return _Shape(
        (ID_LISTS, "BIGINT", "BIGINT", "VARCHAR", "VARCHAR", *_option_types(metric)),
        _preference_function(
            metric, _two_preference_lists, match_system_preferences, ("system", "truth")
        ),
        parts, " || ".join(parts),
        ["len(system)", "len(truth)", "typeof(system)", "typeof(truth)"],
        f"{NATIVE_PREFIX}{metric.name}(system, truth, typeof(system), typeof(truth), "
        f"{', '.join(options)}",
    )


def _ranked_grades_shape(metric: Metric) -> _Shape:
    # ids compared by their text, as the record's VARCHAR-keyed truth says
    return _Shape(
        ("VARCHAR[]", "BIGINT", "DOUBLE[]"), _grades_function(metric), ["rec", "map_keys(truth)"],
        "list_transform(rec, lambda x: x::VARCHAR) || map_keys(truth)::VARCHAR[]",
        ["len(rec)", "map_values(truth)::DOUBLE[]"],
        f"{NATIVE_PREFIX}correlation('{metric.name}', rec, map_keys(truth), "
        "map_values(truth)::DOUBLE[]",
    )


def _prefs_shape(metric: Metric) -> _Shape:
    """trec_eval's preference measures (duckrank.metrics.prefs): rec's ids as they come (text
    in the UDF), truth's judgments as STRUCT(jg, jsg, item, level) of text and DOUBLE; the whole
    batch counted by ``batch_values``. No native step."""
    truth = ("list_transform(truth, lambda t: {'jg': t.jg::VARCHAR, 'jsg': t.jsg::VARCHAR, "
             "'item': t.item::VARCHAR, 'level': t.level::DOUBLE})")
    return _Shape(
        ("VARCHAR[]", "STRUCT(jg VARCHAR, jsg VARCHAR, item VARCHAR, level DOUBLE)[]"),
        lambda rec, judgments: batch_values(metric.name, rec, judgments),
        ["rec"], "list_transform(rec, lambda x: x::VARCHAR)", [truth], "",
    )


# How the macro of each input kind DuckDB runs as a Python UDF (``InputKind.engine ==
# "python"``) reshapes its arguments; a kind of that engine without a shape fails at import.
SHAPES: dict[str, Callable[[Metric], _Shape]] = {
    "preferences": _preferences_shape,
    "system_preferences": _system_preferences_shape,
    "ranked_grades": _ranked_grades_shape,
    "prefs": _prefs_shape,
}
check_engine(__name__, "python", SHAPES)


def _shape(metric: Metric) -> _Shape:
    return SHAPES[metric.inputs](metric)


def _udfs(metric: Metric) -> tuple[PythonUDF, PythonUDF]:
    """The metric's UDF and its twin for integer ids (``<udf>_int``)."""
    shape = _shape(metric)
    function = shape.function
    # DuckDB counts the function's parameters: give the variadic adapters an exact signature.
    function.__signature__ = inspect.Signature([
        inspect.Parameter(f"arg{i}", inspect.Parameter.POSITIONAL_ONLY)
        for i in range(len(shape.parameters))
    ])
    udf = f"duckrank_{metric.name}"
    return (PythonUDF(udf, function, shape.parameters, metric.result_type),
            PythonUDF(f"{udf}_int", function, ("BIGINT[]", *shape.parameters[1:]),
                      metric.result_type))


def _typeof_in(parts: list[str], types: tuple[str, ...]) -> str:
    listed = ", ".join(f"'{t}'" for t in types)
    return " AND ".join(f"typeof({part}) IN ({listed})" for part in parts)


def _macro(metric: Metric, native: bool) -> list[str]:
    """The TEMP macro statements of a metric.

    The macro calls the twin UDF with the parts cast to BIGINT[] when every part is an integer
    list BIGINT holds (``INTEGER_LISTS``), else the general UDF as before; the general branch
    comes first so that it binds first and a bad argument fails with the same message as ever.
    With ``native`` (the native step is loaded in the connection's database), ids the native
    step handles (every part an integer list BIGINT holds, or every part VARCHAR[]) go to it
    instead; it binds for any argument, so its branch can come first."""
    shape = _shape(metric)
    udf = f"duckrank_{metric.name}"
    rest = ", ".join([*shape.args, *(o.name for o in metric.options)])
    not_integer = " OR ".join(
        f"NOT ({_typeof_in([part], INTEGER_LISTS)})" for part in shape.parts
    )
    integer_ids = " || ".join(f"({part})::BIGINT[]" for part in shape.parts)
    body = (f"WHEN {not_integer} THEN {udf}({shape.ids}, {rest}) "
            f"ELSE {udf}_int({integer_ids}, {rest}) END")
    if native and shape.native:
        handled = (f"({_typeof_in(shape.parts, INTEGER_LISTS)}) OR "
                   f"({_typeof_in(shape.parts, ('VARCHAR[]',))})")
        body = (f"WHEN {handled} THEN {shape.native}, current_setting('memory_limit')) "
                f"{body}")
    defaults = "".join(f", {o.name} := {o.sql_default()}" for o in metric.options)
    public = f"({metric.first_argument}, truth{defaults})"
    statements = []
    if metric.truth_type:
        # A typed truth parameter would be cast (integer keys to VARCHAR) before the CASE could
        # see them, so the public overload takes truth untyped and binds, in a branch that never
        # runs, an overload typed as the record says: a truth of another kind still fails with
        # DuckDB's "Macro <name>() does not support the supplied arguments" and the type.
        typed = (f"({metric.first_argument}, truth {metric.truth_type}, signature) AS "
                 f"error({quote_literal(f'{metric.name}: takes {metric.signature}')})")
        # The macro calls itself, so an overload of that name must exist before it is created.
        statements.append(f"CREATE OR REPLACE TEMP MACRO {metric.name}{typed}")
        body = f"WHEN false THEN {metric.name}({metric.first_argument}, truth, NULL) {body}"
        public += f" AS CASE {body}, {typed}"
    else:
        public += f" AS CASE {body}"
    statements.append(f"CREATE OR REPLACE TEMP MACRO {metric.name}{public}")
    return statements


PYTHON_METRICS: tuple[Metric, ...] = tuple(m for m in METRICS if m.kind.engine == "python")

UDFS: list[PythonUDF] = [udf for m in PYTHON_METRICS for udf in _udfs(m)]
_STATEMENTS = {native: [s for m in PYTHON_METRICS for s in _macro(m, native)]
               for native in (False, True)}


def session_statements(native: bool = False) -> list[str]:
    """TEMP macros that call the UDFs above (never stored in a database file); with ``native``,
    macros that call the native step (``NATIVE_PREFIX``) for the ids it handles, for a
    connection whose database has it loaded."""
    return list(_STATEMENTS[native])
