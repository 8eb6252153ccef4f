"""The 14 ``prefs_*`` SQL functions (duckrank.metrics.prefs) against trec_eval 10.0's values.

Where the expected values come from:

* outputs of the trec_eval 10.0 binary pinned in this repository: trec_eval's own test files
  (``data/trec_eval_10_test``: prefs.test, qrels.test and out.test.prefs, out.test.qrels_prefs,
  copied from usnistgov/trec_eval 10.0's test/) and generated preference files
  (``data/trec_eval_10_prefs``, see its README): each value as trec_eval prints it (4 decimals);
* the binary itself on seeded random files, when it is on this machine (skipped otherwise);
* ``duckrank trec_eval -R prefs``'s per-query values at full precision (byte for byte the
  binary's in tests/reports/test_trec_eval_10.py): the functions give the same doubles;
* hand calculations, written out in the tests.

Each query's truth is ``list(struct_pack(jg, jsg, item := docno, level))`` of its judgment lines
and its rec ``list(docno ORDER BY score DESC, docno)`` (trec_eval's ranking of preferences: ties
by docno ascending), cut at -M as ``rec[1:M]``.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from trec_eval_oracle import PREFS_NAMES, binary, generate_prefs, run_binary

import duckrank
from duckrank.reports.trec_eval import trec_eval
from duckrank.reports.trec_eval.prefs import reader_macros

DATA = Path(__file__).parent / "data"
UPSTREAM = DATA / "trec_eval_10_test"
PINNED = DATA / "trec_eval_10_prefs"


@pytest.fixture(scope="module")
def con():
    connection = duckrank.connect()
    yield connection
    connection.close()


def _function_values(con: duckdb.DuckDBPyConnection, judgments: Path, run: Path, fmt: str,
                     max_docs: int | None = None,
                     complete: bool = False) -> dict[tuple[str, str], float]:
    """(measure, query) -> the function's value, for every query in both files (read by the
    command's readers, which it drops after each run); ``complete`` (-c): also the queries
    the run lacks, with an empty rec."""
    for statement in reader_macros(fmt).values():
        con.execute(statement)
    reader = f"duckrank_read_trec_{fmt}($j, file_encoding := 'latin-1')"
    jsg = "jsg" if fmt == "prefs" else "'0'"
    cut = f"[1:{max_docs}]" if max_docs is not None else ""
    ranking = "coalesce(rec, []::VARCHAR[])" if complete else f"rec{cut}"
    calls = ", ".join(f"{name.lower()}({ranking}, truth) AS {name}" for name in PREFS_NAMES)
    rows = con.execute(f"""
        WITH truth AS (
          SELECT query, list(struct_pack(jg, jsg := {jsg}, item, level)) AS truth
          FROM {reader} GROUP BY query),
        rec AS (
          SELECT query, list(item ORDER BY score DESC, item) AS rec
          FROM read_trec_run($r, file_encoding := 'latin-1') GROUP BY query)
        SELECT query, {calls}
        FROM truth {"LEFT JOIN" if complete else "JOIN"} rec USING (query)""",
        {"j": str(judgments), "r": str(run)}).fetchall()
    return {(name, row[0]): value for row in rows
            for name, value in zip(PREFS_NAMES, row[1:], strict=True)}


def _printed(lines: list[str]) -> dict[tuple[str, str], str]:
    """trec_eval -q's per-query lines (measure, query) -> the value as printed."""
    values = {}
    for line in lines:
        measure, query, value = line.split()
        if query != "all" and measure.startswith("prefs_"):
            values[measure, query] = value
    return values


def _as_printed(value: float | int) -> str:
    return str(value) if isinstance(value, int) else f"{value:.4f}"


