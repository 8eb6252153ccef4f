"""``duckrank trec_eval --compat 9.0.8``: its printed output line for line against trec_eval 9.0.8's
(trec_eval 10.0, the default, is tested against its binary in test_trec_eval_10.py).

The independent source is pytrec-eval-terrier (trec_eval 9.0.8's own C code). It reads the
generated files through the plain parser below, never through duckrank's readers, and
``_expected_lines`` prints its values by trec_eval's printing rules, read from trec_eval's source
(meas_print_single.c, meas_print_final.c, meas_avg.c, m_runid.c): ``%-22s\\t%s\\t%6.4f``
(``%ld`` for the num_* counts), queries in id order, the summary's mean, sum (num_*) and
geometric mean (gm_*), the run tag of the last line. pytrec_eval has no -M and no -c: the oracle
cuts each ranking at M in trec_eval's order (score as a C float, descending, then docid
descending: form_res_rels.c), and gives a query the run lacks trec_eval 10's values under -c
(trec_eval.c: every measure 0 but num_rel, gm_* at log(0.00001)).
"""

from __future__ import annotations

import argparse
import functools
import math
import random
from collections import defaultdict
from pathlib import Path

import duckdb
import numpy as np
import pytest
import pytrec_eval
from trec_eval_oracle import PREFS_NAMES

import duckrank
from duckrank.cli import build_parser
from duckrank.reports.trec_eval import (
    MEASURES,
    Call,
    Measure,
    MissingMeasure,
    Value,
    check_available,
    needed_functions,
    requested_values,
)
from duckrank.reports.trec_eval import trec_eval as trec_eval_10
from duckrank.reports.trec_eval import trec_eval_lines as trec_eval_lines_10

# Every call of this module reproduces pytrec-eval-terrier's trec_eval 9.0.8.
trec_eval = functools.partial(trec_eval_10, compat="9.0.8")
trec_eval_lines = functools.partial(trec_eval_lines_10, compat="9.0.8")

LONG = ("num_q", "num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret")
SUMMARY_ONLY = ("runid", "num_q", "gm_map", "gm_bpref")


def _write(path: Path, lines: list[str]) -> str:
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _generated(tmp_path: Path, seed: int = 0, queries: int = 25) -> tuple[str, str]:
    """Random qrels and run with what trec_eval users meet: tied scores (rounded, and scores
    equal as C floats but not as doubles), documents the qrels never judged, negative grades,
    queries whose judgments hold no relevant document, queries in one file only, ids that sort
    differently as text and as numbers, a comment line, lines out of order."""
    rnd = random.Random(seed)
    qrels, runs = ["# judged by the pool of depth 10"], []
    for q in range(queries):
        qid = str(q) if q % 3 else f"q{q}"
        docs = list(dict.fromkeys(f"d{rnd.randint(0, 60)}" for _ in range(30)))
        if q % 9 != 4:  # in the qrels
            for doc in rnd.sample(docs, k=rnd.randint(1, 15)) + [f"x{q}"]:
                grades = [0, -1] if q % 5 == 0 else [0, 0, 1, 1, 2, 3, -1, -2]
                qrels.append(f"{qid} 0 {doc} {rnd.choice(grades)}")
        if q % 11 != 7:  # in the run
            for rank, doc in enumerate(docs[:rnd.randint(1, len(docs))], 1):
                score = rnd.choice([round(rnd.random(), 1), 2.0, 1.0 + 1e-9 * rnd.random(),
                                    rnd.random()])
                runs.append(f"{qid} Q0 {doc} {rank} {score!r} run{seed}")
    rnd.shuffle(runs)
    return _write(tmp_path / "qrels.txt", qrels), _write(tmp_path / "run.txt", runs)


def _read(path: str, fields: int) -> list[list[str]]:
    rows = [line.split() for line in Path(path).read_text().splitlines()]
    return [row for row in rows if row and not row[0].startswith("#") and len(row) >= fields]


def _trec_order(docs: dict[str, float]) -> list[str]:
    """trec_eval's ranking: score as a C float, descending, then docid descending."""
    return sorted(docs, key=lambda d: (np.float32(docs[d]), d.encode()), reverse=True)


