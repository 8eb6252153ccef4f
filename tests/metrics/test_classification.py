"""The AUC family and classification-style metrics (duckrank.metrics.classification, issue 28).

Where the expected values come from:

* ``HAND``: hand calculations, written out beside each case (always run);
* RecTools 0.19.0 (F1Beta, MCC, Accuracy, PartialAUC, PAP, the last two with insufficient_handling
  'exclude' and 'raise' too), on generated data with empty truths, users without hits, hits
  past the cut-off and lists shorter than k: ``test_rectools_live`` runs it
  where rectools is importable (it is not in duckrank's venv: it pins numpy < 2), and its means
  are pinned in ``RECTOOLS_MEANS``, produced on 2026-11-28 in the peer venv /tmp/peers (rectools
  0.19.0, duckdb 2.0.1) by
  ``PYTHONPATH=. /tmp/peers/bin/python -m pytest -q tests/metrics/test_classification.py -k live
  -s`` (the test prints them);
* Elliot (not on PyPI): its LAUC and GAUC formulas, read from its source
  (sisinflab/elliot, elliot/evaluation/metrics/accuracy/AUC/lauc.py and gauc.py), by hand;
* scikit-learn (in duckrank's venv) for roc_auc;
* RecBole's GAUC (recbole/evaluator/metrics.py: sum_u auc_u P_u / sum_u P_u) by hand.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pyarrow as pa
import pytest

import duckrank
from duckrank.matching.arrays import match_hits
from duckrank.metrics import classification

# (call, rec, truth, expected, how it is computed)
HAND = [
    # hits 1 (item 2 at 2), n 2, k 4: (1 + 1) 1 / (1 * 2 + 4)
    ("f_beta({rec}, {truth}, 4)", [1, 2, 3, 4], [2, 9], 2 / 6),
    # beta 2: (1 + 4) 1 / (4 * 2 + 4)
    ("f_beta({rec}, {truth}, 4, beta := 2)", [1, 2, 3, 4], [2, 9], 5 / 12),
    # rec shorter than k: 'k' divides P by 4 (2 / (2 + 4)); 'returned' by K = 2 (2 / (2 + 2))
    ("f_beta({rec}, {truth}, 4)", [1, 2], [2, 9], 2 / 6),
    ("f_beta({rec}, {truth}, 4, denominator := 'returned')", [1, 2], [2, 9], 2 / 4),
    ("f_beta({rec}, {truth}, 4)", [1, 3], [2, 9], 0.0),  # no hit: 0
    ("f_beta({rec}, {truth}, 4)", [1, 3], [], None),  # no relevant item: NULL
    # TP 1, FP 3, FN 1, TN 10 - 4 - 1 = 5: (5 - 3) / sqrt(4 * 2 * 8 * 6)
    ("mcc({rec}, {truth}, 4, catalog_size := 10)", [1, 2, 3, 4], [2, 9], 2 / math.sqrt(384)),
    # every item recommended and relevant: TP 2, FP 0, FN 0, TN 0: denominator 0 -> 0 (RecTools)
    ("mcc({rec}, {truth}, 2, catalog_size := 2)", [1, 2], [1, 2], 0.0),
    # RecTools' Accuracy: TP 1, TN 10 - 4 - 1 = 5: (1 + 5) / 10
    ("accuracy({rec}, {truth}, 4, catalog_size := 10)", [1, 2, 3, 4], [2, 9], 0.6),
    # a list of 2 for k 4: FP = k - TP = 3 all the same (RecTools), so the same (1 + 5) / 10
    ("accuracy({rec}, {truth}, 4, catalog_size := 10)", [1, 2], [2, 9], 0.6),
    # no hit: TP 0, FN 2, TN 10 - 3 - 2 = 5: 5 / 10; every item right: (2 + 0) / 2
    ("accuracy({rec}, {truth}, 3, catalog_size := 10)", [1, 3, 4], [2, 9], 0.5),
    ("accuracy({rec}, {truth}, 2, catalog_size := 2)", [1, 2], [1, 2], 1.0),
    ("accuracy({rec}, {truth}, 2, catalog_size := 10)", [1, 2], [], None),  # no relevant item
    # hits at 2 (1 miss above) and 5 (3 misses above), N = 2: (max(2 - 1, 0) + 0) / (2 * 2)
    ("partial_auc({rec}, {truth}, negatives := 2)", [1, 2, 3, 4, 9], [2, 9], 0.25),
    # N = 4: ((4 - 1) + (4 - 3)) / (2 * 4)
    ("partial_auc({rec}, {truth}, negatives := 4)", [1, 2, 3, 4, 9], [2, 9], 0.5),
    # pAp, N = 1: only the first hit, (1 - 0) / (min(2, 1) * 1); hits at 1 and 3
    ("pap({rec}, {truth}, negatives := 1)", [2, 1, 9], [2, 9], 1.0),
    # pAp, N = 2: hits at 1 (0 above), 3 (1 above): (2 + 1) / (2 * 2)
    ("pap({rec}, {truth}, negatives := 2)", [2, 1, 9], [2, 9], 0.75),
    # RecTools' insufficient_handling (rectools/metrics/auc.py, _AUCMetric.fit and
    # _handle_insufficient_cases): a user is insufficient when its list holds fewer than k
    # (negatives) non-relevant items and some relevant item is not in it. Here 1, 3 are the list's
    # non-relevant items (2 < 3) and 9 is missing: 'ignore' (3 - 0) / (2 * 3), 'exclude' NULL.
    ("partial_auc({rec}, {truth}, negatives := 3)", [2, 1, 3], [2, 9], 0.5),
    ("partial_auc({rec}, {truth}, negatives := 3, insufficient_handling := 'exclude')",
     [2, 1, 3], [2, 9], None),
    # 3 non-relevant items (not fewer than 3): sufficient, (3 - 0) / (2 * 3) as with 'ignore'
    ("partial_auc({rec}, {truth}, negatives := 3, insufficient_handling := 'exclude')",
     [2, 1, 3, 4], [2, 9], 0.5),
    # no relevant item missing: sufficient with no non-relevant item at all, (3 + 3) / (2 * 3)
    ("partial_auc({rec}, {truth}, negatives := 3, insufficient_handling := 'raise')",
     [2, 9], [2, 9], 1.0),
    # the list is rec's top K: cut at 3 it holds 2 non-relevant items and misses 9
    ("partial_auc({rec}, {truth}, 3, negatives := 3, insufficient_handling := 'exclude')",
     [2, 1, 3, 4], [2, 9], None),
    # pAp, N = 2: 1 non-relevant item (1 < 2), 7 missing: 'ignore' hits at 1 (0 above) and 3
    # (1 above): (2 + 1) / (min(3, 2) * 2); 'exclude' NULL
    ("pap({rec}, {truth}, negatives := 2)", [2, 1, 9], [2, 9, 7], 0.75),
    ("pap({rec}, {truth}, negatives := 2, insufficient_handling := 'exclude')", [2, 1, 9],
     [2, 9, 7], None),
    # an empty truth is NULL before any check, 'raise' included
    ("pap({rec}, {truth}, negatives := 2, insufficient_handling := 'raise')", [2, 1], [], None),
    # Elliot's LAUC, candidates 20, n 2: N = 20 - 2 + 1 = 19; top 3 holds the hit at 2 (1 miss
    # above): (19 - 1) / 19 / min(3, 2)
    ("lauc({rec}, {truth}, 3, candidates := 20)", [1, 2, 3, 4, 9], [2, 9], 18 / 19 / 2),
    # Elliot's GAUC per user: whole list, hits at 2 and 5 (3 misses above): ((19 - 1) / 19 +
    # (19 - 3) / 19) / 2
    ("lauc({rec}, {truth}, candidates := 20, denominator := 'truth')", [1, 2, 3, 4, 9], [2, 9],
     (18 / 19 + 16 / 19) / 2),
]


@pytest.fixture(scope="module")
def con():
    return duckrank.connect()


@pytest.mark.parametrize(("call", "rec", "truth", "expected"), HAND)
def test_hand_values(con, call, rec, truth, expected):
    sql = call.format(rec="$rec", truth="$truth::BIGINT[]")
    value = con.execute(f"select {sql}", {"rec": rec, "truth": truth}).fetchall()[0][0]
    if expected is None:
        assert value is None
    else:
        assert value == pytest.approx(expected, abs=1e-15)


def _kernel_value(name, rec, truth, k, options):
    record = next(m for m in classification.METRICS if m.name == name)
    ids = pa.list_(pa.int64())
    hits = match_hits(pa.array([rec], ids), pa.array([truth], ids),
                      None if k is None else np.array([k], np.float64))
    return float(record.kernel(hits, **options)[0])


@pytest.mark.parametrize(("call", "rec", "truth", "expected"), HAND)
def test_kernels_give_the_hand_values(call, rec, truth, expected):
    """The numpy kernels (Spark, evaluate on Arrow) against the same hand values."""
    name = call.split("(")[0]
    arguments = call[call.index("}, {truth}") + len("}, {truth}"):-1]
    k, options = None, {}
    for part in filter(None, (p.strip() for p in arguments.split(","))):
        if ":=" in part:
            key, value = (s.strip() for s in part.split(":="))
            options[key] = value.strip("'") if value.startswith("'") else float(value)
        else:
            k = int(part)
    value = _kernel_value(name, rec, truth, k, options)
    if expected is None:
        assert math.isnan(value)
    else:
        assert value == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize("call", [
    "mcc([1, 2], [1], 2)", "accuracy([1, 2], [1], 2)", "partial_auc([1, 2], [1])",
    "pap([1, 2], [1])", "lauc([1, 2], [1])",
])
def test_a_missing_count_gives_null_and_a_bad_one_an_error(con, call):
    # the count a peer needs and a list does not hold (catalog_size, negatives, candidates):
    # NULL by default, documented; 0 is refused with the option's name
    assert con.sql(f"select {call}").fetchall() == [(None,)]
    option = {"mcc": "catalog_size", "accuracy": "catalog_size", "partial_auc": "negatives",
              "pap": "negatives", "lauc": "candidates"}[call.split("(")[0]]
    with pytest.raises(Exception, match=f"{option} must be a finite number >= 1 or NULL, got 0"):
        con.sql(f"select {call[:-1]}, {option} := 0)").fetchall()


INSUFFICIENT_ERROR = ("{}: insufficient_handling is 'raise' and a list holds 2 non-relevant "
                      "items, fewer than negatives, and misses 1 of its 3 relevant items")


@pytest.mark.parametrize("name", ["partial_auc", "pap"])
def test_raise_names_the_function_and_the_list(con, name):
    # rec 5, 2, 6, 9 against truth 2, 9, 7 with negatives 3: the list holds 2 non-relevant items
    # (5, 6) and misses 7 of the 3 relevant items: RecTools' insufficient user.
    message = INSUFFICIENT_ERROR.format(name)
    with pytest.raises(Exception, match=message):
        con.sql(f"select {name}([5, 2, 6, 9], [2, 9, 7], negatives := 3, "
                "insufficient_handling := 'raise')").fetchall()
    with pytest.raises(ValueError, match=message):
        _kernel_value(name, [5, 2, 6, 9], [2, 9, 7], None,
                      {"negatives": 3, "insufficient_handling": "raise"})
    with pytest.raises(Exception, match=f"{name}: insufficient_handling must be one of "
                       "'ignore', 'raise', 'exclude', got skip"):
        con.sql(f"select {name}([1], [1], negatives := 3, insufficient_handling := 'skip')")\
            .fetchall()


def test_exclude_leaves_the_user_out_of_avg(con):
    # u1 is insufficient (2 non-relevant items, 9 missing); u2 misses nothing: its hit at 2 has 1
    # non-relevant item above, (3 - 1) / (1 * 3). 'exclude' averages u2 alone, as RecTools'
    # mean leaves u1 out; 'ignore' averages u1's (3 - 0) / (2 * 3) too.
    rows = "(values ([2, 1, 3], [2, 9]), ([4, 5, 6, 7], [5])) t(rec, truth)"
    exclude, ignore = con.sql(
        "select avg(partial_auc(rec, truth, negatives := 3, insufficient_handling := 'exclude')), "
        f"avg(partial_auc(rec, truth, negatives := 3)) from {rows}").fetchall()[0]
    assert exclude == pytest.approx(2 / 3, abs=1e-15)
    assert ignore == pytest.approx((0.5 + 2 / 3) / 2, abs=1e-15)


def test_inconsistent_counts_are_errors(con):
    with pytest.raises(Exception, match="mcc: catalog_size must be at least"):
        con.sql("select mcc([1, 2, 3], [1, 7, 8], 3, catalog_size := 3)").fetchall()
    # TN = 4 - 3 - 2 < 0, in SQL and in the kernel
    with pytest.raises(Exception, match="accuracy: catalog_size must be at least k plus the "
                       "relevant items not recommended, got 4"):
        con.sql("select accuracy([1, 2, 3], [1, 7, 8], 3, catalog_size := 4)").fetchall()
    with pytest.raises(ValueError, match="accuracy: catalog_size must be at least"):
        _kernel_value("accuracy", [1, 2, 3], [1, 7, 8], 3, {"catalog_size": 4})
    with pytest.raises(Exception, match="lauc: candidates must be at least the relevant items"):
        con.sql("select lauc([1, 2], [1, 7, 8], candidates := 2)").fetchall()
    with pytest.raises(Exception, match="f_beta: beta must be a finite number > 0, got 0"):
        con.sql("select f_beta([1, 2], [1], beta := 0)").fetchall()


# --- aggregates -----------------------------------------------------------------------------------

def test_gauc_recbole_and_elliot_by_hand(con):
    con.execute("create or replace temp table g as select * from (values "
                "([1, 2, 3, 4], [2, 4]), ([5, 6, 7], [7]), ([8, 9], [8, 9]), ([1], []::INT[])) "
                "t(rec, truth)")
    # RecBole: user 1 AUC (hit 2 above 1 miss, hit 4 above none) 1 / (2 * 2) = 0.25, P = 2;
    # user 2: 0 / (1 * 2) = 0, P = 1; user 3 has no non-hit and user 4 no hit: skipped.
    # (0.25 * 2 + 0 * 1) / 3.
    assert con.sql("select gauc(rec, truth) from g").fetchall()[0][0] == pytest.approx(0.5 / 3,
                                                                                    abs=1e-15)
    # Elliot (candidates 10): user 1 N = 10 - 2 + 1 = 9, hits at 2 (1 miss above) and 4 (2
    # misses above): (8/9 + 7/9) / 2; user 2 N = 10, hit at 3 (2 above): 8/10; user 3 N = 9,
    # none above: 1; user 4 has no relevant item: skipped.
    expected = (15 / 18 + 0.8 + 1.0) / 3
    value = con.sql("select gauc(rec, truth, candidates := 10, weighting := 'users') "
                    "from g").fetchall()[0][0]
    assert value == pytest.approx(expected, abs=1e-15)
    with pytest.raises(Exception, match="gauc: weighting must be one of"):
        con.sql("select gauc(rec, truth, weighting := 'mean') from g").fetchall()


def test_roc_auc_against_scikit_learn(con):
    metrics = pytest.importorskip("sklearn.metrics")
    rng = random.Random(28)
    rows = [(u, round(rng.random(), 1), rng.random() < 0.4) for u in range(40) for _ in range(9)]
    con.execute("create or replace temp table s(u INT, score DOUBLE, label BOOLEAN)")
    con.executemany("insert into s values (?, ?, ?)", rows)
    ours = dict(con.sql("select u, roc_auc(score, label) from s group by u").fetchall())
    for user in range(40):
        labels = [lab for u, _, lab in rows if u == user]
        scores = [s for u, s, _ in rows if u == user]
        if len(set(labels)) < 2:
            assert ours[user] is None
        else:  # scores rounded to 0.1: many ties, half credit each
            assert ours[user] == pytest.approx(metrics.roc_auc_score(labels, scores), abs=1e-15)


def test_pr_auc_against_scikit_learn(con):
    metrics = pytest.importorskip("sklearn.metrics")
    rng = random.Random(29)
    rows = [(u, round(rng.random(), 1), rng.random() < 0.4) for u in range(40) for _ in range(9)]
    con.execute("create or replace temp table s(u INT, score DOUBLE, label BOOLEAN)")
    con.executemany("insert into s values (?, ?, ?)", rows)
    ours = dict(con.sql("select u, pr_auc(score, label) from s group by u").fetchall())
    for user in range(40):
        labels = [lab for u, _, lab in rows if u == user]
        scores = [s for u, s, _ in rows if u == user]
        if not any(labels):  # scikit-learn warns and gives 0; NULL here
            assert ours[user] is None
        else:  # scores rounded to 0.1: tied scores are one threshold
            assert ours[user] == pytest.approx(
                metrics.average_precision_score(labels, scores), abs=1e-15)
    whole = con.sql("select pr_auc(score, label) from s").fetchall()[0][0]
    assert whole == pytest.approx(metrics.average_precision_score(
        [r[2] for r in rows], [r[1] for r in rows]), abs=1e-15)
    # by hand: scores 0.9 (1), 0.8 (0), 0.8 (1), 0.1 (1): thresholds 0.9: P 1/1, R 1/3; 0.8:
    # P 2/3, R 2/3; 0.1: P 3/4, R 1: AP = 1/3 * 1 + 1/3 * 2/3 + 1/3 * 3/4
    hand = con.sql("select pr_auc(s, l) from (values (0.9, 1), (0.8, 0), (0.8, 1), (0.1, 1)) "
                   "t(s, l)").fetchall()[0][0]
    assert hand == pytest.approx((1 + 2 / 3 + 3 / 4) / 3, abs=1e-15)


def test_roc_auc_refuses_other_labels(con):
    with pytest.raises(Exception, match="roc_auc: label must be 0 or 1, got -1"):
        con.sql("select roc_auc(s, l) from (values (0.1, -1), (0.2, 1)) t(s, l)").fetchall()
    with pytest.raises(Exception, match="pr_auc: score must be finite: its sum is nan"):
        con.sql("select pr_auc(s, l) from (values ('nan'::DOUBLE, 0), (0.2, 1)) t(s, l)")\
            .fetchall()


# --- RecTools, live where installed, pinned always ------------------------------------------------

def generated() -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """Rankings of 12 items for 60 users (some empty or short) and truths (some empty)."""
    rng = random.Random(2811)
    ranked, truth = {}, {}
    for user in range(60):
        items = list(range(1, 31))
        rng.shuffle(items)
        ranked[user] = items[: rng.choice([0, 3, 12, 12, 12])]
        truth[user] = sorted(rng.sample(range(1, 31), rng.choice([0, 1, 2, 4, 7])))
    return ranked, truth


CATALOG = 30
RECTOOLS_CASES = [
    ("F1Beta", {"k": 5}, "f_beta(rec, truth, 5)"),
    ("F1Beta", {"k": 5, "beta": 2.0}, "f_beta(rec, truth, 5, beta := 2)"),
    ("MCC", {"k": 5}, f"mcc(rec, truth, 5, catalog_size := {CATALOG})"),
    ("Accuracy", {"k": 5}, f"accuracy(rec, truth, 5, catalog_size := {CATALOG})"),
    ("PartialAUC", {"k": 3}, "partial_auc(rec, truth, negatives := 3)"),
    ("PAP", {"k": 3}, "pap(rec, truth, negatives := 3)"),
    ("PartialAUC", {"k": 3, "insufficient_handling": "exclude"},
     "partial_auc(rec, truth, negatives := 3, insufficient_handling := 'exclude')"),
    ("PAP", {"k": 3, "insufficient_handling": "exclude"},
     "pap(rec, truth, negatives := 3, insufficient_handling := 'exclude')"),
]
# RecTools 0.19.0's means over the users with a relevant item (see the module docstring).
RECTOOLS_MEANS = {
    ("F1Beta", (("k", 5),)): 0.10097939885173927,
    ("F1Beta", (("k", 5), ("beta", 2.0))): 0.11358617741596465,
    ("MCC", (("k", 5),)): -0.036772163667278736,
    ("Accuracy", (("k", 5),)): 0.7375886524822695,  # produced on 2026-11-29, the same way
    ("PartialAUC", (("k", 3),)): 0.0729483282674772,
    ("PAP", (("k", 3),)): 0.10047281323877069,
    ("PartialAUC", (("k", 3), ("insufficient_handling", "exclude"))): 0.09795918367346938,
    ("PAP", (("k", 3), ("insufficient_handling", "exclude"))): 0.13492063492063489,
}


def ours(con, call: str) -> dict[int, float]:
    """The users' values, without the NULLs of insufficient_handling := 'exclude'."""
    ranked, truth = generated()
    rows = [(u, ranked[u], truth[u]) for u in ranked if truth[u]]
    con.execute("create or replace temp table gen(u INT, rec INT[], truth INT[])")
    con.executemany("insert into gen values (?, ?, ?)", rows)
    return dict(con.sql(f"select u, {call} from gen where {call} is not null").fetchall())


