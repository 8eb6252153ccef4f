"""The matching step: turn each row's (rec, truth, k) into the positions of its hits.

Conventions shared by every binary metric (written once, here):

* K = min(k, len(rec)); k omitted (or ``'all'``) means k = len(rec).
* A hit is an element of the top K that is in truth and has not appeared earlier in rec: a
  duplicate recommendation is a miss, so no metric leaves [0, 1].
* truth is a set: n counts its distinct non-NULL items. NULL elements of rec keep their position
  and are never hits; NULL elements of truth are ignored.

The same step exists three times: as SQL (DuckDB's list functions, used by the DuckDB macros), as
C (duckrank/native/match.c, which the macros use instead for most id types when it is loaded),
and as numpy over whole Arrow batches (used by Spark and by ``duckrank.evaluate`` on Arrow data).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# --- SQL ------------------------------------------------------------------------------------------
# Arguments below must be cheap references (columns, or fields of a row bound once by a lambda over
# a one-element list): DuckDB evaluates an expression used inside a lambda again for every element.
# ``k`` is already the validated BIGINT cut-off (see ``cutoff_sql``).

def _top_k_len(rec: str, k: str) -> str:
    return f"least({k}, len({rec}))"


def _rec_side_positions(rec: str, truth: str, top: str) -> str:
    """Positions i <= top whose item is in truth and occurs there first (a repeat is a miss).
    The CASE runs the duplicate check for hits only."""
    return (
        f"list_filter(range(1, {top} + 1), lambda i: CASE WHEN list_contains({truth}, {rec}[i]) "
        f"THEN list_position({rec}, {rec}[i]) = i ELSE false END)"
    )


def _truth_side_positions(rec: str, truth: str) -> str:
    """For each element of truth: NULL when it is NULL or repeats an earlier element, else its
    first position in rec, 0 when absent. Its non-NULL count is n; its values in 1..K are the hits
    (list_position finds an item's first occurrence, so a repeated recommendation never hits)."""
    return (
        f"list_transform({truth}, lambda t, j: CASE WHEN t IS NULL "
        f"OR list_position({truth}, t) <> j THEN NULL "
        f"ELSE coalesce(list_position({rec}, t), 0)::BIGINT END)"
    )


def _rec_side_is_cheaper(rec: str, truth: str, top: str) -> str:
    """Per row cost model fitted on this machine (benchmarks/RESULTS.md, ns per row): the rec side
    costs about (150 + 19 T) + K (9 + 1.05 T), the truth side about T (50 + 0.47 len(rec)), with
    T = len(truth). This is that comparison, rounded."""
    return f"{top} * (10 + len({truth})) * 2 <= len({truth}) * (60 + len({rec}))"


def _merged_match(rec: str, truth: str, k: str, top: str, count_truth: bool) -> str:
    """The match by one sort: truth items tagged 0 and the top K tagged with their positions,
    sorted by (id, tag). A recommendation is a hit when the entry before it is a truth entry with
    the same id (so only an item's first position can hit); n counts the first truth entry of
    each id. O((K + T) log(K + T)), for rows where both other forms are quadratic."""
    tagged = (
        f"list_sort(list_transform(list_concat({truth}, {rec}[1:{top}]), lambda x, i: "
        f"{{'id': x, 'pos': CASE WHEN i <= len({truth}) THEN 0 ELSE i - len({truth}) END}}))"
    )
    hits = (
        "list_transform(list_filter(range(2, len(s) + 1), lambda i: s[i].pos > 0 "
        "AND s[i - 1].pos = 0 AND s[i - 1].id = s[i].id), lambda i: s[i].pos)"
    )
    count = (
        ", n := len(list_filter(range(1, len(s) + 1), lambda i: s[i].pos = 0 "
        "AND s[i].id IS NOT NULL AND (i = 1 OR s[i - 1].id IS DISTINCT FROM s[i].id)))"
        if count_truth
        else ""
    )
    return (
        f"list_transform([{tagged}], lambda s: "
        f"struct_pack(K := {top}, pos := {hits}{count}, cut := {k}))[1]"
    )


def _merge_is_cheaper(rec: str, truth: str, top: str) -> str:
    """The sorted merge costs about 350 (K + T) ns per row here, against the cost model of
    ``_rec_side_is_cheaper`` for the other two forms, each of which also pays about 0.09 T^2 for
    counting distinct truth items (in hundredths of ns below). Both inequalities need T above
    about 330, so a cheap first test keeps the model off the usual short-truth rows."""
    t = f"len({truth})"
    merge = f"35000 * ({top} + {t})"
    return (
        f"({t} > 256 AND {merge} < {t} * (5000 + 47 * len({rec}) + 9 * {t}) "
        f"AND {merge} < 15000 + 1900 * {t} + {top} * (900 + 105 * {t}) + 9 * {t} * {t})"
    )


def matched_sql(rec: str, truth: str, k: str, *, count_truth: bool = True) -> str:
    """One row's match as STRUCT(K BIGINT, pos BIGINT[], n BIGINT, cut BIGINT): K = min(k,
    len(rec)), the 1-based positions of the hits in the top K (in no particular order), n, the
    number of distinct non-NULL truth items (left out when ``count_truth`` is false: the rec side
    would pay an extra pass over truth for it), and cut, k itself. The metrics read k from the
    struct: DuckDB does not fold the validation of a constant k (``cutoff_sql``) inside a lambda,
    and reading it there cost ndcg@10 20%.

    Three SQL forms over DuckDB's list functions, chosen per row by a cost model: scanning the top K
    of rec against truth costs a lambda step per recommended item; locating each truth item in rec
    costs a lambda step per truth item plus a native scan of rec (n comes free with it); for long
    lists on both sides, where those two are quadratic, one sort of both lists (``_merged_match``).
    """
    top = _top_k_len(rec, k)
    count = f", n := {relevant_count_sql(truth)}" if count_truth else ""
    rec_side = (
        f"struct_pack(K := {top}, pos := {_rec_side_positions(rec, truth, top)}{count}, cut := {k})"
    )
    # K is bound next to the located positions so that a per-row k is not re-validated for
    # every truth item inside the filter's lambda.
    count = ", n := list_count(s.located)::BIGINT" if count_truth else ""
    truth_side = (
        f"list_transform([struct_pack(K := {top}, cut := {k}, located := "
        f"{_truth_side_positions(rec, truth)})], lambda s: struct_pack(K := s.K, "
        f"pos := list_filter(s.located, lambda p: p BETWEEN 1 AND s.K){count}, cut := s.cut))[1]"
    )
    merged = _merged_match(rec, truth, k, top, count_truth)
    return (
        f"(CASE WHEN {_merge_is_cheaper(rec, truth, top)} THEN {merged} "
        f"WHEN {_rec_side_is_cheaper(rec, truth, top)} THEN {rec_side} "
        f"ELSE {truth_side} END)"
    )


# Id types the native matching step (duckrank/native/match.c) compares exactly as SQL does:
# integers of any widths by value, and each of the others against its own type. Any other pair
# takes the SQL form above. (TIME WITH TIME ZONE, DECIMAL, INTERVAL and nested ids are left to SQL:
# their equality is not their bytes, or they are rare as ids.)
NATIVE_SIGNED_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT")
NATIVE_UNSIGNED_TYPES = ("UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT")
NATIVE_SAME_TYPES = (
    "UUID", "VARCHAR", "BLOB", "DOUBLE", "FLOAT", "BOOLEAN", "DATE", "TIMESTAMP",
    "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS", "TIMESTAMP WITH TIME ZONE",
)


def _list_types(names: tuple[str, ...]) -> str:
    return ", ".join(f"'{name}[]'" for name in names)


def native_handles_sql(rec: str, truth: str) -> str:
    """True when the native step takes this pair of list types. DuckDB folds ``typeof`` of a
    column to a constant, so the choice is made once per query, not per row. UHUGEINT pairs only
    with unsigned types: its values above 2^127 share their bits with negative signed values."""
    integers = _list_types(NATIVE_SIGNED_TYPES + NATIVE_UNSIGNED_TYPES)
    unsigned = _list_types(NATIVE_UNSIGNED_TYPES + ("UHUGEINT",))
    same = _list_types(NATIVE_SAME_TYPES)
    return (
        f"((typeof({rec}) IN ({integers}) AND typeof({truth}) IN ({integers})) "
        f"OR (typeof({rec}) IN ({unsigned}) AND typeof({truth}) IN ({unsigned})) "
        f"OR (typeof({rec}) = typeof({truth}) AND typeof({rec}) IN ({same})))"
    )


def native_matched_sql(function: str, rec: str, truth: str, k: str) -> str:
    """``matched_sql``'s value (always with n; positions ascending) from the native step, for the
    pairs ``native_handles_sql`` accepts. ``function`` names the caller in its error messages."""
    return f"duckrank_match({function}, {rec}, {truth}, {k})"


def native_grades_sql(rec: str, truth: str, k: str) -> str:
    """``graded_top_sql``'s value from the native step when rec holds VARCHAR or integer ids
    (compared by their text, as ``x::VARCHAR`` gives it), else ``graded_top_sql`` itself."""
    ids = _list_types(("VARCHAR",) + NATIVE_SIGNED_TYPES[:-1] + NATIVE_UNSIGNED_TYPES)
    return (
        f"CASE WHEN typeof({rec}) IN ({ids}) THEN duckrank_grades({rec}, {truth}, {k}) "
        f"ELSE {graded_top_sql(rec, truth, k)} END"
    )


def hit_positions_sql(rec: str, truth: str, k: str) -> str:
    """The 1-based positions of the hits of ``rec`` within its top K (in no particular order), as
    a BIGINT[]."""
    return f"struct_extract({matched_sql(rec, truth, k, count_truth=False)}, 'pos')"


def relevant_count_sql(truth: str) -> str:
    """n: the number of distinct non-NULL items of truth. A first-occurrence test per item is
    3x cheaper than list_unique's per-row hash table for the short lists truth usually is."""
    return (
        f"len(list_filter({truth}, lambda t, j: t IS NOT NULL AND list_position({truth}, t) = j))"
    )


def cutoff_sql(function: str, rec: str, k: str) -> str:
    """The validated cut-off as BIGINT: NULL for a NULL k, len(rec) for ``'all'``, an error naming
    the function (``function`` is a SQL expression) and the value for anything else that is not a
    positive integer (NaN and infinities included). A k too large for BIGINT (a HUGEINT, 1e30)
    is beyond every list: it is capped rather than turned into NULL."""
    as_double = f"try_cast({k} AS DOUBLE)"
    return (
        f"(CASE WHEN {k} IS NULL THEN NULL "
        f"WHEN {k}::VARCHAR = 'all' THEN len({rec}) "
        f"WHEN {as_double} IS NULL OR NOT isfinite({as_double}) OR {as_double} < 1 "
        f"OR {as_double} <> floor({as_double}) "
        f"THEN error({function} || ': k must be a positive integer or ''all'', got ' "
        f"|| {k}::VARCHAR) "
        f"ELSE coalesce(try_cast({k} AS BIGINT), least({as_double}, 9e18)::BIGINT) END)"
    )


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


def _as_list_array(values: pa.Array | pa.ChunkedArray) -> pa.ListArray:
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
    rec: pa.ListArray, truth: pa.ListArray, k: np.ndarray | int | None
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


def match_hits(
    rec: pa.Array | pa.ChunkedArray,
    truth: pa.Array | pa.ChunkedArray,
    k: np.ndarray | int | None = None,
) -> Hits:
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


# --- graded relevance ----------------------------------------------------------------------------
# The graded metrics (duckrank.metrics.graded) read each row as *grades*: the grade of each of the
# top K recommended items in rec order, and the ideal grades. A graded truth is a
# MAP(VARCHAR, DOUBLE) from item id to grade (a finite number >= 0; 0 = not relevant); rec items
# are matched by their text form (``rec[i]::VARCHAR``), since one MAP(VARCHAR, DOUBLE) macro
# overload accepts maps of every key type. A truth LIST means grade 1 for each of its items. The
# hit rules are the binary ones above: a duplicate recommendation or a NULL element has grade 0.

def graded_top_sql(rec: str, truth: str, k: str) -> str:
    """Grades of the top K of ``rec`` in rec order (DOUBLE[], 0 for items without a grade) from a
    MAP(VARCHAR, DOUBLE) truth. The map lookup comes first so that only items in truth pay for
    the duplicate check (about 2x faster at K = 100); a NULL item looks up NULL."""
    grade = f"{truth}[x::VARCHAR]"
    return (
        f"list_transform(list_slice({rec}, 1, {_top_k_len(rec, k)}), lambda x, i: "
        f"CASE WHEN {grade} IS NULL THEN 0.0 WHEN list_position({rec}, x) = i THEN {grade} "
        "ELSE 0.0 END)"
    )


def binary_top_sql(positions: str, top_k_len: str) -> str:
    """Grades of the top K when truth is a LIST: 1.0 at the hit ``positions``, else 0.0."""
    return (
        f"list_transform(range(1, {top_k_len} + 1), "
        f"lambda i: list_contains({positions}, i)::DOUBLE)"
    )


def ideal_grades_sql(grades: str, k: str) -> str:
    """The min(k, n) largest positive grades of a DOUBLE[], largest first."""
    return f"list_slice(list_reverse_sort(list_filter({grades}, lambda g: g > 0)), 1, {k})"


def positive_count_sql(grades: str) -> str:
    """n for graded truth: the number of positive grades."""
    return f"len(list_filter({grades}, lambda g: g > 0))::BIGINT"


def bad_grade_sql(function: str, truth: str) -> tuple[str, str]:
    """(condition, error) for a MAP truth holding a grade that is NULL, NaN, infinite or negative;
    the error names the function (a SQL expression), the first such item and its grade."""
    bad = (
        f"list_filter(map_entries({truth}), "
        "lambda e: e.value IS NULL OR NOT isfinite(e.value) OR e.value < 0)"
    )
    message = (
        f"{function} || ': the grade of item ' || ({bad})[1].key || ' in truth must be a finite "
        f"number >= 0, got ' || coalesce(({bad})[1].value::VARCHAR, 'NULL')"
    )
    return f"len({bad}) > 0", f"error({message})"


def first_field_grades_sql(rec: str, k: str) -> str:
    """Grades of the top K of a rec given as structs whose first field is the grade (Hivemall's
    graded form), as DOUBLE[]."""
    return (
        f"list_transform(list_slice({rec}, 1, {_top_k_len(rec, k)}), "
        "lambda s: struct_extract_at(s, 1)::DOUBLE)"
    )


def bad_list_grade_sql(function: str, grades: str, side: str) -> tuple[str, str]:
    """(condition, error) for a DOUBLE[] of grades holding a NULL, NaN, infinite or negative
    one; the error names the function (a SQL expression), ``side`` and the position."""
    flags = f"list_transform({grades}, lambda g: g IS NULL OR NOT isfinite(g) OR g < 0)"
    position = f"list_position({flags}, true)"
    message = (
        f"{function} || ': grade ' || {position} || ' of {side} must be a finite number >= 0, "
        f"got ' || coalesce(({grades})[{position}]::VARCHAR, 'NULL')"
    )
    return f"list_bool_or({flags})", f"error({message})"


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


def match_grades(
    rec: pa.Array | pa.ChunkedArray,
    truth: pa.Array | pa.ChunkedArray,
    k: np.ndarray | int | None = None,
    function: str = "match_grades",
) -> Grades:
    """Vectorised graded matching of a whole batch: ``truth`` is a MapArray (id -> grade) or a
    ListArray (grade 1 for each item). A NULL, NaN, infinite or negative grade in a row whose
    rec, truth and k are not NULL raises ValueError naming ``function`` and the item."""
    if isinstance(truth, pa.ChunkedArray):
        truth = truth.combine_chunks()
    if not pa.types.is_map(truth.type):
        hits = match_hits(rec, truth, k)
        ones = np.ones(len(hits.positions))
        rows = np.repeat(np.arange(len(hits.K)), hits.n)
        return _grades_from_hits(hits, ones, _ideal(np.ones(len(rows)), rows, hits.k, len(hits.K)))

    offsets = truth.offsets.to_numpy().astype(np.int64)
    nulls = truth.is_null().to_numpy(zero_copy_only=False)
    keys = _list_of(offsets, truth.keys, nulls)
    rec, keys = _same_kind(_as_list_array(rec), keys)
    hits = match_hits(rec, keys, k)
    rows = len(hits.K)

    entry_row = np.repeat(np.arange(rows), np.diff(offsets))
    start, stop = int(offsets[0]), int(offsets[-1])
    grade_values = truth.items.slice(start, stop - start).cast(pa.float64())
    grades = pc.fill_null(grade_values, np.nan).to_numpy(zero_copy_only=False)
    bad = hits.valid[entry_row] & ~(np.isfinite(grades) & (grades >= 0))
    if bad.any():
        first = int(np.argmax(bad))
        raise ValueError(
            f"{function}: the grade of item {keys.values[first].as_py()} in truth must be a "
            f"finite number >= 0, got {_shown(grade_values[first].as_py())}"
        )

    # Look up the grade of each hit: encode hit ids and truth keys together, then binary-search
    # each hit's (row, id) among the sorted (row, key) pairs of truth.
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
    grade_of_hit = grades[order[np.searchsorted(sorted_keys, hit_keys)]]
    return _grades_from_hits(hits, grade_of_hit, _ideal(grades, entry_row, hits.k, rows))


def match_grade_lists(
    rec: pa.Array | pa.ChunkedArray,
    truth: pa.Array | pa.ChunkedArray,
    k: np.ndarray | int | None = None,
    function: str = "match_grade_lists",
) -> Grades:
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
