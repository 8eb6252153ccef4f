"""The matching step of the preference-based functions: Arrow lists in, the kernels' input out.

``edrc``, ``edrc_preferences`` (``duckrank.metrics.preference``) and the rank correlations
(``duckrank.metrics.correlation``) read each row as items numbered per row. The functions here
turn whole Arrow batches of the SQL arguments into those numbers, with numpy and Arrow compute
(no per-row Python), for every engine: the DuckDB UDFs (``duckrank.engines.python_udfs``) and Spark
(``duckrank.spark``).

* ``match_preferences(rec, truth)``: rec a list of ids, truth a list of two-field structs
  (preferred item, other item; field names do not matter) -> ``MatchedPreferences``.
* ``match_system_preferences(system, truth)``: both lists of such structs -> ``MatchedPreferences``.
* ``match_ranked_grades(rec, truth)``: rec a list of ids, truth a MAP id -> grade ->
  ``RankedGrades``.

Conventions (docs/preference.md): ids are of one kind (one type, or integers of any width, which
are compared as one integer type); a MAP truth of another key type is matched by the ids' text
form, as the graded metrics do. A NULL rec, system or truth makes the row NULL (``valid`` False).
NULL elements of rec are skipped and a repeated item counts at its first position; a NULL
preference or one with a NULL item is ignored. Errors name the function (``function``) and the
offending item.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from duckrank.matching.arrays import combined, gather_ranges

# --- what the kernels read ----------------------------------------------------------------------

@dataclass(frozen=True)
class Edges:
    """Preferences of a batch of rows: edge e says node ``better[e]`` is preferred to node
    ``worse[e]`` in row ``row[e]`` (node ids are per row, 0-based)."""

    row: np.ndarray
    better: np.ndarray
    worse: np.ndarray


@dataclass(frozen=True)
class PreferenceRows:
    """The input of the EDRC kernel for a batch of rows.

    ``node_counts[r]`` nodes per row. ``system`` is None when the system's output is a ranked
    list: node ids are then in the system's order (a lower id is preferred). ``valid`` is False for
    rows whose value is NULL (a NULL argument).
    """

    node_counts: np.ndarray
    truth: Edges
    system: Edges | None
    valid: np.ndarray


class PreferenceCycleError(ValueError):
    """A row's preferences form a cycle: ``nodes`` (ids in ``row``) lie on it, in order."""

    def __init__(self, side: str, row: int, nodes: list[int]) -> None:
        super().__init__(f"{side} preferences of row {row} have a cycle through nodes {nodes}")
        self.side, self.row, self.nodes = side, row, nodes


