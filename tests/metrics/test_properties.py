"""Property-based tests: every metric's DuckDB value equals a plain per-row reference.

The references below are written here, one Python loop per row, straight from the written
definitions: the shared conventions and formulas of docs/reference.md (and
``duckrank/matching/``'s docstring), the graded definitions in the graded records
(``duckrank/metrics/graded.py``, docs/reference.md), docs/preference.md for edrc and the rank
correlations, and docs/hivemall.md's table for the hivemall schema. None of them calls duckrank.

Hypothesis draws a few rows directly (so failures shrink to readable cases) and a seed for a plain
random generator that fills the batch up to a size straddling DuckDB's vector size (2,048 rows).
Rows mix empty and NULL lists, NULL elements, duplicates in rec and truth, k from 1 to far beyond
the list, NULL k, ids of several types, and a few lists of thousands of items. The numpy kernels
(``metric.kernel`` over the matching step) are checked against the same SQL results.
"""

from __future__ import annotations

import bisect
import functools
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
from duckrank.matching.arrays import match_grade_lists, match_grades, match_hits
from duckrank.metrics import (
    METRICS,
    classification,
    cwl,
    diversity,
    judged_only,
    peers,
    prefs,
    trec_eval,
)
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

    def grade_map(self, scale: tuple = GRADES) -> dict | None:
        """Truth as MAP item -> grade (picked from ``scale``): its distinct non-NULL items."""
        if self.truth is None:
            return None
        return {t: scale[(t * 7 + self.seed) % len(scale)]
                for t in dict.fromkeys(self.truth) if t is not None}


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


def load(con: duckdb.DuckDBPyConnection, batch: Batch, scale: tuple = GRADES) -> None:
    """Table ``batch``: id, rec, truth (LIST), graded (MAP truth -> grade), k."""
    kind = batch.kind
    maps = [r.grade_map(scale) for r in batch.rows]
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


# --- references: the binary metrics (docs/reference.md, shared conventions) ----------------------

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


@functools.cache
def harmonic(m: int) -> float:
    """H(m) = 1 + 1/2 + ... + 1/m, summed exactly rounded (math.fsum)."""
    return math.fsum(1 / i for i in range(1, m + 1))


def ref_mean_precision_at(m: Matched) -> float | None:
    """Elliot's MAP (elliot/evaluation/metrics/accuracy/map/map.py): the mean over i = 1..k of
    hits(i) / i, hits(i) the hits in the top i. Past the top K every top i holds all the hits:
    that tail is hits x (H(k) - H(K)), so that k = 10^6 is not a loop per row."""
    if m.n == 0 or m.k == 0:
        return None
    inside = math.fsum(bisect.bisect_right(m.positions, i) / i for i in range(1, m.K + 1))
    return (inside + len(m.positions) * (harmonic(m.k) - harmonic(m.K))) / m.k


def ref_mean_recall_at(m: Matched) -> float | None:
    """Elliot's MAR (accuracy/mar/mar.py): the mean over i = 1..k of hits(i) / |truth|."""
    if m.n == 0 or m.k == 0:
        return None
    inside = sum(bisect.bisect_right(m.positions, i) for i in range(1, m.K + 1))
    return (inside + len(m.positions) * (m.k - m.K)) / (m.k * m.n)


