"""PopRec (duckrank.models.poprec): the xCLiMF paper's baseline (Shi et al., RecSys 2013, section
3.2), items ranked by their number of ratings, scored and ranked in DuckDB."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pytest

from duckrank.models import poprec


def test_counts_ratings_most_rated_first_ties_by_id() -> None:
    # By hand: item 3 is rated 3 times, items 1 and 9 twice each, item 5 once.
    table = poprec.fit(np.array([9, 3, 1, 3, 5, 9, 3, 1]))
    assert table.schema == pa.schema([("item", pa.int64()), ("score", pa.int64())])
    assert table.to_pydict() == {"item": [3, 1, 9, 5], "score": [3, 2, 2, 1]}


def test_string_ids_kept_as_given() -> None:
    table = poprec.fit(pa.chunked_array([["b", "a"], ["b"]]))
    assert table.to_pydict() == {"item": ["b", "a"], "score": [2, 1]}


def test_ids_from_duckdb_fetchnumpy_and_numpy_strings(con) -> None:
    columns = con.execute("SELECT * FROM (VALUES ('b', 1), ('a', 1), ('b', NULL)) t(s, i)"
                          ).fetchnumpy()
    assert poprec.fit(columns["s"]).to_pydict() == {"item": ["b", "a"], "score": [2, 1]}
    with pytest.raises(ValueError, match=r"^poprec.fit: items has a null at position 2 \(1 "):
        poprec.fit(columns["i"])  # a masked array: its filler value is not an id
    strings = np.array(["y", "x", "y"], dtype=np.dtypes.StringDType())
    assert poprec.fit(strings).to_pydict() == {"item": ["y", "x"], "score": [2, 1]}


def test_top_n_in_duckdb_with_unseen_candidates_last(con) -> None:
    con.register("popularity", poprec.fit(np.array([9, 3, 1, 3, 5, 9, 3, 1])))
    con.register("candidates", pa.table({"user": [1, 1, 1, 2, 2], "item": [5, 7, 9, 3, 1]}))
    rows = con.execute("""
        SELECT c.user, to_ordered_list(c.item, coalesce(p.score, 0), '-k 2')
        FROM candidates c LEFT JOIN popularity p USING (item) GROUP BY c.user ORDER BY c.user
    """).fetchall()
    # Item 7 was never rated (score 0); user 2's candidates 3 (3 ratings) and 1 (2 ratings).
    assert rows == [(1, [9, 5]), (2, [3, 1])]


@pytest.mark.parametrize(("items", "message"), [
    (np.array([], dtype=np.int64), "poprec.fit: empty input (items have no rows)"),
    (np.array([1.0, 2.0]), "poprec.fit: items must hold int64 or string ids, got dtype float64"),
    (pa.array(["a", None]), "poprec.fit: items has a null at position 1 (1 nulls)"),
    # the None is named, not the valid id before it (the former message: items[0] is 1)
    (np.array([1, 2, None], dtype=object),
     "poprec.fit: items must hold int64 or string ids; items[2] is None (1 values are neither)"),
    (np.array(["a", "b", 3], dtype=object),
     "poprec.fit: items mixes integer and string ids: items[0] is 'a', items[2] is 3"),
])
def test_bad_input_is_an_error(items, message) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        poprec.fit(items)
