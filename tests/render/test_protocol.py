"""The protocol macros (duckrank.render.protocol): the splits and candidate sampling of the
xCLiMF paper's top-N protocol (Shi et al., RecSys 2013, section 3.1.2) on a real DuckDB.

Expected values come from the macros' written definitions (module docstring, docs/protocol.md),
worked out by hand in each test, and, for the sampling's distribution, from what a uniform sample
without replacement gives (each unrated item in with probability n / a)."""

from __future__ import annotations

import shutil
import subprocess
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import duckrank
from duckrank.render import protocol


def _ratings(counts: list[int], items: int = 100, seed: int = 1) -> pa.Table:
    """User u rates counts[u] distinct items out of ``items``, with ratings 1..5 and distinct
    timestamps (user u's j-th item at time 1000 u + j)."""
    rng = np.random.default_rng(seed)
    users, rated, timestamps = [], [], []
    for user, count in enumerate(counts):
        users += [user] * count
        rated += list(rng.choice(items, count, replace=False))
        timestamps += [1000 * user + j for j in range(count)]
    return pa.table({"user": pa.array(users, pa.int64()), "item": pa.array(rated, pa.int64()),
                     "rating": pa.array(rng.integers(1, 6, len(users)), pa.int64()),
                     "timestamp": pa.array(timestamps, pa.int64())})


def _parts(con: duckdb.DuckDBPyConnection, query: str) -> dict[int, dict[str, set[int]]]:
    """user -> part -> items."""
    out: dict[int, dict[str, set[int]]] = {}
    for user, item, part in con.execute(f"SELECT user, item, part FROM {query}").fetchall():
        out.setdefault(user, {}).setdefault(part, set()).add(item)
    return out


# --- splits --------------------------------------------------------------------------------------

def test_given_n_sizes_and_too_few(con: duckdb.DuckDBPyConnection) -> None:
    """Given 5 with 5 test items needs 10 ratings: users 0..3 (7 to 10 ratings) hand-checked."""
    ratings = _ratings([7, 9, 10, 30])
    con.register("ratings_arrow", ratings)
    con.execute("CREATE TABLE ratings AS SELECT * FROM ratings_arrow")
    parts = _parts(con, "given_n_split('ratings', 5)")
    # users 0 and 1 have fewer than 5 + 5: every rating of theirs is reported as 'too_few'
    assert {u: {p: len(i) for p, i in parts[u].items()} for u in (0, 1)} == {
        0: {"too_few": 7}, 1: {"too_few": 9}}
    # user 2 has exactly 10: 5 test, 5 train, nothing unused; user 3: 5, 5 and 20 unused
    assert {p: len(i) for p, i in parts[2].items()} == {"test": 5, "train": 5}
    assert {p: len(i) for p, i in parts[3].items()} == {"test": 5, "train": 5, "unused": 20}
    # every input row comes out once, with every input column
    columns = con.execute("SELECT * FROM given_n_split('ratings', 5) LIMIT 0").description
    assert [c[0] for c in columns] == ["user", "item", "rating", "timestamp", "part"]
    assert con.execute("SELECT count(*) FROM (SELECT user, item, rating, timestamp FROM "
                       "given_n_split('ratings', 5) EXCEPT ALL SELECT * FROM ratings)"
                       ).fetchall() == [(0,)]
    # test_items := 2, Given 3: user 0 (7 ratings) now splits into 2 test, 3 train, 2 unused
    parts = _parts(con, "given_n_split('ratings', 3, test_items := 2)")
    assert {p: len(i) for p, i in parts[0].items()} == {"test": 2, "train": 3, "unused": 2}


def _fingerprint(con: duckdb.DuckDBPyConnection, query: str, columns: str) -> tuple:
    """(rows, xor of the rows' hashes, hashed again as in _SHUFFLE): equal for the same set of
    rows in any order."""
    return con.execute(f"SELECT count(*), bit_xor(hash(hash({columns}))) FROM {query}"
                       ).fetchall()[0]


