"""The top-N evaluation protocol as DuckDB table macros: splits of a ratings table and candidate
sampling (issue 18; docs/protocol.md says how to use them).

Every macro takes table *names* (``query_table``), so a view or a table of any schema works:

* ``given_n_split(ratings, given, test_items := 5, seed := 0)``: per user, ``test_items`` rated
  items as test and ``given`` others as training (the xCLiMF paper's "Given N": Shi et al.,
  RecSys 2013, section 3.1.2); the user's other ratings are ``'unused'``.
* ``leave_last_out(ratings, test_items := 1, seed := 0)``: per user, the latest ``test_items``
  ratings (by ``timestamp``) as test, the rest as training.
* ``time_split(ratings, cut)``: every rating before ``cut`` is training, the rest test.
* ``ratio_split(ratings, ratio := 0.8, seed := 0)``: per user, round(ratio x n) ratings as
  training, the rest test.
* ``k_fold_split``, ``cold_user_split``, ``new_users_split``, ``time_range_folds``: RePlay's
  KFolds, ColdUserRandomSplitter and NewUsersSplitter and RecTools' TimeRangeSplitter (issue 28;
  each macro's docstring below gives its rule).
* ``sample_candidates(ratings, test, n := 1000, exclude_popular := 3, seed := 0, weighting :=
  'uniform')``: per test user, the test items plus ``n`` items drawn without replacement from
  those the user did not rate, never one of the ``exclude_popular`` most rated; ``n := NULL``
  gives every such item (the full catalogue), so that sampled and full-catalogue evaluation are
  the same call. ``weighting := 'popularity'`` draws proportionally to the times rated
  (RecBole's popularity sampler's distribution, without repeats).

A split returns every input row with one more column, ``part``: ``'train'``, ``'test'``,
``'unused'`` (given-N only) or ``'too_few'`` (a user who cannot be split so: every rating of such a
user, so that nobody is dropped without a trace). Random choices come from duckrank's seeded
hash of ``(seed, user, ...)`` (duckrank/seeded_hash.py), never ``random()`` or DuckDB's ``hash``:
the same seed gives the same rows whatever the thread count, the order of the input and the
DuckDB version (DuckDB does not promise to keep its ``hash`` from one release to the next). The
macros are pure SQL that
DuckDB 1.4 runs (``query_table``, ``lambda`` lists, ``QUALIFY``); none needs Python.
"""

from __future__ import annotations

from duckrank import seeded_hash
from duckrank.render.quoting import quote_literal

# Column names the macros add to their input's columns inside a query; prefixed so that they
# cannot clash with a column of the ratings table.
_RANK, _COUNT, _PREVIOUS, _TRAINING = (
    "duckrank_rank", "duckrank_count", "duckrank_previous", "duckrank_training")


def _fail(macro: str, text: str) -> str:
    """SQL raising ``macro: text`` (``text`` a SQL string expression)."""
    return f"error({quote_literal(macro + ': ')} || {text})"


def _whole_number(macro: str, name: str, minimum: int) -> tuple[str, str]:
    """(condition, error) refusing a parameter that is not a whole number >= ``minimum``."""
    return (
        f"{name} IS NULL OR NOT ({name} >= {minimum} AND {name} = floor({name}))",
        _fail(macro, f"'{name} must be a whole number >= {minimum}, got ' "
                     f"|| coalesce(CAST({name} AS VARCHAR), 'NULL')"),
    )


def _seed_check(macro: str) -> tuple[str, str]:
    """The seed must be an integer of up to 64 bits (NULL, text or 1e30 would otherwise hash to
    some split without a word)."""
    return (f"typeof(seed) NOT IN ({seeded_hash.SQL_INTEGER_TYPES})",
            _fail(macro, "'seed must be an integer (at most 64 bits), got ' || "
                         "coalesce(CAST(seed AS VARCHAR), 'NULL') || ' of type ' || typeof(seed)"))


def _ids_checks(macro: str) -> list[tuple[str, str]]:
    """A NULL user or item cannot be split or sampled: refused with the offending row."""
    return [(
        "user IS NULL OR item IS NULL",
        _fail(macro, "'ratings has a NULL user or item (user ' || coalesce(CAST(user AS VARCHAR), "
                     "'NULL') || ', item ' || coalesce(CAST(item AS VARCHAR), 'NULL') || ')'"),
    )]