BINARY_REFERENCES: dict[str, Callable] = {
    "precision_at": ref_precision_at, "recall_at": ref_recall_at,
    "average_precision": ref_average_precision, "mrr": ref_mrr, "hitrate": ref_hitrate,
    "auc": ref_auc, "ndcg": ref_binary_ndcg, "mean_precision_at": ref_mean_precision_at,
    "mean_recall_at": ref_mean_recall_at,
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

# The records with an independent reference above (the trec_eval measures have theirs in
# tests/metrics/test_trec_eval_measures.py).
SQL_RECORDS = [m for m in METRICS if m.inputs in ("hits", "grades")
               and m.name in BINARY_REFERENCES.keys() | GRADED_REFERENCES.keys()]


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


# --- ndcg_grades: grades given directly ----------------------------------------------------------

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


# --- edrc and edrc_preferences (docs/preference.md, "Definition (one row)") ----------------------

def _closure(nodes: set, edges: set) -> set:
    """Every (a, b) with a path a -> ... -> b."""
    children: dict = {v: [] for v in nodes}
    for a, b in edges:
        children[a].append(b)
    reach = set()
    for start in nodes:
        stack, seen = list(children[start]), set()
        while stack:
            node = stack.pop()
            if node not in seen:
                seen.add(node)
                stack.extend(children[node])
        reach |= {(start, node) for node in seen}
    return reach


def ref_edrc(ranked: list, truth: list, discount_name: str, system_order: set,
             likelihood: float = 0.5) -> float | None:
    """``ranked``: the items the system ranked or named; ``system_order``: Ĝ+ as (a, b) pairs."""
    items = set(ranked)
    edges = {(a, b) for a, b in truth if a in items and b in items}
    v = {x for e in edges for x in e}
    g_plus = _closure(v, edges)
    parents: dict = {x: [a for a, b in edges if b == x] for x in v}
    rank: dict = {}

    def r(node) -> int:  # 1 on sources, else 1 + the longest path from a source
        if node not in rank:
            rank[node] = 1 if not parents[node] else 1 + max(r(p) for p in parents[node])
        return rank[node]

    def d(node) -> float:
        return {"linear": r(node), "logarithmic": math.log2(1 + r(node)),
                "exponential": 2.0 ** r(node), "ap": r(node) - 1}[discount_name]

    total = z = 0.0
    for node in v:
        if not parents[node]:
            continue
        w = [x for x in v if x != node and (node, x) not in g_plus]
        c = 0.0
        for other in w:
            if (other, node) in g_plus:
                c += (1.0 if (other, node) in system_order
                      else 0.0 if (node, other) in system_order else likelihood)
            else:
                c += 0.5
        total += c / d(node)
        z += len(w) / d(node)
    return None if z == 0 else 2 * total / z - 1


@dataclass(frozen=True)
class PreferenceRow:
    rec: list | None  # the ranked list (edrc) or None
    truth: list | None  # (better, worse) pairs, None for a NULL preference
    system: list | None  # (better, worse) pairs (edrc_preferences)


def _oriented(pairs: list | None, seed: int, universe: int) -> list | None:
    """Pairs turned to agree with a hidden order of the items, so no cycle can arise; a pair of
    one item twice is dropped (that would be an error, see tests/test_bad_input.py)."""
    if pairs is None:
        return None

    def key(x: int) -> tuple:
        return ((x * 7 + seed) % universe, x)

    out = []
    for pair in pairs:
        if pair is None or pair[0] is None or pair[1] is None:
            out.append(pair)
        elif pair[0] != pair[1]:
            out.append(pair if key(pair[0]) < key(pair[1]) else (pair[1], pair[0]))
    return out


PAIRS = st.one_of(st.none(), st.lists(st.one_of(st.none(), st.tuples(ITEM, ITEM)), max_size=14))


def _random_pairs(rng: random.Random, universe: int, most: int) -> list | None:
    if rng.random() < 0.05:
        return None
    pairs: list = []
    for _ in range(rng.randint(0, most)):
        pair = (rng.randrange(universe), rng.randrange(universe))
        pairs.append(None if rng.random() < 0.03 else pair)
    return pairs


@st.composite
def preference_batches(draw) -> tuple[list[PreferenceRow], IdKind]:
    seeds = st.integers(0, 12)
    drawn = draw(st.lists(st.tuples(ID_LIST, PAIRS, PAIRS, seeds, seeds), min_size=1,
                          max_size=8))
    rows = [PreferenceRow(rec, _oriented(t, a, 13), _oriented(s, b, 13))
            for rec, t, s, a, b in drawn]
    size = draw(st.sampled_from(BATCH_SIZES))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    while len(rows) < size:
        long = rng.random() < 0.001
        universe = 400 if long else rng.randint(2, 15)
        most = 600 if long else 12
        rows.append(PreferenceRow(
            _random_list(rng, universe, 300 if long else 12),
            _oriented(_random_pairs(rng, universe, most), rng.randrange(universe), universe),
            _oriented(_random_pairs(rng, universe, most), rng.randrange(universe), universe),
        ))
    return rows[:size], draw(st.sampled_from(ID_KINDS))


def _pairs_arrow(kind: IdKind, rows: list, side: str) -> pa.Array:
    values = []
    for row in rows:
        pairs = getattr(row, side)
        values.append(None if pairs is None else [
            None if p is None else {"better": _ids(kind, [p[0]])[0], "worse": _ids(kind, [p[1]])[0]}
            for p in pairs])
    return pa.array(values, pa.list_(pa.struct([("better", kind.arrow), ("worse", kind.arrow)])))


def _plain(pairs: list | None) -> list:
    return [p for p in pairs or [] if p is not None and None not in p]


@SETTINGS
@given(batch=preference_batches(), discount_name=st.sampled_from(DISCOUNTS),
       likelihood=st.sampled_from([0.0, 0.5, 0.7, 1.0]))
def test_edrc_and_edrc_preferences_equal_the_reference(con, batch, discount_name, likelihood):
    rows, kind = batch
    table = pa.table({
        "id": pa.array(range(len(rows)), pa.int64()),
        "rec": pa.array([_ids(kind, r.rec) for r in rows], pa.list_(kind.arrow)),
        "truth": _pairs_arrow(kind, rows, "truth"),
        "system": _pairs_arrow(kind, rows, "system"),
    })
    con.register("preference_arrow", table)
    pair_type = f"STRUCT(better {kind.truth_type}, worse {kind.truth_type})[]"
    con.execute(f"""CREATE OR REPLACE TEMP TABLE preference_rows AS SELECT id,
        rec::{kind.rec_type}[] AS rec, truth::{pair_type} AS truth, system::{pair_type} AS system
        FROM preference_arrow""")
    con.unregister("preference_arrow")
    actual = con.execute(
        f"SELECT edrc(rec, truth, '{discount_name}'), edrc_preferences(system, truth, "
        f"discount := '{discount_name}', likelihood := {likelihood}) "
        "FROM preference_rows ORDER BY id").fetchall()

    ranked_expected, preference_expected = [], []
    for row in rows:
        if row.rec is None or row.truth is None:
            ranked_expected.append(None)
        else:
            order = [x for x in dict.fromkeys(row.rec) if x is not None]
            system = {(a, b) for i, a in enumerate(order) for b in order[i + 1:]}
            ranked_expected.append(ref_edrc(order, _plain(row.truth), discount_name, system))
        if row.system is None or row.truth is None:
            preference_expected.append(None)
        else:
            named = {x for p in row.system if p is not None for x in p if x is not None}
            system = _closure(named, set(_plain(row.system)))
            preference_expected.append(
                ref_edrc(list(named), _plain(row.truth), discount_name, system, likelihood))
    assert_values([a for a, _ in actual], ranked_expected, f"edrc ({kind.name})")
    assert_values([b for _, b in actual], preference_expected, f"edrc_preferences ({kind.name})")


# --- rank correlations (docs/preference.md, "Rank correlations") ---------------------------------

CORRELATION_GRADES = (-1.5, 0.0, 1.0, 2.0, 2.0, 3.5, 7.0)


def _compared(rec: list, grades: dict) -> list[float]:
    """Truth grades of the items of rec that truth grades, first occurrences, in rec's order."""
    seen: set = set()
    out = []
    for item in rec:
        if item is not None and item not in seen and item in grades:
            out.append(grades[item])
        seen.add(item)
    return out


def _average_ranks(grades: list[float]) -> list[float]:
    """Rank 1 = the highest grade; tied grades share their average rank."""
    return [sum(1 for h in grades if h > g) + (sum(1 for h in grades if h == g) + 1) / 2
            for g in grades]


def ref_correlations(rec: list | None, grades: dict | None) -> dict | None:
    if rec is None or grades is None:
        return None
    g = _compared(rec, grades)
    n = len(g)
    if n < 2 or len(set(g)) == 1:
        return None
    concordant = sum(1 for i in range(n) for j in range(i + 1, n) if g[i] > g[j])
    discordant = sum(1 for i in range(n) for j in range(i + 1, n) if g[i] < g[j])
    pairs = n * (n - 1) / 2
    tied = pairs - concordant - discordant
    system, truth = list(range(1, n + 1)), _average_ranks(g)
    mean = (n + 1) / 2
    covariance = sum((s - mean) * (t - mean) for s, t in zip(system, truth, strict=True))
    spread = math.sqrt(sum((s - mean) ** 2 for s in system) * sum((t - mean) ** 2 for t in truth))
    ap = 2 / (n - 1) * sum(
        (sum(1 for h in g[:i] if h > g[i]) + 0.5 * sum(1 for h in g[:i] if h == g[i])) / i
        for i in range(1, n)) - 1
    return {
        "spearman": covariance / spread,
        "kendall_tau": (concordant - discordant) / math.sqrt(pairs * (pairs - tied)),
        "ap_correlation": ap,
        "fcp": concordant / (concordant + discordant),
    }


CORRELATIONS = ("spearman", "kendall_tau", "ap_correlation", "fcp")


@SETTINGS
@given(batch=batches())
def test_rank_correlations_equal_the_reference(con, batch):
    load(con, batch, CORRELATION_GRADES)
    calls = ", ".join(f"{name}(rec, graded)" for name in CORRELATIONS)
    actual = con.execute(f"SELECT {calls} FROM batch ORDER BY id").fetchall()
    expected = [ref_correlations(r.rec, r.grade_map(CORRELATION_GRADES)) for r in batch.rows]
    for column, name in enumerate(CORRELATIONS):
        assert_values([a[column] for a in actual],
                      [None if e is None else e[name] for e in expected],
                      f"{name} ({batch.kind.name})")


# --- the hivemall schema (docs/hivemall.md, "The functions") -------------------------------------
# Aggregates: the mean over the rows of a group whose truth is not NULL, 0.0 for a group without
# such a row. Matching: every occurrence of a truth item in the top K is a hit, NULL matches NULL,
# T = len(truth) with duplicates, NULL rec is an empty list, K = min(len(rec), k).

def _java_divide(numerator: float, denominator: float) -> float:
    if denominator == 0:
        return math.nan if numerator == 0 or math.isnan(numerator) else math.copysign(
            math.inf, numerator)
    return numerator / denominator


def hivemall_row(name: str, rec: list | None, truth: list, k: Any) -> float:  # noqa: C901
    items = rec or []
    length = len(items)
    cut = length if k == ALL else k
    top = min(length, cut)
    relevant = set(truth)  # NULL matches NULL
    positions = [i for i, item in enumerate(items[:top], start=1) if item in relevant]
    hits, size = len(positions), len(truth)
    if name == "recall_at":
        return float(length == 0) if size == 0 else hits / size
    if name == "precision_at":
        return float(size == 0) if length == 0 else _java_divide(hits, top)
    if name == "average_precision":
        if size == 0:
            return float(length == 0)
        return 0.0 if hits == 0 else sum(j / p for j, p in enumerate(positions, 1)) / hits
    if name == "mrr":
        return 1 / positions[0] if positions else 0.0
    if name == "hitrate":
        return float(hits > 0)
    if name == "ndcg":
        ideal = min(size, top)
        if ideal == 0:
            return 0.0
        return sum(1 / (math.log(p + 1) / math.log(2)) for p in positions) / sum(
            1 / (math.log(i + 1) / math.log(2)) for i in range(1, ideal + 1))
    if name == "auc":  # correctly ordered (hit, miss) pairs in the top K / (TP * (k - TP))
        if hits * (cut - hits) == 0:
            return 0.5
        hit_at = set(positions)
        ordered, misses_below = 0, 0  # walk up from the bottom of the top K
        for position in range(top, 0, -1):
            if position in hit_at:
                ordered += misses_below
            else:
                misses_below += 1
        return ordered / (hits * (cut - hits))
    raise KeyError(name)


def hivemall_mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def assert_means(actual: list, expected: list, what: str) -> None:
    for group, (a, e) in enumerate(zip(actual, expected, strict=True)):
        if math.isnan(e) or math.isinf(e):
            assert a == e or (math.isnan(a) and math.isnan(e)), f"{what}, group {group}"
        else:
            assert a == pytest.approx(e, rel=1e-12, abs=1e-12), f"{what}, group {group}"


HIVEMALL_MEASURES = ("recall_at", "precision_at", "average_precision", "mrr", "hitrate", "ndcg",
                     "auc")
SAME_TYPE_KINDS = tuple(kind for kind in ID_KINDS if kind.rec_type == kind.truth_type)


@SETTINGS
@given(batch=batches(SAME_TYPE_KINDS), groups=st.integers(1, 60),
       zero_k=st.integers(0, 1))
def test_hivemall_measures_equal_the_reference(con, batch, groups, zero_k):
    # Hivemall's k is an integer >= 0 and never NULL: NULL k becomes 0 or 3 here.
    rows = [Row(r.rec, r.truth, (0 if zero_k else 3) if r.k is None else r.k, r.seed)
            for r in batch.rows]
    batch = Batch(rows, batch.kind, batch.k_omitted)
    load(con, batch)
    group_of = [r.seed % groups for r in rows]
    k = k_argument(batch)
    calls = ", ".join(f"hivemall.{name}(rec, truth{k})" for name in HIVEMALL_MEASURES)
    actual = con.execute(
        f"SELECT (?::BIGINT[])[id + 1] AS g, {calls} FROM batch GROUP BY g ORDER BY g",
        [group_of]).fetchall()
    present = sorted(set(group_of))
    assert [a[0] for a in actual] == present
    cuts = cutoffs(batch)
    for column, name in enumerate(HIVEMALL_MEASURES, start=1):
        expected = []
        for group in present:
            values = [hivemall_row(name, r.rec, r.truth, cuts[i])
                      for i, r in enumerate(rows) if group_of[i] == group and r.truth is not None]
            expected.append(hivemall_mean(values))
        assert_means([a[column] for a in actual], expected, f"hivemall.{name} ({batch.kind.name})")


def _hivemall_graded_dcg(grades: list[float], k: int) -> float:
    """sum over i <= min(len, k) of ((2^g - 1) ln 2) / ln(i + 1), left to right."""
    return sum(((2.0**g - 1) * math.log(2)) / math.log(i + 1)
               for i, g in enumerate(grades[:k], start=1))


@SETTINGS
@given(
    rows=st.lists(st.tuples(GRADE_LIST, GRADE_LIST, st.integers(0, 12), st.integers(0, 4)),
                  min_size=1, max_size=40),
    k_omitted=st.booleans(),
)
def test_hivemall_graded_ndcg_equals_the_reference(con, rows, k_omitted):
    """ndcg(rec structs, truth grades [, k]): DCG(rec grades, k) / DCG(truth as given, k), no
    zero guard; NULL rec counts as empty, NULL truth skips the row."""
    table = pa.table({
        "g": pa.array([r[3] for r in rows], pa.int64()),
        "rec": pa.array([None if r[0] is None else [{"rel": x, "item": 0} for x in r[0]]
                         for r in rows],
                        pa.list_(pa.struct([("rel", pa.float64()), ("item", pa.int64())]))),
        "truth": pa.array([r[1] for r in rows], pa.list_(pa.float64())),
        "k": pa.array([r[2] for r in rows], pa.int64()),
    })
    con.register("graded_groups", table)
    k = "" if k_omitted else ", k"
    actual = dict(con.execute(
        f"SELECT g, hivemall.ndcg(rec, truth{k}) FROM graded_groups GROUP BY g").fetchall())
    con.unregister("graded_groups")
    for group, value in actual.items():
        values = []
        for rec, truth, cut, g in rows:
            if g != group or truth is None:
                continue
            cut = len(rec or []) if k_omitted else cut
            values.append(_java_divide(_hivemall_graded_dcg(rec or [], cut),
                                       _hivemall_graded_dcg(truth, cut)))
        assert_means([value], [hivemall_mean(values)], f"hivemall.ndcg graded, group {group}")


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from([None, 0.0, 0.1, 0.5, 0.5, 0.9, 1.0]),
                          st.sampled_from([None, 0, 1, -1]), st.integers(0, 3)),
                min_size=1, max_size=300))
