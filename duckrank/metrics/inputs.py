"""The input kinds: what a metric record's ``inputs`` names, described once for every engine.

A record (``duckrank.metrics.record.Metric``) says which matching step feeds its ``sql`` and its
``kernel`` by the name of an ``InputKind`` (``inputs="hits"``); ``Metric`` refuses an unknown
name when the record is made, that is when ``duckrank.metrics`` is imported. Each kind says what
the engines need to know of it and nothing more:

* what it needs: its SQL arguments (``arguments``, also in Spark's errors), which truth it takes
  (``list_truth``: an untyped truth is a LIST of relevant ids that qrels can give), whether it
  takes a cut-off k and how its first argument is named;
* how it is matched: ``engine`` says how DuckDB runs it (``"sql"``: a pure-SQL macro whose body
  ``duckrank.render.macros.BODIES`` writes over ``duckrank.matching.sql``, with the native C step
  of ``native`` where the ids allow; ``"python"``: the kernel as a Python UDF behind a TEMP macro,
  ``duckrank.engines.python_udfs``); ``match`` is its numpy matching step over Arrow arrays
  (``duckrank.matching.arrays`` / ``duckrank.matching.preferences``), which Spark and the tests
  call, and ``run`` calls the record's kernel on its result;
* its Arrow types: ``accepts(rec_type, truth_type)``, by which Spark (which has no overloading)
  tells the records sharing a name apart.

Adding a kind: one ``InputKind`` in ``INPUT_KINDS`` below, its numpy matching step, and, for
``engine="sql"``, its macro body in ``duckrank.render.macros.BODIES`` (for ``"python"``, its
shape in ``duckrank.engines.python_udfs``); those modules check at import that every kind of
their engine has one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from duckrank.lazy import LazyModule
from duckrank.matching.arrays import (
    match_grade_lists,
    match_graded_hits,
    match_grades,
    match_hits,
    match_judged,
)
from duckrank.matching.preferences import (
    match_preferences,
    match_ranked_grades,
    match_system_preferences,
    run_preference_kernel,
)
from duckrank.matching.subtopics import match_subtopics

np = LazyModule("numpy")
pa = LazyModule("pyarrow")

# --- Arrow types ---------------------------------------------------------------------------------


def _is_list(data_type: pa.DataType) -> bool:
    return pa.types.is_list(data_type) or pa.types.is_large_list(data_type)


def _is_number(data_type: pa.DataType) -> bool:
    return pa.types.is_integer(data_type) or pa.types.is_floating(data_type) or pa.types.is_decimal(
        data_type
    )


def _one_kind(*ids: pa.DataType) -> bool:
    return all(t == ids[0] for t in ids) or all(pa.types.is_integer(t) for t in ids)


def id_lists(rec: pa.DataType, truth: pa.DataType) -> bool:
    """Two lists of ids of one kind (one type, or integers of any width)."""
    if not (_is_list(rec) and _is_list(truth)):
        return False
    rec_ids, truth_ids = rec.value_type, truth.value_type
    return rec_ids == truth_ids or (pa.types.is_integer(rec_ids) and pa.types.is_integer(truth_ids))


def ids_and_ids_or_grades(rec: pa.DataType, truth: pa.DataType) -> bool:
    """A truth MAP is matched by the ids' text form (as in DuckDB), so any key type goes."""
    return id_lists(rec, truth) or (_is_list(rec) and pa.types.is_map(truth))


def structs_and_numbers(rec: pa.DataType, truth: pa.DataType) -> bool:
    """Hivemall's graded form: rec holds structs whose first field is the grade (as in DuckDB,
    where a plain id list must not be read as grades), truth holds grades."""
    return (
        _is_list(rec)
        and _is_list(truth)
        and pa.types.is_struct(rec.value_type)
        and rec.value_type.num_fields > 0
        and _is_number(rec.value_type.field(0).type)
        and _is_number(truth.value_type)
    )


def _preference_ids(data_type: pa.DataType) -> list[pa.DataType] | None:
    """The id types of a list of preference structs (its first two fields; a struct of another
    size is accepted here so that matching can name the problem), None for other types."""
    if not (_is_list(data_type) and pa.types.is_struct(data_type.value_type)):
        return None
    fields = data_type.value_type
    return [fields.field(i).type for i in range(min(2, fields.num_fields))]


def ids_and_preferences(rec: pa.DataType, truth: pa.DataType) -> bool:
    pair_ids = _preference_ids(truth)
    return (
        _is_list(rec) and not pa.types.is_nested(rec.value_type) and pair_ids is not None
        and _one_kind(rec.value_type, *pair_ids)
    )