def _duplicate(macro: str, test: str, table: str = "ratings") -> tuple[str, str]:
    """A (user, item) pair twice would put the same item in training and test (and, in
    sample_candidates' test, the same candidate twice in the user's list)."""
    return (test, _fail(macro, f"'{table} holds user ' || CAST(user AS VARCHAR) || ' and item ' "
                               "|| CAST(item AS VARCHAR) || ' more than once'"))


def _checked(conditions: list[tuple[str, str]]) -> str:
    """A WHERE clause that raises the first failing condition's error and keeps every row."""
    cases = "".join(f"\n  WHEN {condition} THEN {error}" for condition, error in conditions)
    return f"WHERE CASE{cases}\n  ELSE true END"


def _split(macro: str, parameters: str, window: str, extra: str, part: str,
           checks: list[tuple[str, str]]) -> str:
    """A split macro: the input's rows ranked per user by ``window``'s order, with the user's
    rating count, and ``part`` computed from them (``extra``: more window columns)."""
    return (
        f"CREATE OR REPLACE MACRO {macro}(ratings, {parameters}) AS TABLE\n"
        f"SELECT * EXCLUDE ({_RANK}, {_COUNT}, {_PREVIOUS}, {_TRAINING}),\n"
        f"  {part} AS part\n"
        f"FROM (SELECT *, row_number() OVER w AS {_RANK},\n"
        f"    count(*) OVER (PARTITION BY user) AS {_COUNT},{extra}\n"
        f"  FROM query_table(ratings)\n"
        f"  WINDOW w AS (PARTITION BY user ORDER BY {window}))\n"
        f"{_checked(checks)}"
    )


# The order of a user's items that stands in for a random shuffle: the seeded hash of (seed,
# user, item), ties (a 32-bit collision: about one pair in a user of 100,000 items) broken by
# the item.
_SHUFFLE = f"{seeded_hash.sql('seed', 'user', 'item')}, item"
# Duplicate pairs are adjacent in the shuffled order (equal hashes, equal items).
_ADJACENT = f"\n    lag(item) OVER w AS {_PREVIOUS}, NULL AS {_TRAINING}"
_ADJACENT_DUPLICATE = f"{_RANK} > 1 AND {_PREVIOUS} = item"
# In the orders by time they need a window of their own.
_PAIR_COUNT = f"\n    count(*) OVER (PARTITION BY user, item) AS {_PREVIOUS},"


def _given_n() -> str:
    macro = "given_n_split"
    return _split(
        macro, "given, test_items := 5, seed := 0", _SHUFFLE, _ADJACENT,
        f"CASE WHEN {_COUNT} < test_items + given THEN 'too_few'\n"
        f"    WHEN {_RANK} <= test_items THEN 'test'\n"
        f"    WHEN {_RANK} <= test_items + given THEN 'train' ELSE 'unused' END",
        [_whole_number(macro, "given", 1), _whole_number(macro, "test_items", 1),
         _seed_check(macro), *_ids_checks(macro), _duplicate(macro, _ADJACENT_DUPLICATE)],
    )


def _leave_last_out() -> str:
    macro = "leave_last_out"
    return _split(
        macro, "test_items := 1, seed := 0", f'"timestamp" DESC, {_SHUFFLE}',
        f"{_PAIR_COUNT} NULL AS {_TRAINING}",
        f"CASE WHEN {_COUNT} <= test_items THEN 'too_few'\n"
        f"    WHEN {_RANK} <= test_items THEN 'test' ELSE 'train' END",
        [_whole_number(macro, "test_items", 1), _seed_check(macro), *_ids_checks(macro),
         ('"timestamp" IS NULL', _fail(macro, "'ratings has a NULL timestamp (user ' "
                                              "|| CAST(user AS VARCHAR) || ')'")),
         _duplicate(macro, f"{_PREVIOUS} > 1")],
    )


