"""``duckrank trec_eval`` against NIST's trec_eval 10.0, byte for byte.

Where the expected lines come from:

* trec_eval's own tests (``data/trec_eval_10_test``: qrels.test, results.test, ... and the
  out.test* files they come with, copied from usnistgov/trec_eval at f425365, "Updating
  CHANGELOG for version 10.0", folder test/; the commands are its Makefile's ``quicktest``);
* outputs of the trec_eval 10.0 binary on a small generated qrels/run pair covering the flags
  (``data/trec_eval_10_generated``: the files, each output and, in commands.tsv, the command
  that printed it; written by ``trec_eval_differential.py --pin``), and on generated preference
  files (``data/trec_eval_10_prefs``, ``--sets prefs --pin``);
* the binary itself on freshly generated files, when it is on this machine
  (``trec_eval_oracle.binary``; skipped otherwise);
* hand calculations, written out in each test.
"""

from __future__ import annotations

import functools
import shlex
from pathlib import Path

import duckdb
import pytest
from trec_eval_oracle import (
    binary,
    duckrank_lines,
    generate,
    generate_prefs,
    run_binary,
    run_duckrank,
)

import duckrank
from duckrank.engines import duckdb as engine
from duckrank.files import trec as trec_files
from duckrank.metrics.trec_eval import NONREL_ABOVE, POSITIVE_RANKS
from duckrank.render.trec_eval import JUDGED, formula_macro, judged_fields
from duckrank.reports.trec_eval import command, trec_eval, trec_eval_lines

DATA = Path(__file__).parent / "data"
UPSTREAM = DATA / "trec_eval_10_test"
PINNED = DATA / "trec_eval_10_generated"
PINNED_PREFS = DATA / "trec_eval_10_prefs"

# trec_eval's Makefile, quicktest: (expected output, flags, qrels, results).
MEAS_PARAMS = ["-q", "-miprec_at_recall..10,.20,.25,.75,.50", "-m", "P.5,7,3", "-m",
               "recall.20,2000", "-m", "Rprec_mult.5.0,0.2,0.35", "-mutility.2,-1,0,0", "-m",
               "11pt_avg..25,.5,.75", "-mndcg.1=3,2=9,4=4.5", "-mndcg_cut.10,20,23.4",
               "-msuccess.2,5,20"]
UPSTREAM_CASES = [
    ("out.test", [], "qrels.test", "results.test"),
    ("out.test", [], "qrels.test.with-comments", "results.test"),
    ("out.test.a", ["-m", "all_trec"], "qrels.test", "results.test"),
    ("out.test.aq", ["-m", "all_trec", "-q"], "qrels.test", "results.test"),
    ("out.test.aqc", ["-m", "all_trec", "-q", "-c"], "qrels.test", "results.trunc"),
    ("out.test.aqcM", ["-m", "all_trec", "-q", "-c", "-M100"], "qrels.test", "results.trunc"),
    ("out.test.aql", ["-m", "all_trec", "-mrelstring.20", "-q", "-l2"], "qrels.rel_level",
     "results.test"),
    ("out.test.meas_params", MEAS_PARAMS, "qrels.test", "results.test"),
    ("out.test.aqZ", ["-q", "-m", "all_trec", "-Z", str(UPSTREAM / "zscores_file")],
     "qrels.test", "results.test"),
    ("out.test.qrels_jg", ["-m", "qrels_jg", "-q", "-R", "qrels_jg"], "qrels.123",
     "results.test"),
    ("out.test.prefs", ["-m", "all_prefs", "-q", "-R", "prefs"], "prefs.test",
     "prefs.results.test"),
    ("out.test.prefs", ["-m", "all_prefs", "-q", "-R", "prefs"], "prefs.comment.test",
     "prefs.results.test"),
    ("out.test.qrels_prefs", ["-m", "all_prefs", "-q", "-R", "qrels_prefs"], "qrels.test",
     "results.test"),
]


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="latin-1").splitlines()


@pytest.fixture(scope="module")
def con():
    """One connection for the module's commands (``duckrank_lines``: the command's parser and
    computation, without registering duckrank per command)."""
    connection = duckrank.connect()
    yield connection
    connection.close()


