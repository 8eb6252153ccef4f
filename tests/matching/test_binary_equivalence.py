"""Every binary metric macro, row by row, against a plain-Python reference on random data.

The macros are tuned SQL (two matching forms chosen per row, values bound through one-element
lists, closed forms, a table of ideal DCGs), and DuckDB has returned silently wrong averages for
some list-function forms (shared notes, performance.md). So each form is checked here on seeded
random rows that hit every convention: ragged and empty lists, NULL lists, NULL elements,
repeated recommendations and truth items, per-row k (NULL, beyond len(rec)), constant k, k
omitted, BIGINT and VARCHAR ids. Expected values come from ``reference`` below, written from the
definitions in duckrank/matching/ and the records' formulas, not from the code under test.
"""

from __future__ import annotations

import bisect
import math
import random

import pyarrow as pa
import pytest

import duckrank
from duckrank.matching import sql as matching
from duckrank.metrics.binary import METRICS

NAMES = [m.name for m in METRICS]
ROWS = 4000


def reference(rec: list | None, truth: list | None, k: int | None) -> dict[str, float | None]:
    """The binary metrics of one row, straight from the definitions."""
    if rec is None or truth is None or k is None:
        return dict.fromkeys(NAMES)
    K = min(k, len(rec))
    relevant = {t for t in truth if t is not None}  # truth is a set; NULLs are ignored
    n = len(relevant)
    positions, seen = [], set()
    for i, item in enumerate(rec[:K], start=1):
        if item is not None and item in relevant and item not in seen:  # a repeat is a miss
            positions.append(i)
        seen.add(item)
    h = len(positions)
    ideal = sum(1 / math.log2(i + 1) for i in range(1, min(k, n) + 1))
    below = sum((K - p) - (h - j) for j, p in enumerate(positions, start=1))
    # hits in the top i, for every cut-off i = 1..k (Elliot's MAP and MAR average over them)
    hits_at = [bisect.bisect_right(positions, i) for i in range(1, k + 1)]
    return {
        "precision_at": None if K == 0 else h / K,
        "recall_at": None if n == 0 else h / n,
        "average_precision": None if n == 0 else sum(
            j / p for j, p in enumerate(positions, start=1)) / n,
        "mrr": None if n == 0 else (1 / positions[0] if positions else 0.0),
        "hitrate": None if n == 0 else float(h > 0),
        "ndcg": None if n == 0 else (
            sum(1 / math.log2(p + 1) for p in positions) / ideal if h else 0.0),
        "auc": None if h in (0, K) else below / (h * (K - h)),
        "mean_precision_at": None if n == 0 or k == 0 else math.fsum(
            hits / i for i, hits in enumerate(hits_at, start=1)) / k,
        "mean_recall_at": None if n == 0 or k == 0 else sum(hits_at) / (k * n),
    }


def _maybe_null(rng: random.Random, value, share: float):
    return None if rng.random() < share else value


def random_rows(seed: int, as_text: bool) -> list[tuple]:
    """(rec, truth, k) rows. Ids come from a small alphabet so hits and repeats are common; list
    lengths up to 60 with k up to 70; test_every_matching_form_alone forces each matching form."""
    rng = random.Random(seed)
    alphabet = rng.choice([8, 20, 200])

    def items(length: int) -> list:
        values = [_maybe_null(rng, rng.randrange(alphabet), 0.05) for _ in range(length)]
        return [None if v is None else (f"item_{v}" if as_text else v) for v in values]

    rows = []
    for _ in range(ROWS):
        rec = _maybe_null(rng, items(rng.choice([0, 1, 3, 10, rng.randrange(61)])), 0.03)
        truth = _maybe_null(rng, items(rng.choice([0, 1, 5, rng.randrange(25)])), 0.03)
        k = _maybe_null(rng, rng.choice([1, 2, 5, 10, rng.randrange(1, 71)]), 0.03)
        rows.append((rec, truth, k))
    return rows


def _table(rows: list[tuple], as_text: bool) -> pa.Table:
    ids = pa.list_(pa.string() if as_text else pa.int64())
    return pa.table({
        "row": pa.array(range(len(rows)), pa.int64()),
        "rec": pa.array([r[0] for r in rows], ids),
        "truth": pa.array([r[1] for r in rows], ids),
        "k": pa.array([r[2] for r in rows], pa.int64()),
    })


def _assert_rows_match(con, rows: list[tuple], k_sql: str, k_of_row) -> None:
    table = _table(rows, isinstance(_first_id(rows), str))
    con.register("eq_rows", table)
    metrics = ", ".join(f"{name}(rec, truth{k_sql})" for name in NAMES)
    got = con.execute(f"SELECT {metrics} FROM eq_rows ORDER BY row").fetchall()
    for (rec, truth, k), values in zip(rows, got, strict=True):
        expected = reference(rec, truth, k_of_row(rec, k))
        for name, value in zip(NAMES, values, strict=True):
            want = expected[name]
            assert (value is None) == (want is None) and (
                value is None or value == pytest.approx(want, rel=1e-12, abs=1e-15)
            ), f"{name}(rec={rec}, truth={truth}, k={k}) = {value}, expected {want}"


def _first_id(rows: list[tuple]):
    return next(x for r in rows for x in (r[0] or []) if x is not None)


@pytest.mark.parametrize("as_text", [False, True], ids=["bigint", "varchar"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_per_row_k(con, seed: int, as_text: bool) -> None:
    _assert_rows_match(con, random_rows(seed, as_text), ", k", lambda rec, k: k)


@pytest.mark.parametrize("as_text", [False, True], ids=["bigint", "varchar"])
def test_constant_k(con, as_text: bool) -> None:
    rows = [(rec, truth, 5) for rec, truth, _ in random_rows(4, as_text)]
    _assert_rows_match(con, rows, ", 5", lambda rec, k: 5)


def test_k_omitted_means_all(con) -> None:
    rows = random_rows(5, as_text=False)
    _assert_rows_match(con, rows, "", lambda rec, k: None if rec is None else len(rec))


FORMS = {
    # form -> (_merge_is_cheaper, _rec_side_is_cheaper) forced to these SQL booleans
    "sorted_merge": ("true", "false"),
    "rec_side": ("false", "true"),
    "truth_side": ("false", "false"),
}


@pytest.mark.parametrize("as_text", [False, True], ids=["bigint", "varchar"])
@pytest.mark.parametrize("form", sorted(FORMS))
def test_every_matching_form_alone(monkeypatch, form: str, as_text: bool) -> None:
    """Each of the three SQL matching forms, forced on every row, gives the reference values (the
    cost model then only decides speed, never a value). The other tests here run the native
    step, which duckrank.connect() loads when the build has it (test_native.py checks it is)."""
    merge, rec_side = FORMS[form]
    monkeypatch.setattr(matching, "_merge_is_cheaper", lambda *_: merge)
    monkeypatch.setattr(matching, "_rec_side_is_cheaper", lambda *_: rec_side)
    con = duckrank.connect(native=False)
    _assert_rows_match(con, random_rows(6, as_text), ", k", lambda rec, k: k)
    con.close()