def _time_split() -> str:
    macro = "time_split"
    return _split(
        macro, "cut", "item", f"{_PAIR_COUNT}\n"
        f'    bool_or("timestamp" < cut) OVER (PARTITION BY user) AS {_TRAINING}',
        f"CASE WHEN NOT {_TRAINING} THEN 'too_few'\n"
        f"    WHEN \"timestamp\" < cut THEN 'train' ELSE 'test' END",
        [("cut IS NULL", _fail(macro, "'cut must not be NULL'")), *_ids_checks(macro),
         ('"timestamp" IS NULL', _fail(macro, "'ratings has a NULL timestamp (user ' "
                                              "|| CAST(user AS VARCHAR) || ')'")),
         _duplicate(macro, f"{_PREVIOUS} > 1")],
    )


def _ratio_split() -> str:
    macro = "ratio_split"
    training = f"round(ratio * {_COUNT})"
    return _split(
        macro, "ratio := 0.8, seed := 0", _SHUFFLE, _ADJACENT,
        f"CASE WHEN {training} < 1 OR {training} >= {_COUNT} THEN 'too_few'\n"
        f"    WHEN {_RANK} <= {training} THEN 'train' ELSE 'test' END",
        [("ratio IS NULL OR NOT (ratio > 0 AND ratio < 1)",
          _fail(macro, "'ratio must be between 0 and 1 (exclusive), got ' "
                       "|| coalesce(CAST(ratio AS VARCHAR), 'NULL')")),
         _seed_check(macro), *_ids_checks(macro), _duplicate(macro, _ADJACENT_DUPLICATE)],
    )



# --- folds (issue 28): RePlay's KFolds, ColdUserRandomSplitter and NewUsersSplitter, RecTools'
# TimeRangeSplitter. Each returns every input row (k_fold_split: with its fold; the others: with
# ``part`` and, for the time folds, once per fold it is in), so nothing is dropped in silence.

def _k_fold() -> str:
    """Per user, the ratings in the seeded shuffled order numbered 1, 2, ...; rating j is in
    fold (j - 1) % folds + 1 (RePlay's KFolds(strategy='query') numbers them j % folds: its fold
    i is fold i here, its fold 0 fold ``folds``). ``cold_item`` / ``cold_user``: the item (user)
    has no rating outside this row's fold, so the fold's training data lacks it (RePlay's
    drop_cold_items / drop_cold_users drop such test rows)."""
    macro = "k_fold_split"
    checks = _checked([_whole_number(macro, "folds", 2), _seed_check(macro), *_ids_checks(macro),
                       _duplicate(macro, _ADJACENT_DUPLICATE)])
    return (
        f"CREATE OR REPLACE MACRO {macro}(ratings, folds := 5, seed := 0) AS TABLE\n"
        f"SELECT * EXCLUDE ({_RANK}, {_PREVIOUS}),\n"
        "  count(*) OVER (PARTITION BY item) = count(*) OVER (PARTITION BY item, fold) "
        "AS cold_item,\n"
        "  count(*) OVER (PARTITION BY user) = count(*) OVER (PARTITION BY user, fold) "
        "AS cold_user\n"
        f"FROM (SELECT *, ({_RANK} - 1) % folds + 1 AS fold\n"
        f"  FROM (SELECT *, row_number() OVER w AS {_RANK}, lag(item) OVER w AS {_PREVIOUS}\n"
        "    FROM query_table(ratings)\n"
        f"    WINDOW w AS (PARTITION BY user ORDER BY {_SHUFFLE}))\n"
        f"  {checks})"
    )