def _expected(qrels_path: str, run_path: str, measures: list[str], *, complete: bool = False,
              max_docs: int | None = None, level: int = 1) -> tuple[list[str], dict]:
    """Per-query values by pytrec_eval (query -> name -> value, in trec_eval's order) and the
    run tag."""
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for qid, _, doc, grade in _read(qrels_path, 4):
        qrels[qid][doc] = int(grade)
    ranking: dict[str, dict[str, float]] = defaultdict(dict)
    rows = _read(run_path, 6)
    for qid, _, doc, _, score, *_ in rows:
        ranking[qid][doc] = float(score)
    if max_docs is not None:
        ranking = defaultdict(dict, {q: {d: docs[d] for d in _trec_order(docs)[:max_docs]}
                                     for q, docs in ranking.items()})
    names = set()
    for m in measures or ["official"]:
        names |= set(pytrec_eval.supported_nicknames.get(m, {m}))
    values = pytrec_eval.RelevanceEvaluator(qrels, names, relevance_level=level).evaluate(ranking)
    if complete:
        template = next(iter(values.values()))
        for qid in set(qrels) - set(values):
            values[qid] = {
                name: math.log(0.00001) if name.startswith("gm_") else 0.0 for name in template
            }
            values[qid]["num_rel"] = float(sum(g >= level for g in qrels[qid].values()))
    return rows[-1][5], dict(sorted(values.items(), key=lambda item: item[0].encode()))


def _summary_value(name: str, column: list[float], complete_num_rel: int | None) -> float:
    """trec_eval's summary of one measure: the count (num_q), the sum (num_*; with -c,
    num_rel is ``complete_num_rel``), the geometric mean (gm_*) or the mean."""
    if name == "num_q":
        return len(column)
    if name == "num_rel" and complete_num_rel is not None:
        return complete_num_rel
    if name.startswith("num_"):
        return sum(column)
    if name.startswith("gm_"):
        return math.exp(sum(column) / len(column))
    return sum(column) / len(column)


def _expected_lines(tag: str, values: dict, per_query: bool = False,
                    summary: bool = True, complete_num_rel: int | None = None) -> list[str]:
    """``complete_num_rel``: with -c, the summary's num_rel (m_num_rel.c, te_calc_avg_num_rel:
    the qrels' judgments of grade > 0, whatever -l says; trec_eval 9.0.8 and 10 alike)."""
    def line(name: str, qid: str, value: float) -> str:
        text = str(int(value)) if name in LONG else f"{value:6.4f}"
        return f"{name:<22}\t{qid}\t{text}"

    lines = []
    if per_query:
        for qid, row in values.items():
            lines += [line(n, qid, v) for n, v in row.items() if n not in SUMMARY_ONLY]
    if summary:
        for name in next(iter(values.values())):
            if name == "runid":
                lines.append(f"{'runid':<22}\tall\t{tag}")
                continue
            column = [row[name] for row in values.values()]
            lines.append(line(name, "all", _summary_value(name, column, complete_num_rel)))
    return lines


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    """One connection for the module, with the functions of every measure registered, as the
    command registers them (``needed_functions``; every function takes seconds)."""
    every = requested_values([m.name for m in MEASURES])
    connection = duckrank.connect(functions=needed_functions(every))
    yield connection
    connection.close()


def _parsed(argv: list[str]) -> argparse.Namespace:
    """``duckrank trec_eval ARGV`` parsed by the command line's parser (``duckrank.cli``)."""
    return build_parser().parse_args(["trec_eval", "--compat", "9.0.8", *argv])


def run(args: argparse.Namespace) -> int:
    """The command's handler: its exit status, its output and errors printed."""
    return args.handler(args)


def test_the_command_prints_trec_eval_lines_for_the_default_measures(tmp_path: Path,
                                                                      capsys) -> None:
    qrels, ranking = _generated(tmp_path)
    tag, values = _expected(qrels, ranking, [])
    assert run(_parsed([qrels, ranking])) == 0
    assert capsys.readouterr().out.splitlines() == _expected_lines(tag, values)


