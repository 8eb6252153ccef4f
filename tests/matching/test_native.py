"""The native matching step (duckrank/matching/native/match.c) against the SQL form it replaces.

Expected values come from the SQL matching step (``duckrank.connect(native=False)``), which
test_binary_equivalence.py checks against a plain-Python reference written from the definitions,
three forms each on its own. The native step itself is checked against that reference directly
too: test_binary_equivalence.py's other tests and test_properties.py (hypothesis) run on
``duckrank.connect()``, which loads it, and test_the_build_has_the_native_step makes sure it is
loaded. Here every id type the native step takes is compared with it on
random rows, including the pairs of integer types SQL compares by value and the values where a
careless comparison of bits would go wrong (-1 against 255, -0.0 against 0.0, NaN, 2^63, strings
longer than DuckDB's 12 inline bytes). Sums of the same terms in another order may differ in the
last bit, hence rel=1e-12.
"""

from __future__ import annotations

import math
import random
import uuid

import duckdb
import pytest

import duckrank
from duckrank.matching import native
from duckrank.matching import sql as matching
from duckrank.metrics import METRICS

HIT_METRICS = [m.name for m in METRICS if m.inputs == "hits"]
# Graded metrics over LIST truth match through duckrank_matched.
LIST_GRADED = [m.name for m in METRICS if m.inputs == "grades" and not m.truth_type]
ROWS = 500
# The oldest-DuckDB run of scripts/test deselects the id types marked whole_suite_only: it checks
# the native step against that DuckDB's C API on one type of each family (integers, 128-bit
# integers, strings, floats, UUID), and each type costs it about 2 s of binding.
ONE_PER_FAMILY = {"BIGINT", "HUGEINT", "VARCHAR", "DOUBLE", "UUID"}


def _family_sample(*types: str | tuple[str, str]) -> list:
    """The parameters (a type, or a pair named by its first), those outside ONE_PER_FAMILY
    marked whole_suite_only."""
    pairs = [t if isinstance(t, tuple) else (t,) for t in types]
    return [pytest.param(*p, marks=() if p[0] in ONE_PER_FAMILY else pytest.mark.whole_suite_only)
            for p in pairs]


def test_the_build_has_the_native_step(fast, sql_only) -> None:
    """CI builds with a C compiler: a missing library would silently mean the slow path."""
    assert native.library_path() is not None
    assert native.is_loaded(fast)
    assert not native.is_loaded(sql_only)


def _values(type_name: str, rng: random.Random, alphabet: int) -> list:
    """`alphabet` distinct values of the type, as SQL literals, with the awkward ones first."""
    special = {
        "TINYINT": ["-1", "-128", "127"], "SMALLINT": ["-1", "-32768"], "INTEGER": ["-1", "255"],
        "BIGINT": ["-1", "-9223372036854775808", "255"], "HUGEINT": ["-1", "18446744073709551615"],
        "UTINYINT": ["255"], "USMALLINT": ["65535", "255"], "UINTEGER": ["4294967295", "255"],
        "UBIGINT": ["18446744073709551615", "9223372036854775808"],
        "UHUGEINT": ["340282366920938463463374607431768211455", "18446744073709551615"],
        "DOUBLE": ["'-0.0'", "'nan'", "'-inf'"], "FLOAT": ["'-0.0'", "'nan'"],
        "VARCHAR": ["''", "'exactly12byte'", "'a string longer than twelve bytes'"],
        "BLOB": ["'\\x00'", "'a blob longer than twelve bytes'"],
        "BOOLEAN": ["true", "false"],
    }.get(type_name, [])
    values = list(special)
    while len(values) < alphabet:
        i = len(values)
        if type_name in ("VARCHAR", "BLOB"):
            values.append(f"'item_{i}'" if i % 3 else f"'a long item name number {i}'")
        elif type_name == "UUID":
            values.append(f"'{uuid.UUID(int=rng.getrandbits(128))}'")
        elif type_name == "DATE":
            values.append(f"DATE '2020-01-01' + {i}")
        elif type_name.startswith("TIMESTAMP"):
            values.append(f"TIMESTAMP '2020-01-01' + INTERVAL {i} SECOND")
        elif type_name in ("DOUBLE", "FLOAT"):
            values.append(f"{i / 4}")
        elif type_name == "BOOLEAN":
            break
        else:
            values.append(str(i))
    zero = {"DOUBLE": "'0.0'", "FLOAT": "'0.0'"}.get(type_name)
    return values + ([zero] if zero else [])