def _cold_user() -> str:
    """RePlay's ColdUserRandomSplitter: a share of the users, every rating of theirs in test.
    The users in the seeded hash order of (seed, user), ties by user; the first round((1 -
    ratio) U) of the U users train (RePlay samples frac = 1 - ratio of them), the rest test."""
    macro = "cold_user_split"
    order = f"{seeded_hash.sql('seed', 'user')}, user"
    checks = _checked([
        ("ratio IS NULL OR NOT (ratio > 0 AND ratio < 1)",
         _fail(macro, "'ratio must be between 0 and 1 (exclusive), got ' "
                      "|| coalesce(CAST(ratio AS VARCHAR), 'NULL')")),
        _seed_check(macro), *_ids_checks(macro)])
    return (
        f"CREATE OR REPLACE MACRO {macro}(ratings, ratio := 0.1, seed := 0) AS TABLE\n"
        f"SELECT * EXCLUDE ({_RANK}, {_COUNT}),\n"
        f"  CASE WHEN {_RANK} <= round((1 - ratio) * {_COUNT}) THEN 'train' ELSE 'test' END "
        "AS part\n"
        f"FROM (SELECT r.*, u.{_RANK}, u.{_COUNT} FROM query_table(ratings) r JOIN (\n"
        f"    SELECT user, row_number() OVER (ORDER BY {order}) AS {_RANK},\n"
        f"      count(*) OVER () AS {_COUNT}\n"
        "    FROM (SELECT DISTINCT user, seed FROM query_table(ratings))) u USING (user))\n"
        f"{checks}"
    )


def _new_users() -> str:
    """RePlay's NewUsersSplitter: the users whose first rating is newest, about a share
    ``ratio`` of them, are test users. Their first-rating times, newest first, with the running
    count of users; test_start = the newest first-rating time at which that count reaches
    ratio x U. A rating before test_start is train; every rating of a user whose first rating
    is at or after it is test; the other users' ratings at or after it are 'unused' (RePlay
    drops them)."""
    macro = "new_users_split"
    checks = _checked([
        ("ratio IS NULL OR NOT (ratio > 0 AND ratio < 1)",
         _fail(macro, "'ratio must be between 0 and 1 (exclusive), got ' "
                      "|| coalesce(CAST(ratio AS VARCHAR), 'NULL')")),
        *_ids_checks(macro),
        ('"timestamp" IS NULL', _fail(macro, "'ratings has a NULL timestamp (user ' "
                                             "|| CAST(user AS VARCHAR) || ')'"))])
    return (
        f"CREATE OR REPLACE MACRO {macro}(ratings, ratio := 0.1) AS TABLE\n"
        "WITH checked AS (SELECT * FROM query_table(ratings)\n"
        f"{checks}\n"
        "), firsts AS (\n"
        '  SELECT user, min("timestamp") AS duckrank_first FROM checked GROUP BY user\n'
        "), by_time AS (\n"
        "  SELECT duckrank_first, sum(count(*)) OVER (ORDER BY duckrank_first DESC) AS running,\n"
        "    sum(count(*)) OVER () AS total\n"
        "  FROM firsts GROUP BY duckrank_first\n"
        "), start AS (\n"
        "  SELECT max(duckrank_first) AS test_start FROM by_time WHERE running >= ratio * total\n"
        ")\n"
        "SELECT c.*, CASE WHEN f.duckrank_first >= s.test_start THEN 'test'\n"
        "    WHEN c.\"timestamp\" < s.test_start THEN 'train' ELSE 'unused' END AS part\n"
        "FROM checked c JOIN firsts f USING (user) CROSS JOIN start s"
    )