def test_memory_limit_bounds_the_connection_and_changes_no_line(tmp_path: Path,
                                                                 capsys) -> None:
    """--memory-limit (DuckDB spills what does not fit): the lines pytrec_eval's values give,
    as without it, and all_trec with -q the same lines under a limit of 20 MB as without."""
    qrels, ranking = _generated(tmp_path)
    tag, values = _expected(qrels, ranking, [])
    assert run(_parsed(["--memory-limit", "20MB", qrels, ranking])) == 0
    assert capsys.readouterr().out.splitlines() == _expected_lines(tag, values)
    assert run(_parsed(["-q", "-m", "all_trec", qrels, ranking])) == 0
    unlimited = capsys.readouterr().out
    assert run(_parsed(["-q", "-m", "all_trec", "--memory-limit", "20MB", qrels, ranking])) == 0
    assert capsys.readouterr().out == unlimited


@pytest.mark.parametrize(("level", "expected"), [
    ("0", ["1\t1.0000", "2\t0.0000", "3\t  -nan", "all\t  -nan"]),
    ("1", ["1\t1.0000", "2\t0.0000", "3\t0.0000", "all\t0.3333"]),
])
def test_rndcg_of_a_query_the_run_lacks_is_computed(tmp_path: Path, capsys, level: str,
                                                     expected: list[str]) -> None:
    """-c: a query the run lacks gets Rndcg's value on trec_eval 10's one unjudged document,
    not a fixed 0: under -l 0 a query whose only judgment is grade 0 has a relevant document
    and no gain, m_Rndcg.c's 0 / 0 (query 3). Expected lines: trec_eval 10.0's binary on these
    files (`trec_eval -c -q -l N -m Rndcg`)."""
    qrels = _write(tmp_path / "q", ["1 0 a 1", "2 0 x 2", "2 0 y 0", "3 0 z 0"])
    ranking = _write(tmp_path / "r", ["1 Q0 a 1 1 t"])
    assert run(_parsed(["-c", "-q", "-l", level, "-m", "Rndcg", qrels, ranking])) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(None, 1)[1] for line in lines] == expected
    assert {line.split()[0] for line in lines} == {"Rndcg"}


def test_a_document_judged_twice_comes_before_the_runs_errors(tmp_path: Path) -> None:
    """trec_eval reads the qrels first: its error for d1 judged twice in query 1 (the binary:
    "form_res_rels: duplicate docs d1"), not the refusal of gains less than 1 apart that query
    2's judgments would raise in the per-query query."""
    qrels = _write(tmp_path / "q", ["1 0 d1 1", "1 0 d1 2", "2 0 x1 1", "2 0 x2 2"])
    ranking = _write(tmp_path / "r", ["1 Q0 d1 1 1.0 t", "2 Q0 x1 1 1.0 t"])
    with pytest.raises(ValueError, match="judges document 'd1' twice for query '1'"):
        trec_eval_10(qrels, ranking, ["ndcg.1=0.5"])


def test_debug_query_reads_only_its_own_judgments(tmp_path: Path) -> None:
    """-D 0.2: trec_eval evaluates query 2 alone, and a document judged twice in query 1 is no
    error (the binary prints query 2's lines). Query 2: 1 of its 2 relevant documents at rank
    1, so num_rel_ret 1, P_5 = 1/5."""
    qrels = _write(tmp_path / "q", ["1 0 d1 1", "1 0 d1 2", "2 0 x1 1", "2 0 x2 2"])
    ranking = _write(tmp_path / "r", ["1 Q0 d1 1 1.0 t", "2 Q0 x1 1 1.0 t"])
    rows = trec_eval_10(qrels, ranking, ["num_rel_ret", "P.5"], per_query=True,
                        only_query="2")
    assert rows == [("num_rel_ret", "2", 1), ("P_5", "2", 0.2), ("num_rel_ret", "all", 1),
                    ("P_5", "all", 0.2)]


