"""The xCLiMF paper's experiment (Shi et al., "xCLiMF: Optimizing Expected Reciprocal Rank for Data
with Multiple Levels of Relevance", RecSys 2013, section 3) on any ratings file:
``run_xclimf_experiment(ratings)`` in Python, ``duckrank experiment xclimf RATINGS`` on the command
line (docs/protocol.md, "The experiment").

For each Given N (5, 10, 15): a Given-N split (``given_n_split``: 5 test items per user, N
training items), the candidates (``sample_candidates``: the test items plus 1,000 sampled unrated
items, the 3 most rated excluded; or every unrated item), then

* Table 1: NDCG@5 and ERR@5 (graded) of PopRec, xCLiMF and a seeded random ranking (not in the
  paper: a floor to read the others against), with the Wilcoxon signed-rank p-value of xCLiMF
  against PopRec;
* Table 3: MRR (relevant: a test rating >= the threshold, over the whole ranked candidate list)
  and ERR@5 of CLiMF trained on the training ratings >= each threshold, against xCLiMF (trained
  on the graded ratings, as in Table 1), with Wilcoxon p-values.

Training is numpy (``duckrank.models``); everything else is SQL on one DuckDB connection: scores
are inner products of the factor tables, each user's ranking is ``to_ordered_list``, the metrics
are duckrank's ``ndcg``, ``err`` and ``mrr``, the tests ``wilcoxon``. The paper's numbers (ML1m,
its Tables 1 and 3) are in ``PAPER_TABLE1`` and ``PAPER_TABLE3`` and are printed beside ours.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from duckrank import seeded_hash
from duckrank.engines.duckdb import connect
from duckrank.files.trec import file_paths
from duckrank.models import climf, poprec, xclimf
from duckrank.render.quoting import quote_literal
from duckrank.render.trec import LITERAL_PATH

GIVEN = (5, 10, 15)  # the paper's Given conditions for ML1m
TEST_ITEMS = 5
CANDIDATES = 1000
EXCLUDE_POPULAR = 3
CUTOFF = 5  # ERR@5 and NDCG@5
# Training: 10 times the paper's learning rate, for 100 epochs. From factors of 0.01 the paper's
# 0.001 needs about 1,000 epochs to move them; and training much past the held-out ERR's peak
# ranks low grades above high ones, the optimum of eq. 8 (docs/models.md, "Why xCLiMF can fall
# below random"). On the synthetic data the peak is at about 200, 150 and 100 epochs of 0.01 for
# Given 5, 10 and 15, whose training sets have as many ratings per item as ML1m's (8 to 25).
LEARNING_RATE = 0.01
EPOCHS = 100

# The xCLiMF paper (RecSys 2013) on ML1m. Table 1: (system, given) -> (NDCG@5, ERR@5); Table 3:
# (system, threshold) -> (MRR, ERR). The paper does not say which Given condition Table 3 used; its
# xCLiMF ERR (0.054 at both thresholds) is Table 1's Given 15 value.
PAPER_TABLE1 = {
    ("PopRec", 5): (0.024, 0.023), ("PopRec", 10): (0.030, 0.029),
    ("PopRec", 15): (0.025, 0.025),
    ("xCLiMF", 5): (0.035, 0.038), ("xCLiMF", 10): (0.037, 0.044),
    ("xCLiMF", 15): (0.043, 0.054),
}
PAPER_TABLE3 = {
    ("CLiMF", 4): (0.088, 0.032), ("CLiMF", 5): (0.062, 0.043),
    ("xCLiMF", 4): (0.104, 0.054), ("xCLiMF", 5): (0.064, 0.054),
}

# Names of the connection's temporary tables; the connection is the experiment's own.
_RATINGS, _SPLIT, _TEST, _CANDIDATES = "xp_ratings", "xp_split", "xp_test", "xp_candidates"


@dataclass(frozen=True)
class Settings:
    """What the experiment was run with (the defaults are the paper's but for ``LEARNING_RATE``
    and ``EPOCHS``, see there; the paper gives no epoch count). In a result, ``thresholds`` and
    ``max_rating`` hold the values used."""

    given: tuple[int, ...] = GIVEN
    test_items: int = TEST_ITEMS
    candidates: int | None = CANDIDATES  # None: every unrated item (the full catalogue)
    exclude_popular: int = EXCLUDE_POPULAR
    thresholds: tuple[float, ...] | None = None  # None: the two highest ratings in the data
    max_rating: float | None = None  # None: the highest rating in the data
    dims: int = xclimf.DIMS
    regularization: float = xclimf.REGULARIZATION
    learning_rate: float = LEARNING_RATE
    epochs: int = EPOCHS
    seed: int = 0


@dataclass(frozen=True)
class ExperimentResult:
    """The experiment's tables (Arrow), and ``text``: them laid out as the paper's tables, with
    the paper's numbers beside.

    * ``table1``: given, system, users, ndcg, err, ndcg_p, ndcg_diff, err_p, err_diff (p:
      Wilcoxon, xCLiMF against PopRec, on xCLiMF's rows; diff: the mean of xCLiMF - PopRec
      over the tested users, whose sign is the direction the text marks + or -).
    * ``table3``: given, threshold, system, users (with a test rating >= threshold), mrr, err,
      mrr_p, mrr_diff, err_p, err_diff (xCLiMF against CLiMF at that threshold, on xCLiMF's
      rows).
    * ``setup``: per given: the users split, those with too few ratings (reported by the split,
      left out), the sampled candidates per test user (min and max), the catalogue size.
    * ``training``: per given and model: seconds, the objective (eq. 8) after the first and the
      last epoch.
    * ``per_user``: given, system, metric, user, value: every number the means come from.
    """

    settings: Settings
    table1: pa.Table
    table3: pa.Table
    setup: pa.Table
    training: pa.Table
    per_user: pa.Table
    text: str


# --- reading ratings -----------------------------------------------------------------------------

def _load(con: duckdb.DuckDBPyConnection, ratings: str | Path | pa.Table) -> None:
    """Ratings into the table ``_RATINGS`` (user, item, rating DOUBLE, timestamp): an Arrow table
    or a file: Parquet (by its suffix), MovieLens ``user::item::rating::timestamp`` lines (by a
    ``::`` in the first line), or CSV with a header naming user, item, rating (timestamp
    optional). The path names one file, as in every other command: ``*``, ``?`` and ``[`` are
    part of its name (``ratings[1].csv`` is never ``ratings1.csv``; DuckDB's readers would take it
    as a glob pattern), ``~`` the home folder; it reaches DuckDB as a query parameter."""
    if isinstance(ratings, pa.Table):
        con.register("xp_arrow", ratings)
        source, parameters = "xp_arrow", []
    else:
        try:
            (name,) = file_paths(con, ratings, "ratings")
        except ValueError as error:
            raise ValueError(f"run_xclimf_experiment: {error}") from None
        path = Path(name)
        if path.suffix.lower() in (".parquet", ".pq"):
            source = "read_parquet(?)"
        else:
            with path.open(encoding="utf-8", errors="replace") as handle:
                first = handle.readline()
            source = ("read_csv(?, delim = '::', header = false, columns = {'user': 'VARCHAR', "
                      "'item': 'VARCHAR', 'rating': 'DOUBLE', 'timestamp': 'BIGINT'})"
                      if "::" in first else "read_csv(?, header = true)")
        # the pattern of DuckDB's readers that matches this one file only (LITERAL_PATH)
        parameters = [con.execute(f"SELECT {LITERAL_PATH} FROM (SELECT ? AS path)",
                                  [name]).fetchall()[0][0]]
    columns = [c[0] for c in con.execute(f"SELECT * FROM {source} LIMIT 0",
                                         parameters).description]
    missing = [c for c in ("user", "item", "rating") if c not in columns]
    if missing:
        raise ValueError(f"run_xclimf_experiment: ratings must have columns user, item, rating "
                         f"(timestamp optional); {missing} missing among {columns}")
    timestamp = "timestamp" if "timestamp" in columns else "NULL"
    # MovieLens ids are integers: kept as BIGINT where every id is one (the models' int64 ids)
    con.execute(f"""CREATE OR REPLACE TEMP TABLE {_RATINGS} AS
        SELECT user, item, CAST(rating AS DOUBLE) AS rating, {timestamp} AS timestamp
        FROM {source}""", parameters)
    for column in ("user", "item"):
        if con.execute(f"SELECT bool_and(try_cast({column} AS BIGINT) IS NOT NULL) "
                       f"FROM {_RATINGS}").fetchall()[0][0]:
            con.execute(f"ALTER TABLE {_RATINGS} ALTER {column} TYPE BIGINT")
    bad = con.execute(f"""SELECT count(*), any_value(rating) FROM {_RATINGS}
                          WHERE rating IS NULL OR isnan(rating) OR rating < 0""").fetchall()[0]
    if bad[0]:
        raise ValueError(f"run_xclimf_experiment: {bad[0]} ratings are missing or negative "
                         f"(e.g. {bad[1]}); ratings are grades >= 0")


def synthetic_ratings(users: int = 500, items: int = 300, ratings_per_user: int = 30,
                      dims: int = 5, seed: int = 0) -> pa.Table:
    """Graded ratings with a known latent structure, for trying the experiment without data.

    User and item factors are normal(0, 1/dims) draws (u_m, v_i), items get a popularity bias
    b_i ~ normal(0, 0.5), and user m's affinity for item i is a_mi = <u_m, v_i> + b_i. Each user
    rates ``ratings_per_user`` distinct items drawn with probability proportional to exp(2 a_mi)
    (Gumbel top-k): users rate what they like, as in MovieLens, so held-out rated items are
    predictable from the training ones. The rating is a_mi plus normal(0, 0.25) noise cut into 1..5
    at its own quintiles over all ratings (20% each). Columns user, item, rating, timestamp (the
    order of each user's choices)."""
    if min(users, items, dims) < 1 or not 0 < ratings_per_user <= items:
        raise ValueError(f"synthetic_ratings: need users, items, dims >= 1 and 0 < "
                         f"ratings_per_user <= items, got users={users}, items={items}, "
                         f"dims={dims}, ratings_per_user={ratings_per_user}")
    rng = np.random.default_rng(seed)
    user_factors = rng.normal(0.0, 1 / math.sqrt(dims), (users, dims))
    item_factors = rng.normal(0.0, 1 / math.sqrt(dims), (items, dims))
    affinity = user_factors @ item_factors.T + rng.normal(0.0, 0.5, items)
    chosen = np.argsort(-(2 * affinity + rng.gumbel(size=affinity.shape)), axis=1)[
        :, :ratings_per_user]
    values = np.take_along_axis(affinity, chosen, axis=1).ravel()
    noisy = values + rng.normal(0.0, 0.25, values.size)
    grades = 1 + np.searchsorted(np.quantile(noisy, [0.2, 0.4, 0.6, 0.8]), noisy)
    return pa.table({
        "user": pa.array(np.repeat(np.arange(users), ratings_per_user), pa.int64()),
        "item": pa.array(chosen.ravel(), pa.int64()),
        "rating": pa.array(grades.astype(np.float64)),
        "timestamp": pa.array(np.tile(np.arange(ratings_per_user), users), pa.int64()),
    })


# --- one Given condition -------------------------------------------------------------------------

def _scores(con: duckdb.DuckDBPyConnection, system: str, key: int, model: xclimf.Factors
            ) -> str:
    """SQL rows (system, user, item, score) of a factor model over the candidates: the inner
    product of the factors; an item or user without factors (not in the training data) scores
    -infinity, below every trained one."""
    con.register(f"xp_users_{key}", model.users)
    con.register(f"xp_items_{key}", model.items)
    return f"""SELECT {quote_literal(system)} AS system, c.user, c.item,
        coalesce(list_dot_product(u.factors, i.factors), '-infinity'::DOUBLE) AS score
      FROM {_CANDIDATES} c LEFT JOIN xp_users_{key} u ON c.user = u.user
      LEFT JOIN xp_items_{key} i ON c.item = i.item"""


def _fit(system: str, given: int, fit: Callable[..., xclimf.Factors], *args: Any,
         **options: Any) -> xclimf.Factors:
    """``fit(*args, **options)``; a diverged training is an error naming the system and the
    Given N too (a diverged model ranks by huge or NaN scores: numbers with no meaning)."""
    try:
        return fit(*args, **options)
    except xclimf.DivergenceError as error:
        raise xclimf.DivergenceError(
            f"run_xclimf_experiment: {system} at Given {given}: {error}") from None


def _train(con: duckdb.DuckDBPyConnection, settings: Settings, max_rating: float,
           thresholds: tuple[float, ...], given: int) -> tuple[list[str], list[dict]]:
    """Fit the models on the split's training rows: their score queries and training rows."""
    train = con.sql(f"SELECT user, item, rating FROM {_SPLIT} WHERE part = 'train'"
                    ).to_arrow_table()
    users, items = train["user"].to_numpy(), train["item"].to_numpy()
    ratings = train["rating"].to_numpy()
    options = {"dims": settings.dims, "regularization": settings.regularization,
               "learning_rate": settings.learning_rate, "epochs": settings.epochs,
               "seed": settings.seed}
    con.register("xp_poprec", poprec.fit(items))
    queries = [
        f"""SELECT 'PopRec' AS system, c.user, c.item,
              CAST(coalesce(p.score, 0) AS DOUBLE) AS score
            FROM {_CANDIDATES} c LEFT JOIN xp_poprec p ON c.item = p.item""",
        # a seeded random ranking, salted apart from the split's hash of (seed, user, item)
        f"""SELECT 'Random', user, item,
              CAST({seeded_hash.sql(str(settings.seed), 'user', 'item', "'random'")} AS DOUBLE)
            FROM {_CANDIDATES}""",
    ]
    models = {"xCLiMF": _fit("xCLiMF", given, xclimf.fit, users, items, ratings,
                             max_rating=max_rating, **options)}
    for threshold in thresholds:
        relevant = ratings >= threshold
        if relevant.any():
            system = f"CLiMF>={threshold:g}"
            models[system] = _fit(system, given, climf.fit, users[relevant], items[relevant],
                                  **options)
    training = []
    for key, (system, model) in enumerate(models.items()):
        queries.append(_scores(con, system, key, model))
        training.append({"given": given, "model": system, "seconds": model.seconds,
                         "objective_first": model.objective[0],
                         "objective_last": model.objective[-1]})
    return queries, training


def _condition(con: duckdb.DuckDBPyConnection, settings: Settings, max_rating: float,
               thresholds: tuple[float, ...], given: int) -> tuple[dict, list[dict]]:
    """Split, sample, train, rank and score one Given-N condition into ``xp_per_user``."""
    seed = settings.seed
    con.execute(f"""CREATE OR REPLACE TEMP TABLE {_SPLIT} AS SELECT * FROM given_n_split(
        '{_RATINGS}', {given}, test_items := {settings.test_items}, seed := {seed})""")
    con.execute(f"CREATE OR REPLACE TEMP VIEW {_TEST} AS SELECT * FROM {_SPLIT} "
                "WHERE part = 'test'")
    n = "NULL" if settings.candidates is None else settings.candidates
    con.execute(f"""CREATE OR REPLACE TEMP TABLE {_CANDIDATES} AS SELECT * FROM sample_candidates(
        '{_SPLIT}', '{_TEST}', n := {n}, exclude_popular := {settings.exclude_popular},
        seed := {seed})""")
    setup = con.execute(f"""SELECT
        (SELECT count(DISTINCT user) FROM {_SPLIT} WHERE part = 'test'),
        (SELECT count(DISTINCT user) FROM {_SPLIT} WHERE part = 'too_few'),
        (SELECT count(DISTINCT item) FROM {_SPLIT}),
        min(sampled), max(sampled)
      FROM (SELECT user, count(*) FILTER (sampled) AS sampled FROM {_CANDIDATES} GROUP BY user)
    """).fetchall()[0]
    if not setup[0]:
        raise ValueError(f"run_xclimf_experiment: Given {given} leaves no test user (every user "
                         f"has fewer than {given} + {settings.test_items} ratings)")
    queries, training = _train(con, settings, max_rating, thresholds, given)
    con.execute(f"""CREATE OR REPLACE TEMP TABLE xp_ranked AS
        SELECT system, user, to_ordered_list(item, score, '-reverse') AS rec
        FROM ({' UNION ALL '.join(queries)}) GROUP BY ALL""")
    binary = ", ".join(f"list(item) FILTER (rating >= {t}) AS relevant_{i}"
                       for i, t in enumerate(thresholds))
    con.execute(f"""CREATE OR REPLACE TEMP TABLE xp_truth AS
        SELECT user, map(list(CAST(item AS VARCHAR)), list(rating)) AS grades, {binary}
        FROM {_TEST} GROUP BY user""")
    metrics = [f"SELECT {given} AS given, system, 'NDCG@{CUTOFF}' AS metric, user, "
               f"ndcg(rec, grades, {CUTOFF}) AS value FROM xp_ranked JOIN xp_truth USING (user)",
               f"SELECT {given}, system, 'ERR@{CUTOFF}', user, "
               f"err(rec, grades, {CUTOFF}, max_grade := {max_rating}) "
               "FROM xp_ranked JOIN xp_truth USING (user)"]
    metrics += [f"SELECT {given}, system, 'MRR>={t:g}', user, "
                f"CASE WHEN len(relevant_{i}) > 0 THEN mrr(rec, relevant_{i}) END "
                "FROM xp_ranked JOIN xp_truth USING (user)" for i, t in enumerate(thresholds)]
    con.execute(f"INSERT INTO xp_per_user {' UNION ALL '.join(metrics)}")
    return ({"given": given, "test_users": setup[0], "too_few_users": setup[1],
             "catalogue": setup[2], "sampled_min": setup[3], "sampled_max": setup[4]},
            training)


# --- the tables ----------------------------------------------------------------------------------

def _compared(system: str, baseline: str, metric: str) -> str:
    """SQL: per given, the mean of ``metric`` for ``system``, the Wilcoxon p-value against
    ``baseline`` over the users where both are defined, and the mean difference system -
    baseline over those users (the direction the two-sided p-value does not say)."""
    return f"""SELECT s.given, count(s.value) AS users, avg(s.value) AS value,
          wilcoxon(s.value, b.value).p_value AS p, avg(s.value - b.value) AS diff
        FROM xp_per_user s JOIN xp_per_user b USING (given, user, metric)
        WHERE s.system = '{system}' AND b.system = '{baseline}' AND metric = '{metric}'
        GROUP BY s.given"""


def _means(con: duckdb.DuckDBPyConnection, system: str, metric: str) -> dict[int, tuple]:
    rows = con.execute(f"""SELECT given, count(value), avg(value) FROM xp_per_user
                           WHERE system = '{system}' AND metric = '{metric}' GROUP BY given"""
                       ).fetchall()
    return {given: (users, value) for given, users, value in rows}


def _table1(con: duckdb.DuckDBPyConnection, given: tuple[int, ...]) -> pa.Table:
    ndcg, err = f"NDCG@{CUTOFF}", f"ERR@{CUTOFF}"
    rows = []
    for system in ("PopRec", "Random", "xCLiMF"):
        n_mean, e_mean = _means(con, system, ndcg), _means(con, system, err)
        tests = {}
        if system == "xCLiMF":
            for metric in (ndcg, err):
                tests[metric] = {g: (p, d) for g, _, _, p, d in
                                 con.execute(_compared(system, "PopRec", metric)).fetchall()}
        for g in given:
            rows.append({"given": g, "system": system, "users": n_mean[g][0],
                         "ndcg": n_mean[g][1], "err": e_mean[g][1],
                         **_tested("ndcg", tests.get(ndcg, {}).get(g)),
                         **_tested("err", tests.get(err, {}).get(g))})
    return pa.Table.from_pylist(rows)


def _table3(con: duckdb.DuckDBPyConnection, given: tuple[int, ...],
            thresholds: tuple[float, ...]) -> pa.Table:
    err = f"ERR@{CUTOFF}"
    rows = []
    for threshold in thresholds:
        mrr, climf_name = f"MRR>={threshold:g}", f"CLiMF>={threshold:g}"
        for system in (climf_name, "xCLiMF"):
            m_mean, e_mean = _means(con, system, mrr), _means(con, system, err)
            tests: dict[str, dict] = {}
            if system == "xCLiMF":
                for metric in (mrr, err):
                    tests[metric] = {g: (p, d) for g, _, _, p, d in con.execute(
                        _compared(system, climf_name, metric)).fetchall()}
            for g in given:
                if g not in e_mean:  # no training rating reached the threshold: no CLiMF
                    continue
                rows.append({"given": g, "threshold": float(threshold),
                             "system": "CLiMF" if system == climf_name else system,
                             "users": m_mean.get(g, (0, None))[0],
                             "mrr": m_mean.get(g, (0, None))[1], "err": e_mean[g][1],
                             **_tested("mrr", tests.get(mrr, {}).get(g)),
                             **_tested("err", tests.get(err, {}).get(g))})
    return pa.Table.from_pylist(rows)


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _tested(metric: str, test: tuple[float | None, float | None] | None) -> dict[str, Any]:
    """A row's ``<metric>_p`` (the Wilcoxon p-value) and ``<metric>_diff`` (the mean difference
    against the baseline over the tested users), None on the baseline's rows."""
    p, diff = (None, None) if test is None else test
    return {f"{metric}_p": p, f"{metric}_diff": diff}


# How a p-value's cell says which way the difference goes: the two-sided test does not.
DIRECTION = "+: higher than, -: lower than"


def _p(value: float | None, diff: float | None) -> str:
    if value is None:
        return ""
    sign = "" if diff is None else "+ " if diff > 0 else "- " if diff < 0 else "= "
    return f"{sign}p={value:.2g}"


def render_text(result: ExperimentResult) -> str:
    """The tables as the paper lays them out (Given N / threshold columns, a row per system),
    with our users, the Wilcoxon p-values and the paper's ML1m numbers beside."""
    s = result.settings
    candidates = "every unrated item" if s.candidates is None else \
        f"{s.candidates} sampled unrated items"
    lines = [f"Candidates per test user: its {s.test_items} test items + {candidates} "
             f"(the {s.exclude_popular} most rated excluded); seed {s.seed}; "
             f"xCLiMF D={s.dims}, lambda={s.regularization:g}, learning rate "
             f"{s.learning_rate:g}, {s.epochs} epochs; top rating {s.max_rating:g}.", ""]
    for row in result.setup.to_pylist():
        lines.append(f"Given {row['given']}: {row['test_users']} test users, "
                     f"{row['too_few_users']} with too few ratings (left out), "
                     f"{row['catalogue']} items, {row['sampled_min']}..{row['sampled_max']} "
                     "sampled candidates per user")
    table1 = result.table1.to_pylist()
    lines += ["", f"Table 1: NDCG@{CUTOFF} and ERR@{CUTOFF} (p: Wilcoxon, xCLiMF vs PopRec; "
                  f"{DIRECTION} PopRec)",
              f"{'':16}" + "".join(f"{'Given ' + str(g):>26}" for g in s.given),
              f"{'':16}" + f"{'NDCG':>13}{'ERR':>13}" * len(s.given)]
    for system in ("PopRec", "Random", "xCLiMF"):
        rows = {r["given"]: r for r in table1 if r["system"] == system}
        lines.append(f"{system:16}" + "".join(
            f"{_number(rows[g]['ndcg']):>13}{_number(rows[g]['err']):>13}" for g in s.given))
        if system == "xCLiMF":
            lines.append(f"{'  Wilcoxon':16}" + "".join(
                f"{_p(rows[g]['ndcg_p'], rows[g]['ndcg_diff']):>13}"
                f"{_p(rows[g]['err_p'], rows[g]['err_diff']):>13}" for g in s.given))
        paper = [PAPER_TABLE1.get((system, g)) for g in s.given]
        if any(paper):
            lines.append(f"{'  paper (ML1m)':16}" + "".join(
                f"{_number(p and p[0]):>13}{_number(p and p[1]):>13}" for p in paper))
    table3 = result.table3.to_pylist()
    thresholds = sorted({r["threshold"] for r in table3})
    for g in s.given:
        rows = {(r["system"], r["threshold"]): r for r in table3 if r["given"] == g}
        lines += ["", f"Table 3, Given {g}: MRR (relevant: rating >= threshold) and ERR@{CUTOFF}"
                      f" (p: Wilcoxon, xCLiMF vs CLiMF; {DIRECTION} CLiMF)",
                  f"{'':16}" + "".join(f"{'Threshold ' + format(t, 'g'):>26}"
                                       for t in thresholds),
                  f"{'':16}" + f"{'MRR':>13}{'ERR':>13}" * len(thresholds)]
        for system in ("CLiMF", "xCLiMF"):
            cells = [rows.get((system, t)) for t in thresholds]
            lines.append(f"{system:16}" + "".join(
                f"{_number(c and c['mrr']):>13}{_number(c and c['err']):>13}" for c in cells))
            if system == "xCLiMF":
                lines.append(f"{'  Wilcoxon':16}" + "".join(
                    f"{_p(c and c['mrr_p'], c and c['mrr_diff']):>13}"
                    f"{_p(c and c['err_p'], c and c['err_diff']):>13}" for c in cells))
            paper = [PAPER_TABLE3.get((system, t)) for t in thresholds]
            if any(paper):
                lines.append(f"{'  paper (ML1m)':16}" + "".join(
                    f"{_number(p and p[0]):>13}{_number(p and p[1]):>13}" for p in paper))
    return "\n".join(lines) + "\n"


# --- sampled metrics, corrected ------------------------------------------------------------------

def _rank_transition(catalogue: int, sampled: int, ranks: np.ndarray) -> np.ndarray:
    """P[j, r - 1]: the probability that a relevant item at full rank ranks[j] (among
    ``catalogue`` items: itself and catalogue - 1 others) has sampled rank r = 1..sampled + 1
    when ``sampled`` of the others are drawn without replacement: r - 1 is hypergeometric (the
    drawn items among the ranks[j] - 1 ranked above it), exactly what sample_candidates draws."""
    log_factorial = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1.0, catalogue + 1)))])

    def log_choose(n: np.ndarray, k: np.ndarray) -> np.ndarray:
        return log_factorial[n] - log_factorial[k] - log_factorial[n - k]

    above = np.broadcast_to(ranks[:, None] - 1, (len(ranks), sampled + 1))
    drawn = np.broadcast_to(np.arange(sampled + 1)[None, :], above.shape)
    below = catalogue - 1 - above
    possible = (drawn <= above) & (sampled - drawn <= below)
    log_p = (log_choose(above, np.where(possible, drawn, 0))
             + log_choose(below, np.where(possible, sampled - drawn, 0))
             - log_choose(np.array(catalogue - 1), np.array(sampled)))
    return np.where(possible, np.exp(np.where(possible, log_p, 0.0)), 0.0)