@pytest.mark.parametrize(("expected", "judgments", "run", "fmt", "max_docs"), [
    (UPSTREAM / "out.test.prefs", UPSTREAM / "prefs.test", UPSTREAM / "prefs.results.test",
     "prefs", None),
    (UPSTREAM / "out.test.prefs", UPSTREAM / "prefs.comment.test",
     UPSTREAM / "prefs.results.test", "prefs", None),
    (UPSTREAM / "out.test.qrels_prefs", UPSTREAM / "qrels.test", UPSTREAM / "results.test",
     "qrels_prefs", None),
    (PINNED / "0.out", PINNED / "prefs.txt", PINNED / "prefs_run.txt", "prefs", None),
    (PINNED / "2.out", PINNED / "prefs.txt", PINNED / "prefs_run.txt", "prefs", 6),
    (PINNED / "1.out", PINNED / "prefs_extra.txt", PINNED / "prefs_run.txt", "prefs", "-c"),
    (PINNED / "6.out", PINNED / "qrels_prefs.txt", PINNED / "prefs_run.txt", "qrels_prefs",
     None),
], ids=["prefs.test", "prefs.comment.test", "qrels.test", "generated", "generated-M6",
        "generated-c", "generated-qrels_prefs"])
def test_the_functions_print_as_the_pinned_binary(con, expected: Path, judgments: Path,
                                                  run: Path, fmt: str,
                                                  max_docs: int | str | None) -> None:
    """-c: a query the run lacks, which trec_eval ranks as one unjudged document, is an empty
    rec (no judged document retrieved either way)."""
    printed = _printed(expected.read_text(encoding="latin-1").splitlines())
    complete = max_docs == "-c"
    ours = _function_values(con, judgments, run, fmt, None if complete else max_docs, complete)
    assert printed and set(ours) == set(printed)
    for key, value in printed.items():
        assert _as_printed(ours[key]) == value, key


@pytest.mark.parametrize(("seed", "fmt", "max_docs"), [(21, "prefs", None), (22, "prefs", 9),
                                                       (23, "qrels_prefs", None)])
def test_the_functions_equal_the_command_and_the_binary(con, tmp_path: Path, seed: int,
                                                        fmt: str, max_docs: int | None) -> None:
    """The same doubles as ``duckrank trec_eval -q -R prefs``; the binary's printed values when
    it is here."""
    files = generate_prefs(tmp_path, seed=seed, queries=30)
    judgments, run = files["prefs" if fmt == "prefs" else "qrels_prefs"], files["prefs_run"]
    ours = _function_values(con, Path(judgments), Path(run), fmt, max_docs)
    command = {(m, q): v for m, q, v in trec_eval(
        judgments, run, ["all_prefs"], per_query=True, rel_info_format=fmt, max_docs=max_docs,
        connection=con) if q != "all" and m.startswith("prefs_")}
    assert command and ours == command
    oracle = binary()
    if oracle is None:
        pytest.skip("no trec_eval 10.0 binary here (tests/reports/trec_eval_oracle.py)")
    flags = ["-q", "-R", fmt, "-m", "all_prefs", *(["-M", str(max_docs)] if max_docs else [])]
    status, lines, _ = run_binary(oracle, [*flags, judgments, run])
    assert status == 0
    assert {key: _as_printed(value) for key, value in ours.items()} == _printed(lines)


# get_prefs.c's first example (its comment): one sub-group ranking six documents, 13
# preferences: d4 (6) > d1 (3) > d2, d6 (2) > d3, d5 (0).
EXAMPLE = ("[{'jg': 'u1', 'jsg': 's1', 'item': 'd1', 'level': 3}, "
           "{'jg': 'u1', 'jsg': 's1', 'item': 'd2', 'level': 2}, "
           "{'jg': 'u1', 'jsg': 's1', 'item': 'd3', 'level': 0}, "
           "{'jg': 'u1', 'jsg': 's1', 'item': 'd4', 'level': 6}, "
           "{'jg': 'u1', 'jsg': 's1', 'item': 'd5', 'level': 0}, "
           "{'jg': 'u1', 'jsg': 's1', 'item': 'd6', 'level': 2}]")