@pytest.mark.parametrize(("expected", "flags", "qrels", "results"), UPSTREAM_CASES,
                         ids=[f"{c[0]}-{c[2]}" for c in UPSTREAM_CASES])
def test_trec_evals_own_test_outputs(con, expected: str, flags: list[str], qrels: str,
                                     results: str) -> None:
    args = [*flags, str(UPSTREAM / qrels), str(UPSTREAM / results)]
    assert duckrank_lines(args, con) == _lines(UPSTREAM / expected)


def _pinned() -> list[tuple[Path, str, int, str, list[str]]]:
    rows = []
    for folder in (PINNED, PINNED_PREFS):
        for line in (folder / "commands.tsv").read_text().splitlines():
            output, status, name, command = line.split("\t")
            args = [str(folder / a) if (folder / a).is_file() else a
                    for a in shlex.split(command)[1:]]
            rows.append((folder / output, int(status), name, args))
    return rows


@pytest.mark.parametrize(("output", "status", "name", "args"), _pinned(),
                         ids=[row[2] for row in _pinned()])
def test_the_binarys_pinned_outputs(con, output: Path, status: int, name: str,
                                    args: list[str]) -> None:
    if status != 0:
        # trec_eval 10 stops (exit 4) at a qrels query the run lacks, without -c: the command
        # says so before printing anything (run whole here: its exit status and output).
        ours, lines, error = run_duckrank(args)
        assert ours == 1 and lines == [] and "has no line in the run file" in error
        return
    assert duckrank_lines(args, con) == _lines(output)


@pytest.fixture(scope="module")
def oracle() -> str:
    path = binary()
    if path is None:
        pytest.skip("no trec_eval 10.0 binary (DUCKRANK_TREC_EVAL, ~/.cache/trec_eval-10.0)")
    return path


@pytest.mark.parametrize("flags", [["-q", "-m", "all_trec"], ["-q", "-c", "-J", "-m", "all_trec"],
                                   ["-q", "-l2", "-M", "7", "-m", "all_trec"]])
def test_live_against_the_binary(con, oracle: str, tmp_path: Path, flags: list[str]) -> None:
    files = generate(tmp_path, seed=11, queries=25)
    qrels = files["qrels_extra" if "-c" in flags else "qrels"]
    status, expected, _ = run_binary(oracle, [*flags, qrels, files["run"]])
    assert status == 0
    assert duckrank_lines([*flags, qrels, files["run"]], con) == expected


@pytest.mark.parametrize("flags", [["-q", "-R", "prefs", "-m", "all_prefs"],
                                   ["-q", "-c", "-M", "8", "-R", "prefs", "-m", "all_prefs"],
                                   ["-q", "-R", "qrels_prefs", "-m", "all_prefs"]])
def test_prefs_live_against_the_binary(con, oracle: str, tmp_path: Path,
                                       flags: list[str]) -> None:
    files = generate_prefs(tmp_path, seed=13, queries=30)
    judgments = files["qrels_prefs" if "qrels_prefs" in flags else
                      "prefs_extra" if "-c" in flags else "prefs"]
    status, expected, _ = run_binary(oracle, [*flags, judgments, files["prefs_run"]])
    assert status == 0
    assert duckrank_lines([*flags, judgments, files["prefs_run"]], con) == expected


def _write(path: Path, lines: list[str]) -> str:
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


