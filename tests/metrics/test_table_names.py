"""Issue 25, 1.7: the table-name arguments of the beyond-accuracy macros (``catalog`` of
catalog_coverage, exposure_entropy's peers exposure_gini and serendipity; ``train`` and
``propensities`` of the ``ips_*`` metrics) are names, never SQL. Before the fix they were spliced
into the text a ``query()`` ran: a value bound as a query parameter ran as a subquery (it read a
file, whose content an error then showed) and a real name needing quotes failed.

Expected values: hand calculations. recs: one user u1 with rec ['a', 'b'] and truth ['a'];
the catalogue ['a', 'b', 'c', 'd'] (coverage 2/4 = 0.5); train a, a, b (popularity 2, 1):
propensities p(a) = 1, p(b) = sqrt(1/2), snips recall of the one relevant item a, ranked 1st,
is 1.0; a propensity table of 0.5 for every item gives the same 1.0 (snips does not depend on
the scale)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from duckrank.render.beyond_accuracy import MACROS

# Names as query_table reads them (as recs is read): a schema-qualified name, and a dot or a
# double quote inside a name written in double quotes.
NAMES = ("my catalogue", "it's", "s.t", '"a.b"', '"we""ird"')


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    for statement in MACROS:
        connection.execute(statement)
    connection.execute("CREATE TABLE recs AS SELECT 'u1' AS \"user\", ['a', 'b'] AS rec, "
                       "['a'] AS truth")
    connection.execute("CREATE SCHEMA s")
    for name in NAMES:
        quoted = name if name.startswith('"') or name == "s.t" else f'"{name}"'
        connection.execute(f"CREATE TABLE {quoted} AS SELECT unnest(['a', 'b', 'c', 'd']) AS "
                           "item, 0.5 AS propensity, 'u1' AS \"user\"")
    connection.execute("CREATE TABLE \"the train\" AS SELECT 'u1' AS \"user\", "
                       "unnest(['a', 'a', 'b']) AS item")
    yield connection
    connection.close()


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(("sql", "expected"), [
    ("SELECT catalog_coverage FROM catalog_coverage('recs', 2, catalog := ?)", 0.5),
    # Exposures (1, 1, 0, 0) over 4 items: (2*3-5)*1 + (2*4-5)*1 = 4, / (4 * 2) = 0.5.
    ("SELECT exposure_gini FROM exposure_gini('recs', 2, catalog := ?)", 0.5),
    ("SELECT ips_recall FROM ips_recall('recs', 2, propensities := ?)", 1.0),
])
def test_a_name_that_needs_quoting_is_read(con: duckdb.DuckDBPyConnection, name: str, sql: str,
                                           expected: float) -> None:
    assert con.execute(sql, [name]).fetchall() == [(pytest.approx(expected, abs=1e-12),)]


def test_train_and_serendipity_catalog_by_a_quoted_name(con: duckdb.DuckDBPyConnection) -> None:
    got = con.execute("SELECT ips_recall FROM ips_recall('recs', 2, train := ?)",
                      ["the train"]).fetchall()
    assert got == [(pytest.approx(1.0, abs=1e-12),)]
    # serendipity: N = 4, a at position 1 with popularity rank 1: max(4/4 - 4/4, 0) = 0; b is
    # not relevant: mean 0.
    got = con.execute("SELECT serendipity FROM serendipity('recs', 'the train', 2, "
                      "catalog := ?)", ["my catalogue"]).fetchall()
    assert got == [(0.0,)]


@pytest.mark.parametrize("sql", [
    "SELECT * FROM catalog_coverage('recs', 2, catalog := ?)",
    "SELECT * FROM exposure_gini('recs', 2, catalog := ?)",
    "SELECT * FROM serendipity('recs', 'the train', 2, catalog := ?)",
    "SELECT * FROM ips_recall('recs', 2, train := ?)",
    "SELECT * FROM ips_recall('recs', 2, propensities := ?)",
])
def test_a_bound_value_is_a_name_never_sql(con: duckdb.DuckDBPyConnection, tmp_path: Path,
                                           sql: str) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("do-not-show-this\n")
    evil = f"(SELECT content AS item, 1.0 AS propensity FROM read_text('{secret}'))"
    with pytest.raises(duckdb.Error) as raised:
        con.execute(sql, [evil]).fetchall()
    assert "do-not-show-this" not in str(raised.value)
    assert "does not exist" in str(raised.value)


def test_the_ips_error_names_the_argument_not_a_view(con: duckdb.DuckDBPyConnection) -> None:
    """Item z is relevant but not in train: the message names train (the argument), not the
    name of the table given (from Python, a view made for the call)."""
    con.execute("CREATE OR REPLACE TABLE recs_z AS SELECT 'u1' AS \"user\", ['a'] AS rec, "
                "['z'] AS truth")
    with pytest.raises(duckdb.Error, match="ips_recall: item z of the truth of user u1 has no "
                       "propensity: it is not in train "):
        con.execute("FROM ips_recall('recs_z', 1, train := 'the train')").fetchall()
    with pytest.raises(duckdb.Error, match="it is not in propensities "):
        con.execute("FROM ips_recall('recs_z', 1, propensities := 'it''s')").fetchall()