def test_runid_alone_and_from_a_compressed_run(tmp_path: Path) -> None:
    """-m runid alone is one line (it was two: the output relation ran its query twice); a
    .gz run's tag is read from the decompressed lines (it was '', from the compressed bytes)."""
    import gzip

    qrels = _write(tmp_path / "q", ["1 0 a 1"])
    ranking = _write(tmp_path / "r", ["1 Q0 a 1 1 tagged", "# a comment", ""])
    compressed = tmp_path / "r.gz"
    compressed.write_bytes(gzip.compress(Path(ranking).read_bytes()))
    for path in (ranking, str(compressed)):
        assert trec_eval_10(qrels, path, ["runid"]) == [("runid", "all", "tagged")]
        assert trec_eval_lines_10(qrels, path, ["runid"]) == ["runid                 \tall\ttagged"]


def test_out_of_memory_under_memory_limit_names_the_flag() -> None:
    """DuckDB's out-of-memory advice names its own settings (SET memory_limit): the command's
    line names --memory-limit; other errors, and the error without the flag, are as given."""
    from duckrank.cli import _error_line

    error = duckdb.OutOfMemoryException("Out of Memory Error: failed to allocate")
    assert _error_line("trec_eval", error, argparse.Namespace(memory_limit="1MB")) == (
        "duckrank trec_eval: Out of Memory Error: failed to allocate (the command ran under "
        "--memory-limit 1MB: give it more, or leave it out)\n")
    assert _error_line("trec_eval", error, argparse.Namespace(memory_limit=None)) == (
        "duckrank trec_eval: Out of Memory Error: failed to allocate\n")
    assert _error_line("fuse", ValueError("x"), argparse.Namespace(memory_limit="1MB")) == (
        "duckrank fuse: x\n")


def test_memory_limit_is_for_the_connection_trec_eval_opens(tmp_path: Path) -> None:
    qrels, ranking = _generated(tmp_path, seed=5, queries=3)
    with duckrank.connect() as con, pytest.raises(
            ValueError, match="trec_eval: memory_limit applies to the connection trec_eval "
                              "opens"):
        trec_eval_10(qrels, ranking, connection=con, memory_limit="1GB")


def _without(lines: list[str], names: set[str]) -> list[str]:
    return [line for line in lines if line.split()[0] not in names]


def test_all_trec_per_query_lines_and_full_precision(tmp_path: Path, con) -> None:
    """Every measure of all_trec, per query and summary; relstring (which pytrec_eval gives as
    0) is checked by hand in its own test."""
    qrels, ranking = _generated(tmp_path, seed=1)
    tag, values = _expected(qrels, ranking, ["all_trec"])
    skipped = {"relstring"}
    for row in values.values():
        del row["relstring"]
    printed = trec_eval_lines(qrels, ranking, ["all_trec"], per_query=True, connection=con)
    expected = _expected_lines(tag, values, per_query=True)
    assert _without(printed, skipped) == _without(expected, skipped)
    rows = trec_eval(qrels, ranking, ["all_trec"], per_query=True, connection=con)
    for measure, qid, value in rows:
        if qid != "all" and measure not in skipped:
            assert value == pytest.approx(values[qid][measure], abs=1e-12), (measure, qid)


@pytest.mark.parametrize("request_", ["set_map", "set_F.0.5", "set_F.4"])
def test_set_measures_bit_for_bit(tmp_path: Path, con, request_: str) -> None:
    """The same double as trec_eval (pytrec_eval), so that the 4 printed decimals agree:
    set_map divides once (m_set_map.c; two quotients multiplied printed 0.3062 for 0.3063) and
    set_F weighs recall by beta itself, not beta^2 (m_set_F.c)."""
    qrels, ranking = _generated(tmp_path, seed=1)
    name = request_.split(".")[0]
    _, values = _expected(qrels, ranking, [request_])
    for measure, qid, value in trec_eval(qrels, ranking, [request_], per_query=True,
                                         connection=con):
        if qid != "all":
            assert value == values[qid][name], (measure, qid)


@pytest.mark.parametrize("flags", [["-c"], ["-M", "3"], ["-l", "2"], ["-l2", "-c", "-M7"],
                                   ["-n"]])
