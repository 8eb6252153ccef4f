"""The judged-only forms (duckrank.metrics.judged_only, trec_eval's -J): the numpy kernels
against the SQL on generated rows (repeats, NULL items, negative grades, unjudged items, rows
without judged items), a hand calculation, and the depth option's checks. Their values against
pytrec_eval's judged_docs_only_flag (through ir_measures' judged_only=True) are in
tests/test_ir_measures_names.py.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pyarrow as pa
import pytest

import duckrank
from duckrank.metrics import judged_only


@pytest.fixture(scope="module")
def con():
    connection = duckrank.connect(functions=[m.name for m in judged_only.METRICS])
    yield connection
    connection.close()


def _rows(seed: int = 6, count: int = 50) -> pa.Table:
    rng = random.Random(seed)
    recs, truths = [], []
    for row in range(count):
        pool = [f"i{j}" for j in range(15)]
        rec = [rng.choice(pool) for _ in range(rng.randint(0, 12))]
        if rec and row % 6 == 0:
            rec[-1] = None
        recs.append(rec)
        truths.append([(d, float(rng.randint(-1, 3))) for d in rng.sample(pool,
                                                                           rng.randint(0, 9))])
    return pa.table({"row": list(range(count)), "rec": pa.array(recs, pa.list_(pa.string())),
                     "truth": pa.array(truths, pa.map_(pa.string(), pa.float64()))})


@pytest.mark.parametrize("depth", [None, 3])
def test_kernels_match_the_sql(con, depth) -> None:
    rows = _rows()  # noqa: F841 (read by DuckDB)
    table = _rows()
    for metric in judged_only.METRICS:
        options = {o.name: o.default for o in metric.options}
        options["depth"] = depth
        if "gain" in options:
            options["gain"] = "linear"
        if "min_grade" in options:
            options["min_grade"] = 2 if depth else None
        named = "".join(f", {n} := {'NULL' if v is None else repr(v)}"
                        for n, v in options.items())
        sql = [r[0] for r in con.sql(f"SELECT {metric.name}(rec, truth{named}) FROM rows "
                                     "ORDER BY row").fetchall()]
        kind = metric.kind
        matched = kind.match(table["rec"], table["truth"], None, metric.name, options)
        values = kind.run(metric.name, metric.kernel, matched, options)
        for row, (ours, theirs) in enumerate(zip(values, sql, strict=True)):
            if theirs is None:
                assert math.isnan(ours), (metric.name, row)
            else:
                assert ours == pytest.approx(theirs, abs=1e-12), (metric.name, row)


def test_by_hand(con) -> None:
    """rec a (unjudged), b (grade -1: unjudged), c (0), d (2), e (1); truth also f: 3.
    Judged items c, d, e: P@2 over them = 1 / 2 (d), AP = (1/2 + 2/3) / 3 (3 relevant: d, e,
    f). nDCG@2 (linear) = (2 / log2(3)) / (3 + 2 / log2(3))."""
    truth = "map(['b', 'c', 'd', 'e', 'f'], [-1.0, 0.0, 2.0, 1.0, 3.0])"
    rec = "['a', 'b', 'c', 'd', 'e']"
    p, ap, ndcg = con.sql(
        f"SELECT precision_at_judged_only({rec}, {truth}, depth := 2, denominator := 'k'), "
        f"average_precision_judged_only({rec}, {truth}), "
        f"ndcg_judged_only({rec}, {truth}, depth := 2, gain := 'linear')").fetchall()[0]
    assert p == 0.5
    assert ap == pytest.approx((1 / 2 + 2 / 3) / 3, abs=1e-15)
    assert ndcg == pytest.approx((2 / math.log2(3)) / (3 + 2 / math.log2(3)), abs=1e-15)


def test_depth_is_checked(con) -> None:
    with pytest.raises(Exception, match=r"precision_at_judged_only: depth must be a whole "
                                        r"number >= 1 or NULL, got 2.5"):
        con.sql("SELECT precision_at_judged_only(['a'], map(['a'], [1.0]), depth := 2.5)"
                ).fetchall()
    with pytest.raises(Exception, match=r"precision_at_judged_only: depth must be a whole "
                                        r"number >= 1 or NULL"):
        con.sql("SELECT precision_at_judged_only(['a'], map(['a'], [1.0]), depth := 0)"
                ).fetchall()
    kind = judged_only.METRICS[0].kind
    table = _rows(count=3)
    matched = kind.match(table["rec"], table["truth"], None, "precision_at_judged_only", {})
    with pytest.raises(ValueError, match="depth must be a whole number >= 1 or NULL, got 2.5"):
        judged_only.METRICS[0].kernel(matched, depth=2.5)
    assert np.isfinite(judged_only.METRICS[0].kernel(matched, depth=2.0)).any()
