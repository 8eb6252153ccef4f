"""Elliot's MAP and MAR: ``mean_precision_at`` and ``mean_recall_at`` (duckrank.metrics.binary).

Elliot is not on PyPI (nor installable beside duckrank), so the expected values follow its source,
sisinflab/elliot: elliot/evaluation/metrics/accuracy/map/map.py (``MAP.__user_ap``: the mean
over n = 1..cutoff of ``__user_precision``, the relevant items among ``recs[:cutoff][:n]`` / n)
and elliot/evaluation/metrics/accuracy/mar/mar.py (``MAR.__user_ar``: the same mean of the
relevant items among ``recs[:n]`` / len(relevant)); ``eval_user_metric`` of both scores only the
users with a relevant item. The cases in ``HAND`` are worked out by hand beside each;
``elliot_ap`` and ``elliot_ar`` transcribe those two functions line by line (per-row Python is
fine in a test) for generated lists, short, empty and longer than the harmonic table.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pyarrow as pa
import pytest

import duckrank
from duckrank.matching.arrays import match_hits
from duckrank.metrics import binary

# (function, rec, truth, k, expected): each precision@i / recall@i written out.
HAND = [
    # hits b at 2, d at 4; truth {b, d, z}; k 4. precision@1..4 = 0, 1/2, 1/3, 2/4.
    ("mean_precision_at", [1, 2, 3, 4], [2, 4, 9], 4, (0 + 1 / 2 + 1 / 3 + 2 / 4) / 4),
    # recall@1..4 = 0, 1/3, 1/3, 2/3.
    ("mean_recall_at", [1, 2, 3, 4], [2, 4, 9], 4, (0 + 1 / 3 + 1 / 3 + 2 / 3) / 4),
    # a list of 2 for k 5: Elliot divides precision@n by n (map.py: "/ cutoff" with cutoff n + 1)
    # and averages over the 5 cut-offs: 1/1, 1/2, 1/3, 1/4, 1/5.
    ("mean_precision_at", [7, 1], [7], 5, (1 + 1 / 2 + 1 / 3 + 1 / 4 + 1 / 5) / 5),
    # recall@1..5 all 1/2 (the hit at 1 of 2 relevant items).
    ("mean_recall_at", [7, 1], [7, 8], 5, 1 / 2),
    # k omitted: k = len(rec) = 3; hit at 3: precision@3 = 1/3 only.
    ("mean_precision_at", [1, 2, 3], [3], None, (1 / 3) / 3),
    # no hit: 0 (every precision@i is 0)
    ("mean_precision_at", [1, 2], [5], 2, 0.0),
    ("mean_recall_at", [1, 2], [5], 2, 0.0),
    # an empty rec with k: 0, every place a miss
    ("mean_precision_at", [], [5], 3, 0.0),
    # no relevant item: Elliot leaves the user out (NULL here, which avg() skips)
    ("mean_precision_at", [1, 2], [], 2, None),
    ("mean_recall_at", [1, 2], [], 2, None),
    # an empty rec without k: k = 0 cut-offs to average over, NULL
    ("mean_precision_at", [], [5], None, None),
    ("mean_recall_at", [], [5], None, None),
    # a duplicate is a miss: 1 at 1 and 3, 2 at 2; hits at 1, 2 (the second 1 is not one).
    # precision@1..3 = 1, 1, 2/3 (Elliot would count the copy: 1, 1, 1; its lists hold none).
    ("mean_precision_at", [1, 2, 1], [1, 2], 3, (1 + 1 + 2 / 3) / 3),
    # the cut-off drops the hit at 4: precision@1..3 = 0, 1/2, 1/3 as above, mean over 3.
    ("mean_precision_at", [1, 2, 3, 4], [2, 4, 9], 3, (0 + 1 / 2 + 1 / 3) / 3),
]


@pytest.fixture(scope="module")
def con():
    return duckrank.connect()


def _sql_value(con, function, rec, truth, k):
    call = f"{function}($rec::BIGINT[], $truth::BIGINT[]{'' if k is None else ', $k'})"
    parameters = {"rec": rec, "truth": truth} | ({} if k is None else {"k": k})
    return con.execute(f"select {call}", parameters).fetchall()[0][0]


def _kernel_values(function, recs, truths, k):
    record = next(m for m in binary.METRICS if m.name == function)
    ids = pa.list_(pa.int64())
    hits = match_hits(pa.array(recs, ids), pa.array(truths, ids),
                      None if k is None else np.asarray(k, np.float64))
    return record.kernel(hits)


@pytest.mark.parametrize(("function", "rec", "truth", "k", "expected"), HAND)
def test_hand_values(con, function, rec, truth, k, expected):
    value = _sql_value(con, function, rec, truth, k)
    kernel = float(_kernel_values(function, [rec], [truth], None if k is None else [k])[0])
    if expected is None:
        assert value is None
        assert math.isnan(kernel)
    else:
        assert value == pytest.approx(expected, abs=1e-15)
        assert kernel == pytest.approx(expected, abs=1e-15)


def elliot_ap(recs: list[int], cutoff: int, relevant: set[int]) -> float:
    """map.py's ``__user_ap`` over ``__user_precision`` (math.fsum for np.average's sum)."""
    def precision(recommendations, cut):
        return sum([1 for i in recommendations[:cut] if i in relevant]) / cut
    return math.fsum(precision(recs[:cutoff], n + 1) for n in range(cutoff)) / cutoff


def elliot_ar(recs: list[int], cutoff: int, relevant: set[int]) -> float:
    """mar.py's ``__user_ar`` over ``__user_recall``."""
    def recall(recommendations, cut):
        return sum([1 for i in recommendations[:cut] if i in relevant]) / len(relevant)
    return math.fsum(recall(recs[:cutoff], n + 1) for n in range(cutoff)) / cutoff