def test_given_n_is_a_seeded_shuffle_independent_of_threads(con: duckdb.DuckDBPyConnection
                                                           ) -> None:
    """300,000 ratings (three row groups, so that 4 threads really run in parallel): the same
    seed gives the same rows with 1 and 4 threads; another seed other rows; Given 10 keeps Given
    5's test items and extends its training set (one shuffle order per user: test items first,
    then training)."""
    con.execute("""CREATE TABLE ratings AS SELECT u AS user, i AS item, 1 AS rating
                   FROM range(10000) a(u), range(30) b(i)""")

    def split(threads: int, seed: int) -> tuple:
        con.execute(f"SET threads = {threads}")
        return _fingerprint(con, f"given_n_split('ratings', 5, seed := {seed})",
                            "user, item, part")

    one = split(1, 7)
    assert one == split(4, 7) and one[0] == 300_000
    assert split(4, 8) != one
    given_5 = "given_n_split('ratings', 5, seed := 7)"
    given_10 = "given_n_split('ratings', 10, seed := 7)"
    assert con.execute(f"""SELECT count(*) FILTER (a.part = 'test' AND b.part <> 'test'),
            count(*) FILTER (a.part = 'train' AND b.part <> 'train'),
            count(*) FILTER (b.part = 'train' AND a.part = 'unused')
        FROM {given_5} a JOIN {given_10} b USING (user, item)""").fetchall() == [(0, 0, 50000)]


def test_given_n_test_sets_are_uniform_subsets(con: duckdb.DuckDBPyConnection) -> None:
    """A uniform shuffle makes every 5-subset of a user's 30 items equally likely as the test
    set, so each of the 435 item pairs is in it for 4,000 x C(28, 3) / C(30, 5) = 4,000 x 20 /
    870 = 91.95 users (binomial, sd 9.5), and the chi-square statistic over the pairs is near
    its mean of 434 (below 600: p < 1e-8 under uniformity). Ordering by DuckDB's
    hash(seed, user, item) alone fails this: its last argument is xored in, so every user's
    order is the items' own hashes xored with one per-user constant, and items with close
    hashes land in the test set together (most pairs never, some in hundreds of users)."""
    con.execute("CREATE TABLE ratings AS SELECT u AS user, i AS item FROM range(4000) a(u), "
                "range(30) b(i)")
    pairs = con.execute("""SELECT a.item, b.item, count(*) FROM
        (SELECT * FROM given_n_split('ratings', 5) WHERE part = 'test') a
        JOIN (SELECT * FROM given_n_split('ratings', 5) WHERE part = 'test') b
        ON a.user = b.user AND a.item < b.item GROUP BY ALL""").fetchall()
    counts = np.array([c for _, _, c in pairs] + [0] * (435 - len(pairs)))
    expected = 4000 * 20 / 870
    assert ((counts - expected) ** 2 / expected).sum() < 600


def test_leave_last_out_time_split_ratio_split(con: duckdb.DuckDBPyConnection) -> None:
    """By hand on user u's j-th rating at time 1000 u + j."""
    con.register("ratings_arrow", _ratings([1, 4, 10]))
    con.execute("CREATE TABLE ratings AS SELECT * FROM ratings_arrow")
    last = con.execute("""SELECT user, timestamp, part FROM leave_last_out('ratings')
                          WHERE part <> 'train' ORDER BY ALL""").fetchall()
    # user 0 has one rating, nothing to train on: too_few; users 1, 2: their latest is test
    assert last == [(0, 0, "too_few"), (1, 1003, "test"), (2, 2009, "test")]
    assert con.execute("SELECT count(*) FROM leave_last_out('ratings', test_items := 3) "
                       "WHERE part = 'test'").fetchall() == [(6,)]  # users 1 and 2
    # a global cut at 1002: user 1's ratings at 1000, 1001 train and 1002, 1003 test; user 2
    # (2000..2009) has no rating before the cut, so no history: too_few
    cut = con.execute("""SELECT user, part, count(*) FROM time_split('ratings', 1002)
                         GROUP BY ALL ORDER BY ALL""").fetchall()
    assert cut == [(0, "train", 1), (1, "test", 2), (1, "train", 2), (2, "too_few", 10)]
    # ratio 0.8: round(0.8 n) training ratings: user 1: 3 of 4, user 2: 8 of 10; user 0:
    # round(0.8) = 1 = n leaves no test rating: too_few
    ratio = con.execute("""SELECT user, part, count(*) FROM ratio_split('ratings')
                           GROUP BY ALL ORDER BY ALL""").fetchall()
    assert ratio == [(0, "too_few", 1), (1, "test", 1), (1, "train", 3), (2, "test", 2),
                     (2, "train", 8)]