def preferences_and_preferences(system: pa.DataType, truth: pa.DataType) -> bool:
    system_ids, truth_ids = _preference_ids(system), _preference_ids(truth)
    return system_ids is not None and truth_ids is not None and _one_kind(*system_ids, *truth_ids)


def ids_and_subtopic_qrels(rec: pa.DataType, truth: pa.DataType) -> bool:
    """Subtopic qrels: a list of structs with fields subtopic, item and grade (items matched as
    text, so any id type goes)."""
    return (
        _is_list(rec) and not pa.types.is_nested(rec.value_type) and _is_list(truth)
        and pa.types.is_struct(truth.value_type)
        and {"subtopic", "item", "grade"} <= {f.name for f in truth.value_type}
    )


def ids_and_prefs(rec: pa.DataType, truth: pa.DataType) -> bool:
    """trec_eval's preference judgments: a list of structs with fields jg, jsg, item and level
    (items matched as text, so any id type goes)."""
    return (
        _is_list(rec) and not pa.types.is_nested(rec.value_type) and _is_list(truth)
        and pa.types.is_struct(truth.value_type)
        and {"jg", "jsg", "item", "level"} <= {f.name for f in truth.value_type}
    )


def ids_and_graded_map(rec: pa.DataType, truth: pa.DataType) -> bool:
    """Keys of another kind than rec's ids are matched by their text form, as in DuckDB."""
    return (
        _is_list(rec) and not pa.types.is_nested(rec.value_type)
        and pa.types.is_map(truth) and _is_number(truth.item_type)
    )


# --- numpy matching, one calling convention -------------------------------------------------------
# ``match(rec, truth, cut, function, options)``: ``cut`` the per-row cut-off as float64 (NaN for a
# NULL k; None for kinds without k), ``function`` the SQL name for the errors, ``options`` the
# record's option values (min_grade, for the kinds whose matching reads it).

# (the array types quoted: the alias is made at import, which does not import pyarrow, issue 32)
Match = Callable[["pa.Array", "pa.Array", "np.ndarray | None", str, Mapping[str, object]], Any]


def _hits(rec: pa.Array, truth: pa.Array, cut: np.ndarray | None, function: str,
          options: Mapping[str, object]) -> Any:
    return match_hits(rec, truth, cut)


def _with_function(match: Callable[..., Any]) -> Match:
    def matched(rec: pa.Array, truth: pa.Array, cut: np.ndarray | None, function: str,
                options: Mapping[str, object]) -> Any:
        return match(rec, truth, cut, function)

    return matched


def _with_min_grade(match: Callable[..., Any]) -> Match:
    def matched(rec: pa.Array, truth: pa.Array, cut: np.ndarray | None, function: str,
                options: Mapping[str, object]) -> Any:
        return match(rec, truth, cut, min_grade=options.get("min_grade"), function=function)

    return matched


def _subtopics(rec: pa.Array, truth: pa.Array, cut: np.ndarray | None, function: str,
               options: Mapping[str, object]) -> Any:
    return match_subtopics(rec, truth, cut, min_grade=options.get("min_grade", 1),
                           function=function)


def _no_numpy_form(rec: pa.Array, truth: pa.Array, cut: np.ndarray | None, function: str,
                   options: Mapping[str, object]) -> Any:
    """The prefs kind's numpy step: none. Its records have no kernel, so Spark (the caller of
    ``match``) registers none of them; an error that says so should anything call it."""
    raise ValueError(f"{function}: the prefs measures run in DuckDB only (no numpy form: "
                     "duckrank.metrics.prefs.batch_values)")


def _without_k(match: Callable[..., Any]) -> Match:
    """A matching step of kinds that take no k, called as the ones that do."""

    def matched(rec: pa.Array, truth: pa.Array, cut: None, function: str,
                options: Mapping[str, object]) -> Any:
        return match(rec, truth, function)

    return matched


def _run_kernel(function: str, kernel: Callable[..., Any], matched: Any,
                options: Mapping[str, object]) -> Any:
    return kernel(matched, **options)


def _run_preference_kernel(function: str, kernel: Callable[..., Any], matched: Any,
                           options: Mapping[str, object]) -> Any:
    # Names the items of a cycle the kernel finds, as the DuckDB UDFs do.
    return run_preference_kernel(function, kernel, matched, **options)