def corrected_metric(sampled_ranks: np.ndarray, metric: Callable[[np.ndarray], np.ndarray], *,
                     catalogue: int, sampled: int, gamma: float = 0.01) -> float:
    """Krichene and Rendle's corrected estimate (KDD 2020, "On Sampled Metrics for Item
    Recommendation", the bias-variance correction) of the full-catalogue mean of ``metric``
    from sampled ranks.

    ``sampled_ranks``: for each (user, relevant item), 1 + the number of the ``sampled`` sampled
    items scored above it; ``catalogue``: the number of items it would be ranked among in full
    (itself included); ``metric``: the metric of one relevant item from its full rank, vectorised
    over an array of ranks, e.g. ``lambda r: (r <= 10) * 1.0`` (recall@10) or ``lambda r: 1 / r``
    (reciprocal rank). Rather than ``metric(sampled rank)``, which overstates a full-catalogue
    metric (a relevant item at full rank 200 of 100,000 has sampled rank 3 of 1,001), each
    sampled rank r gets the value c_r that minimises, over full ranks R = 1..catalogue weighted
    alike, (E[c | R] - metric(R))^2 + gamma Var[c | R]: the solution of
    ((1 - gamma) P'P + gamma diag(P'1)) c = P' metric, P the hypergeometric P(r | R). gamma
    trades bias (0: least squares, ill-conditioned) for variance; 0.01 was within 0.04 of the
    truth on the simulation in tests/reports/test_experiment.py, where metric(sampled rank) was
    off by 0.17 to 0.29. Costs catalogue x (sampled + 1)^2 operations, in chunks of 1,000 ranks.
    """
    ranks = np.asarray(sampled_ranks)
    if not (isinstance(sampled, int) and isinstance(catalogue, int) and 1 <= sampled
            < catalogue):
        raise ValueError(f"corrected_metric: need integers 1 <= sampled < catalogue, got "
                         f"sampled={sampled!r}, catalogue={catalogue!r}")
    if ranks.size == 0 or ranks.dtype.kind not in "iu" or ranks.min() < 1 \
            or ranks.max() > sampled + 1:
        raise ValueError(f"corrected_metric: sampled_ranks must be integers in 1..sampled + 1 = "
                         f"{sampled + 1}, got {ranks.size} values of dtype {ranks.dtype}"
                         + (f" from {ranks.min()} to {ranks.max()}" if ranks.size else ""))
    if not 0 < gamma <= 1:
        raise ValueError(f"corrected_metric: gamma must be in (0, 1], got {gamma!r}")
    gram = np.zeros((sampled + 1, sampled + 1))
    mass, target = np.zeros(sampled + 1), np.zeros(sampled + 1)
    for start in range(1, catalogue + 1, 1000):
        full = np.arange(start, min(start + 1000, catalogue + 1))
        p = _rank_transition(catalogue, sampled, full)
        gram += p.T @ p
        mass += p.sum(axis=0)
        target += p.T @ np.asarray(metric(full), dtype=np.float64)
    corrected = np.linalg.solve((1 - gamma) * gram + gamma * np.diag(mass), target)
    return float(corrected[ranks - 1].mean())