def _time_range_folds() -> str:
    """RecTools' TimeRangeSplitter: n_splits test windows of test_size ('7D', '12H': RecTools'
    format) ending at the end of the day (hour) of the last rating, the next one when the last
    rating is exactly on a boundary (date_trunc + 1 unit either way). Fold f (1..n_splits):
    [start + (f - 1) size, start + f size), start = end - n_splits size; the ratings before its
    window are 'train', those in it 'test', those after it are not in the fold. A test rating
    of a user (item) with no training rating in the fold is 'cold_user' ('cold_item'), of a
    (user, item) pair trained on 'already_seen', when the filter is on (RecTools' defaults;
    checked in that order, as RecTools filters)."""
    macro = "time_range_folds"
    checks = _checked([
        ("test_size IS NULL OR NOT regexp_full_match(test_size, '[1-9][0-9]*[DH]')",
         _fail(macro, "'test_size must be a number of days or hours such as ''7D'' or ''4H'' "
                      "(RecTools'' format), got ' || coalesce(test_size, 'NULL')")),
        _whole_number(macro, "n_splits", 1),
        ("filter_cold_users IS NULL OR filter_cold_items IS NULL OR filter_already_seen IS NULL",
         _fail(macro, "'the filters must be true or false, not NULL'")),
        *_ids_checks(macro),
        ('"timestamp" IS NULL', _fail(macro, "'ratings has a NULL timestamp (user ' "
                                             "|| CAST(user AS VARCHAR) || ')'"))])
    unit = "CASE WHEN right(test_size, 1) = 'D' THEN 'day' ELSE 'hour' END"
    size = ("CASE WHEN right(test_size, 1) = 'D' THEN to_days(CAST(test_size[:-2] AS INTEGER)) "
            "ELSE to_hours(CAST(test_size[:-2] AS INTEGER)) END")
    one_unit = "CASE WHEN right(test_size, 1) = 'D' THEN to_days(1) ELSE to_hours(1) END"
    return (
        f"CREATE OR REPLACE MACRO {macro}(ratings, test_size, n_splits := 1,\n"
        "    filter_cold_users := true, filter_cold_items := true, filter_already_seen := true)"
        " AS TABLE\n"
        "WITH checked AS (SELECT * FROM query_table(ratings)\n"
        f"{checks}\n"
        "), windows AS (\n"
        "  SELECT fold, last_end - (n_splits - fold + 1) * size AS opens,\n"
        "    last_end - (n_splits - fold) * size AS closes\n"
        f"  FROM (SELECT date_trunc({unit}, max(\"timestamp\")) + {one_unit} AS last_end,\n"
        f"      {size} AS size FROM checked),\n"
        "    range(1, n_splits + 1) AS f(fold)\n"
        "), folded AS (\n"
        "  SELECT c.*, w.fold,\n"
        "    CASE WHEN c.\"timestamp\" < w.opens THEN 'train' ELSE 'test' END AS duckrank_part\n"
        "  FROM checked c JOIN windows w ON c.\"timestamp\" < w.closes\n"
        "), marked AS (\n"
        "  SELECT *,\n"
        "    bool_or(duckrank_part = 'train') OVER (PARTITION BY fold, user) AS duckrank_user,\n"
        "    bool_or(duckrank_part = 'train') OVER (PARTITION BY fold, item) AS duckrank_item,\n"
        "    bool_or(duckrank_part = 'train') OVER (PARTITION BY fold, user, item) "
        "AS duckrank_seen\n"
        "  FROM folded\n"
        ")\n"
        "SELECT * EXCLUDE (duckrank_part, duckrank_user, duckrank_item, duckrank_seen),\n"
        "  CASE WHEN duckrank_part = 'train' THEN 'train'\n"
        "    WHEN filter_cold_users AND NOT duckrank_user THEN 'cold_user'\n"
        "    WHEN filter_cold_items AND NOT duckrank_item THEN 'cold_item'\n"
        "    WHEN filter_already_seen AND duckrank_seen THEN 'already_seen'\n"
        "    ELSE 'test' END AS part\n"
        "FROM marked"
    )

# Candidate sampling. The pool is the catalogue (the items of `ratings`) without its
# `exclude_popular` most rated items (ties by item), numbered 0..m-1 in item order. Each test user
# gets a pseudo-random permutation of 0..2^b-1 (2^b the smallest power of two >= m): a Feistel
# network on the low and high bits of x (c = ceil(b / 2) low bits, b - c high), each round
# xoring into one half a keyed hash of the other, which is a bijection whatever the two sizes (an
# unbalanced Feistel network; with random round functions, four rounds make a pseudo-random
# permutation: Luby and Rackoff 1988). Six rounds, not four: on a small catalogue (6 bits) four
# rounds sampled some pairs of items together far too often (the pairs' chi-square statistic
# 3,829 where 1,180 is expected; 1,163 with six rounds: tests/render/test_protocol.py). The round
# keys are the seeded hash of (seed, user, 'feistel', round). No position is drawn twice, so
# there is nothing to deduplicate. The user's candidates are the first min(n, a) positions of the
# permutation whose value is in the pool and not rated by the user (a: the user's unrated pool
# items): a uniform sample without replacement, without a join of each user with the whole
# catalogue. Only a prefix of the permutation is computed: k positions hold on average k p usable
# values (p = a / 2^b, drawn without replacement), so k = (n + 8 sqrt(n (1 - p)) + 40) / p leaves
# n short by more than 8 standard deviations; a user still short (or with n NULL, or a <= n) is
# computed on the whole permutation, whose first usable values are the same: the sample does not
# depend on k. At 100,000 items and n = 1000 that is about 1,530 positions per user. Measured
# (benchmarks/bench_protocol.py): lambdas over lists beat the same rounds over unnested rows
# followed by a top-n window per user (about 2x), and shifts and masks beat a domain of h x l
# digits (h l - m < sqrt(m), fewer positions) whose divisions cost 3x.
ROUNDS = 6
_KEYS = ", ".join(f"k{i}" for i in range(1, ROUNDS + 1))


