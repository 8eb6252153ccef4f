"""Debiased (inverse-propensity weighted) accuracy (duckrank.metrics.debiased): ips_recall,
ips_precision, ips_ndcg.

Where the expected values come from:

* ``test_hand_*``: small examples worked out in the tests' docstrings.
* ``test_*_matches_kernel``: the records' Python kernel (written from the formulas, not from the
  SQL) on generated data with repeats, NULL elements, empty and NULL lists, to 1e-12.
* ``test_equal_propensities_give_the_unweighted_metric``: duckrank's own recall_at,
  precision_at(denominator := 'k') and ndcg (established against trec_eval and the peers
  elsewhere).
* ``test_peer_recpack`` / ``test_pinned_recpack``: recpack 0.3.6's IPSHitRateK. recpack needs
  torch and hyperopt as declared dependencies, but its metrics import without them, so it runs in
  a venv of its own: ``python -m venv /tmp/ips_peer && /tmp/ips_peer/bin/pip install --no-deps
  recpack==0.3.6 && /tmp/ips_peer/bin/pip install numpy==1.26.4 scipy 'pandas<3' scikit-learn
  tqdm pyyaml duckdb==2.0.0 pyarrow pytest``, then ``PYTHONPATH=. /tmp/ips_peer/bin/python -m
  pytest -p no:cacheprovider tests/metrics/test_debiased.py -k recpack`` (run on 2026-11-23:
  passed). Elsewhere it skips, and ``test_pinned_recpack`` keeps the number it printed.
"""

from __future__ import annotations

import math
import re

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from duckrank.metrics import debiased
from duckrank.metrics.record import check_options
from duckrank.render.beyond_accuracy import MACROS

K = 4
TOL = 1e-12
FUNCTIONS = ("ips_recall", "ips_precision", "ips_ndcg")
KERNEL_NAMES = {"ips_recall": "recall", "ips_precision": "precision", "ips_ndcg": "ndcg"}


def generated() -> dict:
    """50 users, lists of 0..7 items from a 30-item catalogue with a skewed popularity; truths
    of 0..5 items with a repeat and a NULL element; one NULL list, one NULL truth; training
    interactions from the same popularity (items 28 and 29 never in train)."""
    rng = np.random.default_rng(2018)
    weights = 1.0 / np.arange(1, 31)
    weights /= weights.sum()
    recs = {u: [int(i) for i in rng.choice(30, size=int(rng.integers(0, 8)), replace=False,
                                           p=weights)] for u in range(50)}
    truth = {u: [int(i) for i in rng.choice(30, size=int(rng.integers(0, 6)), replace=False)]
             for u in range(50)}
    recs[1], truth[2] = None, None
    truth[3] = [5, 5, None, 7]
    recs[3] = [7, None, 5]
    train = [(int(u), int(i)) for u, i in zip(rng.integers(0, 50, 400),
                                              rng.choice(28, 400, p=weights[:28] /
                                                         weights[:28].sum()), strict=True)]
    return {"recs": recs, "truth": truth, "train": train}


DATA = generated()


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    """A plain DuckDB connection with the beyond-accuracy macros; tables recs (user, rec,
    truth), train (user, item) and props (item, propensity: train's estimate, gamma 0)."""
    connection = duckdb.connect()
    for statement in MACROS:
        connection.execute(statement)
    connection.register("recs_arrow", pa.table({
        "user": list(DATA["recs"]),
        "rec": pa.array(list(DATA["recs"].values()), pa.list_(pa.int64())),
        "truth": pa.array([DATA["truth"][u] for u in DATA["recs"]], pa.list_(pa.int64())),
    }))
    connection.execute("CREATE TABLE recs AS SELECT * FROM recs_arrow")
    users, items = zip(*DATA["train"], strict=True)
    connection.register("train_arrow", pa.table({"user": users, "item": items}))
    connection.execute("CREATE TABLE train AS SELECT * FROM train_arrow")
    props = debiased.popularity_propensities(DATA["train"])
    connection.register("props_arrow", pa.table({"item": list(props),
                                                 "propensity": list(props.values())}))
    connection.execute("CREATE TABLE props AS SELECT * FROM props_arrow")
    yield connection
    connection.close()


def per_user(con: duckdb.DuckDBPyConnection, query: str) -> dict:
    return dict(con.execute(query).fetchall())


def assert_close(got: dict, expected: dict) -> None:
    assert got.keys() == expected.keys()
    for user, value in expected.items():
        if value is None:
            assert got[user] is None, user
        else:
            assert got[user] == pytest.approx(value, abs=TOL, rel=TOL), user