@pytest.mark.parametrize(("metric", "params", "call"), RECTOOLS_CASES)
def test_rectools_pinned_means(con, metric, params, call):
    values = ours(con, call)
    mean = sum(values.values()) / len(values)
    assert mean == pytest.approx(RECTOOLS_MEANS[(metric, tuple(params.items()))], abs=1e-12)


def rectools_frames():
    """RecTools' metrics module and the generated users as its reco and interactions frames."""
    rectools = pytest.importorskip("rectools")
    import pandas as pd
    from rectools import metrics

    columns = rectools.Columns
    ranked, truth = generated()
    reco = pd.DataFrame([(u, i, r) for u, items in ranked.items() for r, i in enumerate(items, 1)],
                        columns=[columns.User, columns.Item, columns.Rank])
    interactions = pd.DataFrame([(u, i) for u, items in truth.items() for i in items],
                                columns=[columns.User, columns.Item])
    return metrics, reco, interactions


@pytest.mark.parametrize("name", ["partial_auc", "pap"])
def test_raise_on_the_generated_users(con, name):
    """Some generated lists are empty or short: RecTools raises on these users
    (``test_rectools_live_raises``), and so does duckrank."""
    with pytest.raises(Exception, match=f"{name}: insufficient_handling is 'raise'"):
        ours(con, f"{name}(rec, truth, negatives := 3, insufficient_handling := 'raise')")


