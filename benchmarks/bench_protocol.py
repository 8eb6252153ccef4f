"""Time the protocol macros (duckrank.render.protocol): the splits and candidate sampling.

* ``given_n_split`` (Given 10, 5 test items), ``leave_last_out``, ``time_split`` and
  ``ratio_split`` over ``--users`` x ``--per-user`` ratings, each materialised as a table;
* ``sample_candidates(n := 1000, exclude_popular := 3)`` for every test user of the Given-10
  split over a ``--items`` catalogue (the issue's size: 100,000 users x 100,000 items, about
  10^8 candidate rows), consumed by ``count(*)`` and a sum over the items (so that every row is
  computed, none stored);
* next to the sampling, the plain way to write it on ``--naive-users`` users only: each user
  joined with the whole catalogue, the rated items anti-joined away, a top-n window per user
  over a hash (at full size that is 10^10 rows); its seconds per user against the macro's.

    .venv/bin/python -m benchmarks.bench_protocol            # 100,000 users x 100,000 items
    .venv/bin/python -m benchmarks.bench_protocol --quick    # 10,000 users, seconds

Data: user u rates ``--per-user`` items drawn as floor(items x U^2), U uniform (popular items
are the low ids), duplicates dropped, ratings 1..5, timestamps from a hash; seeded through
DuckDB's ``setseed``. Prints one line per query: median wall seconds over ``--repeat`` runs
(no warm-up), CPU seconds of this process (DuckDB's threads included: the steadier figure on
a shared machine), and the peak resident memory above the memory before the runs.
"""

from __future__ import annotations

import argparse

import duckrank
from benchmarks.bench_stats import line, timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--per-user", type=int, default=20)
    parser.add_argument("--candidates", type=int, default=1000)
    parser.add_argument("--naive-users", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="10,000 users, 200 naive users")
    args = parser.parse_args()
    if args.quick:
        args.users, args.naive_users = 10_000, 200

    con = duckrank.connect(config={"threads": args.threads})
    con.execute("SELECT setseed(0.18)")
    con.execute(f"""CREATE TABLE ratings AS
        SELECT user, item, 1 + hash(user, item) % 5 AS rating,
               hash(item, user) % 1000000 AS timestamp
        FROM (SELECT DISTINCT u AS user, CAST(floor({args.items} * pow(random(), 2)) AS BIGINT)
                AS item FROM range({args.users}) a(u), range({args.per_user}) b(k))""")
    ratings = con.execute("SELECT count(*) FROM ratings").fetchall()[0][0]
    print(f"{args.users:,} users, {args.items:,} items, {ratings:,} ratings, "
          f"{args.threads} threads")

    def run(query: str) -> tuple[float, float, float]:
        # no warm-up run: the tables are in memory already, and the full size is minutes
        return timed(lambda: con.execute(query).fetchall(), args.repeat, warm_up=False)

    for name, call in (("given_n_split(given 10)", "given_n_split('ratings', 10)"),
                       ("leave_last_out", "leave_last_out('ratings')"),
                       ("time_split", "time_split('ratings', 900000)"),
                       ("ratio_split(0.8)", "ratio_split('ratings')")):
        line(name, run(f"CREATE OR REPLACE TABLE split AS SELECT * FROM {call}"))
    con.execute("CREATE OR REPLACE TABLE split AS SELECT * FROM given_n_split('ratings', 10)")
    con.execute("CREATE VIEW test AS SELECT * FROM split WHERE part = 'test'")
    test_users = con.execute("SELECT count(DISTINCT user) FROM test").fetchall()[0][0]
    sample = (f"SELECT count(*), sum(item) FROM sample_candidates('split', 'test', "
              f"n := {args.candidates})")
    counted: list[int] = []
    macro = timed(lambda: counted.append(con.execute(sample).fetchall()[0][0]), args.repeat,
                  warm_up=False)
    rows = counted[-1]
    line(f"sample_candidates, {test_users:,} test users", macro)
    print(f"{'':44} {rows:,} candidate rows, {macro[0] / test_users * 1e6:.1f} us per user")

    # The plain way, on a few users: every (user, catalogue item) pair, minus the rated ones,
    # the first n by a hash per user.
    con.execute(f"""CREATE TABLE few AS SELECT DISTINCT user FROM test
                    ORDER BY user LIMIT {args.naive_users}""")
    naive = f"""SELECT count(*), sum(item) FROM (
        SELECT f.user, c.item FROM few f CROSS JOIN (SELECT DISTINCT item FROM ratings) c
        WHERE NOT EXISTS (SELECT 1 FROM split s WHERE s.user = f.user AND s.item = c.item)
        QUALIFY row_number() OVER (PARTITION BY f.user ORDER BY hash(f.user, c.item))
          <= {args.candidates})"""
    plain = run(naive)
    line(f"cross join + anti-join, {args.naive_users:,} users", plain)
    print(f"{'':44} {plain[0] / args.naive_users * 1e6:.1f} us per user: "
          f"{plain[0] / args.naive_users / (macro[0] / test_users):.1f}x the macro's")
    con.close()


if __name__ == "__main__":
    main()