@pytest.mark.parametrize("fn", FUNCTIONS)
@pytest.mark.parametrize("estimator", debiased.ESTIMATORS)
@pytest.mark.parametrize("gamma", [0.0, 1.0, 2.5])
def test_train_estimate_matches_kernel(con: duckdb.DuckDBPyConnection, fn: str, estimator: str,
                                       gamma: float) -> None:
    """Propensities estimated from train; items 28 and 29 (never in train) take
    min_propensity."""
    expected = debiased.ips_kernel(
        KERNEL_NAMES[fn], DATA["recs"], DATA["truth"], K,
        debiased.popularity_propensities(DATA["train"], gamma), estimator, min_propensity=0.05)
    got = per_user(con, f"FROM {fn}('recs', {K}, train := 'train', gamma := {gamma}, "
                        f"estimator := '{estimator}', min_propensity := 0.05)")
    assert_close(got, expected)


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_propensity_table_matches_kernel(con: duckdb.DuckDBPyConnection, fn: str) -> None:
    """The same propensities given as a table give the same numbers, and min_propensity also
    clips (0.2 is above several of them)."""
    props = debiased.popularity_propensities(DATA["train"])
    for clip in (0.05, 0.2):
        expected = debiased.ips_kernel(KERNEL_NAMES[fn], DATA["recs"], DATA["truth"], K, props,
                                       "ips", min_propensity=clip)
        got = per_user(con, f"FROM {fn}('recs', {K}, propensities := 'props', estimator := "
                            f"'ips', min_propensity := {clip})")
        assert_close(got, expected)


def test_equal_propensities_give_the_unweighted_metric(con: duckdb.DuckDBPyConnection) -> None:
    """With every propensity 0.5 'snips' is duckrank's recall_at, precision_at(denominator :=
    'k') and ndcg, and 'ips' is twice that (each weight is 2). Users with a NULL list or an
    empty truth are left out: there the definitions differ by design (precision_at gives 0 for
    an empty truth, where a mean weight, and so these, are undefined: NULL)."""
    import duckrank

    connection = duckrank.connect()
    try:
        connection.register("recs_arrow", con.sql("FROM recs").to_arrow_table())
        connection.execute("CREATE TABLE r AS SELECT user, rec, list_filter(truth, lambda x: x "
                           "IS NOT NULL) AS truth FROM recs_arrow WHERE rec IS NOT NULL AND "
                           "len(list_filter(truth, lambda x: x IS NOT NULL)) > 0")
        connection.execute("CREATE TABLE half AS SELECT range AS item, 0.5 AS propensity "
                           "FROM range(30)")
        for fn, accuracy in (("ips_recall", f"recall_at(rec, truth, {K})"),
                             ("ips_precision", f"precision_at(rec, truth, {K}, denominator := "
                                               "'k')"),
                             ("ips_ndcg", f"ndcg(rec, truth, {K})")):
            plain = per_user(connection, f"SELECT user, {accuracy} FROM r")
            for estimator, scale in (("snips", 1), ("ips", 2)):
                got = per_user(connection, f"FROM {fn}('r', {K}, propensities := 'half', "
                                           f"estimator := '{estimator}')")
                assert_close(got, {u: None if v is None else scale * v for u, v in plain.items()})
    finally:
        connection.close()


def test_hand_example() -> None:
    """k = 2. User 1: rec [10, 20, 30], truth {20, 40}; user 2: rec [40, 10], truth {10};
    propensities 10: 1, 20: 0.5, 40: 0.25, so w = 1, 2, 4.

    User 1 hits 20 at rank 2 (40 is not in the top 2); mean weight (2 + 4) / 2 = 3.
      ips_recall: ips 2 / 2 = 1, snips 2 / (2 + 4) = 1/3
      ips_precision: ips 2 / 2 = 1, snips 1 / 3
      ips_ndcg: ips (2 / log2 3) / (1 + 1 / log2 3) = 0.7737056144690831, snips that / 3
    User 2 hits 10 at rank 2; one relevant item, so snips = ips / 1:
      recall 1, precision 1 / 2, ndcg (1 / log2 3) / 1 = 0.6309297535714575.
    User 3 (empty list) gives 0; users 4 (empty truth) and 5 (NULL truth) NULL."""
    con = duckdb.connect()
    for statement in MACROS:
        con.execute(statement)
    con.execute("CREATE TABLE r AS SELECT * FROM (VALUES (1, [10, 20, 30], [20, 40]), "
                "(2, [40, 10], [10]), (3, [], [10]), (4, [10], []), (5, [10], NULL)) "
                "t(user, rec, truth)")
    con.execute("CREATE TABLE p AS SELECT * FROM (VALUES (10, 1.0), (20, 0.5), (40, 0.25)) "
                "t(item, propensity)")
    ndcg1 = (2 / math.log2(3)) / (1 + 1 / math.log2(3))
    expected = {
        "ips_recall": ({1: 1.0, 2: 1.0}, {1: 1 / 3, 2: 1.0}),
        "ips_precision": ({1: 1.0, 2: 0.5}, {1: 1 / 3, 2: 0.5}),
        "ips_ndcg": ({1: ndcg1, 2: 1 / math.log2(3)}, {1: ndcg1 / 3, 2: 1 / math.log2(3)}),
    }
    for fn, (ips, snips) in expected.items():
        for estimator, values in (("ips", ips), ("snips", snips)):
            got = per_user(con, f"FROM {fn}('r', 2, propensities := 'p', estimator := "
                                f"'{estimator}')")
            assert_close(got, {**values, 3: 0.0, 4: None, 5: None})