def _list(type_name: str, values: list, rng: random.Random, length: int) -> str:
    items = ["NULL" if rng.random() < 0.05 else f"({rng.choice(values)})::{type_name}"
             for _ in range(length)]
    return f"[{', '.join(items)}]::{type_name}[]"


def _rows(rec_type: str, truth_type: str, seed: int) -> str:
    """A VALUES list of (i, rec, truth, k) with shared values so that hits and repeats are
    common, empty and NULL lists, and per-row k (NULL too)."""
    rng = random.Random(seed)
    alphabet = rng.choice([6, 20])
    rec_values = _values(rec_type, rng, alphabet)
    truth_values = _values(truth_type, random.Random(seed), alphabet)
    rows = []
    for i in range(ROWS):
        rec = "NULL" if rng.random() < 0.03 else _list(
            rec_type, rec_values, rng, rng.choice([0, 1, 5, 12, rng.randrange(40)]))
        truth = "NULL" if rng.random() < 0.03 else _list(
            truth_type, truth_values, rng, rng.choice([0, 1, 4, rng.randrange(30)]))
        k = "NULL" if rng.random() < 0.03 else str(rng.choice([1, 3, 10, rng.randrange(1, 50)]))
        rows.append(f"({i}, {rec}, {truth}, {k})")
    return ", ".join(rows)


def _assert_same_values(fast, sql_only, names: list[str], rows: str, native_function: str) -> None:
    """Every metric of ``names`` on the VALUES ``rows`` (i, rec, truth, k): the native step (which
    must run) gives the SQL form's values."""
    calls = [f"{name}(rec, truth, k)" for name in names]
    query = (
        f"SELECT i, {', '.join(calls)} FROM (VALUES {rows}) cases(i, rec, truth, k) ORDER BY i"
    )
    # The profile of the run itself names the functions it executed: binding the 26 macros costs
    # far more than running them, so a separate EXPLAIN would double the test's time.
    fast.enable_profiling()
    try:
        got = fast.execute(query).fetchall()
        plan = fast.get_profiling_information()
    finally:
        fast.disable_profiling()
    assert native_function in plan, "the native step did not run"
    expected = sql_only.execute(query).fetchall()
    for row, want in zip(got, expected, strict=True):
        for call, value, reference in zip(calls, row[1:], want[1:], strict=True):
            assert (value is None) == (reference is None) and (
                value is None or value == pytest.approx(reference, rel=1e-12, abs=1e-15)
            ), f"row {row[0]}: {call} = {value}, SQL form gives {reference}"


@pytest.mark.parametrize(
    "type_name",
    _family_sample(*sorted(matching.NATIVE_SIGNED_TYPES + matching.NATIVE_UNSIGNED_TYPES
                           + matching.NATIVE_SAME_TYPES + ("UHUGEINT",))),
)
def test_every_native_id_type_gives_the_sql_values(fast, sql_only, type_name: str) -> None:
    _assert_same_values(fast, sql_only, HIT_METRICS + LIST_GRADED,
                        _rows(type_name, type_name, seed=len(type_name)), "duckrank_match")


@pytest.mark.parametrize(
    ("rec_type", "truth_type"),
    _family_sample(
        ("INTEGER", "BIGINT"), ("BIGINT", "TINYINT"), ("UTINYINT", "TINYINT"),
        ("UINTEGER", "INTEGER"), ("UBIGINT", "BIGINT"), ("HUGEINT", "UBIGINT"),
        ("SMALLINT", "HUGEINT"), ("UHUGEINT", "UBIGINT"), ("USMALLINT", "UHUGEINT"),
    ),
)
def test_integer_types_compare_by_value(fast, sql_only, rec_type: str, truth_type: str) -> None:
    """-1 (signed) never equals 255 or 2^64 - 1 (unsigned), as in SQL."""
    _assert_same_values(fast, sql_only, HIT_METRICS + LIST_GRADED,
                        _rows(rec_type, truth_type, seed=7), "duckrank_match")


