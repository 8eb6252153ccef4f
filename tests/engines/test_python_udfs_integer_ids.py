"""The Python-backed functions given integer ids: the macro sends them to the ``_int`` twin UDF as
BIGINT[] (duckrank.engines.python_udfs), and every value and message stays what the general path
(ids through the UNION of list types, or as text for the correlations) gives.

Expected values: the general path on the same ids as VARCHAR (the path the existing tests check
against per-row references and scipy), and hand calculations written out below.
"""

from __future__ import annotations

import duckdb
import pytest
from conftest import scalar as value

import duckrank
from duckrank.engines.python_udfs import INTEGER_LISTS, PYTHON_METRICS
from duckrank.metrics import prefs

CORRELATIONS = ("spearman", "kendall_tau", "ap_correlation", "fcp")

# Four distinct ids per type: negative ids where the type has them, the type's extremes, and for
# BIGINT ids beyond 2^31 and 2^32 (which INTEGER could not hold).
IDS = {
    "TINYINT": (-128, 127, 0, -3),
    "SMALLINT": (-32768, 32767, 5, -1),
    "INTEGER": (-(2**31), 2**31 - 1, 7, -2),
    "BIGINT": (2**31 + 5, -(2**40), 2**32 + 1, -(2**63)),
    "UTINYINT": (255, 0, 7, 128),
    "USMALLINT": (65535, 0, 9, 256),
    "UINTEGER": (2**32 - 1, 2**31, 0, 11),
}


CALLS = {
    "edrc": "edrc(rec, truth)",
    "edrc_preferences": "edrc_preferences(system, truth)",
    **{f: f"{f}(rec, grades)" for f in CORRELATIONS},
    **{m.name: f"{m.name}(rec, judgments)" for m in prefs.METRICS},
}


def _arguments(kind: str, ids: tuple[int | str, ...]) -> str:
    """Arguments for every call in ``CALLS`` over ``ids`` cast to ``kind``, with a NULL element in
    rec, in a preference and in the system's preferences (and trec_eval preference judgments,
    for the prefs_* functions)."""
    a, b, c, d = (f"({i})::{kind}" for i in ids)
    return (
        f"SELECT [{a}, NULL, {b}, {c}, {d}] AS rec, "
        f"[({a}, {b}), ({c}, {b}), ({d}, {a}), ({c}, NULL)] AS truth, "
        f"[({a}, {b}), ({b}, {c}), ({a}, {d})] AS system, "
        f"MAP {{{a}: 1.0, {b}: 3.0, {c}: 2.0, {d}: 2.0}} AS grades, "
        f"[{{'jg': 1, 'jsg': 1, 'item': {d}, 'level': 2}}, "
        f"{{'jg': 1, 'jsg': 1, 'item': {b}, 'level': 1}}, "
        f"{{'jg': 1, 'jsg': 1, 'item': {c}, 'level': 0}}] AS judgments"
    )