def test_hivemall_classification_auc_equals_pair_counting(con, rows):
    """auc(score, label) = (pairs ranked right + half the tied pairs) / (P * N), rows with a NULL
    skipped (docs/hivemall.md); groups with one class are an error, left to test_bad_input."""
    groups: dict = {}
    for score, label, g in rows:
        if score is not None and label is not None:
            groups.setdefault(g, []).append((score, label))
    both = [g for g, pairs in groups.items()
            if {1} & {lab for _, lab in pairs} and {0, -1} & {lab for _, lab in pairs}]
    if not both:
        return
    table = pa.table({"score": pa.array([r[0] for r in rows], pa.float64()),
                      "label": pa.array([r[1] for r in rows], pa.int64()),
                      "g": pa.array([r[2] for r in rows], pa.int64())})
    con.register("scored", table)
    actual = dict(con.execute(
        "SELECT g, hivemall.auc(score, label) FROM scored WHERE g IN (SELECT unnest(?)) "
        "GROUP BY g", [both]).fetchall())
    con.unregister("scored")
    for g in both:
        positives = [s for s, lab in groups[g] if lab == 1]
        negatives = [s for s, lab in groups[g] if lab != 1]
        right = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in positives for n in negatives)
        assert actual[g] == pytest.approx(right / (len(positives) * len(negatives)), rel=1e-12)


