"""Property-based tests: every metric's DuckDB value equals a plain per-row reference.

The references below are written here, one Python loop per row, straight from the written
definitions: the shared conventions and formulas of docs/reference.md (and
``duckrank/matching.py``'s docstring), the graded definitions in the graded records
(``duckrank/metrics/graded.py``, docs/reference.md), docs/preference.md for edrc and the rank
correlations, and docs/hivemall.md's table for the hivemall schema. None of them calls duckrank.

Hypothesis draws a few rows directly (so failures shrink to readable cases) and a seed for a plain
random generator that fills the batch up to a size straddling DuckDB's vector size (2,048 rows).
Rows mix empty and NULL lists, NULL elements, duplicates in rec and truth, k from 1 to far beyond
the list, NULL k, ids of several types, and a few lists of thousands of items. The numpy kernels
(``metric.kernel`` over the matching step) are checked against the same SQL results.
"""

from __future__ import annotations

import math
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import duckrank
from duckrank.matching import match_grade_lists, match_grades, match_hits
from duckrank.metrics import METRICS
from duckrank.metrics.preference import DISCOUNTS

VECTOR_SIZE = 2048
BATCH_SIZES = (1, 6, VECTOR_SIZE - 1, VECTOR_SIZE, VECTOR_SIZE + 1, 2 * VECTOR_SIZE + 1)
SETTINGS = settings(
    max_examples=12, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
GRADES = (0.0, 0.5, 1.0, 2.0, 3.0, 4.0)
ALL = "all"  # k omitted


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    connection = duckrank.connect()
    yield connection
    connection.close()


# --- ids of several types ------------------------------------------------------------------------
# Rows are generated over small integers; each kind maps them injectively onto its SQL type, so
# two ids are equal exactly when their integers are, and the references compare integers.

@dataclass(frozen=True)
class IdKind:
    name: str
    rec_type: str
    truth_type: str
    arrow: pa.DataType
    convert: Callable[[int], Any]


ID_KINDS = (
    IdKind("bigint", "BIGINT", "BIGINT", pa.int64(), lambda i: i),
    IdKind("integer_vs_bigint", "INTEGER", "BIGINT", pa.int64(), lambda i: i),
    IdKind("varchar", "VARCHAR", "VARCHAR", pa.string(), lambda i: f"it'em {i}"),
    IdKind("uuid", "UUID", "UUID", pa.string(),
           lambda i: str(uuid.UUID(int=(i * 0x9E3779B97F4A7C15 + 7) % 2**128))),
)


def _ids(kind: IdKind, items: list | None) -> list | None:
    return None if items is None else [None if i is None else kind.convert(i) for i in items]


# --- rows ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Row:
    rec: list | None
    truth: list | None
    k: int | None
    seed: int  # picks the grades of this row's items

    def grade(self, item: int) -> float:
        return GRADES[(item * 7 + self.seed) % len(GRADES)]

    def grade_map(self) -> dict | None:
        """Truth as MAP item -> grade: its distinct non-NULL items."""
        if self.truth is None:
            return None
        return {t: self.grade(t) for t in dict.fromkeys(self.truth) if t is not None}


ITEM = st.integers(-1, 12).map(lambda i: None if i < 0 else i)  # a NULL element now and then
ID_LIST = st.one_of(st.none(), st.lists(ITEM, max_size=14))
CUTOFF = st.one_of(st.none(), st.integers(1, 30), st.just(10**6))
ROW = st.builds(Row, ID_LIST, ID_LIST, CUTOFF, st.integers(0, 50))


def _random_list(rng: random.Random, universe: int, longest: int) -> list | None:
    draw = rng.random()
    if draw < 0.05:
        return None
    if draw < 0.12:
        return []
    items = [rng.randrange(universe) for _ in range(rng.randint(0, longest))]
    return [None if rng.random() < 0.04 else i for i in items]


def _random_row(rng: random.Random, long: bool = False) -> Row:
    universe, longest = (5000, 3000) if long else (rng.randint(1, 40), 25)
    length = None if rng.random() < 0.05 else rng.choice([1, 2, 5, 10, 40, 10**6])
    return Row(_random_list(rng, universe, longest), _random_list(rng, universe, longest // 2),
               length, rng.randrange(50))


@dataclass(frozen=True)
class Batch:
    rows: list[Row]
    kind: IdKind
    k_omitted: bool


@st.composite
def batches(draw, kinds: tuple[IdKind, ...] = ID_KINDS) -> Batch:
    drawn = draw(st.lists(ROW, min_size=1, max_size=10))
    size = draw(st.sampled_from(BATCH_SIZES))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    long_rows = draw(st.integers(0, 2)) if size > 1 else 0
    rows = drawn[:size] + [_random_row(rng) for _ in range(size - len(drawn))]
    for _ in range(long_rows):
        rows[rng.randrange(size)] = _random_row(rng, long=True)
    return Batch(rows, draw(st.sampled_from(kinds)), draw(st.booleans()))


def load(con: duckdb.DuckDBPyConnection, batch: Batch) -> None:
    """Table ``batch``: id, rec, truth (LIST), graded (MAP truth -> grade), k."""
    kind = batch.kind
    maps = [r.grade_map() for r in batch.rows]
    table = pa.table({
        "id": pa.array(range(len(batch.rows)), pa.int64()),
        "rec": pa.array([_ids(kind, r.rec) for r in batch.rows], pa.list_(kind.arrow)),
        "truth": pa.array([_ids(kind, r.truth) for r in batch.rows], pa.list_(kind.arrow)),
        "keys": pa.array([None if m is None else _ids(kind, list(m)) for m in maps],
                         pa.list_(kind.arrow)),
        "grades": pa.array([None if m is None else list(m.values()) for m in maps],
                           pa.list_(pa.float64())),
        "k": pa.array([r.k for r in batch.rows], pa.int64()),
    })
    con.register("batch_arrow", table)
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE batch AS SELECT id,
          rec::{kind.rec_type}[] AS rec, truth::{kind.truth_type}[] AS truth,
          CASE WHEN keys IS NULL THEN NULL ELSE map(keys::{kind.truth_type}[], grades) END
            AS graded,
          k
        FROM batch_arrow""")
    con.unregister("batch_arrow")


def cutoffs(batch: Batch) -> list:
    return [ALL if batch.k_omitted else r.k for r in batch.rows]


def k_argument(batch: Batch) -> str:
    return "" if batch.k_omitted else ", k"


def k_array(batch: Batch) -> np.ndarray | None:
    """k as the numpy matching step takes it: None when omitted, NaN for NULL."""
    if batch.k_omitted:
        return None
    return np.array([np.nan if r.k is None else r.k for r in batch.rows], dtype=np.float64)


def options_sql(options: dict) -> str:
    return "".join(f", {name} := {value!r}" for name, value in options.items())


def assert_values(actual: list, expected: list, what: str) -> None:
    """NULL where NULL, NaN where NaN, numbers to 1e-12 (relative) elsewhere."""
    assert len(actual) == len(expected), what
    for row, (a, e) in enumerate(zip(actual, expected, strict=True)):
        if e is None or a is None:
            assert a is e, f"{what}, row {row}: {a!r} != {e!r}"
        elif math.isnan(e):
            assert math.isnan(a), f"{what}, row {row}: {a!r} != NaN"
        else:
            assert a == pytest.approx(e, rel=1e-12, abs=1e-12), f"{what}, row {row}"


def kernel_values(values: np.ndarray) -> list:
    return [None if math.isnan(v) else float(v) for v in values]


# --- references: the binary metrics (docs/reference.md, shared conventions) ------------------------

@dataclass(frozen=True)
class Matched:
    positions: list[int]  # 1-based, ascending
    K: int  # min(k, len(rec))
    k: int  # the cut-off, len(rec) when omitted
    n: int  # distinct non-NULL truth items


def match(rec: list | None, truth: list | None, k: Any) -> Matched | None:
    """K = min(k, len(rec)); a hit is an item of the top K that is in truth and has not appeared
    earlier in rec; NULL elements are never hits; truth is a set of its non-NULL items."""
    if rec is None or truth is None or k is None:
        return None
    cut = len(rec) if k == ALL else k
    top = min(cut, len(rec))
    relevant = {t for t in truth if t is not None}
    seen: set = set()
    positions = []
    for i, item in enumerate(rec[:top], start=1):
        if item is not None and item not in seen and item in relevant:
            positions.append(i)
        seen.add(item)
    return Matched(positions, top, cut, len(relevant))


def discount(rank: int, name: str = "log2", base: float = 2) -> float:
    """log2: log2(i + 1); jarvelin: 1 for i <= base, log_base(i) after."""
    if name == "jarvelin":
        return 1.0 if rank <= base else math.log(rank) / math.log(base)
    return math.log2(rank + 1)


def ref_precision_at(m: Matched) -> float | None:
    return None if m.K == 0 else len(m.positions) / m.K


def ref_recall_at(m: Matched) -> float | None:
    return None if m.n == 0 else len(m.positions) / m.n


def ref_average_precision(m: Matched) -> float | None:
    if m.n == 0:
        return None
    return sum(j / p for j, p in enumerate(m.positions, start=1)) / m.n


def ref_mrr(m: Matched) -> float | None:
    if m.n == 0:
        return None
    return 1 / m.positions[0] if m.positions else 0.0


def ref_hitrate(m: Matched) -> float | None:
    return None if m.n == 0 else float(bool(m.positions))


def ref_auc(m: Matched) -> float | None:
    hits = set(m.positions)
    misses = m.K - len(hits)
    if not hits or misses == 0:
        return None
    ordered, misses_below = 0, 0  # walk up from the bottom of the top K
    for position in range(m.K, 0, -1):
        if position in hits:
            ordered += misses_below
        else:
            misses_below += 1
    return ordered / (len(hits) * misses)


def ref_binary_ndcg(m: Matched, discount_name: str = "log2", base: float = 2) -> float | None:
    if m.n == 0:
        return None
    if not m.positions:
        return 0.0
    dcg = sum(1 / discount(p, discount_name, base) for p in m.positions)
    ideal = sum(1 / discount(i, discount_name, base) for i in range(1, min(m.k, m.n) + 1))
    return dcg / ideal


BINARY_REFERENCES: dict[str, Callable] = {
    "precision_at": ref_precision_at, "recall_at": ref_recall_at,
    "average_precision": ref_average_precision, "mrr": ref_mrr, "hitrate": ref_hitrate,
    "auc": ref_auc, "ndcg": ref_binary_ndcg,
}


# --- references: the graded metrics (graded records, docs/reference.md) ---------------------------

@dataclass(frozen=True)
class Graded:
    top: list[float]  # grades of the top K in rec order, 0 for misses, repeats and NULLs
    ideal: list[float]  # the min(k, n) largest positive grades, largest first
    K: int
    n: int


def graded_view(rec: list | None, grades: dict | None, k: Any) -> Graded | None:
    if rec is None or grades is None or k is None:
        return None
    cut = len(rec) if k == ALL else k
    top_len = min(cut, len(rec))
    seen: set = set()
    top = []
    for item in rec[:top_len]:
        first = item is not None and item not in seen
        top.append(grades.get(item, 0.0) if first else 0.0)
        seen.add(item)
    positive = sorted((g for g in grades.values() if g > 0), reverse=True)
    return Graded(top, positive[:cut], top_len, len(positive))


def gain(grade: float, name: str) -> float:
    return grade if name == "linear" else 2.0**grade - 1


def dcg_of(grades: list[float], o: dict) -> float:
    return sum(
        gain(g, o.get("gain", "exponential"))
        / discount(i, o.get("discount", "log2"), o.get("base", 2))
        for i, g in enumerate(grades, start=1)
    )


def ref_ndcg_graded(g: Graded, o: dict) -> float | None:
    if g.n == 0:
        return None
    return 0.0 if g.K == 0 else dcg_of(g.top, o) / dcg_of(g.ideal, o)


def ref_dcg(g: Graded, o: dict) -> float | None:
    return None if g.n == 0 else dcg_of(g.top, o)


def ref_err(g: Graded, o: dict) -> float | None:
    """sum over r <= K of (1/r) R_r prod_{i<r} (1 - R_i), R = (2^g - 1) / 2^max_grade."""
    if g.n == 0:
        return None
    max_grade = o.get("max_grade", 4)
    value, not_stopped = 0.0, 1.0
    for r, grade in enumerate(g.top, start=1):
        satisfied = (2.0**grade - 1) / 2.0**max_grade
        value += not_stopped * satisfied / r
        not_stopped *= 1 - satisfied
    return value


def ref_half_life_utility(g: Graded, o: dict) -> float | None:
    if g.n == 0:
        return None
    if g.K == 0:
        return 0.0
    alpha = o.get("half_life", 5)

    def utility(grades: list[float]) -> float:
        return sum(x * 2.0 ** (-(i - 1) / (alpha - 1)) for i, x in enumerate(grades, start=1))

    return utility(g.top) / utility(g.ideal)


GRADED_REFERENCES: dict[str, Callable] = {
    "ndcg": ref_ndcg_graded, "dcg": ref_dcg, "err": ref_err,
    "half_life_utility": ref_half_life_utility, "ndcg_grades": ref_ndcg_graded,
}

OPTION_CHOICES: dict[str, list[dict]] = {
    "ndcg": [{}, {"gain": "linear"}, {"discount": "jarvelin"},
             {"gain": "linear", "discount": "jarvelin", "base": 3}],
    "dcg": [{}, {"gain": "linear", "discount": "jarvelin", "base": 1.5}],
    "err": [{}, {"max_grade": 5}],
    "half_life_utility": [{}, {"half_life": 2}, {"half_life": 10.5}],
    "ndcg_grades": [{}, {"gain": "linear", "discount": "jarvelin", "base": 3}],
}

SQL_RECORDS = [m for m in METRICS if m.inputs in ("hits", "grades")]


def _record_id(metric) -> str:
    return f"{metric.name}[{metric.truth_type or 'LIST'}]"


@pytest.mark.parametrize("metric", SQL_RECORDS, ids=_record_id)
@SETTINGS
@given(batch=batches(), choice=st.integers(0, 3))
def test_sql_metrics_equal_the_reference_and_the_kernels(con, metric, batch, choice):
    load(con, batch)
    options = {} if metric.inputs == "hits" and metric.name != "ndcg" else (
        OPTION_CHOICES[metric.name][choice % len(OPTION_CHOICES[metric.name])])
    truth = "graded" if metric.truth_type else "truth"
    sql = f"SELECT {metric.name}(rec, {truth}{k_argument(batch)}{options_sql(options)}) " \
          "FROM batch ORDER BY id"
    actual = [row[0] for row in con.execute(sql).fetchall()]

    expected = []
    for row, k in zip(batch.rows, cutoffs(batch), strict=True):
        if metric.inputs == "hits":
            matched = match(row.rec, row.truth, k)
            reference = BINARY_REFERENCES[metric.name]
            binary_options = {"discount_name": options.get("discount", "log2"),
                              "base": options.get("base", 2)} if metric.name == "ndcg" else {}
            expected.append(None if matched is None else reference(matched, **binary_options))
        else:
            grades = row.grade_map() if metric.truth_type else (
                None if row.truth is None else {t: 1.0 for t in row.truth if t is not None})
            view = graded_view(row.rec, grades, k)
            expected.append(None if view is None else GRADED_REFERENCES[metric.name](view, options))
    assert_values(actual, expected, f"{sql} ({batch.kind.name})")

    data = con.sql(f"SELECT rec, {truth} AS truth FROM batch ORDER BY id").to_arrow_table()
    if metric.inputs == "hits":
        kernel = metric.kernel(match_hits(data["rec"], data["truth"], k_array(batch)), **options)
    else:
        matched = match_grades(data["rec"], data["truth"], k_array(batch), function=metric.name)
        kernel = metric.kernel(matched, **options)
    assert_values(actual, kernel_values(kernel), f"kernel of {metric.name} ({batch.kind.name})")


# --- ndcg_grades: grades given directly -------------------------------------------------------------

GRADE_LIST = st.one_of(st.none(), st.lists(st.sampled_from(GRADES), max_size=12))


@SETTINGS
@given(
    drawn=st.lists(st.tuples(GRADE_LIST, GRADE_LIST, CUTOFF), min_size=1, max_size=8),
    size=st.sampled_from(BATCH_SIZES), seed=st.integers(0, 2**32 - 1),
    k_omitted=st.booleans(), choice=st.integers(0, 1),
)
def test_ndcg_grades_equals_the_reference_and_the_kernel(con, drawn, size, seed, k_omitted,
                                                          choice):
    rng = random.Random(seed)

    def grade_list(longest: int) -> list | None:
        draw = rng.random()
        if draw < 0.05:
            return None
        return [rng.choice(GRADES) for _ in range(rng.randint(0, longest))]

    rows = drawn[:size] + [
        (grade_list(20), grade_list(10), rng.choice([None, 1, 3, 10, 10**6]))
        for _ in range(size - len(drawn))
    ]
    if size > 100:
        rows[rng.randrange(size)] = (grade_list(3000), grade_list(2000), rng.choice([5, 10**6]))
    table = pa.table({
        "id": pa.array(range(len(rows)), pa.int64()),
        "rec": pa.array([None if r is None else [{"grade": g, "item": i} for i, g in enumerate(r)]
                         for r, _, _ in rows],
                        pa.list_(pa.struct([("grade", pa.float64()), ("item", pa.int64())]))),
        "truth": pa.array([t for _, t, _ in rows], pa.list_(pa.float64())),
        "k": pa.array([k for _, _, k in rows], pa.int64()),
    })
    con.register("grade_rows", table)
    options = OPTION_CHOICES["ndcg_grades"][choice]
    k = "" if k_omitted else ", k"
    actual = [r[0] for r in con.execute(
        f"SELECT ndcg_grades(rec, truth{k}{options_sql(options)}) FROM grade_rows ORDER BY id"
    ).fetchall()]
    con.unregister("grade_rows")

    expected = []
    for rec, truth, cut in rows:
        cut = ALL if k_omitted else cut
        if rec is None or truth is None or cut is None:
            expected.append(None)
            continue
        cut = len(rec) if cut == ALL else cut
        positive = sorted((g for g in truth if g > 0), reverse=True)
        view = Graded(rec[:cut], positive[:cut], min(cut, len(rec)), len(positive))
        expected.append(ref_ndcg_graded(view, options))
    assert_values(actual, expected, "ndcg_grades")

    k_values = None if k_omitted else np.array(
        [np.nan if c is None else c for _, _, c in rows], dtype=np.float64)
    kernel = duckrank.metrics.graded.NDCG_GRADES.kernel(
        match_grade_lists(table["rec"], table["truth"], k_values), **options)
    assert_values(actual, kernel_values(kernel), "ndcg_grades kernel")