def generated(seed: int, length: int, cutoffs: tuple[int, ...]):
    """Distinct-item lists (Elliot's come from a model's top k) of 0..length items, some short
    of the cut-off, and truths of 0 to 20 items, with their cut-offs."""
    rng = random.Random(seed)
    rows = []
    for _ in range(80):
        items = list(range(1, 2 * length + 1))
        rng.shuffle(items)
        rec = items[: rng.choice([0, 1, length // 3, length, length])]
        truth = sorted(rng.sample(range(1, 2 * length + 1), rng.choice([0, 1, 3, 10, 20])))
        rows.append((rec, truth, rng.choice(cutoffs)))
    return rows


@pytest.mark.parametrize(("length", "cutoffs"), [
    (12, (1, 3, 5, 10, 20)),
    # cut-offs and positions past the harmonic table (128): its Euler-Maclaurin branch
    (400, (100, 127, 128, 129, 300, 1000)),
])
def test_elliots_code_on_generated_lists(con, length, cutoffs):
    rows = generated(length, length, cutoffs)
    con.execute("create or replace temp table gen(rec BIGINT[], truth BIGINT[], k BIGINT)")
    con.executemany("insert into gen values (?, ?, ?)", rows)
    sql = con.sql("select mean_precision_at(rec, truth, k), mean_recall_at(rec, truth, k) "
                  "from gen").fetchall()
    recs, truths, ks = zip(*rows, strict=True)
    kernels = [_kernel_values(name, list(recs), list(truths), list(ks))
               for name in ("mean_precision_at", "mean_recall_at")]
    for row, (rec, truth, k) in enumerate(rows):
        if not truth:  # eval_user_metric: `if len(self._relevance.get_user_rel(u))`
            assert sql[row] == (None, None)
            assert np.isnan(kernels[0][row]) and np.isnan(kernels[1][row])
            continue
        expected = (elliot_ap(rec, k, set(truth)), elliot_ar(rec, k, set(truth)))
        for got in (sql[row], (kernels[0][row], kernels[1][row])):
            assert got[0] == pytest.approx(expected[0], abs=1e-13), (rec, truth, k)
            assert got[1] == pytest.approx(expected[1], abs=1e-13), (rec, truth, k)


def test_elliots_means_through_evaluate():
    """elliot:MAP@k and elliot:MAR@k through duckrank.evaluate, Elliot's mean over the users with
    a relevant item. u1 ranks a, b, c, relevant b, z: precision@1..3 = 0, 1/2, 1/3, recall@1..3
    = 0, 1/2, 1/2; u2 ranks x, relevant x: precision 1, 1/2, 1/3 (a list of 1 for k 3), recall
    1, 1, 1."""
    import pandas as pd

    run = pd.DataFrame({"user": ["u1"] * 3 + ["u2"], "item": ["a", "b", "c", "x"],
                        "score": [3.0, 2.0, 1.0, 1.0]})
    qrels = pd.DataFrame({"user": ["u1", "u1", "u2"], "item": ["b", "z", "x"]})
    result = duckrank.evaluate(run, qrels, ["elliot:MAP@3", "elliot:MAR@3"])
    u1_ap, u2_ap = (1 / 2 + 1 / 3) / 3, (1 + 1 / 2 + 1 / 3) / 3
    assert result["elliot:MAP@3"][0] == pytest.approx((u1_ap + u2_ap) / 2, abs=1e-15)
    assert result["elliot:MAR@3"][0] == pytest.approx((1 / 3 + 1) / 2, abs=1e-15)


def test_map_truth_and_null_inputs(con):
    # MAP truth (item -> grade): relevant means grade > 0, so 3 is not; hit 2 at position 2.
    value = con.sql("select mean_precision_at(['1', '2', '3'], MAP {'2': 1.0, '3': 0.0}, 3), "
                    "mean_recall_at(['1', '2', '3'], MAP {'2': 1.0, '3': 0.0}, 3)").fetchall()
    assert value[0] == pytest.approx(((1 / 2 + 1 / 3) / 3, (1 + 1) / 3), abs=1e-15)
    assert con.sql("select mean_precision_at(NULL::INT[], [1], 3), "
                   "mean_recall_at([1], NULL::INT[], 3), mean_recall_at([1], [1], NULL)"
                   ).fetchall() == [(None, None, None)]


@pytest.mark.parametrize("function", ["mean_precision_at", "mean_recall_at"])
def test_a_bad_cut_off_names_the_function(con, function):
    with pytest.raises(Exception, match=f"{function}: k must be a positive integer or 'all', "
                       "got 0"):
        con.sql(f"select {function}([1, 2], [1], 0)").fetchall()


def test_harmonic_numbers_both_sides_of_the_table():
    m = np.array([0, 1, 2, 127, 128, 129, 1000, 10**6])
    exact = [math.fsum(1 / i for i in range(1, int(v) + 1)) for v in m]
    assert binary._harmonic(m) == pytest.approx(exact, abs=1e-14)
