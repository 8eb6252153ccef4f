"""Deterministic benchmark data, written to Parquet under benchmarks/data/ (gitignored).

The workload of the performance study (shared notes, performance.md): each user has a ``rec``
list of ``rec_len`` distinct ids in ranked order and a ``truth`` set of 1 to 30 distinct ids
(mean 15.5), about 40% of them taken from random positions of ``rec``. VARCHAR files hold the
same ids as ``'item_<id>'``. Every chunk of users is drawn from its own seeded generator, so a
file is the same on every machine and any size can be written in bounded memory.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

DATA_DIR = Path(__file__).resolve().parent / "data"
ROW_GROUP = 122_880  # DuckDB's row-group size: one row group per DuckDB thread task
SEED = 20240609
MAX_TRUTH = 30
HIT_SHARE = 0.4
ID_SPAN = 10_000  # ids of rec position j lie in [j * ID_SPAN, (j + 1) * ID_SPAN): distinct per row


def _chunk(first_user: int, users: int, rec_len: int) -> pa.Table:
    rng = np.random.default_rng([SEED, first_user, rec_len])
    rec = rng.integers(0, ID_SPAN, (users, rec_len)) + np.arange(rec_len) * ID_SPAN
    rec = rng.permuted(rec, axis=1)
    slots = min(MAX_TRUTH, rec_len)
    hit_positions = np.argsort(rng.random((users, rec_len)), axis=1)[:, :slots]
    from_rec = np.take_along_axis(rec, hit_positions, axis=1)
    # Misses come from an id range rec never uses, one sub-range per slot: distinct per row.
    misses = rec_len * ID_SPAN + np.arange(MAX_TRUTH) * ID_SPAN + rng.integers(
        0, ID_SPAN, (users, MAX_TRUTH))
    is_hit = rng.random((users, MAX_TRUTH)) < HIT_SHARE
    is_hit[:, slots:] = False
    padded = np.concatenate([from_rec, np.zeros((users, MAX_TRUTH - slots), np.int64)], axis=1)
    truth_matrix = np.where(is_hit, padded, misses)
    truth_len = rng.integers(1, MAX_TRUTH + 1, users)
    keep = np.arange(MAX_TRUTH) < truth_len[:, None]
    truth_offsets = np.concatenate([[0], np.cumsum(truth_len)]).astype(np.int32)
    rec_offsets = (np.arange(users + 1) * rec_len).astype(np.int32)
    return pa.table({
        "uid": pa.array(np.arange(first_user, first_user + users, dtype=np.int64)),
        "rec": pa.ListArray.from_arrays(pa.array(rec_offsets), pa.array(rec.ravel())),
        "truth": pa.ListArray.from_arrays(pa.array(truth_offsets),
                                          pa.array(truth_matrix[keep])),
    })


def _as_varchar(table: pa.Table) -> pa.Table:
    def names(column: pa.ChunkedArray) -> pa.ListArray:
        lists = column.combine_chunks()
        values = pc.binary_join_element_wise("item_", pc.cast(lists.values, pa.string()), "")
        return pa.ListArray.from_arrays(lists.offsets, values)

    return table.set_column(1, "rec", names(table["rec"])).set_column(
        2, "truth", names(table["truth"]))


def dataset(users: int, ids: str = "bigint", rec_len: int = 100) -> Path:
    """The Parquet file for this workload, written on first use."""
    if ids not in ("bigint", "varchar"):
        raise ValueError(f"ids must be 'bigint' or 'varchar', got {ids!r}")
    path = DATA_DIR / f"users{users}_rec{rec_len}_{ids}.parquet"
    if path.exists():
        return path
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    writer = None
    try:
        for first in range(0, users, ROW_GROUP):
            table = _chunk(first, min(ROW_GROUP, users - first), rec_len)
            if ids == "varchar":
                table = _as_varchar(table)
            if writer is None:
                writer = pq.ParquetWriter(partial, table.schema)
            writer.write_table(table, row_group_size=ROW_GROUP)
    finally:
        if writer is not None:
            writer.close()
    partial.rename(path)
    return path