def _round(key: str, into_low: bool) -> str:
    """One Feistel round over x = high * 2^c + low (low_mask = 2^c - 1, high_mask = 2^(b-c) - 1,
    keys in [0, 2^32); each half has at most 32 bits while the catalogue has fewer than 2^64
    items): xors a keyed hash of one half into the other."""
    if into_low:
        return f"lambda x: xor(x, {seeded_hash.sql_round('x >> c', key)} & low_mask)"
    return f"lambda x: xor(x, ({seeded_hash.sql_round('x & low_mask', key)} & high_mask) << c)"


def _positions() -> str:
    permuted = "range(CAST(positions AS BIGINT))"
    for i in range(1, ROUNDS + 1):
        permuted = f"list_transform({permuted},\n    {_round(f'k{i}', i % 2 == 1)})"
    return (
        "CREATE OR REPLACE MACRO duckrank_candidate_positions(positions, m, c, low_mask, "
        f"high_mask,\n    {_KEYS}, rated, n)\n"
        f"AS list_slice(list_filter({permuted},\n"
        "  lambda x: x < m AND NOT list_contains(rated, x)), 1, coalesce(n, m))"
    )


_SAMPLE = """
CREATE OR REPLACE MACRO sample_candidates(ratings, test, n := 1000, exclude_popular := 3,
    seed := 0, weighting := 'uniform') AS TABLE
WITH checked AS (
  SELECT user, item FROM (SELECT user, item, {pairs} FROM query_table(ratings))
  {checks}
), test_rows AS (
  SELECT user, item FROM (SELECT user, item, {pairs} FROM query_table(test))
  {test_checks}
), popularity AS (
  SELECT item, count(*) AS times_rated FROM checked GROUP BY item
), pool AS (
  SELECT item, row_number() OVER (ORDER BY item) - 1 AS idx
  FROM (SELECT item FROM popularity
        QUALIFY row_number() OVER (ORDER BY times_rated DESC, item) > exclude_popular)
), size AS (
  SELECT m, c, (1 << c) - 1 AS low_mask, (1 << (b - c)) - 1 AS high_mask, 1 << b AS whole
  FROM (SELECT m, b, CAST(ceil(b / 2) AS BIGINT) AS c
        FROM (SELECT count(*) AS m, CAST(ceil(log2(greatest(count(*), 2))) AS BIGINT) AS b
              FROM pool))
), users AS (
  SELECT DISTINCT user FROM test_rows
), rated AS (
  -- the pool positions each test user rated (test items included, even if `ratings` lacks them)
  SELECT r.user, list(DISTINCT p.idx) AS rated
  FROM (SELECT user, item FROM checked WHERE user IN (SELECT user FROM users)
        UNION ALL SELECT user, item FROM test_rows) r
  JOIN pool p ON r.item = p.item
  GROUP BY r.user
), plan AS (
  SELECT u.user, coalesce(r.rated, []) AS rated, s.*,
    least(coalesce(n, s.m), s.m - len(coalesce(r.rated, []))) AS wanted,
    (s.m - len(coalesce(r.rated, []))) / s.whole AS p,
    {keys}
  FROM users u CROSS JOIN size s LEFT JOIN rated r ON u.user = r.user
  WHERE weighting = 'uniform'
), prefix AS MATERIALIZED (
  SELECT *, duckrank_candidate_positions(
      CASE WHEN n IS NULL OR wanted < n THEN whole
        ELSE least(whole, ceil((n + 8 * sqrt(n * (1 - p)) + 40) / p)) END,
      m, c, low_mask, high_mask, {key_names}, rated, n) AS chosen
  FROM plan WHERE wanted > 0
), chosen AS (
  SELECT user, chosen FROM prefix WHERE len(chosen) = wanted
  UNION ALL
  SELECT user,
    duckrank_candidate_positions(whole, m, c, low_mask, high_mask, {key_names}, rated, n)
  FROM prefix WHERE len(chosen) < wanted
), weighted AS (
  -- weighting 'popularity': each user's unrated pool items, the n with the largest
  -- Efraimidis-Spirakis key u^(1 / times_rated) (ln u / times_rated, u uniform from the seeded
  -- hash): a sample without replacement in which each draw takes an item with probability
  -- proportional to its times rated among those left
  SELECT u.user, p.item
  FROM users u CROSS JOIN pool p JOIN popularity USING (item)
  WHERE weighting = 'popularity' AND NOT EXISTS (
    SELECT 1 FROM checked c WHERE c.user = u.user AND c.item = p.item
    UNION ALL SELECT 1 FROM test_rows t WHERE t.user = u.user AND t.item = p.item)
  QUALIFY row_number() OVER (PARTITION BY u.user ORDER BY
    ln(({popularity_hash} + 0.5) / 4294967296.0) / times_rated DESC, p.item)
    <= coalesce(n, 9223372036854775807)
)
SELECT user, item, false AS sampled FROM test_rows
UNION ALL
SELECT picked.user, pool.item, true AS sampled
FROM (SELECT user, unnest(chosen) AS idx FROM chosen) picked JOIN pool ON picked.idx = pool.idx
UNION ALL
SELECT user, item, true AS sampled FROM weighted
"""