def test_a_string_and_its_inline_prefix_differ(fast) -> None:
    """Strings up to 12 bytes are compared by their inline bytes, longer ones by content. By hand:
    positions 1 (12 bytes) and 3 (14 bytes) are hits, 2 (13 bytes, a prefix of 3) is not: 2/3."""
    value = fast.execute(
        "SELECT precision_at(['exactly12byt', 'exactly12byte', 'exactly12bytes'], "
        "['exactly12bytes', 'exactly12byt'])"
    ).fetchall()[0][0]
    assert value == pytest.approx(2 / 3)


def test_types_the_native_step_does_not_take_still_work(fast, sql_only) -> None:
    """DECIMAL, INTERVAL (1 month = 30 days in SQL) and nested ids take the SQL form."""
    query = (
        "SELECT ndcg([1.5, 2.5]::DECIMAL(4,1)[], [2.5]::DECIMAL(4,1)[]), "
        "recall_at([INTERVAL 1 MONTH], [INTERVAL 30 DAY]), "
        "mrr([[1], [2]], [[2]])"
    )
    assert fast.execute(query).fetchall() == sql_only.execute(query).fetchall()
    assert fast.execute(query).fetchall()[0][1] == 1.0
    assert "duckrank_match" not in "".join(
        row[1] for row in fast.execute(f"EXPLAIN {query}").fetchall()
    )


def test_a_null_row_is_null_in_every_field(fast) -> None:
    rows = fast.execute(
        "SELECT m IS NULL, m.K IS NULL, m.pos IS NULL, m.n IS NULL, m.cut IS NULL FROM ("
        "SELECT duckrank_match('ndcg', rec, [1, 2], 5) AS m FROM (VALUES ([2, 1]), (NULL)) v(rec))"
    ).fetchall()
    assert sorted(rows) == [(False,) * 5, (True,) * 5]


def test_an_unhandled_pair_called_directly_names_the_function(fast) -> None:
    with pytest.raises(duckdb.InvalidInputException, match="ndcg: these id types"):
        fast.execute("SELECT duckrank_match('ndcg', ['a'], [1], 5)").fetchall()


def test_long_lists_and_many_chunks(fast, sql_only) -> None:
    """Rows longer than any hash-table size seen before in the same chunk, and more rows than
    one DuckDB vector, with NULL rows between them."""
    query = (
        "SELECT sum(ndcg(rec, truth, k)), sum(average_precision(rec, truth, k)), "
        "count(auc(rec, truth, k)) FROM ("
        "SELECT CASE WHEN i % 97 = 0 THEN NULL ELSE "
        "  list_transform(range((i * 7919) % 3000), lambda x: (x * 31 + i) % 4000) END rec, "
        "  list_transform(range((i * 104729) % 2500), lambda x: (x * 17 + i) % 5000) truth, "
        "  1 + i % 2500 k FROM range(1200) t(i))"
    )
    got, want = fast.execute(query).fetchall()[0], sql_only.execute(query).fetchall()[0]
    assert got[2] == want[2]
    assert all(math.isclose(g, w, rel_tol=1e-12) for g, w in zip(got[:2], want[:2], strict=True))


def test_a_connection_without_unsigned_extensions_uses_the_sql_form() -> None:
    con = duckrank.register(duckdb.connect())
    assert not native.is_loaded(con)
    assert con.execute("SELECT ndcg([1, 2, 3], [3])").fetchall() == [(0.5,)]


