"""The records of duckrank.metrics.peers (judged_at, compat, f1_at, num_q): the numpy kernels
against the SQL on generated rows (ties in rec order, repeats, NULL items, negative grades,
empty lists), and by-hand values. Their values against the peers themselves (ir_measures'
Judged and Compat, ranx's f1) are in tests/test_ir_measures_names.py.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pyarrow as pa
import pytest

import duckrank
from duckrank.metrics import peers


@pytest.fixture(scope="module")
def con():
    connection = duckrank.connect(functions=[m.name for m in peers.METRICS])
    yield connection
    connection.close()


def _rows(seed: int = 4, count: int = 60) -> pa.Table:
    rng = random.Random(seed)
    recs, truths = [], []
    for row in range(count):
        pool = [f"i{j}" for j in range(15)]
        rec = [rng.choice(pool) for _ in range(rng.randint(0, 12))]  # repeats included
        if rec and row % 7 == 0:
            rec[0] = None
        recs.append(rec)
        truths.append([(d, float(rng.randint(-1, 3))) for d in rng.sample(pool,
                                                                           rng.randint(0, 8))])
    return pa.table({"row": list(range(count)), "rec": pa.array(recs, pa.list_(pa.string())),
                     "truth": pa.array(truths, pa.map_(pa.string(), pa.float64())),
                     "relevant": pa.array([[d for d, g in t if g > 0] for t in truths],
                                          pa.list_(pa.string()))})


@pytest.mark.parametrize("k", [None, 3, 20])
def test_kernels_match_the_sql(con, k) -> None:
    rows = _rows()
    for metric in peers.METRICS:
        options = {o.name: o.default for o in metric.options}
        if metric.name == "compat":
            options = {"p": 0.8, "normalize": "false" if k == 3 else "true"}
        named = "".join(f", {n} := {'NULL' if v is None else repr(v)}"
                        for n, v in options.items())
        cut = "" if k is None else f", {k}"
        truth = "truth" if metric.truth_type else "relevant"
        sql = [r[0] for r in con.sql(
            f"SELECT {metric.name}(rec, {truth}{cut}{named}) FROM rows ORDER BY row").fetchall()]
        kind = metric.kind
        column = rows[truth]
        cutoff = None if k is None else np.full(len(rows), float(k))
        if cutoff is None and metric.kind.name == "hits":
            cutoff = np.array([float(len(r)) for r in rows["rec"].to_pylist()])
        matched = kind.match(rows["rec"], column, cutoff, metric.name, options)
        values = kind.run(metric.name, metric.kernel, matched, options)
        for row, (ours, theirs) in enumerate(zip(values, sql, strict=True)):
            if theirs is None:
                assert math.isnan(ours), (metric.name, row)
            else:
                assert ours == pytest.approx(theirs, abs=1e-12), (metric.name, row)


def test_by_hand(con) -> None:
    """rec a, b, c, d; truth a: 1, c: -1, x: 0. Judged@3: a and c are judged (a negative grade
    too), b not: 2 / 3. Compat (p 0.95), truth a: 1, c: 2, x: 1 and rec a, b, c: the ideal is
    c, a, x; overlaps 0, 1, 2 at depths 1..3: (0.95 / 2 + 0.95^2 2 / 3) / (1 + 0.95 + 0.95^2).
    f1@2 of [1, 2, 3] against {1, 5}: 1 hit, P = 1 / 2, R = 1 / 2: 0.5."""
    judged, compat, f1, num_q, empty = con.sql(
        "SELECT judged_at(['a', 'b', 'c', 'd'], map(['a', 'c', 'x'], [1.0, -1.0, 0.0]), 3), "
        "compat(['a', 'b', 'c'], map(['a', 'c', 'x'], [1.0, 2.0, 1.0])), "
        "f1_at([1, 2, 3], [1, 5], 2), num_q([1], [1]), num_q([]::INT[], [1])").fetchall()[0]
    assert judged == pytest.approx(2 / 3, abs=1e-15)
    assert compat == pytest.approx((0.95 / 2 + 0.95**2 * 2 / 3) / (1 + 0.95 + 0.95**2),
                                   abs=1e-15)
    assert (f1, num_q, empty) == (0.5, 1.0, 0.0)


def _trec_eval_10() -> str | None:
    """The trec_eval 10.0 binary as the trec_eval command's tests find it
    (tests/reports/trec_eval_oracle.py: $DUCKRANK_TREC_EVAL, the cache, or the build script
    beside the repository); None where it or that finder is not there."""
    import importlib.util
    from pathlib import Path

    finder = Path(__file__).resolve().parents[1] / "reports" / "trec_eval_oracle.py"
    if not finder.exists():
        return None
    spec = importlib.util.spec_from_file_location("trec_eval_oracle", finder)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.binary()


def test_graded_rbp_is_trec_eval_10s(con, tmp_path) -> None:
    """gain := 'trec_eval' against the trec_eval 10.0 binary (-q -m rbp, and p = 0.5) on the
    generated rows (grades -1..3, repeats and unjudged items), to its 4 printed decimals.
    By hand, rec a, x, b, c, e against a: 1, b: 2, c: 3, d: 0, e: -1 (largest grade 3):
    0.1 (1/3 + 0.9^2 2/3 + 0.9^3 3/3) = 0.16023, which the binary prints as 0.1602."""
    import subprocess

    value = con.sql("SELECT graded_rbp(['a', 'x', 'b', 'c', 'e'], map(['a', 'b', 'c', 'd', "
                    "'e'], [1.0, 2.0, 3.0, 0.0, -1.0]))").fetchall()[0][0]
    assert value == pytest.approx(0.1 * (1 / 3 + 0.81 * 2 / 3 + 0.729), abs=1e-15)
    binary = _trec_eval_10()
    if binary is None:
        pytest.skip("no trec_eval 10.0 binary here (tests/reports/trec_eval_oracle.py)")
    rows = _rows(seed=8, count=40)
    qrels, run = [], []
    for row, rec, truth in zip(rows["row"].to_pylist(), rows["rec"].to_pylist(),
                               rows["truth"].to_pylist(), strict=True):
        qrels += [f"q{row} 0 {d} {int(g)}" for d, g in truth]
        seen = [d for j, d in enumerate(rec) if d is not None and d not in rec[:j]]
        run += [f"q{row} Q0 {d} {j + 1} {100 - j} r" for j, d in enumerate(seen)]
    (tmp_path / "qrels").write_text("\n".join(qrels) + "\n")
    (tmp_path / "run").write_text("\n".join(run) + "\n")
    for p in (0.9, 0.5):
        out = subprocess.run([binary, "-q", "-c", "-m", f"rbp.p={p}", str(tmp_path / "qrels"),
                              str(tmp_path / "run")], capture_output=True, text=True, check=True)
        theirs = {line.split()[1]: float(line.split()[2]) for line in out.stdout.splitlines()
                  if line.split()[1] != "all"}
        ours = dict(con.sql(
            f"SELECT 'q' || row, graded_rbp(list_distinct_ordered, truth, persistence := {p}) "
            "FROM (SELECT row, truth, list_filter(list_transform(rec, lambda d, j: CASE WHEN "
            "list_position(rec, d) = j THEN d END), lambda d: d IS NOT NULL) AS "
            "list_distinct_ordered FROM rows)").fetchall())
        compared = 0
        for query, value in theirs.items():
            # 4 printed decimals, an exact half rounded to even (0.03125 -> 0.0312)
            assert ours[query] == pytest.approx(value, abs=5.1e-5), (query, p)
            compared += 1
        assert compared > 20


def test_graded_rbp_is_ranxs(con) -> None:
    """gain := 'ranx' against ranx 0.3.21's rbp (run here), per query, on the generated rows
    with repeats removed (ranx's runs are dicts); ranx leaves out the queries without a
    relevant item from its table (0 there, 0 here)."""
    ranx = pytest.importorskip("ranx")
    rows = _rows(seed=9, count=40)
    qrels, run = {}, {}
    for row, rec, truth in zip(rows["row"].to_pylist(), rows["rec"].to_pylist(),
                               rows["truth"].to_pylist(), strict=True):
        relevant = {d: int(g) for d, g in truth if g >= 1}
        seen = [d for j, d in enumerate(rec) if d is not None and d not in rec[:j]]
        if relevant and seen:
            qrels[f"q{row}"] = relevant
            run[f"q{row}"] = {d: float(100 - j) for j, d in enumerate(seen)}
    theirs = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), "rbp.8", return_mean=False)
    ours = dict(con.sql(
        "SELECT 'q' || row, graded_rbp(list_filter(list_transform(rec, lambda d, j: CASE WHEN "
        "list_position(rec, d) = j THEN d END), lambda d: d IS NOT NULL), truth, "
        "persistence := 0.8, gain := 'ranx') FROM rows").fetchall())
    for query, value in zip(sorted(qrels), theirs, strict=True):
        assert ours[query] == pytest.approx(value, abs=1e-12), query