# --- the kinds -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class InputKind:
    """One matching step that feeds records' ``sql`` and ``kernel`` (see the module's text)."""

    name: str
    doc: str  # what the step gives the record: the placeholders of ``sql``, the kernel's input
    engine: str  # "sql": a pure-SQL macro; "python": a Python UDF behind a TEMP macro
    arguments: str  # the SQL arguments and their types, for errors and docs
    accepts: Callable[[pa.DataType, pa.DataType], bool]  # the Arrow (rec, truth) types it reads
    match: Match  # the numpy matching step over Arrow arrays
    native: str = ""  # the native (C) step that matches it in DuckDB where the ids allow (a note)
    run: Callable[[str, Callable[..., Any], Any, Mapping[str, object]], Any] = _run_kernel
    first_argument: str = "rec"
    takes_k: bool = True
    list_truth: bool = False  # an untyped truth is a LIST of relevant ids (qrels can give it)
    map_overload: str = ""  # the kind of the MAP-truth overload derived from its records
    integer_keys: bool = False  # its MAP truth also has a MAP(BIGINT, DOUBLE) macro overload
    reads_gains: bool = False  # its MAP truth goes to a gain function (a negative grade fails)

    def __post_init__(self) -> None:
        if self.engine not in ("sql", "python"):
            raise ValueError(f"input kind {self.name}: engine must be 'sql' or 'python', "
                             f"got {self.engine!r}")


_PREFERENCES = "ARRAY<STRUCT<preferred T, other T>>"
_GRADED_MAP = "rec ARRAY<T>, truth MAP<T, grade>"
_UDF_NATIVE = "duckrank_native_* (duckrank.engines.python_udfs.NATIVE_PREFIX)"