# --- the entry points ----------------------------------------------------------------------------

def _checked(settings: Settings) -> Settings:
    def whole(name: str, value: object, least: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"run_xclimf_experiment: {name} must be an integer >= {least}, "
                             f"got {value!r}")

    if not settings.given:
        raise ValueError("run_xclimf_experiment: given must name at least one Given N, got ()")
    for g in settings.given:
        whole("given", g, 1)
    whole("test_items", settings.test_items, 1)
    whole("exclude_popular", settings.exclude_popular, 0)
    if settings.candidates is not None:
        whole("candidates", settings.candidates, 0)
    for t in settings.thresholds or ():
        if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t):
            raise ValueError(f"run_xclimf_experiment: thresholds must be numbers, got {t!r}")
    return settings


def run_xclimf_experiment(ratings: str | Path | pa.Table, *, given: Sequence[int] = GIVEN,
                          test_items: int = TEST_ITEMS, candidates: int | None = CANDIDATES,
                          exclude_popular: int = EXCLUDE_POPULAR,
                          thresholds: Sequence[float] | None = None,
                          max_rating: float | None = None, dims: int = xclimf.DIMS,
                          regularization: float = xclimf.REGULARIZATION,
                          learning_rate: float = LEARNING_RATE,
                          epochs: int = EPOCHS, seed: int = 0,
                          plot: str | Path | None = None) -> ExperimentResult:
    """Run the xCLiMF paper's experiment on ``ratings`` (a file, see ``_load``, or an Arrow table
    with user, item, rating). ``candidates=None`` ranks every unrated item instead of a sample
    (Krichene and Rendle: sampled metrics can order systems differently from full-catalogue
    ones). ``thresholds``: Table 3's, by default the two highest ratings in the data;
    ``max_rating``: y_max of eq. 2 and ERR's top grade, by default the highest rating. ``plot``:
    a PNG or SVG path for a bar chart of Table 1 (needs matplotlib)."""
    settings = _checked(Settings(
        given=tuple(given), test_items=test_items, candidates=candidates,
        exclude_popular=exclude_popular, thresholds=None if thresholds is None
        else tuple(thresholds), max_rating=max_rating, dims=dims, regularization=regularization,
        learning_rate=learning_rate, epochs=epochs, seed=seed))
    with connect() as con:
        _load(con, ratings)
        top, levels = con.execute(f"SELECT max(rating), list(DISTINCT rating ORDER BY rating "
                                  f"DESC)[1:2] FROM {_RATINGS}").fetchall()[0]
        if top is None or top <= 0:
            raise ValueError("run_xclimf_experiment: the ratings hold no rating > 0")
        scale = float(max_rating if max_rating is not None else top)
        chosen = settings.thresholds or tuple(sorted(float(t) for t in levels))
        con.execute("CREATE TEMP TABLE xp_per_user (given INTEGER, system VARCHAR, "
                    "metric VARCHAR, user VARCHAR, value DOUBLE)")
        setup, training = [], []
        for g in settings.given:
            row, trained = _condition(con, settings, scale, chosen, g)
            setup.append(row)
            training += trained
        table1, table3 = _table1(con, settings.given), _table3(con, settings.given, chosen)
        per_user = con.sql("SELECT * FROM xp_per_user ORDER BY ALL").to_arrow_table()
    # the settings as used: the thresholds and top rating taken from the data
    settings = replace(settings, thresholds=chosen, max_rating=scale)
    result = ExperimentResult(settings, table1, table3, pa.Table.from_pylist(setup),
                              pa.Table.from_pylist(training), per_user, "")
    result = replace(result, text=render_text(result))
    if plot is not None:
        _plot(result, Path(plot))
    return result


