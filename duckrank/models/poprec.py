"""PopRec, the naive baseline of the xCLiMF paper (Shi et al., "xCLiMF: Optimizing Expected
Reciprocal Rank for Data with Multiple Levels of Relevance", RecSys 2013, section 3.2): every user
gets the items ranked by "the number of times of being rated" in the training data."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from duckrank.models import inputs


def fit(items: np.ndarray) -> pa.Table:
    """(item, score): each distinct item of the training rows (one row per rating) and its count
    of ratings, most rated first (ties by item id)."""
    ids = inputs.ids("poprec.fit", "items", items)
    inputs.same_length("poprec.fit", items=ids)
    distinct, counts = np.unique(ids, return_counts=True)
    order = np.lexsort((np.arange(len(distinct)), -counts))  # distinct is sorted: ties by id
    kind = pa.int64() if distinct.dtype.kind == "i" else pa.string()
    return pa.table({"item": pa.array(distinct[order], type=kind),
                     "score": pa.array(counts[order], type=pa.int64())})