@pytest.mark.parametrize("metric", ["PartialAUC", "PAP"])
def test_rectools_live_raises(metric):
    metrics, reco, interactions = rectools_frames()
    with pytest.raises(ValueError, match="users with less then required negatives"):
        getattr(metrics, metric)(k=3, insufficient_handling="raise").calc_per_user(
            reco, interactions)


@pytest.mark.parametrize(("metric", "params", "call"), RECTOOLS_CASES)
def test_rectools_live(con, metric, params, call):
    metrics, reco, interactions = rectools_frames()
    peer = getattr(metrics, metric)(**params)
    if metric in ("MCC", "Accuracy"):  # its ClassificationMetric: the catalogue is given
        theirs = peer.calc_per_user(reco, interactions, list(range(1, CATALOG + 1)))
    else:
        theirs = peer.calc_per_user(reco, interactions)
    values = ours(con, call)
    if "insufficient_handling" in params:  # the same users left out
        assert set(values) == set(theirs.index)
    # RecTools leaves out the users it has no recommendation for (PartialAUC, PAP: fillna(0)
    # over the users of interactions; F1Beta, MCC: the users of interactions only).
    for user, value in theirs.items():
        assert values[user] == pytest.approx(value, abs=1e-12), (metric, user)
    mean = float(np.mean([values[u] for u in values]))
    print(f"    ({metric!r}, {tuple(params.items())!r}): {mean!r},")
    assert mean == pytest.approx(float(theirs.reindex(list(values)).fillna(0).mean()), abs=1e-12)
