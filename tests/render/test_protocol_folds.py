"""The protocol's folds and the popularity-weighted candidate sampling (duckrank.render.protocol,
issue 28): k_fold_split, cold_user_split, new_users_split, time_range_folds and
sample_candidates(weighting := 'popularity').

Where the expected values come from:

* time_range_folds: RecTools 0.19.0's TimeRangeSplitter docstring example (its output printed
  there), written out below, and RecTools itself on generated data where it is importable (it is
  not in duckrank's venv; run ``PYTHONPATH=. /tmp/peers/bin/python -m pytest -q
  tests/render/test_protocol_folds.py`` in the peer venv, rectools 0.19.0);
* new_users_split, cold_user_split and k_fold_split: the rules of RePlay's NewUsersSplitter,
  ColdUserRandomSplitter and KFolds (sb-ai-lab/RePlay, replay/splitters/*.py), worked out by hand
  beside each case (their random draws are Spark's or pandas' and cannot be reproduced: the
  sizes and the rules are);
* the popularity sampling: the distribution it must have (each draw proportional to the times
  rated, RecBole's 'pop' sampler), checked with a chi-square bound.
"""

from __future__ import annotations

import datetime as dt
import random

import pytest

import duckrank

DAY = dt.datetime(2021, 9, 1)
# RecTools' TimeRangeSplitter docstring: rows 0..6 as (user, item, day of September 2021)
RECTOOLS_ROWS = [(1, 2, 1), (2, 1, 2), (2, 3, 3), (3, 2, 3), (3, 3, 4), (4, 4, 4), (1, 2, 5)]


@pytest.fixture(scope="module")
def con():
    connection = duckrank.connect()
    connection.execute('create table doc(row INT, user INT, item INT, "timestamp" TIMESTAMP)')
    connection.executemany("insert into doc values (?, ?, ?, ?)", [
        (i, u, it, DAY + dt.timedelta(days=d - 1)) for i, (u, it, d) in enumerate(RECTOOLS_ROWS)])
    return connection


def folds(con, call: str) -> dict[int, tuple[list[int], list[int]]]:
    out: dict[int, tuple[list[int], list[int]]] = {}
    for fold, row, part in con.sql(f"select fold, row, part from {call} order by row").fetchall():
        train, test = out.setdefault(fold, ([], []))
        if part == "train":
            train.append(row)
        elif part == "test":
            test.append(row)
    return out


def test_time_range_folds_reproduce_rectools_docstring(con):
    # TimeRangeSplitter("1D", 2, False, False, False): [0 1 2 3] [4 5], then [0 1 2 3 4 5] [6]
    no_filter = ("time_range_folds('doc', '1D', n_splits := 2, filter_cold_users := false, "
                 "filter_cold_items := false, filter_already_seen := false)")
    assert folds(con, no_filter) == {1: ([0, 1, 2, 3], [4, 5]), 2: ([0, 1, 2, 3, 4, 5], [6])}
    # TimeRangeSplitter("1D", 2, True, False, False): [0 1 2 3] [4], then [0 1 2 3 4 5] [6];
    # row 5 (user 4, new on day 4) is reported as 'cold_user', not dropped
    cold_users = ("time_range_folds('doc', '1D', n_splits := 2, filter_cold_items := false, "
                  "filter_already_seen := false)")
    assert folds(con, cold_users) == {1: ([0, 1, 2, 3], [4]), 2: ([0, 1, 2, 3, 4, 5], [6])}
    assert con.sql(f"select part from {cold_users} where row = 5 and fold = 1").fetchall() == [
        ("cold_user",)]
    # all filters on (RecTools' defaults): fold 2's row 6 is user 1 and item 2, both trained,
    # and the pair (1, 2) was seen in row 0: 'already_seen'
    defaults = "time_range_folds('doc', '1D', n_splits := 2)"
    assert con.sql(f"select part from {defaults} where row = 6").fetchall() == [("already_seen",)]


def test_time_range_folds_hours_and_boundaries(con):
    off = "filter_cold_users := false, filter_cold_items := false, filter_already_seen := false"
    # the last rating is at Sep 5 00:00, exactly on a boundary: RecTools' window end is the next
    # boundary of the unit (ceil, + 1 unit when already on one). '24H': end Sep 5 01:00, the
    # window [Sep 4 01:00, Sep 5 01:00) holds row 6 only (rows 4, 5 are at Sep 4 00:00)
    assert folds(con, f"time_range_folds('doc', '24H', {off})") == {
        1: ([0, 1, 2, 3, 4, 5], [6])}
    # '2D': end Sep 6 00:00 (one day, the unit, after Sep 5), window [Sep 4, Sep 6): rows 4, 5, 6
    assert folds(con, f"time_range_folds('doc', '2D', {off})") == {1: ([0, 1, 2, 3], [4, 5, 6])}


@pytest.mark.parametrize(("call", "message"), [
    ("time_range_folds('doc', '7W')", "test_size must be a number of days or hours"),
    ("time_range_folds('doc', '1D', n_splits := 0)", "n_splits must be a whole number >= 1"),
    ("k_fold_split('doc', folds := 1)", "folds must be a whole number >= 2, got 1"),
    ("cold_user_split('doc', ratio := 1)", "ratio must be between 0 and 1"),
    ("new_users_split('doc', ratio := NULL)", "ratio must be between 0 and 1"),
    ("sample_candidates('doc', 'doc', weighting := 'pop')",
     "weighting must be 'uniform' or 'popularity', got pop"),
])
def test_bad_parameters_are_errors(con, call, message):
    with pytest.raises(Exception, match=message):
        con.sql(f"select * from {call}").fetchall()