def test_recall_levels_are_rounded_to_the_nearest(tmp_path: Path) -> None:
    """Ranking a b c d, relevant a c x (R = 3): hits at ranks 1 and 3. trec_eval 10 reaches
    round(level * 3) relevant documents (m_iprec_at_recall.c, lround): for the 11 levels
    0, 0, 1, 1, 1, 2, 2, 2, 2, 3, 3; interpolated precision 1 for 0 and 1, 2/3 for 2, 0 for 3
    (never reached): 11pt_avg = (2 + 3 + 4 * 2/3) / 11 = 0.69697. trec_eval 9 reached
    trunc(level * 3 + 0.9): 0, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3 (in doubles 0.7 * 3 + 0.9 is
    2.9999999999999996), so (1 + 3 + 4 * 2/3) / 11 = 0.60606."""
    qrels = _write(tmp_path / "q", ["1 0 a 1", "1 0 b 0", "1 0 c 1", "1 0 x 1"])
    ranking = _write(tmp_path / "r", [f"1 Q0 {d} {i} {5 - i} t" for i, d in enumerate("abcd", 1)])
    rows = dict((m, v) for m, _, v in trec_eval(qrels, ranking, ["11pt_avg", "iprec_at_recall"]))
    assert rows["11pt_avg"] == pytest.approx((2 + 3 + 4 * 2 / 3) / 11, abs=1e-15)
    assert rows["iprec_at_recall_0.30"] == 1.0  # round(0.9) = 1; trec_eval 9: trunc(1.8) = 1
    assert rows["iprec_at_recall_0.50"] == pytest.approx(2 / 3)  # round(1.5) = 2
    old = dict((m, v) for m, _, v in trec_eval(qrels, ranking, ["11pt_avg", "iprec_at_recall"],
                                                 compat="9.0.8"))
    assert old["11pt_avg"] == pytest.approx((1 + 3 + 4 * 2 / 3) / 11, abs=1e-15)
    assert old["iprec_at_recall_0.10"] == 1.0  # trunc(0.3 + 0.9) = 1: the first hit, 1/1


def test_relstring_and_parameter_spellings(tmp_path: Path) -> None:
    """relstring shows min(N, num_ret) documents, N = 10 unless given (m_relstring.c); a
    cut-off is read by C's atol (23.4 is 23, named ndcg_cut_23); 11pt_avg with levels is named
    after them (meas_init.c, append_string). Ranking d1..d12 by score; d1, d3 graded 2, 1, d2
    graded -1 ('.'), the rest unjudged ('-')."""
    qrels = _write(tmp_path / "q", ["1 0 d1 2", "1 0 d2 -1", "1 0 d3 1"])
    ranking = _write(tmp_path / "r", [f"1 Q0 d{i} {i} {20 - i} t" for i in range(1, 13)])
    lines = trec_eval_lines(qrels, ranking, ["relstring", "ndcg_cut.10,20,23.4",
                                             "11pt_avg..25,.5"], per_query=True, summary=False)
    assert lines[0] == "relstring             \t1\t'2.1-------'"
    assert [line.split("\t")[0].strip() for line in lines[1:]] == [
        "11pt_avg_.25,.5", "ndcg_cut_10", "ndcg_cut_20", "ndcg_cut_23"]
    (short,) = trec_eval_lines(qrels, ranking, ["relstring.3"], per_query=True, summary=False)
    assert short == "relstring_3           \t1\t'2.1'"


def test_rbp_dcg_and_yaap_by_hand(tmp_path: Path) -> None:
    """Ranking a b c d e f with grades 3, 1, 0, 2, -1 and f unjudged. rbp.p=0.5 on the grades
    scaled by the largest (m_rbp.c): 0.5 (1 + 1/3 0.5 + 0 + 2/3 0.125) = 0.625; dcg (linear
    gains, m_ndcg.c) = 3 + 1 / log2(3) + 2 / log2(5) = 4.49228; ideal_dcg = 3 + 2 / log2(3) +
    1 / 2 = 4.76186; yaap (m_yaap.c, relevant = grade >= 1: a, b, d of R = 3) with
    S = 1/1 + 2/2 + 3/4 = 2.75: ln(3.75 / 1.25) = ln 3."""
    qrels = _write(tmp_path / "q", ["1 0 a 3", "1 0 b 1", "1 0 c 0", "1 0 d 2", "1 0 e -1"])
    ranking = _write(tmp_path / "r", [f"1 Q0 {d} {i} {9 - i} t" for i, d in enumerate("abcdef", 1)])
    rows = {m: v for m, _, v in trec_eval(qrels, ranking, ["rbp.p=0.5", "dcg", "ideal_dcg",
                                                             "yaap"])}
    assert rows["rbp_p=0.5"] == pytest.approx(0.625, abs=1e-15)
    assert rows["dcg"] == pytest.approx(3 + 1 / 1.584962500721156 + 2 / 2.321928094887362)
    assert rows["ideal_dcg"] == pytest.approx(3 + 2 / 1.584962500721156 + 0.5)
    assert rows["yaap"] == pytest.approx(1.0986122886681098)  # ln 3