# --- to_ordered_list (main and hivemall), to_ordered_map, collect_set, collect_list --------------

ORDER_OPTIONS = ("", "-reverse", "-k 2", "-k -2", "-k 3 -reverse", "-dedup",
                 "-k -1 -reverse -dedup", "-reverse_order -k 10")


def ref_to_ordered_list(pairs: list[tuple], options: str) -> list | None:
    """docs: ascending by key; -reverse descending; -k n the n largest descending, -k -n the n
    smallest ascending, -reverse flips either; ties ordered by value; -dedup drops repeated
    (key, value) pairs; rows with a NULL key or value skipped; NULL when none is left."""
    tokens = options.split()
    k = int(tokens[tokens.index("-k") + 1]) if "-k" in tokens else None
    reverse = "-reverse" in tokens or "-reverse_order" in tokens
    kept = [(key, value) for key, value in pairs if key is not None and value is not None]
    if "-dedup" in tokens:
        kept = list(set(kept))
    if not kept:
        return None
    descending = reverse != (k is not None and k > 0)
    ordered = sorted(kept, reverse=descending)
    return [value for _, value in ordered[: abs(k) if k is not None else len(ordered)]]


GROUPED_ROWS = st.lists(
    st.tuples(st.one_of(st.none(), st.integers(0, 6)), st.one_of(st.none(), st.integers(0, 9)),
              st.integers(0, 4)),
    min_size=1, max_size=60)