def test_flags(tmp_path: Path, con, flags: list[str]) -> None:
    qrels, ranking = _generated(tmp_path, seed=2)
    options = argparse.ArgumentParser()
    options.add_argument("-c", action="store_true")
    options.add_argument("-M", type=int)
    options.add_argument("-l", type=int, default=1)
    options.add_argument("-n", action="store_true")
    parsed = options.parse_args(flags)
    measures = ["official", "ndcg_cut", "success", "recall", "set_P", "map_cut"]
    tag, values = _expected(qrels, ranking, measures, complete=parsed.c, max_docs=parsed.M,
                            level=parsed.l)
    printed = trec_eval_lines(qrels, ranking, measures, per_query=True, complete=parsed.c,
                              summary=not parsed.n, max_docs=parsed.M, level=parsed.l,
                              connection=con)
    graded = [int(row[3]) for row in _read(qrels, 4)]
    complete_num_rel = sum(g > 0 for g in graded) if parsed.c else None
    assert printed == _expected_lines(tag, values, per_query=True, summary=not parsed.n,
                                      complete_num_rel=complete_num_rel)


# pytrec_eval's spelling where it differs: its parser wants a digit before a dot. (It names
# set_F.0.5 set_F; trec_eval appends the parameter, meas_init.c append_string: set_F_0.5.)
@pytest.mark.parametrize(("request_", "names", "pytrec"), [
    ("P.5,7,3", ["P_3", "P_5", "P_7"], {}),  # trec_eval sorts the cut-offs
    ("iprec_at_recall..10,.20", ["iprec_at_recall_0.10", "iprec_at_recall_0.20"],
     {"request": "iprec_at_recall.0.10,0.20"}),
    ("ndcg_cut.10,20", ["ndcg_cut_10", "ndcg_cut_20"], {}),
    ("success.2,5", ["success_2", "success_5"], {}),
    ("set_F", ["set_F"], {}),
    ("Rprec_mult.0.5", ["Rprec_mult_0.50"], {}),
])
def test_parameters_as_trec_eval_spells_them(tmp_path: Path, con, request_: str,
                                              names: list[str], pytrec: dict[str, str]) -> None:
    qrels, ranking = _generated(tmp_path, seed=3)
    _, values = _expected(qrels, ranking, [pytrec.get("request", request_)])
    rows = trec_eval(qrels, ranking, [request_], per_query=True, connection=con)
    assert [m for m, q, _ in rows if q == "all"] == names
    for measure, qid, value in rows:
        if qid != "all":
            expected = values[qid][pytrec.get(measure, measure)]
            assert value == pytest.approx(expected, abs=1e-12), (measure, qid)


def test_ndcg_gains(tmp_path: Path, con) -> None:
    """-m ndcg.1=3,2=9 gives grades 1 and 2 the gains 3 and 9 (trec_eval's m_ndcg.c; other
    levels keep their grade as gain): the same as trec_eval's ndcg on qrels whose grades are
    those gains."""
    qrels, ranking = _generated(tmp_path, seed=4)
    lines = Path(qrels).read_text().splitlines()
    gains = {"1": "3", "2": "9"}
    remapped = [" ".join([*f[:3], gains.get(f[3], f[3])]) if not f[0].startswith("#") else ""
                for f in map(str.split, lines)]
    regraded = _write(tmp_path / "regraded.txt", remapped)
    _, values = _expected(regraded, ranking, ["ndcg"])
    rows = trec_eval(qrels, ranking, ["ndcg.1=3,2=9"], per_query=True, connection=con)
    assert {m for m, _, _ in rows} == {"ndcg_1=3,2=9"}
    for _, qid, value in rows:
        if qid != "all":
            assert value == pytest.approx(values[qid]["ndcg"], abs=1e-12), qid


