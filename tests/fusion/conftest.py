"""Shared inputs of the fusion tests: seeded random runs with tied scores, items some systems did
not return and queries some systems have no list for, as a long DuckDB table and as ranx Runs."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import duckrank


def random_runs(seed: int, systems: int, queries: int = 5, pool: int = 14,
                longest: int = 12, distinct: bool = False) -> pa.Table:
    """(system, query, item, score) rows: per system and query 0 to ``longest`` items of a pool of
    ``pool`` (so some systems miss items others return, and some have no list), scores on a
    coarse grid (many ties within a list and between systems; with ``distinct``, none within a
    list)."""
    rng = np.random.default_rng(seed)
    rows = {"system": [], "query": [], "item": [], "score": []}
    for s in range(systems):
        for q in range(queries):
            size = int(rng.integers(0, longest + 1)) if q else int(rng.integers(1, longest + 1))
            grid = (rng.choice(4 * longest, size, replace=False) if distinct
                    else rng.integers(0, 8, size))
            for item, step in zip(rng.choice(pool, size, replace=False), grid, strict=True):
                rows["system"].append(f"s{s}")
                rows["query"].append(f"q{q}")
                rows["item"].append(f"d{item:02d}")
                rows["score"].append(float(step) / 4 - 0.5)
    return pa.table(rows)


def list_order(rows: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """A system's list in duckrank's order: score descending, ties by item text descending."""
    return sorted(rows, key=lambda r: (-r[1], tuple(-ord(c) for c in r[0])))


def ranx_runs(table: pa.Table) -> list:
    """One ranx Run per system, every query of the table in each (an empty dict where the system
    has no list), items inserted in duckrank's order. ranx sorts them again (numpy's argsort,
    not stable); on lists this short and already in order it keeps tied items in insertion
    order, so both rank them alike: checked here for every list, so that no comparison rests on
    a tie order ranx did not keep."""
    ranx = pytest.importorskip("ranx")
    data = table.to_pylist()
    queries = sorted({r["query"] for r in data})
    runs = []
    for system in sorted({r["system"] for r in data}):
        lists = {q: [] for q in queries}
        for r in data:
            if r["system"] == system:
                lists[r["query"]].append((r["item"], r["score"]))
        run = ranx.Run({q: dict(list_order(rows)) for q, rows in lists.items()}, name=system)
        for query, rows in lists.items():
            assert [str(d) for d in run.run[query]] == [d for d, _ in list_order(rows)]
        runs.append(run)
    return runs


@pytest.fixture(scope="module")
def fusion_con() -> duckdb.DuckDBPyConnection:
    con = duckrank.connect()
    yield con
    con.close()