@SETTINGS
@given(rows=GROUPED_ROWS, options=st.sampled_from(ORDER_OPTIONS))
def test_to_ordered_list_equals_the_reference(con, rows, options):
    con.execute("CREATE OR REPLACE TEMP TABLE long_rows (key INT, value INT, g INT)")
    con.executemany("INSERT INTO long_rows VALUES (?, ?, ?)", rows)
    for schema in ("main", "hivemall"):
        actual = dict(con.execute(
            f"SELECT g, {schema}.to_ordered_list(value, key, ?) FROM long_rows GROUP BY g",
            [options]).fetchall())
        for group, value in actual.items():
            pairs = [(key, v) for key, v, g in rows if g == group]
            assert value == ref_to_ordered_list(pairs, options), (schema, group)
    # One argument: the values sorted by themselves.
    actual = dict(con.execute("SELECT g, to_ordered_list(value) FROM long_rows GROUP BY g")
                  .fetchall())
    for group, value in actual.items():
        assert value == ref_to_ordered_list([(v, v) for _, v, g in rows if g == group], "")


@SETTINGS
@given(rows=GROUPED_ROWS, order=st.sampled_from([None, True, False, 1, 2, -1, -3]))
def test_hivemall_to_ordered_map_and_collections_equal_the_reference(con, rows, order):
    """to_ordered_map: sorted by key, one entry per key (rows arrive in (key, value) order, NULL
    values sorting last, and the last row of a key wins), NULL keys skipped; true = descending,
    k > 0 the k largest keys descending, k < 0 the |k| smallest ascending.
    collect_set / collect_list: the non-NULL values, [] for a group without any."""
    con.execute("CREATE OR REPLACE TEMP TABLE long_rows (key INT, value INT, g INT)")
    con.executemany("INSERT INTO long_rows VALUES (?, ?, ?)", rows)
    third = "" if order is None else f", {str(order).lower()}"
    actual = con.execute(
        f"SELECT g, hivemall.to_ordered_map(key, value{third}), hivemall.collect_set(value), "
        "hivemall.collect_list(value) FROM long_rows GROUP BY g").fetchall()
    for group, mapping, collected_set, collected_list in actual:
        in_group = [(key, v) for key, v, g in rows if g == group]
        last: dict = {}
        for key, value in sorted((p for p in in_group if p[0] is not None),
                                 key=lambda p: (p[0], p[1] is None, p[1] or 0)):
            last[key] = value
        keys = sorted(last)
        if order is True or (isinstance(order, int) and not isinstance(order, bool) and order > 0):
            keys = keys[::-1]
        if isinstance(order, int) and not isinstance(order, bool):
            keys = keys[: abs(order)]
        assert list(mapping.items()) == [(key, last[key]) for key in keys], group
        values = [v for _, v in in_group if v is not None]
        assert sorted(collected_set) == sorted(set(values))
        assert sorted(collected_list) == sorted(values)


