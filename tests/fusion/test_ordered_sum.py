"""The fused sums are added in the order of the systems' names, whatever the order the rows
reach the aggregate (``duckrank.render.fusion.ordered_sums``): the same bits on every run and
thread count, and the bits of a left-to-right sum in that order."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa

import duckrank

# Terms whose float sum depends on the order they are added in: 1e16 + 1 + (-1e16) is 0 in the
# systems' order below, 2 in another.
SYSTEMS = ["s0", "s1", "s2", "s3", "s4", "s5", "s6"]


def _runs(seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    rows = {"system": [], "query": [], "item": [], "score": []}
    for q in range(30):
        for s in SYSTEMS:
            for item in rng.choice(40, 25, replace=False):
                rows["system"].append(s)
                rows["query"].append(f"q{q}")
                rows["item"].append(f"d{item:02d}")
                rows["score"].append(float(rng.choice([1e16, -1e16, 1.0, 0.1, 1 / 3, -2.5])))
    return pa.table(rows)


def _left_to_right(table: pa.Table, weights: dict[str, float]) -> dict[tuple[str, str], float]:
    terms: dict[tuple[str, str], list[tuple[str, float]]] = {}
    for r in table.to_pylist():
        terms.setdefault((r["query"], r["item"]), []).append(
            (r["system"], weights[r["system"]] * r["score"]))
    sums = {}
    for key, values in terms.items():
        total = 0.0
        for _, value in sorted(values):
            total += value
        sums[key] = total
    return sums


def test_sums_in_the_systems_order_on_every_thread_count() -> None:
    table = _runs(7)
    weights = {s: w for s, w in zip(SYSTEMS, [1.0, 0.3, 1e-3, 7.0, 1 / 7, 1.0, 0.9],
                                    strict=True)}
    expected = _left_to_right(table, weights)
    seen = []
    for threads in (1, 2, 4):
        con = duckrank.connect()
        con.execute(f"SET threads = {threads}")
        con.register("runs_arrow", table)
        # Shuffled rows: the aggregate meets the terms in another order than the systems'.
        con.execute("CREATE TABLE runs AS SELECT * FROM runs_arrow ORDER BY hash(item, query)")
        rows = con.execute(
            "SELECT query, item, score, rank FROM fuse_wsum('runs', "
            f"{_map(weights)}, norm := 'none') ORDER BY query, rank").fetchall()
        con.close()
        assert {(q, i): s for q, i, s, _ in rows} == expected
        seen.append(rows)
    assert seen[0] == seen[1] == seen[2]


def _map(weights: dict[str, float]) -> str:
    return "MAP {" + ", ".join(f"'{k}': {v!r}::DOUBLE" for k, v in weights.items()) + "}"


def test_the_sum_is_the_ordered_aggregate() -> None:
    """``list_sum(min_by(x, system_number, 128))`` against DuckDB's own ``sum(x ORDER BY ...)``,
    with NULL terms (left out by both) and a signed zero."""
    con = duckdb.connect()
    got = con.execute("""
        SELECT g, sum(v ORDER BY s) IS NOT DISTINCT FROM list_sum(min_by(v, s, 128))
        FROM (VALUES (1, NULL::DOUBLE, 0), (1, 2.0, 1), (2, NULL, 0), (3, -0.0, 0),
                     (4, 1e16, 2), (4, 1.0, 0), (4, -1e16, 1), (5, 0.1, 3), (5, 0.2, 1),
                     (5, 0.3, 2), (5, 1e-17, 0)) t(g, v, s)
        GROUP BY g ORDER BY g""").fetchall()
    assert got == [(g, True) for g in range(1, 6)]
