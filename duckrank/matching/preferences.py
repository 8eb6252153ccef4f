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

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from duckrank.lazy import LazyModule
from duckrank.matching.arrays import combined, gather_ranges

np = LazyModule("numpy")
pa = LazyModule("pyarrow")
pc = LazyModule("pyarrow.compute")

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
    def of(lists: pa.Array, values: pa.Array, field: int | None = None) -> _Part:
        """``values`` is the flat child of ``lists`` (a list or map array, possibly sliced);
        ``field``, a field of it to take (a struct child). Only the rows' range of the child is
        kept, so that a slice of rows costs its own size."""
        offsets = lists.offsets.to_numpy().astype(np.int64)
        values = values.slice(offsets[0], offsets[-1] - offsets[0])
        if field is not None:
            values = pc.struct_field(values, [field])
        return _Part(values, offsets - offsets[0])


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


# --- numbering ids -------------------------------------------------------------------------------

# Entries of the (row, id) -> position table of one group of rows (int64, 16 MB). Batches whose
# ids are more varied than that fall back to Arrow's hash tables.
_TABLE_ENTRIES = 1 << 21


@dataclass(frozen=True)
class _Codes:
    """Every part's ids as integer codes 0..span-1, equal ids sharing a code across parts; -1 is
    NULL. ``codes[i][j]`` is the code of ``parts[i].values[j]``."""

    codes: list[np.ndarray]
    span: int
    lowest: int | None  # integer ids: code = id - lowest
    dictionary: pa.Array | None  # other ids: code = index in the dictionary

    def name(self, code: int) -> str:
        if self.dictionary is None:
            return str(self.lowest + code)
        value = self.dictionary[code].as_py()
        return repr(value) if isinstance(value, str) else str(value)


def _shifted(values: pa.Array, lowest: int) -> np.ndarray:
    """Integer ids minus ``lowest`` as int64 codes, -1 for NULL."""
    if values.null_count == 0:
        ids = values.to_numpy()
        if ids.dtype == np.uint64:  # lowest may be above the int64 range
            return (ids - np.uint64(lowest)).astype(np.int64)
        return ids.astype(np.int64) - lowest
    codes = _shifted(pc.fill_null(values, pa.scalar(lowest, values.type)), lowest)
    codes[~_valid(values)] = -1
    return codes


def _encode(parts: list[_Part]) -> _Codes:
    """Integer ids spanning a small range are their own codes (minus the smallest; the common
    case of catalogue item numbers, with no hashing); other ids go through one dictionary
    encoding of the batch."""
    value_type = parts[0].values.type
    if pa.types.is_integer(value_type):
        bounds = [pc.min_max(p.values).as_py() for p in parts]
        lows = [b["min"] for b in bounds if b["min"] is not None]
        if not lows:
            return _Codes([np.full(len(p.values), -1) for p in parts], 1, 0, None)
        lowest, highest = min(lows), max(b["max"] for b in bounds if b["max"] is not None)
        if highest - lowest < _TABLE_ENTRIES:
            codes = [_shifted(p.values, lowest) for p in parts]
            return _Codes(codes, highest - lowest + 1, lowest, None)
    encoded = pa.chunked_array([p.values for p in parts], type=value_type)
    encoded = encoded.dictionary_encode().combine_chunks()  # one dictionary for every part
    indices = encoded.indices
    flat = (pc.fill_null(indices, -1) if indices.null_count else indices).to_numpy()
    flat = flat.astype(np.int64)
    bounds = np.cumsum([0] + [len(p.values) for p in parts])
    codes = [flat[begin:end] for begin, end in itertools.pairwise(bounds)]
    return _Codes(codes, max(len(encoded.dictionary), 1), None, encoded.dictionary)


def _elements(part: _Part, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray | slice]:
    """(row, index in ``part.values``) of every id in a valid row, row by row; the index is a
    slice when that is all of them (a view, no copy)."""
    lengths = np.diff(part.offsets)
    if valid.all():
        at = slice(int(part.offsets[0]), int(part.offsets[-1]))
    else:
        lengths = np.where(valid, lengths, 0)
        at = gather_ranges(part.offsets[:-1], lengths)
    return np.repeat(np.arange(len(lengths)), lengths), at