def test_by_hand(con) -> None:
    """rec d4 d2 d1: d4 > d2 and d4 > d1 are fulfilled among the retrieved, d1 > d2 is not
    (prefs_simp_ret 2/3); d4, d1, d2 over the unretrieved d3, d5 (and d6 for d4, d1) are 8
    implied ones, all fulfilled; d6 > d3, d5 involve no retrieved document: prefs_simp 10/13,
    prefs_simp_imp 10/11 (as tests/reports/test_trec_eval_10.py's test_prefs_by_hand). Integer
    ids are compared as text; a NULL item is skipped and a repeat counts at its first rank."""
    row = con.execute(f"""SELECT prefs_num_prefs_poss(rec, t), prefs_num_prefs_ful(rec, t),
        prefs_simp(rec, t), prefs_simp_ret(rec, t), prefs_simp_imp(rec, t)
        FROM (SELECT ['d4', NULL, 'd2', 'd4', 'd1'] AS rec, {EXAMPLE} AS t)""").fetchone()
    assert row == (13, 10, 10 / 13, 2 / 3, 10 / 11)
    assert con.execute("SELECT prefs_simp([2, 1], [{'jg': 1, 'jsg': 1, 'item': 1, 'level': 1}, "
                       "{'jg': 1, 'jsg': 1, 'item': 2, 'level': 0}])").fetchone() == (0.0,)


def test_null_and_empty(con) -> None:
    """NULL rec or truth, or an empty truth (no judgment: trec_eval evaluates no such query):
    NULL; an empty rec retrieves nothing: no preference fulfilled."""
    rows = con.execute(f"""SELECT prefs_simp(NULL, {EXAMPLE}), prefs_simp(['d1'], NULL),
        prefs_simp(['d1'], []::STRUCT(jg VARCHAR, jsg VARCHAR, item VARCHAR, level DOUBLE)[]),
        prefs_simp([]::VARCHAR[], {EXAMPLE})""").fetchone()
    assert rows == (None, None, None, 0.0)


def _line(jg: str, jsg: str, item: str, level: float | str) -> str:
    return f"{{'jg': '{jg}', 'jsg': '{jsg}', 'item': '{item}', 'level': {level}}}"


@pytest.mark.parametrize(("lines", "message"), [
    ([_line("u", "s", "a", 1), _line("u", "s", "a", 1), _line("u", "s", "b", 0)],
     "prefs_simp: truth judges item 'a' twice in sub-group 's' of judgment group 'u'"),
    ([_line("u", "s", "a", 1), _line("u", "t", "a", 0), _line("u", "t", "b", 2)],
     "prefs_simp: truth gives item 'a' the level 0 and a level above 0 in judgment group 'u'"),
    ([_line("u", "s", "a", 1), _line("u", "t", "a", 2), _line("u", "t", "b", -1)],
     "prefs_simp: truth gives item 'b' a negative level in judgment group 'u'"),
    ([_line("u", "s", "a", 2), _line("u", "s", "b", 1), _line("u", "t", "b", 2),
      _line("u", "t", "a", 1)],
     "prefs_simp: truth holds preferences of judgment group 'u' that contradict each other: "
     "item 'a'"),
    ([_line("u", "s", "a", "NULL"), _line("u", "s", "b", 0)],
     "prefs_simp: truth holds a NULL judgment or one with a NULL field"),
])
def test_judgments_trec_eval_cannot_count_are_errors(con, lines: list[str],
                                                     message: str) -> None:
    with pytest.raises(duckdb.Error, match=message):
        con.execute(f"SELECT prefs_simp(['a', 'b'], [{', '.join(lines)}])").fetchall()


def test_rnonrel_past_the_lowest_level_is_an_error(con) -> None:
    """A group of one sub-group with 2 relevant and 3 nonrelevant documents, of which its
    lowest level (-1) holds 1: m_prefs_avgjg_Rnonrel.c takes 2 there, reading past its end
    (docs/trec_eval.md)."""
    lines = [_line("u", "s", "a", 2), _line("u", "s", "e", 1), _line("u", "s", "b", 0),
             _line("u", "s", "c", 0), _line("u", "s", "d", -1)]
    truth = f"[{', '.join(lines)}]"
    assert con.execute(f"SELECT prefs_simp(['a'], {truth})").fetchone()[0] is not None
    with pytest.raises(duckdb.Error, match="prefs_avgjg_rnonrel: truth's judgment group 'u' "
                       "has fewer documents"):
        con.execute(f"SELECT prefs_avgjg_rnonrel(['a'], {truth})").fetchall()