def test_judged_only_prints_trec_evals_nan(tmp_path: Path) -> None:
    """-J drops every unjudged document (form_res_rels.c); query 2 keeps none, and
    m_iprec_at_recall.c starts from 0 / 0, which C prints '-nan' for the levels that reach no
    relevant document (round(level * 2) = 0: 0.0 and 0.1..0.2), 0 for the others; the mean
    over queries takes the NaN too."""
    qrels = _write(tmp_path / "q", ["1 0 a 1", "2 0 b 1", "2 0 c 1"])
    ranking = _write(tmp_path / "r", ["1 Q0 a 1 2 t", "1 Q0 z 2 1 t", "2 Q0 y 1 1 t"])
    lines = trec_eval_lines(qrels, ranking, ["iprec_at_recall..1,.3", "num_ret"],
                            per_query=True, judged_only=True)
    assert lines == [
        "num_ret               \t1\t1", "iprec_at_recall_0.10  \t1\t1.0000",
        "iprec_at_recall_0.30  \t1\t1.0000",
        "num_ret               \t2\t0", "iprec_at_recall_0.10  \t2\t  -nan",
        "iprec_at_recall_0.30  \t2\t0.0000",
        "num_ret               \tall\t1", "iprec_at_recall_0.10  \tall\t  -nan",
        "iprec_at_recall_0.30  \tall\t0.5000",
    ]


@pytest.mark.parametrize(("qrels_lines", "run_lines", "requests", "message"), [
    (["1 0 a 1", "", "1 0 b 0"], ["1 Q0 a 1 1 t"], ["map"],
     r"the qrels file '.*q', line 2: a blank line"),
    (["1 0 a 1", "2 0 b 1"], ["1 Q0 a 1 1 t"], ["map"],
     "query '2' of the qrels file '.*q' has no line in the run file"),
    (["1 0 a 1"], ["1 Q0 a 1 1 t"], ["11pt_avg..5,.25"], "in increasing order"),
    # m_ndcg.c: ndcg, dcg and ideal_dcg share one parameter block (trec_eval 10 crashes).
    (["1 0 a 1"], ["1 Q0 a 1 1 t"], ["ndcg.1=3", "dcg"], "shares the gains of ndcg, dcg"),
    # gain_init.c sorts gains by (int)(a - b): 2.5 (grade 1) and 2 (grade 2) compare equal.
    (["1 0 a 1", "1 0 b 2"], ["1 Q0 a 1 1 t"], ["ndcg.1=2.5"], "less than 1 apart"),
])
def test_trec_eval_10s_errors(tmp_path: Path, qrels_lines: list[str], run_lines: list[str],
                              requests: list[str], message: str) -> None:
    qrels = _write(tmp_path / "q", qrels_lines)
    ranking = _write(tmp_path / "r", run_lines)
    with pytest.raises((ValueError, duckdb.Error), match=message):
        trec_eval(qrels, ranking, requests)


def test_compat_9_leaves_out_what_trec_eval_10_refuses(tmp_path: Path) -> None:
    """pytrec-eval-terrier (trec_eval 9.0.8) skips blank qrels lines and the qrels queries the
    run lacks: --compat 9.0.8 evaluates query 1 only."""
    qrels = _write(tmp_path / "q", ["1 0 a 1", "", "2 0 b 1"])
    ranking = _write(tmp_path / "r", ["1 Q0 a 1 1 t"])
    assert trec_eval(qrels, ranking, ["num_q"], compat="9.0.8") == [("num_q", "all", 1)]
    with pytest.raises(ValueError, match="--compat 8: the trec_eval versions are 10.0, 9.0.8"):
        trec_eval(qrels, ranking, ["num_q"], compat="8")