def test_a_file_database_stores_the_sql_form(tmp_path) -> None:
    """The stored macros work in a DuckDB without duckrank; the registering connection shadows
    the helpers through which they reach the native step with TEMP macros that call it."""
    path = str(tmp_path / "eval.duckdb")
    con = duckrank.connect(path)
    definition = (
        "SELECT macro_definition FROM duckdb_functions() WHERE function_name = "
        "'duckrank_native_match' AND database_name = ?"
    )
    assert "duckrank_match" in con.execute(definition, ["temp"]).fetchall()[0][0]
    assert "duckrank_match" not in con.execute(definition, [con.execute(
        "SELECT current_database()").fetchall()[0][0]]).fetchall()[0][0]
    value = con.execute("SELECT ndcg([1, 2, 3], [3])").fetchall()
    con.close()
    plain = duckdb.connect(path)
    assert plain.execute("SELECT ndcg([1, 2, 3], [3])").fetchall() == value == [(0.5,)]
    plain.close()


def test_a_build_duckdb_refuses_warns_and_falls_back(monkeypatch) -> None:
    """A library DuckDB will not load (here: metadata naming another platform) must not stop
    duckrank from working."""
    real_footer = native._footer
    monkeypatch.setattr(native, "_footer", lambda platform: real_footer("not_a_platform"))
    monkeypatch.setattr(native, "_warned", set())  # the warning is once per process
    with pytest.warns(RuntimeWarning, match="native matching step did not load"):
        con = duckrank.connect()
    assert not native.is_loaded(con)
    assert con.execute("SELECT ndcg([1, 2, 3], [3])").fetchall() == [(0.5,)]
    active, reason = native.status()
    assert not active and reason.startswith("DuckDB refused to load ")



MAP_GRADED = [m.name for m in METRICS if m.inputs == "grades" and m.truth_type]


@pytest.mark.parametrize(
    "rec_type", _family_sample("VARCHAR", "BIGINT", "INTEGER", "UBIGINT", "TINYINT"))
def test_graded_metrics_over_map_truth_give_the_sql_values(fast, sql_only, rec_type: str) -> None:
    """duckrank_grades (the grades of the top K from MAP truth) against the SQL form: ids
    compared by their text (so integer ids find keys such as '-3' and '12'), repeated
    recommendations, NULL items, items without a grade, zero grades, keys longer than 12 bytes."""
    rng = random.Random(rec_type)
    negative = rec_type in ("BIGINT", "INTEGER", "TINYINT")

    def item(i: int) -> str:
        if rec_type == "VARCHAR":
            return f"'item {i}'" if i % 2 else f"'a long item name {i}'"
        return str(-i if negative and i % 3 == 0 else i)

    rows = []
    for i in range(ROWS):
        rec = "NULL" if rng.random() < 0.03 else "[" + ", ".join(
            "NULL" if rng.random() < 0.05 else item(rng.randrange(25))
            for _ in range(rng.choice([0, 1, 5, 12, rng.randrange(40)]))) + f"]::{rec_type}[]"
        grades = {rng.randrange(25): rng.choice([0, 0.5, 1, 2, 3])
                  for _ in range(rng.randrange(15))}
        truth = "NULL" if rng.random() < 0.03 else "MAP {" + ", ".join(
            f"'{item(j).strip(chr(39))}': {g}" for j, g in grades.items()
        ) + "}::MAP(VARCHAR, DOUBLE)"
        k = "NULL" if rng.random() < 0.03 else str(rng.choice([1, 3, 10, rng.randrange(1, 50)]))
        rows.append(f"({i}, {rec}, {truth}, {k})")
    _assert_same_values(fast, sql_only, MAP_GRADED, ", ".join(rows), "duckrank_graded")


def test_grades_of_long_integer_ids_by_hand(fast) -> None:
    """Ids whose text is longer than DuckDB's 12 inline bytes, and the smallest BIGINT. By hand:
    the first three items have grades 4, 1 and 2; the repeat of the first is a miss (0)."""
    got = fast.execute(
        "SELECT duckrank_grades([1234567890123456, -9223372036854775808, 7, 1234567890123456], "
        "MAP {'1234567890123456': 4.0, '-9223372036854775808': 1.0, '7': 2.0}"
        "::MAP(VARCHAR, DOUBLE), 10)"
    ).fetchall()
    assert got == [([4.0, 1.0, 2.0, 0.0],)]


# The native step's scratch against memory_limit. A truth list of n items gets a hash table of
# the smallest power of two >= 2n slots (start_row in match.c) of 32 bytes each (slot_graded:
# hash 8 + text 8 + stamp 4 + consumed 4 + grade 8).