def test_ties_as_c_floats_and_docid_order(tmp_path: Path, con) -> None:
    """Scores 1.0000000001 and 1.0 are one C float: trec_eval ranks that tie by docid,
    descending, so b (1.0) comes before a (1.0000000001); a and c tie at 0.5 -> c before a.
    relstring by hand: b is judged 1, a 0, c is not in the qrels ('-'), so '10'; the second
    query: c (2.0, grade -1: in the pool, unjudged '.') then a (0.5, '-')."""
    qrels = _write(tmp_path / "q", ["1 0 a 0", "1 0 b 1", "2 0 c -1", "2 0 b 1"])
    ranking = _write(tmp_path / "r", ["1 Q0 a 1 1.0000000001 t", "1 Q0 b 2 1.0 t",
                                      "2 Q0 a 1 0.5 t", "2 Q0 c 2 2 t", "# last"])
    rows = trec_eval(qrels, ranking, ["recip_rank", "relstring", "runid"], per_query=True,
                     connection=con)
    assert rows == [("recip_rank", "1", 1.0), ("relstring", "1", "10"),
                    ("recip_rank", "2", 0.0), ("relstring", "2", ".-"),
                    ("runid", "all", "t"), ("recip_rank", "all", 0.5)]


@pytest.mark.parametrize(("argv", "message"), [
    (["-m", "Map"], "trec_eval has no measure 'Map'"),
    (["-m", "P.0"], "-m P.0: the cut-off '0' is not a positive integer"),
    (["-m", "P.5,5"], "given twice"),
    (["-m", "P."], "no parameters after the dot"),
    (["-m", "P.5", "-m", "P.10"], "give them all at once, e.g. -m P.5,10"),
    (["-m", "map.3"], "takes no parameters"),
    (["-m", "all_prefs"], "from -R prefs or -R qrels_prefs only"),
    (["-m", "rbp.1=3"], "write the persistence as p=VALUE"),
    (["-M", "0"], "-M 0"),
    (["-l", "-1"], "-l -1"),
    (["--memory-limit", "lots"], "trec_eval: memory_limit must be a size with its unit, as "
                                 "DuckDB writes it ('2GB', '500MB'), got 'lots'"),
])
def test_bad_requests_name_the_flag(tmp_path: Path, capsys, argv: list[str],
                                    message: str) -> None:
    qrels, ranking = _generated(tmp_path, seed=5, queries=3)
    assert run(_parsed([*argv, qrels, ranking])) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err


@pytest.mark.parametrize(("qrels_lines", "run_lines", "message"), [
    (["1 0 a 1"], ["1 Q0 a 1 2 t", "1 Q0 a 2 1 t"],
     "the run file '.*r' ranks document 'a' twice for query"),
    (["1 0 a 1", "1 0 a 1"], ["1 Q0 a 1 2 t"],
     "the qrels file '.*q' judges document 'a' twice for query '1'"),
    # trec_eval reads every judgment (also of a query the run lacks) before it evaluates.
    (["1 0 a 1", "2 0 b 1", "2 0 b 0"], ["1 Q0 a 1 2 t"],
     "judges document 'b' twice for query '2'"),
    (["1 0 a 1", "1 0 a 1"], ["2 Q0 a 1 2 t"],
     "the qrels file '.*q' judges document 'a' twice for query '1'"),
    (["1 0 a 1"], ["2 Q0 a 1 2 t"], "no query is in both"),
])
def test_trec_eval_input_errors(tmp_path: Path, con, qrels_lines: list[str],
                                run_lines: list[str], message: str) -> None:
    qrels = _write(tmp_path / "q", qrels_lines)
    ranking = _write(tmp_path / "r", run_lines)
    with pytest.raises(ValueError, match=message):
        trec_eval(qrels, ranking, ["map"], connection=con)


def test_a_duplicate_beyond_the_cut_is_no_error(tmp_path: Path, con) -> None:
    """trec_eval checks duplicates among the documents it keeps (form_res_rels.c, after -M)."""
    qrels = _write(tmp_path / "q", ["1 0 a 1"])
    ranking = _write(tmp_path / "r", ["1 Q0 a 1 3 t", "1 Q0 b 2 2 t", "1 Q0 b 3 1 t"])
    rows = trec_eval(qrels, ranking, ["P.1"], max_docs=1, connection=con)
    assert rows == [("P_1", "all", 1.0)]