def test_debug_query_and_formats() -> None:
    """-D 0.QID evaluates that query alone (trec_eval.c: the others are skipped, num_q is 1);
    -o is accepted and changes nothing (trec_eval 10: obsolete); -T and -R take trec_eval's
    one format each here, other values are errors naming the flag. (q3's values: the binary's
    on the pinned files, -q -D 0.q3 -m num_q -m map -m num_rel.)"""
    qrels, ranking = str(PINNED / "qrels.txt"), str(PINNED / "run.txt")
    status, lines, _ = run_duckrank(["-q", "-o", "-T", "trec_results", "-R", "qrels",
                                     "-D", "0.q3", "-m", "num_q", "-m", "map", "-m", "num_rel",
                                     qrels, ranking])
    assert status == 0
    assert lines == ["num_rel               \tq3\t3", "map                   \tq3\t0.0370",
                     "num_q                 \tall\t1", "num_rel               \tall\t3",
                     "map                   \tall\t0.0370"]
    for flags, message in ((["-R", "prefs"], "-R prefs: trec_eval computes only runid, num_q "
                                             "and the preference measures"),
                           (["-m", "map_avgjg"], "-m map_avgjg: trec_eval computes it from "
                                                 "-R qrels_jg only"),
                           (["-R", "prefs", "--compat", "9.0.8", "-m", "prefs_simp"],
                            "duckrank reproduces the preference measures of trec_eval 10 only"),
                           (["-R", "qrels_jg", "-m", "map"], "-R qrels_jg: trec_eval computes"),
                           (["-T", "foo"], "-T foo: trec_eval 10 reads trec_results only"),
                           (["-D", "2"], "-D 2: duckrank prints no debugging output"),
                           (["--compat", "9"], "invalid choice: '9'")):
        status, lines, error = run_duckrank([*flags, qrels, ranking])
        assert status != 0 and lines == [] and message in error, (flags, error)


def test_the_sql_functions_behind_the_new_measures(con) -> None:  # (the module's connection)
    """The records the command calls, as SQL functions (hand calculations of the tests above):
    rec a b c d against relevant a c x: iprec_at_recall at 0.5 reaches round(1.5) = 2 relevant
    (2/3), eleven_point_ap 0.69697 with rounding := 'nearest' and 0.60606 by default
    (trec_eval 9's); yaap of rec a b c d e f against grades a 3, b 1, c 0, d 2 is ln 3;
    graded_rbp (gain 'trec_eval') with p = 0.5 is 0.625 (grades over the largest, 3)."""
    binary = "['a', 'b', 'c', 'd'], ['a', 'c', 'x']"
    graded = "['a', 'b', 'c', 'd', 'e', 'f'], MAP {'a': 3, 'b': 1, 'c': 0, 'd': 2, 'e': -1}"
    row = con.execute(
        f"SELECT iprec_at_recall({binary}, recall := 0.5, rounding := 'nearest'), "
        f"eleven_point_ap({binary}, rounding := 'nearest'), eleven_point_ap({binary}), "
        f"yaap({graded}, min_grade := 1), graded_rbp({graded}, persistence := 0.5, "
        "gain := 'trec_eval')"
    ).fetchall()[0]
    assert row[0] == pytest.approx(2 / 3)
    assert row[1] == pytest.approx((2 + 3 + 4 * 2 / 3) / 11)
    assert row[2] == pytest.approx((1 + 3 + 4 * 2 / 3) / 11)
    assert row[3] == pytest.approx(1.0986122886681098)
    assert row[4] == pytest.approx(0.625)
    with pytest.raises(Exception, match="rounding"):
        con.execute(f"SELECT iprec_at_recall({binary}, rounding := 'up')").fetchall()


# get_prefs.c's examples (its comment), a query each: q1 one sub-group ranking six documents
# ("establishes a total of 13 preferences"); q2 two sub-groups of one judgment group, whose 5
# preferences given (1>2, 1>3, 2>3, 4>1, 4>2; 1>2 once) make 6 with 4>3, which transitivity
# adds (form_prefs_counts.c, add_transitives; the comment counts the 5 given); q3 "expresses 5
# preferences (1>2, 1>3, 2>3, 2>4, 1>4)".
DOCUMENTED_PREFS = [
    "q1 u1 s1 d1 3.0", "q1 u1 s1 d2 2.0", "q1 u1 s1 d3 0.0", "q1 u1 s1 d4 6.0",
    "q1 u1 s1 d5 0.0", "q1 u1 s1 d6 2.0",
    "q2 u1 s1 d1 3.0", "q2 u1 s1 d2 2.0", "q2 u1 s1 d3 1.0", "q2 u1 s2 d1 2.0",
    "q2 u1 s2 d2 1.0", "q2 u1 s2 d4 3.0",
    "q3 u1 s1 d1 3.0", "q3 u1 s1 d2 2.0", "q3 u1 s1 d3 1.0", "q3 u1 s2 d2 5.0",
    "q3 u1 s2 d4 4.0",
]