def test_hand_popularity_propensities() -> None:
    """Train rows: item 1 four times, item 2 once, item 3 twice (max n = 4).
    gamma = 0: p = (n / 4) ^ 0.5 = 1, 0.5, 0.7071...; gamma = 1: p = n / 4 = 1, 0.25, 0.5.
    One user, rec [2, 3], truth {1, 2, 3}, k = 2, snips recall = (w2 + w3) / (w1 + w2 + w3):
    gamma 0: (2 + sqrt 2) / (1 + 2 + sqrt 2) = 0.7734590803390136;
    gamma 1: (4 + 2) / (1 + 4 + 2) = 6 / 7."""
    con = duckdb.connect()
    for statement in MACROS:
        con.execute(statement)
    con.execute("CREATE TABLE tr AS SELECT * FROM (VALUES (1, 1), (2, 1), (3, 1), (4, 1), "
                "(1, 2), (1, 3), (2, 3)) t(user, item)")
    con.execute("CREATE TABLE r AS SELECT 9 AS user, [2, 3] AS rec, [1, 2, 3] AS truth")
    for gamma, value in ((0, (2 + math.sqrt(2)) / (3 + math.sqrt(2))), (1, 6 / 7)):
        got = con.execute(f"FROM ips_recall('r', 2, train := 'tr', gamma := {gamma})").fetchall()
        assert got == [(9, pytest.approx(value, abs=TOL))]


@pytest.mark.parametrize(("query", "message"), [
    ("FROM ips_recall('recs', 3)", "ips_recall: give propensities (a table of item and "
     "propensity) or train (a table of training interactions), exactly one"),
    ("FROM ips_recall('recs', 3, propensities := 'props', train := 'train')",
     "ips_recall: give propensities"),
    ("FROM ips_ndcg('recs', 0, train := 'train')", "ips_ndcg: k must be a positive integer, "
     "got 0"),
    ("FROM ips_precision('recs', 3, train := 'train', gamma := -1)",
     "ips_precision: gamma must be a finite number > -1, got -1"),
    ("FROM ips_precision('recs', 3, train := 'train', gamma := 'nan'::DOUBLE)",
     "ips_precision: gamma must be a finite number > -1, got nan"),
    ("FROM ips_recall('recs', 3, train := 'train', estimator := 'dr')",
     "ips_recall: estimator must be one of 'ips', 'snips', got dr"),
    ("FROM ips_recall('recs', 3, train := 'train', min_propensity := 2)",
     "ips_recall: min_propensity must be a finite number in [0, 1], got 2"),
    # Items 28 and 29 are relevant for some user but never in train.
    ("FROM ips_recall('recs', 3, train := 'train')", "re:ips_recall: item 2[89] of the truth of "
     "user [0-9]+ has no propensity: it is not in train \\(the training interactions"),
])
def test_errors_name_function_argument_and_value(con: duckdb.DuckDBPyConnection, query: str,
                                                 message: str) -> None:
    pattern = message[3:] if message.startswith("re:") else re.escape(message)
    with pytest.raises(duckdb.Error, match=pattern):
        con.execute(query).fetchall()


@pytest.mark.parametrize(("option", "value", "shown"), [
    ("gamma", -1, "-1"), ("estimator", "dr", "dr"), ("min_propensity", 2, "2"),
])
def test_python_check_says_what_the_macro_says(con: duckdb.DuckDBPyConnection, option: str,
                                               value: object, shown: str) -> None:
    """The options' Python check (``check_options`` over ``debiased.OPTIONS``, for the
    engines without the macros) raises the macro's text, the value shown as Python does."""
    values = {o.name: o.default for o in debiased.OPTIONS} | {option: value}
    with pytest.raises(ValueError) as python:
        check_options("ips_recall", debiased.OPTIONS, values)
    literal = f"'{value}'" if isinstance(value, str) else value
    with pytest.raises(duckdb.Error) as sql:
        con.execute(f"FROM ips_recall('recs', 3, train := 'train', {option} := {literal})")
    text = str(python.value).removesuffix(repr(value))
    assert text.endswith(", got ") and str(sql.value).endswith(text + shown)


