"""The matching step: turn each row's (rec, truth, k) into the positions of its hits.

Conventions shared by every binary metric (written once, here):

* K = min(k, len(rec)); k omitted (or ``'all'``) means k = len(rec).
* A hit is an element of the top K that is in truth and has not appeared earlier in rec: a
  duplicate recommendation is a miss, so no metric leaves [0, 1].
* truth is a set: n counts its distinct non-NULL items. NULL elements of rec keep their position
  and are never hits; NULL elements of truth are ignored.

The same step exists twice: as SQL (native list functions, used by the DuckDB macros) and as numpy
over whole Arrow batches (used by Spark and by ``duckrank.evaluate`` on Arrow data).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


# --- SQL -------------------------------------------------------------------------------------------
# ``k`` below is already the validated BIGINT cut-off (see CUTOFF_SQL).

def _top_k_len(rec: str, k: str) -> str:
    return f"least({k}, len({rec}))"


def hit_positions_sql(rec: str, truth: str, k: str) -> str:
    """Sorted 1-based positions of the hits of ``rec`` within its top K, as a BIGINT[].

    Two native forms, chosen per row: scanning the top K of rec against truth costs about
    K * |truth| lambda steps; locating each truth item in rec costs about |truth| * len(rec)
    native comparisons and wins when K is a large share of rec (measured in
    benchmarks/RESULTS.md).
    """
    top = _top_k_len(rec, k)
    rec_side = (
        f"list_filter(range(1, {top} + 1), lambda i: "
        f"list_contains({truth}, {rec}[i]) AND list_position({rec}, {rec}[i]) = i)"
    )
    truth_side = (
        f"list_sort(list_filter(list_transform(list_distinct({truth}), "
        f"lambda t: list_position({rec}, t)), lambda p: p <= {top}))"
    )
    return f"(CASE WHEN {top} * 4 <= len({rec}) THEN {rec_side} ELSE {truth_side} END)"


def relevant_count_sql(truth: str) -> str:
    return f"list_unique({truth})::BIGINT"


def cutoff_sql(function: str, rec: str, k: str) -> str:
    """The validated cut-off as BIGINT: NULL for a NULL k, len(rec) for ``'all'``, an error naming
    the function (``function`` is a SQL expression) and the value for anything else that is not a
    positive integer."""
    as_double = f"try_cast({k} AS DOUBLE)"
    return (
        f"(CASE WHEN {k} IS NULL THEN NULL "
        f"WHEN {k}::VARCHAR = 'all' THEN len({rec}) "
        f"WHEN {as_double} IS NULL OR {as_double} < 1 OR {as_double} <> floor({as_double}) "
        f"THEN error({function} || ': k must be a positive integer or ''all'', got ' || {k}::VARCHAR) "
        f"ELSE try_cast({k} AS BIGINT) END)"
    )


# --- numpy -----------------------------------------------------------------------------------------

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


def match_hits(
    rec: pa.Array | pa.ChunkedArray,
    truth: pa.Array | pa.ChunkedArray,
    k: np.ndarray | int | None = None,
) -> Hits:
    """Vectorised matching of a whole batch (no per-row Python)."""
    rec, truth = _unify_ids(_as_list_array(rec), _as_list_array(truth))
    rows = len(rec)
    rec_len = pc.fill_null(pc.list_value_length(rec), 0).to_numpy().astype(np.int64)
    valid = ~(rec.is_null().to_numpy(zero_copy_only=False) | truth.is_null().to_numpy(
        zero_copy_only=False))
    if k is None:
        cut = rec_len.copy()
    else:
        cut = np.broadcast_to(np.asarray(k, dtype=np.float64), (rows,)).copy()
        valid &= ~np.isnan(cut)
        cut = np.where(np.isnan(cut), 0, cut).astype(np.int64)
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