_KINDS = (
    InputKind(
        "hits",
        "binary relevance. Placeholders in ``sql``: ``{pos}`` the 1-based positions of the hits "
        "in the top K (in no particular order), ``{K}`` = min(k, len(rec)), ``{k}`` the cut-off "
        "(len(rec) when omitted), ``{n}`` the number of distinct relevant items. ``kernel`` "
        "receives a ``duckrank.matching.arrays.Hits``.",
        engine="sql", arguments="rec ARRAY<T>, truth ARRAY<T>", accepts=id_lists, match=_hits,
        native="duckrank.matching.sql.native_matched_sql", list_truth=True,
        map_overload="graded_hits",
    ),
    InputKind(
        "grades",
        "graded relevance. truth is a MAP(VARCHAR, DOUBLE) of item -> grade when ``truth_type`` "
        "says so, else a LIST (grade 1 for each item). Placeholders: ``{pos}`` the ascending "
        "ranks (1-based, within the top K) of the hits with a positive grade (first occurrences "
        "only), ``{grades}`` their grades in the same order, ``{ideal}`` the min(k, n) largest "
        "positive grades of truth, largest first, ``{n}`` the number of positive grades, "
        "``{K}``, ``{k}`` as for hits; option parameters are referenced by name. ``kernel`` "
        "receives a ``duckrank.matching.arrays.Grades`` from ``match_grades``.",
        engine="sql", arguments="rec ARRAY<T>, truth ARRAY<T> | MAP<T, grade>",
        accepts=ids_and_ids_or_grades, match=_with_function(match_grades),
        native="duckrank.matching.sql.native_graded_match_sql (MAP), native_matched_sql (LIST)",
        list_truth=True, integer_keys=True,
        reads_gains=True,
    ),
    InputKind(
        "grade_lists",
        "the placeholders and ``Grades`` of grades, from grades given directly (Hivemall's graded "
        "form: rec a list of structs whose first field is the grade, truth a list of grades); "
        "numpy matching is ``duckrank.matching.arrays.match_grade_lists``.",
        engine="sql", arguments="rec ARRAY<STRUCT<grade, ...>>, truth ARRAY<grade>",
        accepts=structs_and_numbers, match=_with_function(match_grade_lists),
    ),
    InputKind(
        "graded_hits",
        "hits over a MAP truth (``truth_type``), relevant meaning grade >= the ``min_grade`` "
        "option (NULL: grade > 0; a negative grade never), derived from a hits record "
        "(``duckrank.metrics.binary.graded_truth_overload``); ``kernel`` receives the ``Hits`` "
        "of ``duckrank.matching.arrays.match_graded_hits``.",
        engine="sql", arguments=_GRADED_MAP, accepts=ids_and_graded_map,
        match=_with_min_grade(match_graded_hits),
        native="duckrank.matching.sql.native_matched_sql",
    ),
    InputKind(
        "judged",
        "trec_eval's reading of a MAP truth (``duckrank.matching.sql``, judged truth). "
        "Placeholders: ``{top}`` the grades of the top K in rec order (NULL: not in truth, a "
        "repeat or a NULL item), ``{pos}``, ``{nonrel}``, ``{pool}`` the ascending ranks of its "
        "relevant, judged non-relevant (grade >= 0, not relevant) and negative-grade items, "
        "``{n}`` and ``{nn}`` the relevant and judged non-relevant items of truth, ``{ideal}`` "
        "truth's positive grades, largest first (not cut at k), ``{K}``, ``{k}``; records that "
        "read relevance take the ``min_grade`` option. ``kernel`` receives a "
        "``duckrank.matching.arrays.Judged`` from ``match_judged``.",
        engine="sql", arguments=_GRADED_MAP, accepts=ids_and_graded_map,
        match=_with_min_grade(match_judged),
        native="duckrank.matching.sql.native_top_grades_sql, native_matched_sql",
    ),
    InputKind(
        "subtopics",
        "subtopic (intent) qrels: truth a LIST of STRUCT(subtopic, item, grade), relevant "
        "meaning grade >= the ``min_grade`` option (``duckrank.matching.subtopics``). "
        "Placeholders: ``{pairs}`` a STRUCT(i, s, r) per rank i of rec and subtopic s its item "
        "is relevant to, r the ranks above i relevant to s (the whole list, rank order), ``{N}`` "
        "the subtopics with a relevant item, ``{R}`` their relevant items, ``{ideal}`` the "
        "greedy ideal ranking's gains (with the ``alpha`` option), ``{k}`` the cut-off "
        "(len(rec) when omitted). ``kernel`` receives a "
        "``duckrank.matching.subtopics.Subtopics``.",
        engine="sql", arguments="rec ARRAY<T>, truth ARRAY<STRUCT<subtopic, item T, grade>>",
        accepts=ids_and_subtopic_qrels, match=_subtopics,
    ),
    InputKind(
        "prefs",
        "trec_eval 10's preference judgments (-R prefs): truth a LIST of STRUCT(jg, jsg, item, "
        "level), one query's lines ``qid jg jsg docno level`` (qrels_prefs: jsg a constant), rec "
        "the ranking; no k, no pure-SQL form (``sql`` and ``kernel`` empty): the UDF counts a "
        "whole batch of rows in one DuckDB query (``duckrank.metrics.prefs.batch_values``, the "
        "counting of ``duckrank trec_eval -R prefs``).",
        engine="python", arguments="rec ARRAY<T>, truth ARRAY<STRUCT<jg, jsg, item T, level>>",
        accepts=ids_and_prefs, match=_no_numpy_form, takes_k=False,
    ),
    InputKind(
        "preferences",
        "(rec, truth) with truth a list of (preferred, other) structs; no pure-SQL form (``sql`` "
        "is empty); kernel input ``duckrank.matching.preferences.PreferenceRows``.",
        engine="python", arguments=f"rec ARRAY<T>, truth {_PREFERENCES}",
        accepts=ids_and_preferences, match=_without_k(match_preferences),
        native=_UDF_NATIVE, run=_run_preference_kernel, takes_k=False,
    ),
    InputKind(
        "system_preferences",
        "preferences with the system's output a list of preferences too (first argument "
        "``system``).",
        engine="python", arguments=f"system {_PREFERENCES}, truth {_PREFERENCES}",
        accepts=preferences_and_preferences, match=_without_k(match_system_preferences),
        native=_UDF_NATIVE, run=_run_preference_kernel,
        first_argument="system", takes_k=False,
    ),
    InputKind(
        "ranked_grades",
        "(rec, truth MAP); no pure-SQL form; kernel input "
        "``duckrank.matching.preferences.RankedGrades``.",
        engine="python", arguments=_GRADED_MAP, accepts=ids_and_graded_map,
        match=_without_k(match_ranked_grades), native=_UDF_NATIVE,
        takes_k=False,
    ),
)

INPUT_KINDS: dict[str, InputKind] = {kind.name: kind for kind in _KINDS}


def input_kind(name: str) -> InputKind:
    """The kind of that name; ValueError naming the known ones otherwise."""
    try:
        return INPUT_KINDS[name]
    except KeyError:
        raise ValueError(f"unknown input kind {name!r}; known kinds: "
                         f"{', '.join(INPUT_KINDS)}") from None


def kinds_of(engine: str) -> frozenset[str]:
    """The names of the kinds DuckDB runs by ``engine`` ("sql" or "python")."""
    return frozenset(k.name for k in _KINDS if k.engine == engine)


def check_engine(module: str, engine: str, written: Iterable[str]) -> None:
    """Raise at import when ``module`` does not write exactly the kinds of ``engine``."""
    expected, got = kinds_of(engine), frozenset(written)
    if got != expected:
        raise ImportError(
            f"{module}: the input kinds of engine {engine!r} are {sorted(expected)}, but it "
            f"handles {sorted(got)}: missing {sorted(expected - got)}, "
            f"unknown {sorted(got - expected)}"
        )