def test_time_range_folds_against_rectools_live(con):
    pytest.importorskip("rectools")
    import pandas as pd
    from rectools import Columns
    from rectools.dataset import Interactions
    from rectools.model_selection import TimeRangeSplitter

    rng = random.Random(5)
    rows = [(rng.randrange(40), rng.randrange(25), DAY + dt.timedelta(hours=rng.randrange(500)))
            for _ in range(600)]
    frame = pd.DataFrame([(u, i, 1.0, t) for u, i, t in rows],
                         columns=[Columns.User, Columns.Item, Columns.Weight, Columns.Datetime])
    con.execute('create or replace temp table gen(row INT, user INT, item INT, '
                '"timestamp" TIMESTAMP)')
    con.executemany("insert into gen values (?, ?, ?, ?)",
                    [(n, u, i, t) for n, (u, i, t) in enumerate(rows)])
    for test_size, n_splits in (("2D", 3), ("30H", 2)):
        splitter = TimeRangeSplitter(test_size, n_splits)
        ours = folds(con, f"time_range_folds('gen', '{test_size}', n_splits := {n_splits})")
        for fold, (train, test, _) in enumerate(splitter.split(Interactions(frame)), 1):
            assert (sorted(train), sorted(test)) == ours[fold]


def test_k_fold_split_by_hand(con):
    con.execute("create or replace temp table kf as select u AS user, i AS item "
                "from range(3) a(u), range(7) b(i) where i >= u")
    rows = con.sql("select user, item, fold from k_fold_split('kf', folds := 3)").fetchall()
    # per user, ratings j = 1..n in the shuffled order go to fold (j - 1) % 3 + 1: a user of 7
    # ratings has folds of 3, 2, 2; of 6: 2, 2, 2; of 5: 2, 2, 1 (RePlay's j % 3 relabelled)
    sizes = {}
    for user, _, fold in rows:
        sizes.setdefault(user, {}).setdefault(fold, 0)
        sizes[user][fold] += 1
    assert sizes == {0: {1: 3, 2: 2, 3: 2}, 1: {1: 2, 2: 2, 3: 2}, 2: {1: 2, 2: 2, 3: 1}}
    # the same seed, the same folds; another seed, another order
    again = con.sql("select user, item, fold from k_fold_split('kf', folds := 3)").fetchall()
    assert sorted(again) == sorted(rows)
    other = con.sql("select user, item, fold from k_fold_split('kf', folds := 3, seed := 7)")
    assert sorted(other.fetchall()) != sorted(rows)
    # item 6 is rated by every user, item 0 by user 0 only: cold in the fold it is in
    cold = dict(con.sql("select item, bool_or(cold_item) from k_fold_split('kf', folds := 3) "
                        "where item in (0, 6) group by item").fetchall())
    assert cold[0] is True


def test_cold_user_split_by_hand(con):
    con.execute("create or replace temp table cu as select u AS user, i AS item "
                "from range(10) a(u), range(3) b(i)")
    rows = con.sql("select user, part from cold_user_split('cu', ratio := 0.25)").fetchall()
    by_user = {}
    for user, part in rows:
        by_user.setdefault(user, set()).add(part)
    # every rating of a user in one part; round((1 - 0.25) * 10) = 8 users train (RePlay's
    # sample(frac=0.75) of 10 users), 2 test
    assert all(len(parts) == 1 for parts in by_user.values())
    assert sorted(p for parts in by_user.values() for p in parts).count("test") == 2


def test_new_users_split_by_hand(con):
    # first ratings: user 1 day 1, 2 day 2, 3 day 3, 4 day 4. Newest first, running users 1
    # (day 4), 2 (day 3) >= 0.5 x 4: test_start = day 3. Users 3 and 4 test; ratings before day
    # 3 train (rows 0, 1); user 2's day-3 rating and user 1's day-5 rating 'unused'.
    parts = dict(con.sql("select row, part from new_users_split('doc', ratio := 0.5)").fetchall())
    assert parts == {0: "train", 1: "train", 2: "unused", 3: "test", 4: "test", 5: "test",
                     6: "unused"}


def test_popularity_sampling_follows_the_times_rated(con):
    # item i (0..11) rated by i + 1 background users; 400 test users, each with item 0 as its
    # test item (so never sampled for it), draw one candidate each: 400 independent draws, item i
    # (1..11) drawn with probability (i + 1) / sum_{j=1..11} (j + 1).
    con.execute("create or replace temp table pr(user INT, item INT)")
    con.executemany("insert into pr values (?, ?)",
                    [(1000 + u, i) for i in range(12) for u in range(i + 1)])
    con.execute("create or replace temp table pt as select u::INT AS user, 0 AS item "
                "from range(400) r(u)")
    counts = dict(con.sql(
        "select item, count(*) from sample_candidates('pr', 'pt', n := 1, exclude_popular := 0, "
        "weighting := 'popularity') where sampled group by item").fetchall())
    assert 0 not in counts  # a user's own item is never sampled
    assert sum(counts.values()) == 400
    weights = {i: i + 1 for i in range(1, 12)}
    total = sum(weights.values())
    chi2 = sum((counts.get(i, 0) - 400 * w / total) ** 2 / (400 * w / total)
               for i, w in weights.items())
    assert chi2 < 29.6  # the 0.999 quantile of chi-square with 10 degrees of freedom
    # n items, without repeats, none the user's
    rows = con.sql("select item from sample_candidates('pr', 'pt', n := 6, exclude_popular := 0, "
                   "weighting := 'popularity') where sampled and user = 3").fetchall()
    assert len(rows) == len(set(rows)) == 6 and (0,) not in rows