def test_bad_propensity_tables_are_refused() -> None:
    """A propensity of 0 or above 1, or an item given twice, would give a wrong or infinite
    weight in silence."""
    con = duckdb.connect()
    for statement in MACROS:
        con.execute(statement)
    con.execute("CREATE TABLE r AS SELECT 1 AS user, [1, 2] AS rec, [1] AS truth")
    for rows, message in (("(1, 0.5), (2, 0.0)", "ips_recall: the propensity of item 2 must be "
                                                 "in (0, 1], got 0.0"),
                          ("(1, 1.5)", "ips_recall: the propensity of item 1 must be in (0, 1], "
                                       "got 1.5"),
                          ("(1, 0.5), (1, 0.5)", "ips_recall: propensities holds item 1 more "
                                                 "than once")):
        con.execute(f"CREATE OR REPLACE TABLE p AS SELECT * FROM (VALUES {rows}) "
                    "t(item, propensity)")
        with pytest.raises(duckdb.Error, match=re.escape(message)):
            con.execute("FROM ips_recall('r', 2, propensities := 'p')").fetchall()


# --- recpack ----------------------------------------------------------------------------------


def _recpack_inputs():
    """recpack's IPSHitRateK over the generated data: users and items as matrix indices, the
    truths (NULL elements and NULL truths dropped) as y_true, each user's top K as y_pred with
    scores K, K - 1, ...; fitted on y_true (its docstring's suggestion)."""
    from scipy.sparse import csr_matrix

    truth = {u: sorted({i for i in (t or []) if i is not None}) for u, t in DATA["truth"].items()}
    rows = [(u, i) for u, items in truth.items() for i in items]
    y_true = csr_matrix((np.ones(len(rows)), ([r[0] for r in rows], [r[1] for r in rows])),
                        shape=(50, 30))
    pred = [(u, i, K - r) for u, items in DATA["recs"].items()
            for r, i in enumerate([i for i in (items or [])[:K] if i is not None])]
    y_pred = csr_matrix(([p[2] for p in pred], ([p[0] for p in pred], [p[1] for p in pred])),
                        shape=(50, 30))
    return y_true, y_pred


def _duckrank_ips_hits(con: duckdb.DuckDBPyConnection, propensities: dict) -> float:
    """K x ips_precision('ips') with recpack's propensities as a table, averaged over the users
    with a truth (recpack leaves out users without one, as these give NULL)."""
    con.register("rp_arrow", pa.table({"item": list(propensities),
                                       "propensity": list(propensities.values())}))
    con.execute("CREATE OR REPLACE TABLE rp AS SELECT * FROM rp_arrow")
    # recpack drops NULL elements (later items move up): its lists are the clean ones.
    con.execute("CREATE OR REPLACE TABLE clean AS SELECT user, list_filter(coalesce(rec, []), "
                "lambda x: x IS NOT NULL) AS rec, truth FROM recs")
    return con.execute(f"SELECT avg(ips_precision) * {K} FROM ips_precision("
                       f"'clean', {K}, propensities := 'rp', estimator := 'ips', "
                       "min_propensity := 1e-4)").fetchall()[0][0]


RECPACK_VALUE = 6.848373983739837  # printed by test_peer_recpack on 2026-11-23


def test_peer_recpack(con: duckdb.DuckDBPyConnection) -> None:
    pytest.importorskip("recpack")
    from recpack.metrics import IPSHitRateK

    y_true, y_pred = _recpack_inputs()
    metric = IPSHitRateK(K)
    metric.fit(y_true)
    metric.calculate(y_true, y_pred)
    shares = np.asarray(metric.item_prob_).ravel()
    propensities = {i: float(p) for i, p in enumerate(shares) if p > 0}
    got = _duckrank_ips_hits(con, propensities)
    print("recpack IPSHitRateK", metric.value)
    assert got == pytest.approx(metric.value, abs=TOL, rel=TOL)
    assert metric.value == pytest.approx(RECPACK_VALUE, abs=TOL, rel=TOL)


def test_pinned_recpack(con: duckdb.DuckDBPyConnection) -> None:
    """recpack's propensities: each item's share of the truths' interactions (counted here)."""
    counts: dict[int, int] = {}
    for t in DATA["truth"].values():
        for i in {i for i in (t or []) if i is not None}:
            counts[i] = counts.get(i, 0) + 1
    total = sum(counts.values())
    got = _duckrank_ips_hits(con, {i: n / total for i, n in counts.items()})
    assert got == pytest.approx(RECPACK_VALUE, abs=TOL, rel=TOL)