@pytest.fixture(scope="module")
def small() -> Iterator[duckdb.DuckDBPyConnection]:
    """Two ratings, the same with a pair twice, and with a NULL user (one connection for all the
    error cases: connecting is the slow part)."""
    with duckrank.connect() as con:
        con.execute("""CREATE TABLE ratings AS SELECT * FROM (VALUES (1, 2, 5, 10), (1, 3, 4, 11))
                       t(user, item, rating, timestamp)""")
        con.execute("CREATE TABLE twice AS SELECT * FROM ratings UNION ALL SELECT 1, 2, 3, 12")
        con.execute("CREATE TABLE nulls AS SELECT * FROM ratings UNION ALL SELECT NULL, 3, 1, 1")
        yield con


@pytest.mark.parametrize(("call", "message"), [
    ("given_n_split('ratings', 0)", "given_n_split: given must be a whole number >= 1, got 0"),
    ("given_n_split('ratings', 5, test_items := 2.5)",
     "given_n_split: test_items must be a whole number >= 1, got 2.5"),
    ("given_n_split('twice', 1, test_items := 1)",
     "given_n_split: ratings holds user 1 and item 2 more than once"),
    ("leave_last_out('twice')", "leave_last_out: ratings holds user 1 and item 2 more than once"),
    ("ratio_split('ratings', ratio := 1)",
     "ratio_split: ratio must be between 0 and 1 (exclusive), got 1"),
    ("time_split('ratings', NULL)", "time_split: cut must not be NULL"),
    ("given_n_split('nulls', 1, test_items := 1)",
     "given_n_split: ratings has a NULL user or item (user NULL, item 3)"),
    ("sample_candidates('ratings', 'ratings', n := -1)",
     "sample_candidates: n must be NULL (every unrated item) or a whole number >= 0, got -1"),
    ("sample_candidates('ratings', 'ratings', exclude_popular := NULL)",
     "sample_candidates: exclude_popular must be a whole number >= 0, got NULL"),
    # A pair twice in test gave that test item twice in the user's candidates; twice in ratings,
    # it counted twice in the popularity (docs/protocol.md: a pair given twice is an error).
    ("sample_candidates('twice', 'ratings')",
     "sample_candidates: ratings holds user 1 and item 2 more than once"),
    ("sample_candidates('ratings', 'twice')",
     "sample_candidates: test holds user 1 and item 2 more than once"),
])
def test_errors_name_the_macro_and_value(small: duckdb.DuckDBPyConnection, call: str,
                                         message: str) -> None:
    with pytest.raises(duckdb.Error, match=message.replace("(", r"\(").replace(")", r"\)")):
        small.execute(f"SELECT * FROM {call}").fetchall()


# --- candidate sampling --------------------------------------------------------------------------