@dataclass(frozen=True)
class RankedGrades:
    """The truth grades of the compared items of a batch of rows, in the system's order.

    ``grades[offsets[r]:offsets[r + 1]]`` is row r. ``valid`` is False where rec or truth is NULL.
    """

    grades: np.ndarray
    offsets: np.ndarray
    valid: np.ndarray

    @property
    def counts(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def row(self) -> np.ndarray:
        return np.repeat(np.arange(len(self.valid)), self.counts)

    @property
    def position(self) -> np.ndarray:
        """0-based position of each item in its row."""
        return np.arange(len(self.grades)) - np.repeat(self.offsets[:-1], self.counts)

    def row_sum(self, values: np.ndarray) -> np.ndarray:
        return np.bincount(self.row, weights=values, minlength=len(self.valid))



# --- Arrow in ------------------------------------------------------------------------------------


def _valid(values: pa.Array) -> np.ndarray:
    return values.is_valid().to_numpy(zero_copy_only=False)


@dataclass(frozen=True)
class _Part:
    """One list argument's ids: the flat child array and each row's range in it."""

    values: pa.Array
    offsets: np.ndarray  # int64, one more than rows

    @staticmethod
    def of(lists: pa.Array, values: pa.Array) -> _Part:
        """``values`` is the flat child of ``lists`` (a list or map array, possibly sliced)."""
        return _Part(values, lists.offsets.to_numpy().astype(np.int64))


def _one_kind(function: str, parts: list[_Part]) -> list[_Part]:
    """The parts with ids of one type: integers of different widths become one integer type (as
    ``duckrank.matching`` does for rec and truth); other mixes are an error."""
    types = [p.values.type for p in parts]
    if all(t == types[0] for t in types):
        return parts
    if all(pa.types.is_integer(t) for t in types):
        wide = pa.uint64() if pa.uint64() in types else pa.int64()
        return [_Part(p.values.cast(wide), p.offsets) for p in parts]
    raise TypeError(
        f"{function}: item ids must be of one kind (one type, or integers of any width); got "
        + ", ".join(dict.fromkeys(str(t) for t in types))
    )


def _as_text(parts: list[_Part]) -> list[_Part]:
    """Ids of different kinds compared by their text form (as the graded metrics match a MAP
    truth); integers of different widths stay integers."""
    types = {p.values.type for p in parts}
    if len(types) == 1 or all(pa.types.is_integer(t) for t in types):
        return parts
    return [_Part(p.values.cast(pa.string()), p.offsets) for p in parts]


@dataclass(frozen=True)
class _CodedIds:
    """Every row's id list as integer codes: equal ids share a code within a batch, -1 is NULL.
    A row's list is its parts one after the other (see ``_coded_rows``)."""

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


def _coded_rows(parts: list[_Part], valid: np.ndarray) -> tuple[_CodedIds, list[np.ndarray]]:
    """The ids of each valid row, part after part, coded by one dictionary encoding of the
    batch; and each part's per-row length (0 on rows that are not valid)."""
    lengths = [np.where(valid, np.diff(p.offsets), 0) for p in parts]
    used = [p.values.slice(p.offsets[0], p.offsets[-1] - p.offsets[0]) for p in parts]
    encoded = pa.chunked_array(used, type=used[0].type).dictionary_encode().combine_chunks()
    flat = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    # Where each part's ids of each row start among ``flat`` (the parts' ids one after another);
    # gathering those ranges row by row, part by part, lays the rows out.
    chunk_starts = np.cumsum([0] + [len(u) for u in used[:-1]])
    sources = [c + p.offsets[:-1] - p.offsets[0] for c, p in zip(chunk_starts, parts, strict=True)]
    row_major = gather_ranges(np.stack(sources, axis=1).ravel(), np.stack(lengths, axis=1).ravel())
    codes = flat[row_major]
    row_length = np.sum(lengths, axis=0, dtype=np.int64)
    return _CodedIds(codes, np.cumsum(row_length) - row_length, encoded.dictionary), lengths


def _first_seen(keys: np.ndarray) -> tuple[np.ndarray, pa.Array]:
    """Dense codes of ``keys`` numbered in order of first appearance, and the distinct keys in
    that order (Arrow's hash-based dictionary encoding: no sort)."""
    encoded = pa.array(keys, type=pa.int64()).dictionary_encode()
    return encoded.indices.to_numpy().astype(np.int64), encoded.dictionary


def _code_in(keys: np.ndarray, dictionary: pa.Array) -> np.ndarray:
    """The code of each key in ``dictionary`` (from ``_first_seen``), -1 where absent."""
    found = pc.index_in(pa.array(keys, type=pa.int64()), value_set=dictionary)
    return pc.fill_null(found, -1).to_numpy(zero_copy_only=False).astype(np.int64)


def pairs_type_error(function: str, argument: str, type_name: object) -> ValueError:
    """The error for a preference argument that is not a list of two-field structs."""
    return ValueError(
        f"{function}: {argument} must be a list of two-field structs (preferred item, other "
        f"item); got {type_name}"
    )


def _preference_parts(function: str, argument: str, lists: pa.Array) -> tuple[_Part, _Part]:
    """(preferred items, other items) of a list of two-field structs; a NULL struct has two
    NULL items."""
    is_list = pa.types.is_list(lists.type) or pa.types.is_large_list(lists.type)
    value_type = lists.type.value_type if is_list else None
    if not (pa.types.is_struct(value_type) and value_type.num_fields == 2):
        raise pairs_type_error(function, argument, lists.type)
    return (
        _Part.of(lists, pc.struct_field(lists.values, [0])),
        _Part.of(lists, pc.struct_field(lists.values, [1])),
    )


# --- numbering items -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Items:
    """The distinct non-NULL ids of one part of every row, numbered 0, 1, ... across the batch
    in row-major order of first appearance, so each row's items are consecutive and in the order
    the row lists them."""

    dictionary: pa.Array  # the (row, id) keys, by item number
    row: np.ndarray  # per item
    code: np.ndarray  # per item: its id's code in the batch's _CodedIds
    first: np.ndarray  # per row: number of its first item
    counts: np.ndarray  # per row: number of its items

    def find(self, row: np.ndarray, code: np.ndarray, span: int) -> np.ndarray:
        """The item number of each (row, id code), -1 where the row has no such item."""
        return _code_in(row * span + code, self.dictionary)

    def names(self, ids: _CodedIds, row: int, local: list[int]) -> list[str]:
        return [ids.name(int(c)) for c in self.code[self.first[row] + np.array(local)]]


def _row_starts(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return (np.cumsum(counts) - counts).astype(np.int64), counts


def _items(coded: _CodedIds, begin: np.ndarray, length: np.ndarray) -> _Items:
    row, at = coded.part(begin, length)
    code = coded.codes[at]
    named = code >= 0
    row, code = row[named], code[named]
    item, dictionary = _first_seen(row * coded.span + code)
    first_time = item > np.r_[-1, np.maximum.accumulate(item)[:-1]]  # numbers grow by one
    counts = np.bincount(row[first_time], minlength=len(length))
    return _Items(dictionary, row[first_time], code[first_time], *_row_starts(counts))


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


# --- the matching functions ----------------------------------------------------------------------


@dataclass(frozen=True)
class MatchedPreferences:
    """The EDRC kernel's input for a batch (``rows``), and the ids behind its per-row node
    numbers, to name the items of a cycle the kernel finds."""

    rows: PreferenceRows
    ids: _CodedIds
    nodes: _Items

    def item_names(self, row: int, nodes: list[int]) -> list[str]:
        """The ids of ``nodes`` (node numbers of ``row``) as an error message shows them:
        strings quoted, other ids as their text."""
        return self.nodes.names(self.ids, row, nodes)


def match_preferences(
    rec: pa.Array | pa.ChunkedArray, truth: pa.Array | pa.ChunkedArray,
    function: str = "match_preferences",
) -> MatchedPreferences:
    """edrc(rec, truth): nodes are the items of V (the items of a truth preference between two
    ranked items), numbered per row in rec's order, so a lower node is preferred by the system.

    A truth preference of a ranked item for itself raises ValueError naming ``function`` and
    the item; preferences about items rec does not hold are ignored (not checked)."""
    rec, truth = combined(rec), combined(truth)
    better, worse = _preference_parts(function, "truth", truth)
    parts = _one_kind(function, [_Part.of(rec, rec.values), better, worse])
    valid = _valid(rec) & _valid(truth)
    coded, (n_rec, n_truth, _) = _coded_rows(parts, valid)
    ranked = _items(coded, np.zeros(len(valid), dtype=np.int64), n_rec)

    row, better_code, worse_code = _pairs(coded, n_rec, n_truth)
    better_item = ranked.find(row, better_code, coded.span)
    worse_item = ranked.find(row, worse_code, coded.span)
    considered = (better_item >= 0) & (worse_item >= 0)
    _self_preference(
        function, "truth", coded, better_code, considered & (better_item == worse_item)
    )
    row, better_item, worse_item = row[considered], better_item[considered], worse_item[considered]

    in_v = np.zeros(len(ranked.row), dtype=bool)
    in_v[better_item] = in_v[worse_item] = True
    node_of_item = np.cumsum(in_v) - 1
    nodes = _Items(
        ranked.dictionary, ranked.row[in_v], ranked.code[in_v],
        *_row_starts(np.bincount(ranked.row[in_v], minlength=len(valid))),
    )
    edges = Edges(
        row, node_of_item[better_item] - nodes.first[row],
        node_of_item[worse_item] - nodes.first[row],
    )
    return MatchedPreferences(PreferenceRows(nodes.counts, edges, None, valid), coded, nodes)


def match_system_preferences(
    system: pa.Array | pa.ChunkedArray, truth: pa.Array | pa.ChunkedArray,
    function: str = "match_system_preferences",
) -> MatchedPreferences:
    """edrc_preferences(system, truth): nodes are the items of the system's preferences, per
    row in order of first appearance (preferred items first). A self-preference in system, or
    in truth between two of the system's items, raises ValueError naming ``function``."""
    system, truth = combined(system), combined(truth)
    parts = _one_kind(function, [
        *_preference_parts(function, "system", system),
        *_preference_parts(function, "truth", truth),
    ])
    valid = _valid(system) & _valid(truth)
    coded, (n_system, _, n_truth, _) = _coded_rows(parts, valid)
    span = coded.span
    start = np.zeros(len(valid), dtype=np.int64)
    nodes = _items(coded, start, 2 * n_system)

    def local(row: np.ndarray, code: np.ndarray) -> np.ndarray:
        item = nodes.find(row, code, span)
        return np.where(item >= 0, item - nodes.first[row], -1)

    s_row, s_better, s_worse = _pairs(coded, start, n_system)
    _self_preference(function, "system", coded, s_better, s_better == s_worse)
    system_edges = Edges(s_row, local(s_row, s_better), local(s_row, s_worse))
    t_row, t_better, t_worse = _pairs(coded, 2 * n_system, n_truth)
    better, worse = local(t_row, t_better), local(t_row, t_worse)
    considered = (better >= 0) & (worse >= 0)
    _self_preference(function, "truth", coded, t_better, considered & (t_better == t_worse))
    truth_edges = Edges(t_row[considered], better[considered], worse[considered])
    rows = PreferenceRows(nodes.counts, truth_edges, system_edges, valid)
    return MatchedPreferences(rows, coded, nodes)


def run_preference_kernel(
    function: str, kernel: Callable[..., np.ndarray], matched: MatchedPreferences,
    **options: object,
) -> np.ndarray:
    """``kernel(matched.rows, **options)``, its errors naming ``function``, and a cycle naming its
    items: ``edrc: truth preferences have a cycle: 'x' > 'y' > 'x'``."""
    try:
        return kernel(matched.rows, **options)
    except PreferenceCycleError as cycle:
        names = matched.item_names(cycle.row, cycle.nodes)
        raise ValueError(
            f"{function}: {cycle.side} preferences have a cycle: " + " > ".join([*names, names[0]])
        ) from None
    except ValueError as error:
        raise ValueError(f"{function}: {error}") from None


def match_ranked_grades(
    rec: pa.Array | pa.ChunkedArray, truth: pa.Array | pa.ChunkedArray,
    function: str = "match_ranked_grades",
) -> RankedGrades:
    """spearman & co: the truth grades of the items of rec that truth (a MapArray id -> grade)
    grades, at their first occurrence, in rec's order. A NULL, NaN or infinite grade in a row
    whose rec and truth are not NULL raises ValueError naming ``function`` and the item."""
    rec, truth = combined(rec), combined(truth)
    if not pa.types.is_map(truth.type):
        raise TypeError(f"{function}: truth must be a MAP of item -> grade, got {truth.type}")
    parts = _as_text([_Part.of(rec, rec.values), _Part.of(truth, truth.keys)])
    parts = _one_kind(function, parts)
    valid = _valid(rec) & _valid(truth)
    coded, (n_rec, n_truth) = _coded_rows(parts, valid)

    grade_offsets = parts[1].offsets
    flat_grades = pc.fill_null(truth.items.cast(pa.float64()), np.nan).to_numpy(
        zero_copy_only=False
    )
    truth_grade = flat_grades[gather_ranges(grade_offsets[:-1], n_truth)]
    truth_row, key_at = coded.part(n_rec, n_truth)
    bad = np.flatnonzero(~np.isfinite(truth_grade))
    if bad.size:
        grade = truth_grade[bad[0]]
        raise ValueError(
            f"{function}: the grade of item {coded.name(int(coded.codes[key_at[bad[0]]]))} in "
            f"truth must be a finite number, got {'NULL or NaN' if np.isnan(grade) else grade}"
        )

    ranked = _items(coded, np.zeros(len(valid), dtype=np.int64), n_rec)
    item = ranked.find(truth_row, coded.codes[key_at], coded.span)
    item_grade = np.full(len(ranked.row), np.nan)
    item_grade[item[item >= 0]] = truth_grade[item >= 0]
    compared = ~np.isnan(item_grade)  # rec items the truth grades, in rec order
    counts = np.bincount(ranked.row[compared], minlength=len(valid))
    return RankedGrades(item_grade[compared], np.r_[0, np.cumsum(counts)].astype(np.int64), valid)