def test_a_measure_without_its_function_is_an_error_never_a_number() -> None:
    ghost = Measure("ghost", lambda _: "0", (Call("no_such_function"),))
    with pytest.raises(MissingMeasure, match="ghost .duckrank has no SQL function "
                                             "no_such_function"):
        check_available([Value("ghost", ghost, None)])


def test_every_measure_is_available_and_all_trec_is_trec_eval_9s() -> None:
    """Under --compat 9.0.8 all_trec is trec_eval 9's table (measures.c): pytrec_eval's all_trec
    holds the same names; the others are trec_eval 10's."""
    assert {v.measure.name for v in requested_values(["all_trec"], "9.0.8")} == (
        pytrec_eval.supported_nicknames["all_trec"])
    assert {m.name for m in MEASURES} - pytrec_eval.supported_nicknames["all_trec"] == {
        "rbp", "rbp_resid", "unj", "dcg", "ideal_dcg", "yaap", "map_avgjg", "P_avgjg",
        "Rprec_mult_avgjg", *PREFS_NAMES}
    check_available(requested_values([m.name for m in MEASURES]))  # (qrels_jg's included)


def test_trec_eval_10_measures_by_hand(tmp_path: Path, con) -> None:
    """rbp, rbp_resid and unj (trec_eval 10, not in pytrec_eval): the ranking a (grade 1),
    b (0), c (1), x (not judged), e (-1: in the pool, unjudged). With p = 0.5:
    rbp = (1 - p)(1 + p^2) = 0.625; rbp_resid = p^5 + (1 - p)(p^3 + p^4) = 0.125 (m_rbp_resid.c:
    the weight past the ranking and at its unjudged ranks); unj_k = unjudged in the top k / k:
    0/2, 1/4 (x), 2/10 (x and e)."""
    qrels = _write(tmp_path / "q", ["1 0 a 1", "1 0 b 0", "1 0 c 1", "1 0 e -1"])
    ranking = _write(tmp_path / "r", [f"1 Q0 {d} {i} {6 - i} t" for i, d in
                                      enumerate("abcxe", 1)])
    rows = trec_eval(qrels, ranking, ["rbp.p=0.5", "rbp_resid.p=0.5", "unj.2,4,10"],
                     connection=con)
    assert rows == [("rbp_p=0.5", "all", 0.625), ("rbp_resid_p=0.5", "all", 0.125),
                    ("unj_2", "all", 0.0), ("unj_4", "all", 0.25), ("unj_10", "all", 0.2)]


def test_a_full_connection_gives_the_same_lines_and_keeps_no_macro_of_the_command(
        tmp_path: Path, con) -> None:
    """The binary measures are their records' formulas over one match per query, in TEMP macros
    made for one evaluation (formula_macros): a connection with every duckrank function prints
    the same lines (the lines are pytrec_eval's: test_all_trec_per_query_lines_...), and holds
    none of those macros afterwards."""
    qrels, ranking = _generated(tmp_path, seed=3)
    full = duckrank.connect()
    requests = ["all_trec", "rbp", "unj.3"]
    lines = trec_eval_lines(qrels, ranking, requests, per_query=True, complete=True,
                            max_docs=9, connection=full)
    assert lines == trec_eval_lines(qrels, ranking, requests, per_query=True, complete=True,
                                    max_docs=9, connection=con)
    left = full.execute("SELECT count(*) FROM duckdb_functions() "
                        "WHERE function_name LIKE 'duckrank_trec_eval%'").fetchall()
    full.close()
    assert left == [(0,)]


def test_the_command_registers_only_the_functions_of_its_measures() -> None:
    """trec_eval's default measures need neither ndcg nor the graded truths' functions."""
    default = needed_functions(requested_values([]))
    assert {"read_trec_run", "read_trec_qrels", "to_ordered_list", "duckrank_matched",
            "precision_at", "bpref"} <= set(default)
    assert "ndcg" not in default and "infap" not in default
    assert "ndcg" in needed_functions(requested_values(["ndcg_cut.10"]))
