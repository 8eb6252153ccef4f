"""The user's database stays usable, registration is robust, and concurrent use gives the serial
results (the reliability issue)."""

import threading

import duckdb
import pytest

import duckrank
from duckrank.engines import duckdb as duckdb_engine

QUERY = (
    "SELECT avg(ndcg(rec, truth, 5)), avg(average_precision(rec, truth)), avg(mrr(rec, truth, 3)),"
    " avg(auc(rec, truth, 10)), avg(precision_at(rec, truth, 4)) FROM eval"
)
EVAL_TABLE = """
CREATE OR REPLACE TABLE eval AS SELECT u,
  list_transform(range(20), lambda i: ((u * 31 + i * 17) % 50)::BIGINT) AS rec,
  list_transform(range((u % 7)::BIGINT), lambda i: ((u * 13 + i * 5) % 50)::BIGINT) AS truth
FROM range(30000) t(u)
"""


def test_file_database_opens_and_works_without_duckrank(tmp_path):
    path = str(tmp_path / "user.duckdb")
    con = duckrank.connect(path)
    con.execute(EVAL_TABLE)
    with_duckrank = con.execute(QUERY).fetchall()
    con.close()

    plain = duckdb.connect(path)  # no duckrank.register: what a user without duckrank sees
    assert plain.execute(QUERY).fetchall() == with_duckrank
    assert plain.execute(
        "SELECT to_ordered_list(u, u % 3, '-reverse') FROM eval WHERE u < 4"
    ).fetchall() == [([2, 1, 3, 0],)]
    stored_python = plain.execute(
        "SELECT function_name FROM duckdb_functions() WHERE function_type NOT IN "
        "('macro', 'table_macro') AND function_name LIKE 'duckrank%'"
    ).fetchall()
    assert stored_python == []
    plain.close()


def test_registering_again_on_a_file_database_keeps_it_working(tmp_path):
    path = str(tmp_path / "user.duckdb")
    duckrank.connect(path).close()
    con = duckrank.connect(path)
    duckrank.register(con)
    assert con.execute("SELECT hitrate([1], [1])").fetchall() == [(1.0,)]
    con.close()


def test_read_only_database_gets_session_macros(tmp_path):
    path = str(tmp_path / "user.duckdb")
    duckdb.connect(path).close()
    con = duckrank.connect(path, read_only=True)
    duckrank.register(con)
    assert con.execute("SELECT recall_at([1, 2], [2, 3])").fetchall() == [(0.5,)]
    con.close()


def test_a_registration_that_fails_half_way_leaves_a_working_connection(monkeypatch):
    con = duckdb.connect()
    real = duckdb_engine._macro_statements

    def failing_half_way():
        statements, build = real()
        middle = len(statements) // 2
        return [*statements[:middle], "CREATE MACRO broken( AS", *statements[middle:]], build

    monkeypatch.setattr(duckdb_engine, "_macro_statements", failing_half_way)
    with pytest.raises(duckdb.ParserException):
        duckrank.register(con)
    # Nothing half-made was left behind, and the connection is usable.
    assert con.execute(
        "SELECT count(*) FROM duckdb_functions() WHERE function_name = 'duckrank_cutoff'"
    ).fetchall() == [(0,)]
    monkeypatch.setattr(duckdb_engine, "_macro_statements", real)
    duckrank.register(con)
    assert con.execute("SELECT mrr([3, 1], [1])").fetchall() == [(0.5,)]
    con.close()


# Threads that race in the concurrency tests: enough to overlap on a 2-core machine. Each
# registration costs about 0.2 s, far more than the queries: more threads would only add those.
RACERS = 4