def test_prefs_by_hand(tmp_path: Path) -> None:
    """q1 ranked d4 d2 d1 (the others not retrieved): of its 13 preferences, d4 > d2 and
    d4 > d1 are fulfilled among the retrieved and d1 > d2 is not (prefs_simp_ret 2/3); d4, d1
    and d2 over the unretrieved d3, d5 (and d6 for d4, d1) are 8 implied ones, all fulfilled;
    d6 > d3, d5 involve no retrieved document: prefs_simp = 10/13, prefs_simp_imp = 10/11.
    q2 and q3 retrieve none of theirs: 0."""
    judgments = _write(tmp_path / "p", DOCUMENTED_PREFS)
    ranking = _write(tmp_path / "r", ["q1 Q0 d4 1 3 t", "q1 Q0 d2 2 2 t", "q1 Q0 d1 3 1 t",
                                      "q2 Q0 x 1 1 t", "q3 Q0 x 1 1 t"])
    rows = {(m, q): v for m, q, v in trec_eval(
        judgments, ranking, ["prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_simp",
                             "prefs_simp_ret", "prefs_simp_imp"], per_query=True,
        rel_info_format="prefs")}
    assert [rows["prefs_num_prefs_poss", q] for q in ("q1", "q2", "q3", "all")] == [13, 6, 5, 24]
    assert rows["prefs_num_prefs_ful", "q1"] == 10
    assert rows["prefs_simp", "q1"] == 10 / 13
    assert rows["prefs_simp_ret", "q1"] == 2 / 3
    assert rows["prefs_simp_imp", "q1"] == 10 / 11
    assert rows["prefs_simp", "q2"] == rows["prefs_simp", "q3"] == 0.0


@pytest.mark.parametrize(("lines", "requests", "message"), [
    # form_prefs_counts.c stops at both (the second: Pref inconsistency found, then abort).
    (["q1 u1 s1 d1 1", "q1 u1 s1 d2 0", "q1 u1 s2 d2 1"], ["prefs_simp"],
     "gives document 'd2' the level 0 and a level above 0 in judgment group 'u1'"),
    (["q1 u1 s1 d1 2", "q1 u1 s1 d2 1", "q1 u1 s2 d2 2", "q1 u1 s2 d1 1"], ["prefs_simp"],
     "document 'd1' is, through other documents, preferred to itself"),
    (["q1 u1 s1 d1 2", "q1 u1 s1 d1 1"], ["prefs_simp"],
     "judges document 'd1' twice in sub-group 's1' of judgment group 'u1'"),
    (["q1 u1 s1 d1 2", "q1 u1 s1 d2 -1", "q1 u1 s2 d1 1"], ["prefs_simp"],
     "gives document 'd2' a negative level in judgment group 'u1'"),
    (["q1 u1 s1 d1 2", "q1 u1 d2 1"], ["prefs_simp"], r"line 2: expected 5 fields"),
    (["q1 u1 s1 d1 2", "", "q1 u1 s1 d2 1"], ["prefs_simp"], "line 2: a blank line"),
    (["q1 u1 s1 d1 2"], ["map"], "-R prefs: trec_eval computes only runid, num_q"),
    # One relevant document and three nonrelevant ones, of levels 0, -1, -1... in a group of
    # one sub-group: m_prefs_avgjg_Rnonrel.c takes the first num_rel (2) of the lowest level,
    # which has 1, and reads past it.
    (["q1 u1 s1 d1 2", "q1 u1 s1 d2 1", "q1 u1 s1 d3 0", "q1 u1 s1 d4 0", "q1 u1 s1 d5 -1"],
     ["prefs_avgjg_Rnonrel"], "fewer documents at its lowest level"),
])
def test_prefs_errors(tmp_path: Path, lines: list[str], requests: list[str],
                      message: str) -> None:
    judgments = _write(tmp_path / "p", lines)
    ranking = _write(tmp_path / "r", ["q1 Q0 d1 1 1 t"])
    with pytest.raises((ValueError, duckdb.Error), match=message):
        trec_eval(judgments, ranking, requests, rel_info_format="prefs")