@pytest.fixture()
def catalogue(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """600 users over 2,000 items: items 0, 1, 2 rated by every user (the top 3), each user also
    up to 12 others; a Given-5 split of it as `split` and its test rows as `test`."""
    con.execute("""CREATE TABLE ratings AS
        SELECT u AS user, i AS item, 1 + (u + i) % 5 AS rating FROM range(600) a(u), range(3) b(i)
        UNION ALL
        SELECT u, 3 + (hash(u, k) % 1997)::BIGINT, 1 FROM range(600) a(u), range(12) b(k)""")
    con.execute("CREATE TABLE ratings_once AS SELECT DISTINCT ON (user, item) * FROM ratings")
    con.execute("CREATE TABLE split AS SELECT * FROM given_n_split('ratings_once', 5)")
    con.execute("CREATE VIEW test AS SELECT * FROM split WHERE part = 'test'")
    return con


def _candidates(con: duckdb.DuckDBPyConnection, arguments: str = "") -> set[tuple]:
    return set(con.execute(f"SELECT user, item, sampled FROM sample_candidates('split', 'test'"
                           f"{arguments})").fetchall())


def test_sampling_excludes_rated_and_popular_items(catalogue: duckdb.DuckDBPyConnection
                                                   ) -> None:
    """Every test user gets its 5 test items (sampled = false) and exactly n = 100 sampled
    items: none rated by the user (in any part of the split), none of items 0, 1, 2 (the top 3,
    rated by every user), none twice."""
    con = catalogue
    rows = _candidates(con, ", n := 100")
    rated = set(con.execute("SELECT user, item FROM split").fetchall())
    test = set(con.execute("SELECT user, item FROM test").fetchall())
    assert {(u, i) for u, i, s in rows if not s} == test
    sampled = [(u, i) for u, i, s in rows if s]
    assert len(sampled) == len(set(sampled)) == 100 * len({u for u, _ in test})
    assert not set(sampled) & rated
    assert not {i for _, i in sampled} & {0, 1, 2}
    # exclude_popular := 0 lets the top items in only where a user did not rate them (never)
    assert not {i for u, i, s in _candidates(con, ", n := 100, exclude_popular := 0") if s} \
        & {0, 1, 2}


def test_sampling_is_seeded_and_nested(catalogue: duckdb.DuckDBPyConnection) -> None:
    """The same seed gives the same rows with 1 and 4 threads, another seed others; and the
    sample of n is the first n of the user's permutation, so n := 20 is inside n := 100, which
    is inside n := NULL (every unrated pool item: the full-catalogue path). n := 20 takes the
    drawing path (a prefix of the permutation), NULL the whole permutation: the nesting checks
    that both paths give the same order."""
    con = catalogue
    con.execute("SET threads = 1")
    one = _candidates(con, ", n := 100, seed := 3")
    con.execute("SET threads = 4")
    assert _candidates(con, ", n := 100, seed := 3") == one
    assert _candidates(con, ", n := 100, seed := 4") != one
    small, large = _candidates(con, ", n := 20"), _candidates(con, ", n := 100")
    assert small < large
    # NULL: all 2,000 - 3 pool items a user did not rate, and large among them
    whole = "sample_candidates('split', 'test', n := NULL)"
    assert con.execute(f"""SELECT count(*) FROM (SELECT user, item FROM {whole} WHERE sampled
        UNION ALL SELECT user, item FROM split WHERE item > 2 AND user IN (SELECT user FROM test)
        EXCEPT ALL SELECT u.user, i.item FROM (SELECT DISTINCT user FROM test) u,
        range(3, 2000) i(item))""").fetchall() == [(0,)]
    con.register("large_rows", pa.table({"user": [u for u, _, _ in large],
                                         "item": [i for _, i, _ in large]}))
    assert con.execute(f"SELECT count(*) FROM (SELECT user, item FROM large_rows EXCEPT "
                       f"SELECT user, item FROM {whole})").fetchall() == [(0,)]


def test_sampling_is_uniform(con: duckdb.DuckDBPyConnection) -> None:
    """A uniform sample without replacement takes each of a user's a unrated items with
    probability n / a. 4,000 users, each rating items 0..9 of 60 (the top 3 of which are
    excluded), n = 10 of the a = 50 others: every item i >= 10 is drawn for about 4000 x 10 /
    50 = 800 users (binomial, sd sqrt(800 x 0.8) = 25.3); all 50 counts within 5 sd, and the
    chi-square statistic over them near its mean of 49 (below 100: p < 1e-4 under uniformity).
    The 60 items make 2^6 = 64 positions, so 4 of the permutation's values fall outside the
    pool: a check on that path too."""
    con.execute("""CREATE TABLE ratings AS SELECT u AS user, i AS item FROM range(4000) a(u),
                   range(10) b(i) UNION ALL SELECT 4000 + i, i FROM range(60) b(i)""")
    con.execute("CREATE TABLE test AS SELECT user, item FROM ratings WHERE item = 0 "
                "AND user < 4000")
    counts = dict(con.execute("""SELECT item, count(*) FROM sample_candidates('ratings', 'test',
        n := 10) WHERE sampled GROUP BY item""").fetchall())
    assert set(counts) == set(range(10, 60))
    observed = np.array([counts[i] for i in range(10, 60)])
    assert np.all(np.abs(observed - 800) < 5 * 25.3)
    assert ((observed - 800) ** 2 / 800).sum() < 100


def test_sampled_pairs_are_uniform(con: duckdb.DuckDBPyConnection) -> None:
    """Uniform samples of n = 10 from a = 50 unrated items hold each of the 1,225 item pairs
    with probability p = 10 x 9 / (50 x 49), so over 20,000 users each pair count is binomial
    (mean 20,000 p = 73.5) and the chi-square statistic over the pairs is near 1,225 (1 - p) =
    1,180 (sd about 49); below 1,500 here. The pool of 60 items is a 6-bit permutation: with
    four Feistel rounds the statistic was 3,829; with six it is 1,163."""
    con.execute("""CREATE TABLE ratings AS SELECT u AS user, i AS item FROM range(20000) a(u),
                   range(10) b(i) UNION ALL SELECT 20000 + i, i FROM range(60) b(i)""")
    con.execute("CREATE TABLE test AS SELECT user, item FROM ratings WHERE item = 0 "
                "AND user < 20000")
    con.execute("""CREATE TABLE s AS SELECT user, item FROM sample_candidates('ratings', 'test',
                   n := 10) WHERE sampled""")
    counts = [c for (c,) in con.execute("""SELECT count(*) FROM s a JOIN s b
        ON a.user = b.user AND a.item < b.item GROUP BY a.item, b.item""").fetchall()]
    observed = np.array(counts + [0] * (1225 - len(counts)))
    expected = 20000 * 90 / 2450
    assert ((observed - expected) ** 2 / expected).sum() < 1500


def test_sampling_short_pool_and_empty_users(con: duckdb.DuckDBPyConnection) -> None:
    """A user with fewer unrated pool items than n gets all of them; a user who rated the
    whole pool gets only the test items (a count to check, not an error)."""
    con.execute("""CREATE TABLE ratings AS SELECT * FROM (VALUES
        (1, 'a'), (1, 'b'), (2, 'a'), (2, 'b'), (2, 'c'), (2, 'd'), (3, 'a'), (3, 'c'), (4, 'e'))
        t(user, item)""")
    con.execute("CREATE TABLE test AS SELECT * FROM (VALUES (1, 'b'), (2, 'd')) t(user, item)")
    # popularity: a 3, b 2, c 2, d 1, e 1; exclude_popular := 1 drops a; the pool is b, c, d, e
    rows = con.execute("""SELECT user, item, sampled FROM sample_candidates('ratings', 'test',
        n := 1000, exclude_popular := 1) ORDER BY ALL""").fetchall()
    assert rows == [(1, "b", False), (1, "c", True), (1, "d", True), (1, "e", True),
                    (2, "d", False), (2, "e", True)]


# The shell is the same in both of scripts/test's runs: the oldest-DuckDB venv (test-core) has
# none, and the whole suite runs this.
@pytest.mark.whole_suite_only
def test_macros_run_in_the_duckdb_shell(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    """The macros in the DuckDB shell the test extra installs (an older line than the Python
    package: `query_table`, lambdas and DuckDB's hash as the shell has them) give the same rows
    as here. docs/integrations.md's file is tested in every line by test_duckdb_shell.py once
    it is regenerated; this checks the protocol's SQL on its own."""
    shell = shutil.which("duckdb", path=sysconfig.get_path("scripts"))
    if shell is None:
        pytest.skip("no duckdb shell next to this Python (the test extra installs one)")
    script = tmp_path / "protocol.sql"
    script.write_text("".join(f"{s.strip()};\n" for s in protocol.MACROS))
    load = ("CREATE TABLE ratings AS SELECT u AS user, (hash(u, k) % 500)::BIGINT AS item "
            "FROM range(200) a(u), range(20) b(k) GROUP BY ALL")
    query = ("SELECT c.user, c.item, c.sampled, s.part FROM sample_candidates('split', 'test', "
             "n := 50, seed := 9) c LEFT JOIN split s USING (user, item) ORDER BY ALL")
    prepare = ["CREATE TABLE split AS SELECT * FROM given_n_split('ratings', 5, seed := 9)",
               "CREATE VIEW test AS SELECT * FROM split WHERE part = 'test'"]
    out = tmp_path / "shell.parquet"
    subprocess.run([shell, "-c", f".read {script}", "-c", load,
                    *(a for s in prepare for a in ("-c", s)),
                    "-c", f"COPY ({query}) TO '{out}' (FORMAT parquet)"],
                   check=True, capture_output=True, timeout=120, cwd=tmp_path)
    for statement in (load, *prepare):
        con.execute(statement)
    expected = con.execute(query).fetchall()
    assert len(expected) == 200 * 55
    assert duckdb.sql(f"SELECT * FROM read_parquet('{out}') ORDER BY ALL").fetchall() == expected


def test_registered_by_connect() -> None:
    """duckrank.connect() creates the macros (they are in render.macros' statement list)."""
    with duckrank.connect() as con:
        names = {r[0] for r in con.execute(
            "SELECT function_name FROM duckdb_functions() WHERE function_type = 'table_macro'"
        ).fetchall()}
    assert {"given_n_split", "leave_last_out", "time_split", "ratio_split",
            "sample_candidates"} <= names


def test_feistel_positions_are_a_permutation_with_stable_prefixes(
        small: duckdb.DuckDBPyConnection) -> None:
    """duckrank_candidate_positions over all 2^7 positions (4 low bits, 3 high: the unbalanced
    case) lists each of 0..127 once, for any keys; over a prefix of the positions it gives the
    start of the same list (what lets sample_candidates compute a short prefix and fall back to
    the whole permutation for a user left short); rated positions and those >= m are skipped."""
    keys = ", ".join(f"{{k}} + {i}" for i in range(protocol.ROUNDS))
    call = f"duckrank_candidate_positions({{positions}}, {{m}}, 4, 15, 7, {keys}, {{rated}}, NULL)"
    for k in (0, 12345, -987654321):
        whole = small.execute("SELECT " + call.format(positions=128, m=128, k=k, rated="[]")
                              ).fetchall()[0][0]
        assert sorted(whole) == list(range(128))
        prefix = small.execute("SELECT " + call.format(positions=50, m=128, k=k, rated="[]")
                               ).fetchall()[0][0]
        assert prefix == whole[:50]
        kept = small.execute("SELECT " + call.format(positions=128, m=100, k=k,
                                                     rated="[3, 50, 99]")).fetchall()[0][0]
        assert kept == [x for x in whole if x < 100 and x not in (3, 50, 99)]