def _plot(result: ExperimentResult, path: Path) -> None:
    """Table 1 as grouped bars: NDCG@5 and ERR@5 per Given N, one bar per system (minimal and
    local; duckrank.reports.plots draws per-query comparisons)."""
    try:
        from matplotlib.figure import Figure
    except ImportError as error:
        raise ValueError("run_xclimf_experiment: plot needs matplotlib "
                         "(pip install 'duckrank[plots]')") from error
    rows = result.table1.to_pylist()
    systems = ("PopRec", "Random", "xCLiMF")
    figure = Figure(figsize=(9, 3.5))
    for axes, metric in zip(figure.subplots(1, 2), ("ndcg", "err"), strict=True):
        x = np.arange(len(result.settings.given))
        for k, system in enumerate(systems):
            values = [next(r[metric] for r in rows if r["system"] == system and r["given"] == g)
                      for g in result.settings.given]
            axes.bar(x + (k - 1) * 0.27, values, 0.27, label=system)
        axes.set_xticks(x, [f"Given {g}" for g in result.settings.given])
        axes.set_title(f"{metric.upper()}@{CUTOFF}")
    figure.axes[0].legend()
    figure.tight_layout()
    figure.savefig(path)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``experiment`` (with its ``xclimf`` subcommand) to the ``duckrank`` command's
    subparsers."""
    experiment = subparsers.add_parser(
        "experiment", help="reproduce a source document's experiment",
        description="Reproduce a source document's experiment on your data.")
    kinds = experiment.add_subparsers(dest="experiment", required=True)
    parser = kinds.add_parser(
        "xclimf", help="the xCLiMF paper's top-N experiment (docs/protocol.md)",
        description="Given-N splits, sampled candidates, PopRec, CLiMF and xCLiMF scored with "
        "NDCG@5, ERR@5 and MRR, Wilcoxon tests: the xCLiMF paper's Tables 1 and 3 on RATINGS.")
    parser.add_argument("ratings", help="MovieLens user::item::rating::timestamp, CSV with a "
                        "header (user, item, rating[, timestamp]) or Parquet")
    parser.add_argument("--given", type=int, nargs="+", default=list(GIVEN), metavar="N",
                        help="Given N conditions (default 5 10 15)")
    parser.add_argument("--test-items", type=int, default=TEST_ITEMS,
                        help="test items per user (default 5)")
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument("--candidates", type=int, default=CANDIDATES,
                        help="sampled unrated items per test user (default 1000)")
    choice.add_argument("--full-catalogue", action="store_true",
                        help="rank every unrated item instead of a sample")
    parser.add_argument("--exclude-popular", type=int, default=EXCLUDE_POPULAR,
                        help="never sample the N most rated items (default 3)")
    parser.add_argument("--thresholds", type=float, nargs="+", default=None,
                        help="Table 3's relevance thresholds (default: the two highest ratings)")
    parser.add_argument("--max-rating", type=float, default=None,
                        help="y_max of eq. 2 and ERR's top grade (default: the highest rating)")
    parser.add_argument("--dims", type=int, default=xclimf.DIMS)
    parser.add_argument("--regularization", type=float, default=xclimf.REGULARIZATION)
    parser.add_argument("--learning-rate", type=float, default=LEARNING_RATE,
                        help=f"default {LEARNING_RATE:g}, ten times the paper's (docs/models.md)")
    parser.add_argument("--epochs", type=int, default=EPOCHS, help=f"default {EPOCHS}")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plot", default=None, metavar="PATH",
                        help="also draw Table 1 as bars into PATH (.png or .svg; matplotlib)")
    parser.add_argument("--format", choices=("table", "json"), default="table",
                        help="table: the paper's layout; json: every table as rows")
    parser.set_defaults(handler=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Run the experiment for parsed ``args`` and print it; errors go to stderr, exit status 1."""
    try:
        result = run_xclimf_experiment(
            args.ratings, given=args.given, test_items=args.test_items,
            candidates=None if args.full_catalogue else args.candidates,
            exclude_popular=args.exclude_popular, thresholds=args.thresholds,
            max_rating=args.max_rating, dims=args.dims, regularization=args.regularization,
            learning_rate=args.learning_rate, epochs=args.epochs, seed=args.seed,
            plot=args.plot)
    except (ValueError, duckdb.Error) as error:
        hint = ("; the option is --learning-rate"
                if isinstance(error, xclimf.DivergenceError) else "")
        sys.stderr.write(f"duckrank experiment xclimf: {error}{hint}\n")
        return 1
    if args.format == "json":
        json.dump({name: getattr(result, name).to_pylist()
                   for name in ("table1", "table3", "setup", "training")}, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(result.text)
    return 0