# --- every function is covered above -------------------------------------------------------------

def test_every_metric_and_hivemall_function_has_a_property():
    covered = {m.name for m in SQL_RECORDS} | {"ndcg_grades", "edrc", "edrc_preferences",
                                                 *CORRELATIONS}
    # The trec_eval measures are checked against trec_eval's own code (pytrec-eval-terrier).
    covered |= {m.name for m in (*trec_eval.BINARY, *trec_eval.JUDGED)}
    # ir_measures' families are checked against the tools ir_measures runs, query by query:
    # pyndeval (tests/metrics/test_diversity.py), cwl_eval (test_cwl.py), ir_measures, ranx and
    # trec_eval 10.0 (test_peer_measures.py, test_judged_only.py, tests/test_ir_measures_names.py).
    covered |= {m.name for m in (*peers.METRICS, *diversity.METRICS, *cwl.METRICS,
                                 *judged_only.METRICS)}
    # RecTools' and Elliot's classification-style metrics: against RecTools user by user and
    # hand calculations from Elliot's formulas (tests/metrics/test_classification.py).
    covered |= {m.name for m in classification.METRICS}
    # trec_eval 10's preference measures: against the trec_eval 10.0 binary's outputs and the
    # command, query by query (tests/reports/test_prefs_functions.py).
    covered |= {m.name for m in prefs.METRICS}
    assert covered == {m.name for m in METRICS}
    hivemall_functions = {
        row[0] for row in duckrank.connect().execute(
            "SELECT DISTINCT function_name FROM duckdb_functions() WHERE schema_name = 'hivemall' "
            "AND function_name NOT LIKE 'duckrank_%'").fetchall()
    }
    # struct(v1, ..., vn) builds a struct literal and has no metric semantics to check here;
    # its field names are checked in tests/test_bad_input.py.
    # Hivemall's pointwise and classification functions have their references (Hivemall's Java
    # arithmetic written out) in tests/hivemall/test_hivemall_pointwise.py.
    assert hivemall_functions == {*HIVEMALL_MEASURES, "to_ordered_list", "to_ordered_map",
                                  "collect_set", "collect_list", "struct", "logloss", "mae",
                                  "mse", "rmse", "r2", "f1score", "fmeasure"}