def _run(con: duckdb.DuckDBPyConnection, arguments: str, call: str) -> tuple[str, object]:
    """(the plan, the value) of ``call`` over a table of ``arguments`` (a table, so that DuckDB
    does not fold the call into a constant and the plan shows which UDF runs)."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE arguments AS {arguments}")
    plan = con.execute(f"EXPLAIN SELECT {call} FROM arguments").fetchall()[0][1]
    return plan, value(con, f"SELECT {call} FROM arguments")


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    # The SQL matching step: with the native step loaded, integer ids never reach the Python
    # UDFs this file tests (tests/matching/test_native_preferences.py covers that branch).
    connection = duckrank.connect(native=False)
    yield connection
    connection.close()


def test_every_python_function_is_covered() -> None:
    assert {m.name for m in PYTHON_METRICS} == set(CALLS)


@pytest.mark.parametrize("kind", [t.removesuffix("[]") for t in INTEGER_LISTS])
@pytest.mark.parametrize("function", sorted(CALLS))
def test_integer_ids_take_the_integer_udf_and_keep_the_value(
    con: duckdb.DuckDBPyConnection, function: str, kind: str
) -> None:
    plan, integer = _run(con, _arguments(kind, IDS[kind]), CALLS[function])
    assert f"duckrank_{function}_int(" in plan
    # The general path on the same ids as text.
    plan, text = _run(con, _arguments(f"{kind}::VARCHAR", IDS[kind]), CALLS[function])
    assert f"duckrank_{function}_int(" not in plan
    assert integer == text


@pytest.mark.parametrize("kind", ["UBIGINT", "HUGEINT", "VARCHAR", "UUID"])
def test_other_ids_keep_the_general_udf(con: duckdb.DuckDBPyConnection, kind: str) -> None:
    uuids = tuple(f"'00000000-0000-0000-0000-00000000000{i}'" for i in (1, 2, 3, 4))
    arguments = _arguments(kind, uuids if kind == "UUID" else (1, 2, 3, 4))
    for function, call in CALLS.items():
        plan, _ = _run(con, arguments, call)
        assert f"duckrank_{function}(" in plan and f"duckrank_{function}_int(" not in plan


@pytest.mark.parametrize(
    ("rec", "keys"),
    [("INTEGER", "BIGINT"), ("UTINYINT", "BIGINT"), ("BIGINT", "UINTEGER"),
     ("SMALLINT", "TINYINT")],
)
def test_mixed_integer_kinds(con: duckdb.DuckDBPyConnection, rec: str, keys: str) -> None:
    """rec of one integer type against truth of another: ids 1, 2, 3 in rec's order, truth grades
    them 1, 2, 3 (and -1, unranked, 9): the order is the reverse of the grades, so spearman,
    kendall_tau and ap_correlation are -1 and fcp 0 (no concordant pair); edrc with truth
    preferring 3 to 2 to 1 is -1 (every pair reversed), as is edrc_preferences."""
    keyed = lambda i: f"({i})::{keys}"  # noqa: E731
    unranked = 4 if keys.startswith("U") else -1
    arguments = (
        f"SELECT [1::{rec}, 2::{rec}, 3::{rec}] AS rec, [({keyed(3)}, {keyed(2)}), "
        f"({keyed(2)}, {keyed(1)})] AS truth, [(1::{rec}, 2::{rec}), (2::{rec}, 3::{rec})] "
        f"AS system, MAP {{{keyed(1)}: 1.0, {keyed(2)}: 2.0, {keyed(3)}: 3.0, "
        f"{keyed(unranked)}: 9.0}} AS grades"
    )
    expected = {"spearman": -1.0, "kendall_tau": -1.0, "ap_correlation": -1.0, "fcp": 0.0,
                "edrc": -1.0, "edrc_preferences": -1.0}
    for function, result in expected.items():
        plan, actual = _run(con, arguments, CALLS[function])
        assert f"duckrank_{function}_int(" in plan
        assert actual == pytest.approx(result)


def test_text_matching_is_kept_for_text_against_integers(con: duckdb.DuckDBPyConnection) -> None:
    """docs/graded.md: an item matches a key by their text, so VARCHAR '3000000000' matches BIGINT
    key 3000000000 (and '01' matches nothing): rec ranks 3000000000 above 5, graded 2 and 1,
    perfect agreement, 1 for the four."""
    arguments = ("SELECT ['3000000000', '01', '5'] AS rec, "
                 "MAP {3000000000: 2.0, 5: 1.0, 1: 7.0} AS grades")
    for function in CORRELATIONS:
        plan, actual = _run(con, arguments, CALLS[function])
        assert f"duckrank_{function}_int(" not in plan
        assert actual == pytest.approx(1.0)


def test_a_table_of_integer_columns(con: duckdb.DuckDBPyConnection) -> None:
    """Several rows from typed columns (the common case), a NULL rec and a NULL truth among them:
    the same values as the same table's ids as VARCHAR."""
    con.execute("""
        CREATE OR REPLACE TEMP TABLE typed AS
        SELECT u, CASE WHEN u = 3 THEN NULL ELSE [(u * 7) % 11, u + 2**33, -u, NULL, 4]::BIGINT[]
               END AS rec,
               CASE WHEN u = 4 THEN NULL ELSE MAP {-u: 1.0, u + 2**33: (u % 3)::DOUBLE,
                                                   4: 2.0, 99: 5.0}::MAP(BIGINT, DOUBLE) END
               AS truth,
               [(-u, 4), (4, u + 2**33)]::STRUCT(a BIGINT, b BIGINT)[] AS prefs
        FROM range(1, 9) t(u)
    """)
    for function in [*CORRELATIONS, "edrc"]:
        truth = "prefs" if function == "edrc" else "truth"
        integer = f"SELECT list({function}(rec, {truth}) ORDER BY u) FROM typed"
        text_truth = ("prefs::STRUCT(a VARCHAR, b VARCHAR)[]" if function == "edrc"
                      else "truth::MAP(VARCHAR, DOUBLE)")
        text = (f"SELECT list({function}(rec::VARCHAR[], {text_truth}) ORDER BY u) "
                "FROM typed")
        assert value(con, integer) == value(con, text)


def test_a_bad_grade_names_the_item_by_its_text(con: duckdb.DuckDBPyConnection) -> None:
    """The correlations name items as text (the bad-input matrix: item '2'); integer ids that
    fail on the integer path are named the same way."""
    arguments = "SELECT [1, 3000000000] AS rec, MAP {1: 1.0, 3000000000: 'nan'::DOUBLE} AS grades"
    con.execute(f"CREATE OR REPLACE TEMP TABLE arguments AS {arguments}")
    for function in CORRELATIONS:
        sql = f"SELECT {CALLS[function]} FROM arguments"
        assert f"duckrank_{function}_int(" in con.execute(f"EXPLAIN {sql}").fetchall()[0][1]
        with pytest.raises(duckdb.Error, match="the grade of item '3000000000' in truth"):
            con.execute(sql).fetchall()


def test_truth_of_another_kind_still_fails_at_binding(con: duckdb.DuckDBPyConnection) -> None:
    """The correlations' truth is untyped in the macro so that integer keys stay integers; a
    truth that is not a MAP still fails when the query is bound, naming the expected type."""
    with pytest.raises(duckdb.BinderException, match=r"(?s)Macro spearman\(\) does not support"
                       r".*truth MAP\(VARCHAR, DOUBLE\)"):
        con.execute("SELECT spearman([1, 2], [1, 2])")