class _Lookup:
    """The named ids of one list per row, in order (``row`` ascending; NULLs dropped), and a
    finder of (row, id code) pairs among them: the index of their first occurrence, or -1.

    Rows are taken in groups whose (row, code) table fits in _TABLE_ENTRIES: a direct-address
    table, filled by one scatter and read by one gather, with no hashing or sorting. Each row
    has one column more than there are codes, never written: code -1 (NULL) reads the column
    before the row's own, i.e. that unwritten one of the previous row (or, for the first row,
    of the last), so it finds -1 without a test.
    """

    def __init__(self, row: np.ndarray, code: np.ndarray, span: int, n_rows: int) -> None:
        named = code >= 0
        if not named.all():
            row, code = row[named], code[named]
        self.row, self.code, self.stride, self.n_rows = row, code, span + 1, n_rows
        self.rows_per_group = min(_TABLE_ENTRIES // self.stride, n_rows)
        self.table: np.ndarray | None = None
        self.filled: tuple[int, np.ndarray] | None = None  # a group's first row and its keys

    def _table(self, first_row: int) -> np.ndarray:
        """The table of the group of rows from first_row (kept until another group is asked
        for: one group serves every lookup of most batches)."""
        if self.table is None:
            self.table = np.full(self.rows_per_group * self.stride, -1, dtype=np.int32)
        if self.filled is not None:
            if self.filled[0] == first_row:
                return self.table
            self.table[self.filled[1]] = -1
        a, b = np.searchsorted(self.row, [first_row, first_row + self.rows_per_group])
        keys = (self.row[a:b] - first_row) * self.stride + self.code[a:b]
        # Written last to first, so each key keeps its first occurrence.
        self.table[keys[::-1]] = np.arange(b - 1, a - 1, -1, dtype=np.int32)
        self.filled = (first_row, keys)
        return self.table

    def first(self) -> np.ndarray:
        """Marks each id's first occurrence in its row."""
        return self.find(self.row, self.code) == np.arange(self.row.size)

    def find(self, row: np.ndarray, code: np.ndarray) -> np.ndarray:
        """``row`` ascending; -1 where ``code`` is -1 or the list lacks the id."""
        if self.row.size == 0 or row.size == 0:
            return np.full(row.size, -1, dtype=np.int64)
        if self.rows_per_group == 0 or self.row.size >= 1 << 31:
            return self._find_hashed(row, code)
        if self.rows_per_group == self.n_rows:
            return self._table(0)[row * self.stride + code].astype(np.int64)
        found = np.empty(row.size, dtype=np.int64)
        starts = np.arange(0, self.n_rows, self.rows_per_group)
        bounds = np.searchsorted(row, np.r_[starts, self.n_rows])
        for first_row, c, d in zip(starts, bounds[:-1], bounds[1:], strict=True):
            if c < d:
                table = self._table(int(first_row))
                found[c:d] = table[(row[c:d] - first_row) * self.stride + code[c:d]]
        return found

    def _find_hashed(self, row: np.ndarray, code: np.ndarray) -> np.ndarray:
        """The same through Arrow's hash tables, for ids too varied for a table."""
        listed = pa.array(self.row * self.stride + self.code).dictionary_encode()
        number = listed.indices.to_numpy().astype(np.int64)
        first_index = np.full(len(listed.dictionary), -1, dtype=np.int64)
        first_index[number[::-1]] = np.arange(number.size - 1, -1, -1)
        found = pc.index_in(pa.array(row * self.stride + code), value_set=listed.dictionary)
        number = pc.fill_null(found, -1).to_numpy(zero_copy_only=False).astype(np.int64)
        return np.where((number >= 0) & (code >= 0), first_index[np.maximum(number, 0)], -1)


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
        _Part.of(lists, lists.values, 0),
        _Part.of(lists, lists.values, 1),
    )


def _self_preference(
    function: str, argument: str, ids: _Codes, codes: np.ndarray, same: np.ndarray
) -> None:
    if same.any():
        raise ValueError(
            f"{function}: {argument} prefers item {ids.name(int(codes[same][0]))} to itself "
            "(a cycle of one item)"
        )


# --- the matching functions ----------------------------------------------------------------------


# Ids matched at once (rec and both sides of the preferences): a batch of 2,048 users with
# 10,000 preferences each holds 40 million, which go through the matching step and the kernel
# in slices of rows of about this many, so that their temporaries stay within a few hundred MB.
_SLICE_IDS = 1 << 21