def test_a_row_over_memory_limit_fails_with_an_out_of_memory_error() -> None:
    """By hand: 1,000,000 truth items need 2^21 = 2,097,152 slots x 32 bytes = 64.0 MiB;
    memory_limit '64MB' is 64,000,000 bytes = 61.0 MiB. Before, the step allocated it anyway.
    (Rows come from a table: DuckDB would fold the macros over constant lists at bind time.)"""
    con = duckrank.connect(config={"memory_limit": "64MB"})
    assert native.is_loaded(con)
    con.execute("CREATE TABLE t AS SELECT n, range(10) AS rec, range(n) AS truth "
                "FROM (VALUES (1000000), (500000)) v(n)")
    with pytest.raises(
        duckdb.InvalidInputException,
        match=r"ndcg: Out of Memory Error: the native matching step could not allocate 64\.0 MiB "
        r"for a row of 1000000 truth items \(0 bytes/61\.0 MiB used by it\): that would exceed "
        r"memory_limit",
    ):
        con.execute("SELECT ndcg(rec, truth, 10) FROM t WHERE n = 1000000").fetchall()
    # Half the items: 2^20 slots x 32 bytes = 32.0 MiB fit; every one of the 10 recs is a hit.
    assert con.execute("SELECT ndcg(rec, truth, 10) FROM t WHERE n = 500000").fetchall() == [
        (1.0,)
    ]
    con.close()


def test_the_limit_a_query_passes_is_the_one_in_force() -> None:
    """memory_limit SET after loading: the last argument, current_setting('memory_limit') as the
    query sees it, is what counts (64MB = 61.0 MiB < 64.0 MiB, as above)."""
    con = duckrank.connect()
    con.execute("SET memory_limit = '64MB'")
    con.execute("CREATE TABLE t AS SELECT range(10) AS rec, range(1000000) AS truth")
    with pytest.raises(duckdb.InvalidInputException, match=r"\(0 bytes/61\.0 MiB used by it\)"):
        con.execute(
            "SELECT duckrank_match('ndcg', rec, truth, 10, current_setting('memory_limit')) FROM t"
        ).fetchall()
    con.close()


def test_grades_over_a_limit_and_a_limit_that_is_not_a_size(fast) -> None:
    """By hand: 20,000 keys need 2^16 = 65,536 slots x 32 bytes = 2.0 MiB, over 1 MiB."""
    query = (
        "SELECT duckrank_grades([1, 2], map_from_entries(list_transform(range(20000), "
        "lambda x: {{'k': x::VARCHAR, 'v': 1.0::DOUBLE}})), 10, '{}')"
    )
    with pytest.raises(
        duckdb.InvalidInputException,
        match=r"duckrank_grades: Out of Memory Error: the native matching step could not "
        r"allocate 2\.0 MiB for a row of 20000 truth items \(0 bytes/1\.0 MiB used by it\)",
    ):
        fast.execute(query.format("1 MiB")).fetchall()
    assert fast.execute(query.format("2.5 MiB")).fetchall() == [([1.0, 1.0],)]
    with pytest.raises(duckdb.InvalidInputException,
                       match=r"duckrank_grades: memory_limit '2,5 MiB' is not a size"):
        fast.execute(query.format("2,5 MiB")).fetchall()


def test_the_footer_names_the_c_api_version_the_sources_use() -> None:
    """capi.h is the one place the C sources take their C API version from; the footer DuckDB
    reads (native.C_API_VERSION) must name the same one."""
    import re
    from pathlib import Path

    header = (Path(native.__file__).parent / "capi.h").read_text()
    parts = [
        re.search(rf"#define DUCKDB_EXTENSION_API_VERSION_{part} (\d+)", header).group(1)
        for part in ("MAJOR", "MINOR", "PATCH")
    ]
    assert "v" + ".".join(parts) == native.C_API_VERSION
    sources = Path(native.__file__).parent
    for source in [*sources.glob("*.c"), *sources.glob("*.h")]:
        if source.name != "capi.h":
            assert "DUCKDB_EXTENSION_API_VERSION" not in source.read_text(), source
