"""The matching step over whole Arrow batches with numpy (no per-row Python): ``Hits`` and
``Grades``, the matched representations the metric kernels read, and the functions that make them.

Used where there is no DuckDB (Spark) and as an independent check of the SQL in the tests; the
conventions are those of ``duckrank.matching``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from duckrank.lazy import LazyModule

np = LazyModule("numpy")
pa = LazyModule("pyarrow")
pc = LazyModule("pyarrow.compute")

# What the match functions take: a column of lists (or of maps) as DuckDB and Spark hand it to a
# UDF, and the cut-offs, one per row, one for all rows, or None (each row's whole rec).
# (Quoted: they are for the annotations, and this module's import does not import numpy and
# pyarrow, issue 32.)
Column: TypeAlias = "pa.Array | pa.ChunkedArray"
Cutoffs: TypeAlias = "np.ndarray | int | None"

# --- numpy ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Hits:
    """Hit positions of a batch of rows, flattened.

    ``positions[offsets[r]:offsets[r + 1]]`` are row r's hit positions (1-based, ascending).
    ``K``, ``k`` and ``n`` are per-row int64 arrays; ``valid`` is False where rec, truth or k is
    NULL (those rows' metrics are NULL).
    """

    positions: np.ndarray
    offsets: np.ndarray
    K: np.ndarray
    k: np.ndarray
    n: np.ndarray
    valid: np.ndarray

    @property
    def counts(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def row_of_hit(self) -> np.ndarray:
        return np.repeat(np.arange(len(self.K)), self.counts)

    @property
    def rank_of_hit(self) -> np.ndarray:
        """1-based rank of each hit among its row's hits."""
        return np.arange(len(self.positions)) - np.repeat(self.offsets[:-1], self.counts) + 1

    def row_sum(self, values: np.ndarray) -> np.ndarray:
        return np.bincount(self.row_of_hit, weights=values, minlength=len(self.K))


def _as_list_array(values: Column) -> pa.ListArray:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_large_list(values.type):
        values = values.cast(pa.list_(values.type.value_type))
    return values


def _unify_ids(rec: pa.ListArray, truth: pa.ListArray) -> tuple[pa.ListArray, pa.ListArray]:
    rec_type, truth_type = rec.type.value_type, truth.type.value_type
    if rec_type == truth_type:
        return rec, truth
    if pa.types.is_integer(rec_type) and pa.types.is_integer(truth_type):
        unsigned_64 = pa.uint64() in (rec_type, truth_type)
        wide = pa.list_(pa.uint64() if unsigned_64 else pa.int64())
        return rec.cast(wide), truth.cast(wide)
    raise TypeError(
        f"rec items are {rec_type} but truth items are {truth_type}: ids must be of one kind"
    )


def _lengths_and_cutoffs(
    rec: pa.ListArray, truth: pa.ListArray, k: Cutoffs
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row: len(rec) (0 for NULL), the cut-off (len(rec) when k is omitted, 0 where k is NULL)
    and whether the row is valid (rec, truth and k all non-NULL)."""
    rec_len = pc.fill_null(pc.list_value_length(rec), 0).to_numpy().astype(np.int64)
    valid = ~(rec.is_null().to_numpy(zero_copy_only=False) | truth.is_null().to_numpy(
        zero_copy_only=False))
    if k is None:
        return rec_len, rec_len.copy(), valid
    cut = np.broadcast_to(np.asarray(k, dtype=np.float64), (len(rec),)).copy()
    valid &= ~np.isnan(cut)
    return rec_len, np.where(np.isnan(cut), 0, cut).astype(np.int64), valid


def match_hits(rec: Column, truth: Column, k: Cutoffs = None) -> Hits:
    """Vectorised matching of a whole batch (no per-row Python)."""
    rec, truth = _unify_ids(_as_list_array(rec), _as_list_array(truth))
    rows = len(rec)
    rec_len, cut, valid = _lengths_and_cutoffs(rec, truth, k)
    top = np.minimum(cut, rec_len)

    rec_off = rec.offsets.to_numpy().astype(np.int64)
    truth_off = truth.offsets.to_numpy().astype(np.int64)
    # Work only on the top K of each row.
    starts = rec_off[:-1] - rec_off[0]
    ranks_all = np.arange(rec_off[-1] - rec_off[0]) - np.repeat(starts, rec_len) + 1
    in_top = ranks_all <= np.repeat(top, rec_len)
    rec_values = rec.values.slice(rec_off[0], rec_off[-1] - rec_off[0])
    truth_values = truth.values.slice(truth_off[0], truth_off[-1] - truth_off[0])
    truth_len = np.diff(truth_off)

    codes = pa.chunked_array([rec_values, truth_values]).dictionary_encode().combine_chunks()
    dictionary_size = len(codes.dictionary) + 1
    idx = pc.fill_null(codes.indices, -1).to_numpy().astype(np.int64)
    rec_codes, truth_codes = idx[: len(rec_values)], idx[len(rec_values):]

    rec_row = np.repeat(np.arange(rows), rec_len)
    truth_row = np.repeat(np.arange(rows), truth_len)
    truth_keys = np.unique((truth_row * dictionary_size + truth_codes)[truth_codes >= 0])
    n = np.bincount(truth_keys // dictionary_size, minlength=rows).astype(np.int64)

    rec_keys = rec_row * dictionary_size + rec_codes
    first = np.zeros(len(rec_keys), dtype=bool)
    first[np.unique(rec_keys, return_index=True)[1]] = True
    hit = in_top & first & (rec_codes >= 0) & np.isin(rec_keys, truth_keys)
    hit &= np.repeat(valid, rec_len)

    positions = ranks_all[hit]
    counts = np.bincount(rec_row[hit], minlength=rows)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return Hits(positions=positions, offsets=offsets, K=top, k=cut, n=n, valid=valid)


@dataclass(frozen=True)
class Grades:
    """Graded view of a batch of rows, flattened like ``Hits``.

    ``top[top_offsets[r]:top_offsets[r + 1]]`` are the grades of row r's top K recommended
    items in rec order (K values; 0 for misses, duplicates and NULL elements).
    ``ideal[ideal_offsets[r]:ideal_offsets[r + 1]]`` are the min(k, n) largest positive grades of
    its truth, largest first. ``K``, ``k``, ``n`` (positive grades in truth) and ``valid`` are
    per-row arrays as in ``Hits``.
    """

    top: np.ndarray
    top_offsets: np.ndarray
    ideal: np.ndarray
    ideal_offsets: np.ndarray
    K: np.ndarray
    k: np.ndarray
    n: np.ndarray
    valid: np.ndarray

    @staticmethod
    def ranks(offsets: np.ndarray) -> np.ndarray:
        """1-based rank of each flattened value within its row."""
        counts = np.diff(offsets)
        return np.arange(offsets[-1]) - np.repeat(offsets[:-1], counts) + 1

    def row_sum(self, values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        counts = np.diff(offsets)
        rows = np.repeat(np.arange(len(self.K)), counts)
        return np.bincount(rows, weights=values, minlength=len(self.K))


def _offsets(counts: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def _ideal(grades: np.ndarray, rows: np.ndarray, k: np.ndarray, row_count: int) -> tuple:
    """Each row's min(k, n) largest positive grades, largest first, flattened; and n."""
    positive = grades > 0
    grades, rows = grades[positive], rows[positive]
    order = np.lexsort((-grades, rows))
    grades, rows = grades[order], rows[order]
    n = np.bincount(rows, minlength=row_count).astype(np.int64)
    keep = Grades.ranks(_offsets(n)) <= k[rows]
    counts = np.bincount(rows[keep], minlength=row_count)
    return grades[keep], _offsets(counts), n


def _grades_from_hits(hits: Hits, grade_of_hit: np.ndarray, ideal: tuple) -> Grades:
    top_offsets = _offsets(hits.K)
    top = np.zeros(top_offsets[-1])
    top[np.repeat(top_offsets[:-1], hits.counts) + hits.positions - 1] = grade_of_hit
    ideal_grades, ideal_offsets, n = ideal
    return Grades(top, top_offsets, ideal_grades, ideal_offsets, hits.K, hits.k, n, hits.valid)


def _list_of(offsets: np.ndarray, values: pa.Array, nulls: np.ndarray) -> pa.ListArray:
    start = int(offsets[0])
    return pa.ListArray.from_arrays(
        pa.array(offsets - start, pa.int32()),
        values.slice(start, int(offsets[-1]) - start),
        mask=pa.array(nulls),
    )


def _same_kind(rec: pa.ListArray, keys: pa.ListArray) -> tuple[pa.ListArray, pa.ListArray]:
    """Ids of different kinds are compared by their text form, as the SQL macros do."""
    rec_type, key_type = rec.type.value_type, keys.type.value_type
    if rec_type == key_type:
        return rec, keys
    if pa.types.is_integer(rec_type) and pa.types.is_integer(key_type):
        return _unify_ids(rec, keys)  # one integer type, so the grade lookup below can mix them
    return rec.cast(pa.list_(pa.string())), keys.cast(pa.list_(pa.string()))


def _shown(grade: float | None) -> str:
    return "NULL" if grade is None else str(grade)


def _map_parts(truth: pa.MapArray) -> tuple:
    """A MapArray's keys as a ListArray, its grades as float64 (NaN for NULL), the row of each
    entry and the grades' Arrow column (checked by ``_check_grades`` once the valid rows are
    known)."""
    offsets = truth.offsets.to_numpy().astype(np.int64)
    nulls = truth.is_null().to_numpy(zero_copy_only=False)
    keys = _list_of(offsets, truth.keys, nulls)
    entry_row = np.repeat(np.arange(len(truth)), np.diff(offsets))
    start, stop = int(offsets[0]), int(offsets[-1])
    column = truth.items.slice(start, stop - start).cast(pa.float64())
    grades = pc.fill_null(column, np.nan).to_numpy(zero_copy_only=False)
    return keys, grades, entry_row, column


def _check_grades(function: str, keys: pa.ListArray, grades: np.ndarray, column: pa.Array,
                  checked: np.ndarray, negative: bool) -> None:
    good = np.isfinite(grades) & (True if negative else grades >= 0)
    bad = checked & ~good
    if bad.any():
        first = int(np.argmax(bad))
        domain = "finite number" if negative else "finite number >= 0"
        raise ValueError(
            f"{function}: the grade of item {keys.values[first].as_py()} in truth must be a "
            f"{domain}, got {_shown(column[first].as_py())}"
        )


def _grade_of_hits(function: str, rec: pa.ListArray, keys: pa.ListArray, hits: Hits,
                   grades: np.ndarray, entry_row: np.ndarray) -> np.ndarray:
    """The truth grade of each hit: hit ids and truth keys encoded together, each hit's
    (row, id) binary-searched among the sorted (row, key) pairs of truth."""
    rec_off = rec.offsets.to_numpy().astype(np.int64)
    hit_rows = hits.row_of_hit
    hit_ids = rec.values.take(pa.array(rec_off[hit_rows] + hits.positions - 1))
    codes = pa.chunked_array([hit_ids, keys.values]).dictionary_encode().combine_chunks()
    size = len(codes.dictionary) + 1
    code = codes.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    hit_keys = hit_rows * size + code[: len(hit_ids)]
    truth_keys = entry_row * size + code[len(hit_ids):]
    order = np.argsort(truth_keys, kind="stable")
    sorted_keys = truth_keys[order]
    duplicate = sorted_keys[1:] == sorted_keys[:-1]
    if duplicate.any():
        item = keys.values[int(order[1:][duplicate][0])].as_py()
        raise ValueError(f"{function}: item {item} appears twice in a truth map")
    return grades[order[np.searchsorted(sorted_keys, hit_keys)]]


def _match_map(function: str, rec: Column, truth: Column, k: Cutoffs,
               negative: bool) -> tuple[Hits, np.ndarray, np.ndarray, np.ndarray]:
    """rec matched against the keys of a MapArray truth, ids compared as ``_same_kind`` says,
    and the grades of the rows that count checked (negative ones allowed where ``negative``):
    the hits, truth's grades and the row of each, and the grade of each hit."""
    keys, grades, entry_row, column = _map_parts(combined(truth))
    rec, keys = _same_kind(_as_list_array(rec), keys)
    hits = match_hits(rec, keys, k)
    _check_grades(function, keys, grades, column, hits.valid[entry_row], negative)
    return hits, grades, entry_row, _grade_of_hits(function, rec, keys, hits, grades, entry_row)


def match_grades(rec: Column, truth: Column, k: Cutoffs = None,
                 function: str = "match_grades") -> Grades:
    """Vectorised graded matching of a whole batch: ``truth`` is a MapArray (id -> grade) or a
    ListArray (grade 1 for each item). A NULL, NaN, infinite or negative grade in a row whose
    rec, truth and k are not NULL raises ValueError naming ``function`` and the item."""
    truth = combined(truth)
    if not pa.types.is_map(truth.type):
        hits = match_hits(rec, truth, k)
        ones = np.ones(len(hits.positions))
        rows = np.repeat(np.arange(len(hits.K)), hits.n)
        return _grades_from_hits(hits, ones, _ideal(np.ones(len(rows)), rows, hits.k, len(hits.K)))
    hits, grades, entry_row, grade_of_hit = _match_map(function, rec, truth, k, negative=False)
    return _grades_from_hits(hits, grade_of_hit, _ideal(grades, entry_row, hits.k, len(hits.K)))


def relevant_grades(grades: np.ndarray, min_grade: float | None) -> np.ndarray:
    """trec_eval's relevance of a grade (``duckrank.matching.sql.relevant_grade_sql``): grade
    >= 0 and >= min_grade, or > 0 when min_grade is None. NaN (not in truth) is not relevant."""
    with np.errstate(invalid="ignore"):
        above = grades > 0 if min_grade is None else grades >= min_grade
        return (grades >= 0) & above


def match_graded_hits(rec: Column, truth: Column, k: Cutoffs = None,
                      min_grade: float | None = None,
                      function: str = "match_graded_hits") -> Hits:
    """The binary match of rec against the relevant items of a MapArray truth
    (``relevant_grades``), ids compared as the graded matching compares them. Negative grades
    are allowed (never relevant); NULL, NaN and infinite ones raise ValueError."""
    truth = combined(truth)
    keys, grades, entry_row, column = _map_parts(truth)
    rec = _as_list_array(rec)
    _, cut, valid = _lengths_and_cutoffs(rec, truth, k)
    _check_grades(function, keys, grades, column, valid[entry_row], negative=True)
    relevant = relevant_grades(grades, min_grade)
    counts = np.bincount(entry_row[relevant], minlength=len(truth))
    kept = pa.ListArray.from_arrays(
        pa.array(_offsets(counts), pa.int32()),
        keys.values.filter(pa.array(relevant)),
        mask=truth.is_null(),
    )
    rec, kept = _same_kind(rec, kept)
    return match_hits(rec, kept, k)


@dataclass(frozen=True)
class Judged:
    """trec_eval's view of a batch of rows against MAP truth, flattened like ``Grades``.

    ``top[top_offsets[r]:top_offsets[r + 1]]``: the grades of row r's top K in rec order, NaN
    for an item not in truth, a repeat or a NULL item; ``relevant`` flags its relevant ones
    (``relevant_grades``). ``ideal``/``ideal_offsets``: truth's positive grades, largest first
    (all of them, not cut at k). ``n``: relevant items of truth; ``nn``: its judged non-relevant
    ones (grade >= 0, not relevant). ``K``, ``k``, ``valid`` as in ``Hits``.
    """

    top: np.ndarray
    relevant: np.ndarray
    top_offsets: np.ndarray
    ideal: np.ndarray
    ideal_offsets: np.ndarray
    K: np.ndarray
    k: np.ndarray
    n: np.ndarray
    nn: np.ndarray
    valid: np.ndarray

    @property
    def rows(self) -> np.ndarray:
        """The row of each element of ``top``."""
        return np.repeat(np.arange(len(self.K)), np.diff(self.top_offsets))

    def row_sum(self, values: np.ndarray) -> np.ndarray:
        return np.bincount(self.rows, weights=values, minlength=len(self.K))

    def running_count(self, flags: np.ndarray) -> np.ndarray:
        """For each element of ``top``: how many flagged elements of its row rank above it."""
        counts = flags.astype(np.int64)
        return row_cumsum(counts, self.top_offsets) - counts


def match_judged(rec: Column, truth: Column, k: Cutoffs = None,
                 min_grade: float | None = None, function: str = "match_judged") -> Judged:
    """The ``Judged`` view of a batch (judged truth as ``duckrank.matching.sql`` reads it, what the
    judged macros of ``duckrank.render.macros`` match in SQL, over Arrow): every item of truth is
    matched, and each hit reads its grade."""
    hits, grades, entry_row, grade_of_hit = _match_map(function, rec, truth, k, negative=True)
    rows = len(hits.K)
    top_offsets = _offsets(np.where(hits.valid, hits.K, 0))
    top = np.full(top_offsets[-1], np.nan)
    hit_rows = hits.row_of_hit
    keep = hits.valid[hit_rows]
    top[(top_offsets[:-1][hit_rows] + hits.positions - 1)[keep]] = grade_of_hit[keep]
    relevant = relevant_grades(grades, min_grade)
    judged_non = (grades >= 0) & ~relevant
    positive = grades > 0
    order = np.lexsort((-grades[positive], entry_row[positive]))
    ideal = grades[positive][order]
    return Judged(
        top=top, relevant=relevant_grades(top, min_grade), top_offsets=top_offsets,
        ideal=ideal, ideal_offsets=_offsets(np.bincount(entry_row[positive], minlength=rows)),
        K=np.where(hits.valid, hits.K, 0), k=hits.k,
        n=np.bincount(entry_row[relevant], minlength=rows).astype(np.int64),
        nn=np.bincount(entry_row[judged_non], minlength=rows).astype(np.int64),
        valid=hits.valid,
    )


def match_grade_lists(rec: Column, truth: Column, k: Cutoffs = None,
                      function: str = "match_grade_lists") -> Grades:
    """Grades given directly (Hivemall's graded form): ``rec`` lists the true grade of each
    recommended item in rec order, as numbers or as structs whose first field is the grade;
    ``truth`` lists the grades of all relevant items, in any order. Ids play no part, so
    there are no duplicates to drop. A NULL, NaN, infinite or negative grade raises ValueError."""
    rec, truth = _as_list_array(rec), _as_list_array(truth)
    if pa.types.is_struct(rec.type.value_type):
        first_field = pc.struct_field(rec.values, [0])
        rec = pa.ListArray.from_arrays(rec.offsets, first_field, mask=rec.is_null())
    rows = len(rec)
    rec_len, cut, valid = _lengths_and_cutoffs(rec, truth, k)
    top_len = np.where(valid, np.minimum(cut, rec_len), 0)

    def flat(lists: pa.ListArray, lengths: np.ndarray, side: str) -> tuple:
        """The first ``lengths`` grades of each list, flattened, with their rows."""
        offsets = lists.offsets.to_numpy().astype(np.int64)
        column = lists.values.slice(offsets[0], offsets[-1] - offsets[0]).cast(pa.float64())
        values = pc.fill_null(column, np.nan).to_numpy(zero_copy_only=False)
        row = np.repeat(np.arange(rows), np.diff(offsets))
        position = Grades.ranks(_offsets(np.diff(offsets)))
        keep = position <= lengths[row]
        bad = keep & ~(np.isfinite(values) & (values >= 0))
        if bad.any():
            first = int(np.argmax(bad))
            raise ValueError(
                f"{function}: grade {position[first]} of {side} must be a finite number >= 0, "
                f"got {_shown(column[first].as_py())}"
            )
        return values[keep], row[keep]

    top, _ = flat(rec, top_len, "rec")
    truth_len = pc.fill_null(pc.list_value_length(truth), 0).to_numpy().astype(np.int64)
    truth_grades, truth_row = flat(truth, np.where(valid, truth_len, 0), "truth")
    ideal_grades, ideal_offsets, n = _ideal(truth_grades, truth_row, cut, rows)
    return Grades(top, _offsets(top_len), ideal_grades, ideal_offsets, top_len, cut, n, valid)


def row_cumsum(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The running sum of ``values`` within each row (rows given by ``offsets``), added in row
    order from each row's start, as SQL's list_sum over a prefix adds them (a global running sum
    less the row's start would round differently), in a matrix of rows side by side."""
    counts = np.diff(offsets)
    if len(values) == 0:
        return values.copy()
    rows = np.repeat(np.arange(len(counts)), counts)
    columns = np.arange(len(values)) - np.repeat(offsets[:-1] - offsets[0], counts)
    matrix = np.zeros((len(counts), int(counts.max())), dtype=values.dtype)
    matrix[rows, columns] = values
    return np.cumsum(matrix, axis=1)[rows, columns]


def gather_ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenation of range(starts[i], starts[i] + counts[i]) for every i."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    shift = np.repeat(starts - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
    return shift + np.arange(total)


def combined(values: Column) -> pa.Array:
    """One contiguous Arrow array: DuckDB and Spark hand UDFs chunked columns."""
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