@pytest.mark.parametrize("flags", [{}, {"complete": True}, {"per_query": True, "max_docs": 1}])
@pytest.mark.parametrize("requests", [["official"], ["all_trec"], ["P.5"]])
def test_a_document_judged_twice_is_trec_evals_error(tmp_path: Path, flags: dict,
                                                     requests: list[str]) -> None:
    """trec_eval 10's per-query table says which queries judge a document twice (no pass over
    the qrels before it): the error names the first such query and document, also of a query
    the run lacks, where the MAPs of the judgments the graded measures read would have failed
    with DuckDB's bare "Map keys must be unique"."""
    qrels = _write(tmp_path / "q", ["1 0 a 1", "2 0 c 1", "2 0 b 1", "2 0 b 0", "3 0 d 1",
                                    "3 0 d 2"])
    ranking = _write(tmp_path / "r", ["1 Q0 a 1 2 t", "2 Q0 b 1 2 t"])
    with pytest.raises(ValueError, match="the qrels file '.*q' judges document 'b' twice for "
                                         "query '2'"):
        trec_eval(qrels, ranking, requests, **flags)


def test_the_native_ranking_is_the_sql_one(tmp_path: Path) -> None:
    """With the native step, a query's ranking is duckrank_top_k's heap; without it,
    to_ordered_list's sort: the same documents in the same order (score descending, ties by
    document id descending as bytes), also under -M and --compat 9.0.8's C floats."""
    rows = [f"1 Q0 d{i % 7}{'x' * (i % 3)}{i} {i} {[1.5, 2.0, 0.0, -0.0, 1e300][i % 5]} t"
            for i in range(40)] + ["1 Q0 long-document-id-beyond-twelve-bytes 41 2.0 t",
                                   "1 Q0 b 42 1.00000001 t", "1 Q0 c 43 inf t"]
    qrels = _write(tmp_path / "q", ["1 0 d00 1", "1 0 b 1", "1 0 c 2", "1 0 d11 0"])
    ranking = _write(tmp_path / "r", rows)
    for flags in ({}, {"max_docs": 7}, {"compat": "9.0.8"}):
        # (--compat 9.0.8's relstring has its default length only)
        relstring = "relstring" if flags.get("compat") else "relstring.60"
        requests = [relstring, "P.1,2,3,5,10", "map", "bpref"]
        native = duckrank.connect()
        plain = duckrank.connect(native=False)
        try:
            assert (trec_eval_lines(qrels, ranking, requests, connection=native, per_query=True,
                                    **flags)
                    == trec_eval_lines(qrels, ranking, requests, connection=plain,
                                       per_query=True, **flags))
        finally:
            native.close()
            plain.close()


@pytest.mark.parametrize(("data", "expected"), [
    (b"1 0 caf\xc3\xa9 1\n", "utf-8"), (b"1 0 caf\xe9 1\n", "latin-1"),
    (b"1 0 \xe2\x82\xac 1\n", "utf-8"), (b"1 0 \xe2\x82 1\n", "latin-1"),
    (b"1 0 a 1\xc3", "latin-1"), (b"1 0 a 1\n", "utf-8"), (b"", "utf-8"),
    # An ASCII block inside a character: skipped, the bytes around it would make one.
    (b"1 0 \xe2ab\x82\xac 1\n", "latin-1"),
])
@pytest.mark.parametrize("block", [1, 2, 3, 4, 7, 1 << 20])
def test_the_encoding_check_skips_ascii_blocks_only(tmp_path: Path, monkeypatch, data: bytes,
                                                    expected: str, block: int) -> None:
    """A block of ASCII bytes is not decoded, unless the block before ends inside a character
    (a character cut between blocks at every place)."""
    monkeypatch.setattr(trec_files, "_CHECK_BLOCK", block)
    path = tmp_path / "f"
    path.write_bytes(data)
    assert trec_files.encoding(str(path)) == expected


def test_the_command_ranks_without_the_native_step(tmp_path: Path, monkeypatch) -> None:
    """The command's own connection registers to_ordered_list only where the native step did
    not load (its rankings are duckrank_top_k's otherwise): the same lines either way."""
    qrels = _write(tmp_path / "q", ["1 0 a 1", "1 0 b 0", "2 0 c 2"])
    ranking = _write(tmp_path / "r", ["1 Q0 a 1 1.5 t", "1 Q0 b 2 1.5 t", "1 Q0 c 3 2 t",
                                      "2 Q0 c 1 0.5 t", "2 Q0 d 2 0.7 t"])
    native = trec_eval_lines(qrels, ranking, ["official"], per_query=True)
    monkeypatch.setattr(engine, "connect", functools.partial(engine.connect, native=False))
    assert trec_eval_lines(qrels, ranking, ["official"], per_query=True) == native


