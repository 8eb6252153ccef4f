"""The weighted sum's grid reads every system's normalised scores from one ``fuse_wsum`` call
(``optimise._pivot``): the same numbers, bit for bit, as one call per system with one-hot
weights (``optimise._one_hot_pivot``, the path the Borda normalisation keeps), and the same
errors for bad rows."""

from __future__ import annotations

import pytest

import duckrank
from duckrank.fusion import NORMALISATIONS
from duckrank.reports.fusion import optimise
from duckrank.reports.fusion.inputs import drop, long_runs

from .conftest import random_runs


@pytest.mark.parametrize("norm", [n.name for n in NORMALISATIONS if not n.adds_candidates])
def test_one_fuse_gives_the_one_hot_scores(norm) -> None:
    con = duckrank.connect()
    table = random_runs(11, 4, queries=8)
    long = long_runs(con, table, system_column="system", query_column="query",
                     item_column="item", score_column="score")
    try:
        systems = sorted(long.systems)
        columns = ", ".join(f"v{i}" for i in range(len(systems)))
        one_hot = con.execute(
            f"SELECT query, item, {columns} FROM ({optimise._one_hot_pivot(long, systems, norm)}) "
            "ORDER BY query, item").fetchall()
        pivot = con.execute(
            f"SELECT query, item, {columns} FROM ({optimise._pivot(con, long, systems, norm)}) "
            "ORDER BY query, item").fetchall()
    finally:
        drop(con, long)
    assert len(pivot) > 0
    assert [tuple(map(repr, r)) for r in pivot] == [tuple(map(repr, r)) for r in one_hot]


def test_a_null_query_is_refused() -> None:
    import pyarrow as pa

    table = random_runs(3, 2)
    table = table.set_column(1, "query", pa.array(
        [None if i == 0 else q for i, q in enumerate(table.column("query").to_pylist())]))
    qrels = pa.table({"query": ["q1"], "item": ["d01"], "grade": [1]})
    with pytest.raises(Exception, match="NULL system, query or item"):
        optimise.optimize_fusion(table, qrels, "wsum", "ndcg@10", step=0.5,
                                 system_column="system")