@dataclass(frozen=True)
class _Matched:
    """The EDRC kernel's input for a slice of rows (``rows``), and the ids behind its per-row
    node numbers, to name the items of a cycle the kernel finds."""

    rows: PreferenceRows
    ids: _Codes
    node_code: np.ndarray  # per node, rows one after another
    node_first: np.ndarray  # per row: its first node

    def item_names(self, row: int, nodes: list[int]) -> list[str]:
        """The ids of ``nodes`` (node numbers of ``row``) as an error message shows them:
        strings quoted, other ids as their text."""
        return [self.ids.name(int(self.node_code[self.node_first[row] + n])) for n in nodes]


def _numbered(
    listed: _Lookup, keep: np.ndarray, n_rows: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Nodes: the elements of ``listed`` marked in ``keep``, numbered per row in list order.
    Returns each element's node within its row (where kept), nodes per row, each row's first
    node and the nodes' id codes."""
    counts = np.bincount(listed.row[keep], minlength=n_rows)
    first = np.cumsum(counts) - counts
    node = np.cumsum(keep) - 1 - first[listed.row]
    return node, counts, first, listed.code[keep]


@dataclass(frozen=True)
class MatchedPreferences:
    """A batch's arguments, matched slice by slice of rows when ``run_preference_kernel`` runs
    (the slices hold about _SLICE_IDS ids each, at least one row)."""

    arguments: tuple[pa.Array, pa.Array]
    match: Callable[[pa.Array, pa.Array, str], _Matched]
    function: str

    def slices(self) -> list[tuple[int, int]]:
        ids = sum(np.diff(a.offsets.to_numpy().astype(np.int64)) * weight
                  for a, weight in zip(self.arguments, self.weights, strict=True))
        slice_of = np.cumsum(ids) // _SLICE_IDS
        bounds = np.r_[0, np.flatnonzero(np.diff(slice_of)) + 1, ids.size]
        return list(itertools.pairwise(bounds.tolist()))

    @property
    def weights(self) -> tuple[int, int]:
        """Ids per element of each argument (a preference has two)."""
        return (1 if self.match is _match_ranked else 2, 2)

    def matched(self, begin: int, end: int) -> _Matched:
        first, second = (a.slice(begin, end - begin) for a in self.arguments)
        return self.match(first, second, self.function)


def match_preferences(
    rec: pa.Array | pa.ChunkedArray, truth: pa.Array | pa.ChunkedArray,
    function: str = "match_preferences",
) -> MatchedPreferences:
    """edrc(rec, truth): nodes are the items of V (the items of a truth preference between two
    ranked items), numbered per row in rec's order, so a lower node is preferred by the system.

    A truth preference of a ranked item for itself raises ValueError naming ``function`` and
    the item; preferences about items rec does not hold are ignored (not checked). The matching
    runs slice by slice in ``run_preference_kernel``; the arguments' types are checked here."""
    rec, truth = combined(rec), combined(truth)
    _one_kind(function, [_Part.of(rec[:0], rec.values),
                         *_preference_parts(function, "truth", truth[:0])])
    return MatchedPreferences((rec, truth), _match_ranked, function)


def _match_ranked(rec: pa.Array, truth: pa.Array, function: str) -> _Matched:
    better, worse = _preference_parts(function, "truth", truth)
    rec_part, better, worse = _one_kind(function, [_Part.of(rec, rec.values), better, worse])
    valid = _valid(rec) & _valid(truth)
    ids = _encode([rec_part, better, worse])
    rec_row, rec_at = _elements(rec_part, valid)
    ranked = _Lookup(rec_row, ids.codes[0][rec_at], ids.span, len(valid))
    row, at = _elements(better, valid)
    better_code, worse_code = ids.codes[1][at], ids.codes[2][at]
    better_at, worse_at = ranked.find(row, better_code), ranked.find(row, worse_code)
    considered = (better_at >= 0) & (worse_at >= 0)
    _self_preference(function, "truth", ids, better_code, considered & (better_at == worse_at))
    row, better_at, worse_at = row[considered], better_at[considered], worse_at[considered]

    in_v = np.zeros(ranked.row.size, dtype=bool)
    in_v[better_at] = in_v[worse_at] = True
    node, counts, first, codes = _numbered(ranked, in_v, len(valid))
    edges = Edges(row, node[better_at], node[worse_at])
    rows = PreferenceRows(counts, edges, None, valid)
    return _Matched(rows, ids, codes, first)


def match_system_preferences(
    system: pa.Array | pa.ChunkedArray, truth: pa.Array | pa.ChunkedArray,
    function: str = "match_system_preferences",
) -> MatchedPreferences:
    """edrc_preferences(system, truth): nodes are the items of the system's preferences, per
    row in order of first appearance (preferred items first). A self-preference in system, or
    in truth between two of the system's items, raises ValueError naming ``function``."""
    system, truth = combined(system), combined(truth)
    _one_kind(function, [*_preference_parts(function, "system", system[:0]),
                         *_preference_parts(function, "truth", truth[:0])])
    return MatchedPreferences((system, truth), _match_system, function)


def _match_system(system: pa.Array, truth: pa.Array, function: str) -> _Matched:
    parts = _one_kind(function, [
        *_preference_parts(function, "system", system),
        *_preference_parts(function, "truth", truth),
    ])
    valid = _valid(system) & _valid(truth)
    ids = _encode(parts)
    s_row, s_at = _elements(parts[0], valid)
    s_better, s_worse = ids.codes[0][s_at], ids.codes[1][s_at]
    named = (s_better >= 0) & (s_worse >= 0)
    s_row, s_better, s_worse = s_row[named], s_better[named], s_worse[named]
    _self_preference(function, "system", ids, s_better, s_better == s_worse)
    # Each row's system items: its preferred items, then the others.
    order = np.argsort(np.r_[s_row, s_row], kind="stable")
    items = _Lookup(np.r_[s_row, s_row][order], np.r_[s_better, s_worse][order], ids.span,
                    len(valid))
    node, counts, first, codes = _numbered(items, items.first(), len(valid))
    system_edges = Edges(s_row, node[items.find(s_row, s_better)],
                         node[items.find(s_row, s_worse)])

    t_row, t_at = _elements(parts[2], valid)
    t_better, t_worse = ids.codes[2][t_at], ids.codes[3][t_at]
    better_at, worse_at = items.find(t_row, t_better), items.find(t_row, t_worse)
    considered = (better_at >= 0) & (worse_at >= 0)
    _self_preference(function, "truth", ids, t_better, considered & (better_at == worse_at))
    truth_edges = Edges(t_row[considered], node[better_at[considered]],
                        node[worse_at[considered]])
    rows = PreferenceRows(counts, truth_edges, system_edges, valid)
    return _Matched(rows, ids, codes, first)


def run_preference_kernel(
    function: str, kernel: Callable[..., np.ndarray], matched: MatchedPreferences,
    **options: object,
) -> np.ndarray:
    """``kernel`` over the matched rows, slice by slice, its errors naming ``function``, and a
    cycle naming its items: ``edrc: truth preferences have a cycle: 'x' > 'y' > 'x'``.
    ``options`` are scalars or one value per row."""
    rows = len(matched.arguments[0])
    values = np.empty(rows)
    for begin, end in matched.slices():
        part = matched.matched(begin, end)  # its errors name the function already
        sliced = {
            name: option[begin:end] if np.ndim(option) == 1 and len(option) == rows else option
            for name, option in options.items()
        }
        try:
            values[begin:end] = kernel(part.rows, **sliced)
        except PreferenceCycleError as cycle:
            names = part.item_names(cycle.row, cycle.nodes)
            raise ValueError(
                f"{function}: {cycle.side} preferences have a cycle: "
                + " > ".join([*names, names[0]])
            ) from None
        except ValueError as error:
            raise ValueError(f"{function}: {error}") from None
    return values


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
    ids = _encode(parts)

    truth_row, key_at = _elements(parts[1], valid)
    key_code = ids.codes[1][key_at]
    items = _Part.of(truth, truth.items).values
    items = items[key_at] if isinstance(key_at, slice) else items.take(pa.array(key_at))
    grade = items.cast(pa.float64())
    grade = pc.fill_null(grade, np.nan).to_numpy(zero_copy_only=False)
    bad = np.flatnonzero(~np.isfinite(grade))
    if bad.size:
        value = grade[bad[0]]
        raise ValueError(
            f"{function}: the grade of item {ids.name(int(key_code[bad[0]]))} in "
            f"truth must be a finite number, got {'NULL or NaN' if np.isnan(value) else value}"
        )

    rec_row, rec_at = _elements(parts[0], valid)
    ranked = _Lookup(rec_row, ids.codes[0][rec_at], ids.span, len(valid))
    item = ranked.find(truth_row, key_code)
    item_grade = np.full(ranked.row.size, np.nan)
    item_grade[item[item >= 0]] = grade[item >= 0]
    compared = ~np.isnan(item_grade)  # rec items the truth grades, in rec order
    counts = np.bincount(ranked.row[compared], minlength=len(valid))
    return RankedGrades(item_grade[compared], np.r_[0, np.cumsum(counts)].astype(np.int64), valid)