def test_the_graded_judged_formulas_read_the_ranks_of_positive_gain_once() -> None:
    """G, ndcg_rel and Rndcg each pass over the gains for the ranks of positive gain, with their
    gains (and DCG terms), and bpref and infAP each count the judged non-relevant documents
    above each relevant one: the command's formula macros read them from the judged match's gp
    and above, computed once per query."""
    for name in ("normalized_gain", "ndcg_rel", "rndcg"):
        assert POSITIVE_RANKS in JUDGED[name].sql
        assert "gp" in judged_fields(name)
        assert "CASE WHEN x > 0 THEN i END" not in formula_macro(name)
        assert "list_zip" not in formula_macro(name)
    for name in ("bpref", "infap"):
        assert NONREL_ABOVE in JUDGED[name].sql
        assert "above" in judged_fields(name) and "nonrel" not in judged_fields(name)


@pytest.mark.parametrize("flags", [{"per_query": True}, {"per_query": True, "max_docs": 7},
                                   {"per_query": True, "level": 2, "judged_only": True},
                                   {"complete": True, "compat": "9.0.8"}])
def test_the_run_read_in_parts_gives_the_same_lines(tmp_path: Path, monkeypatch,
                                                    flags: dict) -> None:
    """A run read in parts (``command.RUN_READER``, one per thread; a small run in one) gives
    the lines of the run read whole."""
    files = generate(tmp_path, seed=5, queries=25)
    qrels = files["qrels_extra" if flags.get("complete") else "qrels"]
    whole = trec_eval_lines(qrels, files["run"], ["all_trec"], **flags)
    monkeypatch.setattr(command, "RUN_PARTS_MIN_BYTES", 0)
    for threads in (2, 3):
        con = duckrank.connect()
        try:
            con.execute(f"SET threads = {threads}")
            assert command._run_parts(con, files["run"]) == threads
            assert command._run_parts(con, files["run"], "1GB") == 1
            assert trec_eval_lines(qrels, files["run"], ["all_trec"], connection=con,
                                   **flags) == whole
        finally:
            con.close()


def test_the_first_bad_run_line_is_the_error_whatever_the_parts(tmp_path: Path,
                                                                monkeypatch) -> None:
    """Parts read at once may meet a later bad line first: the run is read again in one part,
    so that the error names the first, as trec_eval stops at it."""
    monkeypatch.setattr(command, "RUN_PARTS_MIN_BYTES", 0)
    qrels = _write(tmp_path / "q", ["1 0 a 1"])
    lines = [f"1 Q0 d{i} {i} {i} t" for i in range(200)]
    lines[150:152] = ["1 Q0 x", "1 Q0 y"]
    ranking = _write(tmp_path / "r", lines)
    con = duckrank.connect()
    try:
        con.execute("SET threads = 2")
        for _ in range(5):
            with pytest.raises(duckdb.Error, match=r"read_trec_run: file .*, line 151: expected"):
                trec_eval_lines(qrels, ranking, ["official"], connection=con)
    finally:
        con.close()


def test_the_binary_formulas_read_the_native_steps_positions_as_they_are() -> None:
    """The native step gives a match's positions in ascending order (a cut-off's filter keeps
    it): the command's binary formula macros then read them without the records' sort of them,
    which the SQL form's positions (in no particular order) still get."""
    for name in ("average_precision", "iprec_at_recall", "eleven_point_ap"):
        assert "list_sort(duckrank_m.pos)" in formula_macro(name)
        assert "list_sort(duckrank_m.pos)" not in formula_macro(name, ascending=True)
    con = duckrank.connect()
    try:
        assert con.execute(
            "SELECT m.pos = list_sort(m.pos) AND len(m.pos) = 4 FROM (SELECT duckrank_matched("
            "'trec_eval', ['e', 'a', 'x', 'd', 'a', 'c', 'b'], ['b', 'a', 'e', 'd', 'z'], 7) AS m)"
        ).fetchall() == [(True,)]
    finally:
        con.close()
