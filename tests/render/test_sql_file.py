"""sql/duckrank.sql: current, loadable into a DuckDB without Python or duckrank, and giving the
same values as the functions ``duckrank.register`` installs (in their SQL form: the native
matching step is compared with the SQL form in test_native.py).

The comparison is generic over the metric records: every record whose macro the file creates and
whose truth can be generated here (a LIST of item ids, or a MAP item -> grade) is checked on
random rows; records of other input kinds (preferences, Hivemall's grade lists) are left to their
own tests. The file in the real DuckDB shell, in each supported DuckDB line, is
test_duckdb_shell.py's.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import duckrank
from duckrank.metrics import METRICS
from duckrank.render.macros import SQL_FILE, render_sql_file

DOCS = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"
LIST_TRUTH_INPUTS = ("hits", "grades")


def test_sql_file_is_current() -> None:
    assert SQL_FILE.read_text() == render_sql_file(), "run: python -m duckrank.render"


def _plain() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute(SQL_FILE.read_text())
    return con


def _file_functions() -> list[str]:
    names = re.findall(r"^CREATE OR REPLACE MACRO (\w+)", SQL_FILE.read_text(), flags=re.M)
    return sorted({n for n in names if not n.startswith("duckrank_")})


def test_docs_name_every_function_of_the_file() -> None:
    text = DOCS.read_text()
    missing = [name for name in _file_functions() if f"`{name}`" not in text]
    assert not missing, f"docs/integrations.md does not list: {missing}"


def _cases(seed: int, rows: int = 400) -> pa.Table:
    """Random rows: rec and truth over a small id space (many hits), duplicates in rec, empty
    lists, NULL lists and elements, k from 1 to beyond the list or NULL."""
    rng = np.random.default_rng(seed)
    recs, truths, grades, ks = [], [], [], []
    for _ in range(rows):
        rec = [int(x) for x in rng.integers(0, 15, rng.integers(0, 12))]
        if rec and rng.random() < 0.1:
            rec[rng.integers(len(rec))] = None
        truth = sorted({int(x) for x in rng.integers(0, 15, rng.integers(0, 8))})
        recs.append(None if rng.random() < 0.03 else [None if x is None else str(x) for x in rec])
        truths.append(None if rng.random() < 0.03 else [str(x) for x in truth])
        grades.append({str(x): float(rng.integers(0, 4)) for x in truth})
        ks.append(None if rng.random() < 0.05 else int(rng.integers(1, 15)))
    return pa.table({
        "i": pa.array(range(rows), pa.int64()),
        "rec": pa.array(recs, pa.list_(pa.string())),
        "truth": pa.array(truths, pa.list_(pa.string())),
        "grades": pa.array([list(g.items()) for g in grades], pa.map_(pa.string(), pa.float64())),
        "k": pa.array(ks, pa.int64()),
    })


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


def _truth_column(metric) -> str | None:
    if metric.truth_type == "" and metric.inputs in LIST_TRUTH_INPUTS:
        return "truth"
    if metric.truth_type.upper().startswith("MAP"):
        return "grades"
    return None


def test_file_gives_the_registered_values_on_random_cases() -> None:
    plain, registered = _plain(), duckrank.connect(native=False)
    cases = _cases(seed=11)
    for con in (plain, registered):
        con.register("cases", cases)
    in_file = set(_file_functions())
    checked = []
    for metric in METRICS:
        truth = _truth_column(metric)
        if metric.name not in in_file or truth is None:
            continue
        for call in (f"{metric.name}(rec, {truth}, k)", f"{metric.name}(rec, {truth})"):
            query = f"SELECT i, {call} FROM cases ORDER BY i"
            expected = registered.execute(query).fetchall()
            got = plain.execute(query).fetchall()
            bad = [(e, g) for e, g in zip(expected, got, strict=True) if not _same(e[1], g[1])]
            assert not bad, (call, bad[:3])
        checked.append(metric.name)
    assert {"precision_at", "recall_at", "average_precision", "mrr", "hitrate", "auc",
            "ndcg"} <= set(checked)


@pytest.mark.parametrize("options", ["", "-reverse", "-k 3", "-k -2", "-reverse -dedup"])
def test_file_to_ordered_list_matches(options: str) -> None:
    rng = np.random.default_rng(5)
    table = pa.table({
        "g": rng.integers(0, 20, 2000),
        "v": rng.integers(0, 50, 2000),
        "key": rng.integers(0, 6, 2000).astype(np.float64),  # few keys: many ties
    })
    query = "SELECT g, to_ordered_list(v, key, $o) FROM t GROUP BY g ORDER BY g"
    results = []
    for con in (_plain(), duckrank.connect(native=False)):
        con.register("t", table)
        results.append(con.execute(query, {"o": options}).fetchall())
    assert results[0] == results[1]


def test_file_reads_trec_files(tmp_path: Path) -> None:
    run = tmp_path / "a.run"
    run.write_text("q1 Q0 d1 1 2.0 s\nq1 Q0 d2 2 1.0 s\n")
    rows = _plain().execute("SELECT * FROM read_trec_run($1)", [str(run)]).fetchall()
    assert rows == [("q1", "Q0", "d1", 1, 2.0, "s"), ("q1", "Q0", "d2", 2, 1.0, "s")]