def run_on_cursors(con: duckdb.DuckDBPyConnection, query: str) -> list:
    """Run ``query`` at once in RACERS threads, each on its own registered cursor of ``con``."""
    results: list = [None] * RACERS

    def work(slot: int) -> None:
        cursor = con.cursor()
        duckrank.register(cursor)
        results[slot] = cursor.execute(query).fetchall()
        cursor.close()

    workers = [threading.Thread(target=work, args=(i,)) for i in range(RACERS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert not any(worker.is_alive() for worker in workers), "deadlock"
    return results


@pytest.mark.parametrize("threads", [1, 2, 8])
def test_threads_with_cursors_give_the_serial_results(threads):
    con = duckrank.connect()
    con.execute(f"SET threads = {threads}")
    con.execute(EVAL_TABLE)
    serial = con.execute(QUERY).fetchall()
    assert run_on_cursors(con, QUERY) == [serial] * RACERS
    con.close()


def test_two_connections_in_one_process_at_once():
    first, second = duckrank.connect(), duckrank.connect()
    for con in (first, second):
        con.execute(EVAL_TABLE)
    serial = first.execute(QUERY).fetchall()
    results: dict = {}

    def work(name: str, con: duckdb.DuckDBPyConnection) -> None:
        results[name] = con.execute(QUERY).fetchall()

    workers = [
        threading.Thread(target=work, args=(name, con))
        for name, con in (("first", first), ("second", second))
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert results == {"first": serial, "second": serial}
    first.close()
    second.close()


# --- views, and concurrency over every kind of function -------------------------------------

def test_views_with_sql_macros_work_without_duckrank_and_python_ones_fail_clearly(tmp_path):
    """docs/reliability.md, "Views": a stored view over a pure-SQL macro keeps working in a plain
    DuckDB; one over a Python-backed function fails there with a catalog error."""
    path = str(tmp_path / "user.duckdb")
    con = duckrank.connect(path)
    con.execute("CREATE TABLE t AS SELECT [1, 2, 3] AS rec, [(1, 2)] AS prefs")
    con.execute("CREATE VIEW sql_view AS SELECT ndcg(rec, [2]) AS v FROM t")
    con.execute("CREATE VIEW python_view AS SELECT edrc(rec, prefs) AS v FROM t")
    assert con.execute("SELECT * FROM python_view").fetchall() == [(1.0,)]
    con.close()
    plain = duckdb.connect(path)
    # One hit at rank 2 with one relevant item: 1 / log2(3).
    assert plain.execute("SELECT * FROM sql_view").fetchall() == [(0.6309297535714575,)]
    with pytest.raises(duckdb.CatalogException, match="edrc does not exist"):
        plain.execute("SELECT * FROM python_view").fetchall()
    plain.close()


# graded: a grade for every recommended item; prefs: pairs of neighbours in rec, each oriented
# by one hidden order of the items (so no cycle), disagreeing with rec about half the time.
EVERY_KIND_TABLE = """
CREATE OR REPLACE TABLE every_kind AS SELECT u, rec, truth,
  map_from_entries(list_transform(rec, lambda t: (t, ((t * 7 + u) % 5)::DOUBLE))) AS graded,
  list_transform(range(1, len(rec)), lambda i: CASE
    WHEN (rec[i] * 7 + u) % 11 * 100 + rec[i] < (rec[i + 1] * 7 + u) % 11 * 100 + rec[i + 1]
    THEN (rec[i], rec[i + 1]) ELSE (rec[i + 1], rec[i]) END) AS prefs
FROM (
  SELECT u, list_distinct(list_transform(range(12), lambda i: ((u * 31 + i * 17) % 50)::BIGINT))
    AS rec,
  list_transform(range((u % 7)::BIGINT), lambda i: ((u * 13 + i * 5) % 50)::BIGINT) AS truth
  FROM range(6000) t(u))
"""
EVERY_KIND_QUERY = (
    "SELECT avg(ndcg(rec, truth, 5)), avg(auc(rec, truth)), avg(ndcg(rec, graded, 5)), "
    "avg(err(rec, graded)), avg(dcg(rec, truth, 3, gain := 'linear')), "
    "avg(half_life_utility(rec, graded)), avg(edrc(rec, prefs)), avg(spearman(rec, graded)), "
    "avg(kendall_tau(rec, graded)), avg(fcp(rec, graded)) FROM every_kind"
)


@pytest.mark.parametrize("threads", [1, 2, 8])
def test_threads_with_cursors_give_the_serial_results_for_every_kind_of_function(threads):
    """Graded macros and the Python-backed edrc and correlations too; those need
    duckrank.register(cursor) on each cursor (TEMP macros)."""
    con = duckrank.connect()
    con.execute(f"SET threads = {threads}")
    con.execute(EVERY_KIND_TABLE)
    serial = con.execute(EVERY_KIND_QUERY).fetchall()
    assert all(value is not None for value in serial[0])
    # Sums of doubles over parallel groups may add in another order: equal to the last bits.
    for result in run_on_cursors(con, EVERY_KIND_QUERY):
        assert result[0] == pytest.approx(serial[0], rel=1e-12)
    con.close()


def test_two_connections_run_every_kind_of_function_at_once():
    first, second = duckrank.connect(), duckrank.connect()
    for con in (first, second):
        con.execute(EVERY_KIND_TABLE)
    serial = first.execute(EVERY_KIND_QUERY).fetchall()
    results: dict = {}

    def work(name: str, con: duckdb.DuckDBPyConnection) -> None:
        results[name] = con.execute(EVERY_KIND_QUERY).fetchall()

    workers = [threading.Thread(target=work, args=item)
               for item in (("first", first), ("second", second))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert not any(worker.is_alive() for worker in workers), "deadlock"
    for name in ("first", "second"):
        assert results[name][0] == pytest.approx(serial[0], rel=1e-12)
    first.close()
    second.close()


def test_a_cursor_without_register_names_the_missing_function():
    """TEMP macros are private to their connection: an unregistered cursor has the stored macros
    but not edrc (docs/reliability.md, "Cursors and TEMP macros")."""
    con = duckrank.connect()
    cursor = con.cursor()
    assert cursor.execute("SELECT mrr([2, 1], [1])").fetchall() == [(0.5,)]
    with pytest.raises(duckdb.CatalogException, match="edrc"):
        cursor.execute("SELECT edrc([1, 2], [(1, 2)])").fetchall()
    duckrank.register(cursor)
    assert cursor.execute("SELECT edrc([1, 2], [(1, 2)])").fetchall() == [(1.0,)]
    con.close()


# --- registration from many threads at once (issue 13, item 9) -------------------------------

UNSIGNED = {"allow_unsigned_extensions": "true"}  # so that loading the native step races too


def register_from_threads(connections: list[duckdb.DuckDBPyConnection], rounds: int) -> list:
    """Each connection, in its own thread, calls duckrank.register ``rounds`` times, every thread
    starting each round at the same moment; then runs mrr and edrc. Returns what went wrong."""
    barrier = threading.Barrier(len(connections))
    failures: list = []

    def work(con: duckdb.DuckDBPyConnection) -> None:
        try:
            for _ in range(rounds):
                barrier.wait(timeout=60)
                duckrank.register(con)
            # mrr: the first hit is at rank 2, 1/2; edrc: rec agrees with its only preference.
            assert con.execute("SELECT mrr([3, 1], [1]), edrc([1, 2], [(1, 2)])").fetchall() == [
                (0.5, 1.0)
            ]
        except Exception as error:  # noqa: BLE001 - every failure is reported, not only the first
            failures.append(repr(error))

    workers = [threading.Thread(target=work, args=(con,)) for con in connections]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=300)
    assert not any(worker.is_alive() for worker in workers), "deadlock"
    return failures


@pytest.mark.parametrize("database", ["memory", "file"])
@pytest.mark.parametrize("registered", [False, True], ids=["fresh", "already registered"])
def test_cursors_register_at_once(tmp_path, database: str, registered: bool):
    """Before the fix, on a fresh database all but one of 12 failed with a catalog write-write
    conflict; on a file whose macros were already stored (opened again, the Python UDFs not yet
    registered), all but one failed with 'duckrank_edrc already exists'."""
    path = ":memory:" if database == "memory" else str(tmp_path / "user.duckdb")
    if registered and database == "file":
        duckrank.connect(path).close()
    con = duckdb.connect(path, config=UNSIGNED)
    if registered and database == "memory":
        duckrank.register(con)
    cursors = [con.cursor() for _ in range(RACERS)]
    # Two rounds: the first races on the state the parameters set up, the second on a database
    # every thread has just registered; a third would repeat the second.
    assert register_from_threads(cursors, rounds=2) == []
    con.close()


def test_connections_to_one_file_register_at_once(tmp_path):
    """duckdb.connect on one path in one process gives connections to one database instance."""
    path = str(tmp_path / "user.duckdb")
    connections = [duckdb.connect(path, config=UNSIGNED) for _ in range(RACERS)]
    assert register_from_threads(connections, rounds=2) == []  # as above
    for con in connections:
        con.close()
