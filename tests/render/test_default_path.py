"""The peer-convention options (docs/conventions.md) cost nothing on the default path.

DuckDB folds a CASE on a constant option outside a lambda, never inside one: there it tests the
option for every row (10-20% of ndcg@10 and map@10 at 300,000 rows:
benchmarks/bench_option_cost.py).
A record whose SQL chooses a form by an option (``Metric.choice``) is therefore read, through the
native step, by its ``default_sql`` when the option is at its default, outside the per-row
lambda. The plan shows which form a query runs: the option's literal stays in the plan only
where the CASE does.
"""

from __future__ import annotations

import json
import math

import duckdb
import pytest

import duckrank
from duckrank.matching import native
from duckrank.metrics import METRICS

# The MAP-truth overloads of the binary metrics (inputs "graded_hits") keep the CASE: their
# match is bound inside a lambda over the row, so no test outside every lambda can choose.
CHOSEN = [m for m in METRICS if m.choice is not None and m.inputs in ("hits", "grades")]

# The rows, as tables: a query over constants is folded whole, lambdas included.
# Expected values, by hand. LIST truth: rec [1, 2, 3], truth [2, 5], k 10: one hit, at 2.
# precision 1 / K = 1/3 (K = min(10, 3)); recall and AP: (1/2) / |truth| = 1/2 and 1/4;
# ndcg (1 / log2 3) / (1 + 1 / log2 3), the ideal being min(k, |truth|) = 2 hits.
# MAP truth: rec ['a', 'x', 'b'], truth {a: 1, b: 2}, exponential gain: DCG 1 / log2 2 +
# 3 / log2 4 = 2.5, ideal 3 / 1 + 1 / log2 3 (tests/matching/test_native_grades.py).
ROWS = {
    "list_rows": "SELECT [1, 2, 3]::BIGINT[] AS rec, [2, 5]::BIGINT[] AS truth",
    "map_rows": "SELECT ['a', 'x', 'b'] AS rec, MAP {'a': 1.0, 'b': 2.0} AS truth",
}
EXPECTED = {
    ("precision_at", False): 1 / 3,
    ("recall_at", False): 1 / 2,
    ("average_precision", False): 1 / 4,
    ("ndcg", False): (1 / math.log2(3)) / (1 + 1 / math.log2(3)),
    ("ndcg", True): 2.5 / (3 + 1 / math.log2(3)),
    # trec_eval's interpolated precision (its rounding option chooses the recall cut-off): the
    # one hit, at rank 2, gives precision 1/2 at recall 1/2, so 1/2 at every level up to 1/2
    # (the default level, 0, included) and 0 above: 11-point AP = 6 * (1/2) / 11.
    ("iprec_at_recall", False): 1 / 2,
    ("eleven_point_ap", False): 3 / 11,
    # partial_auc and pap need `negatives` (the number of non-relevant items compared): left
    # out, as here, their value is NULL by definition (the records' undefined text).
    ("partial_auc", False): None,
    ("pap", False): None,
}


@pytest.fixture(scope="module")
def fast() -> duckdb.DuckDBPyConnection:
    con = duckrank.connect()
    assert native.status(con).active
    for name, rows in ROWS.items():
        con.execute(f"CREATE TABLE {name} AS {rows}")
    yield con
    con.close()


@pytest.mark.parametrize("metric", CHOSEN, ids=lambda m: f"{m.name}-{m.truth_type or 'LIST'}")
def test_the_default_runs_without_the_choice(fast, metric) -> None:
    option = metric.choice.option
    table = "map_rows" if metric.truth_type else "list_rows"
    other = [c for c in option.choices if c != option.default][-1]  # a non-default choice
    calls = {  # option given as -> whether the CASE on it is left in the plan
        "": False,
        f", {option.name} := '{option.default}'": False,
        f", {option.name} := '{other}'": True,
    }
    for given, chooses in calls.items():
        query = f"SELECT {metric.name}(rec, truth, 10{given}) FROM {table}"
        plan = fast.execute(f"EXPLAIN (FORMAT json) {query}").fetchone()[1]
        projections = " ".join(_projections(json.loads(plan)))
        assert "duckrank_match" in projections or "duckrank_graded" in projections
        assert f"CAST('{option.default}' AS VARCHAR)" not in projections, (given, projections)
        assert (f"CAST('{other}' AS VARCHAR)" in projections) == chooses, (given, projections)
        if not chooses:
            value = fast.execute(query).fetchone()[0]
            expected = EXPECTED[metric.name, bool(metric.truth_type)]
            assert value == (None if expected is None else pytest.approx(expected, rel=1e-15))


def _projections(nodes: list[dict]) -> list[str]:
    """The projection expressions of a JSON plan's nodes and their children."""
    texts = []
    for node in nodes:
        found = node["extra_info"].get("Projections", [])
        texts += [found] if isinstance(found, str) else found
        texts += _projections(node["children"])
    return texts