def _sample() -> str:
    macro = "sample_candidates"
    # The parameters are checked on the test rows, which the result always reads (DuckDB drops
    # the reading of `ratings` when a constant makes the pool empty: exclude_popular := NULL),
    # and first on the ratings too, so that a bad parameter is the error whichever table's
    # rows DuckDB's threads check first.
    parameters = [
        ("n IS NOT NULL AND NOT (n >= 0 AND n = floor(n))",
         _fail(macro, "'n must be NULL (every unrated item) or a whole number >= 0, got ' "
                      "|| CAST(n AS VARCHAR)")),
        ("weighting IS NULL OR weighting NOT IN ('uniform', 'popularity')",
         _fail(macro, "'weighting must be ''uniform'' or ''popularity'', got ' "
                      "|| coalesce(CAST(weighting AS VARCHAR), 'NULL')")),
        _whole_number(macro, "exclude_popular", 0), _seed_check(macro)]
    checks = _checked([*parameters, *_ids_checks(macro), _duplicate(macro, f"{_PREVIOUS} > 1")])
    test_checks = _checked([*parameters, (
        "user IS NULL OR item IS NULL",
        _fail(macro, "'test has a NULL user or item (user ' || coalesce(CAST(user AS VARCHAR), "
                     "'NULL') || ', item ' || coalesce(CAST(item AS VARCHAR), 'NULL') || ')'")),
        _duplicate(macro, f"{_PREVIOUS} > 1", "test")])
    # Round keys, salted apart from the splits' hash of (seed, user, item).
    keys = ", ".join(f"{seeded_hash.sql('seed', 'u.user', quote_literal('feistel'), str(i))} "
                     f"AS k{i}" for i in range(1, ROUNDS + 1))
    # The count of each (user, item) pair, as the time splits count it (_PAIR_COUNT).
    pairs = f"count(*) OVER (PARTITION BY user, item) AS {_PREVIOUS}"
    # The popularity mode's uniform numbers, salted apart from the Feistel keys and the splits.
    popularity_hash = seeded_hash.sql("seed", "u.user", "p.item", quote_literal("popularity"))
    return _SAMPLE.format(checks=checks, test_checks=test_checks, keys=keys, key_names=_KEYS,
                          pairs=pairs, popularity_hash=popularity_hash)


MACROS: tuple[str, ...] = (
    _given_n(), _leave_last_out(), _time_split(), _ratio_split(), _k_fold(), _cold_user(),
    _new_users(), _time_range_folds(), _positions(), _sample())
