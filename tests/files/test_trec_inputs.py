"""Issue 25, section 2: TREC files the way trec_eval takes them, and errors that name the fix.

Expected values come from trec_eval 10 (the C source in the shared tools, ``trec_eval -q -m runid
-m map -m num_rel_ret``, run by hand on these files on 2026-11-28; its bytes are pinned below, and
compared with the binary again when it is built) and from hand calculations: qrels 1: a (grade 1),
b (0); run 1: a, b, so map = 1; query 2 judges x, ranks y: map 0.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from duckrank.cli import main
from duckrank.files import trec
from duckrank.reports.trec_eval import trec_eval

LATIN_QRELS = b"1 0 caf\xe9 1\n1 0 b 0\n2 0 x 1\n"
LATIN_RUN = b"1 Q0 caf\xe9 1 3 t\xe9\n1 Q0 b 2 2 t\xe9\n2 Q0 y 1 1 t\xe9\n"
# trec_eval 10's output for these files, byte for byte (the tag's byte 0xE9 as it is).
TREC_EVAL_LATIN = (
    b"num_rel_ret           \t1\t1\nmap                   \t1\t1.0000\n"
    b"num_rel_ret           \t2\t0\nmap                   \t2\t0.0000\n"
    b"runid                 \tall\tt\xe9\nnum_rel_ret           \tall\t1\n"
    b"map                   \tall\t0.5000\n"
)
QRELS = "1 0 a 1\n1 0 b 0\n1 0 c 2\n"
RUN = "1 Q0 a 1 3 tagX\n1 Q0 b 2 2 tagX\n1 Q0 d 3 1 tagX\n"
# trec_eval 10 on QRELS, RUN: a relevant at 1, c (relevant) not retrieved: map (1/1) / 2.
MAP_LINE = "map                   \tall\t0.5000\n"


def _files(tmp_path: Path, qrels: bytes | str, run: bytes | str) -> tuple[str, str]:
    q, r = tmp_path / "qrels.txt", tmp_path / "run.txt"
    for path, content in ((q, qrels), (r, run)):
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return str(q), str(r)


def _command(*argv: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "duckrank.cli", *argv], input=stdin,
                          capture_output=True, check=False)


def test_latin1_ids_are_read_and_printed_as_trec_eval_does(tmp_path: Path) -> None:
    """Before: DuckDB's CSV reader dump ('Invalid unicode ... not utf-8 encoded')."""
    qrels, run = _files(tmp_path, LATIN_QRELS, LATIN_RUN)
    done = _command("trec_eval", "-q", "-m", "runid", "-m", "map", "-m", "num_rel_ret",
                    qrels, run)
    assert done.returncode == 0, done.stderr
    assert done.stdout == TREC_EVAL_LATIN
    built = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"),
                 "trec_eval-10.0", "trec_eval")
    if built.exists():
        oracle = subprocess.run([str(built), "-q", "-m", "runid", "-m", "map", "-m",
                                 "num_rel_ret", qrels, run], capture_output=True, check=True)
        assert oracle.stdout == TREC_EVAL_LATIN


def test_latin1_file_from_python(tmp_path: Path) -> None:
    _, run = _files(tmp_path, LATIN_QRELS, LATIN_RUN)
    assert trec.encoding(run) == trec.LATIN1
    rows = trec.read_run(run).fetchall()
    assert [row[2] for row in rows] == ["caf\xe9", "b", "y"]
    assert trec_eval(*_files(tmp_path, LATIN_QRELS, LATIN_RUN), ["map"]) == [
        ("map", "all", 0.5)]


def test_a_utf8_file_stays_utf8(tmp_path: Path) -> None:
    _, run = _files(tmp_path, "", "1 Q0 caf\u00e9 1 1 t\n")
    assert trec.encoding(run) == trec.UTF8
    assert trec.read_run(run).fetchall()[0][2] == "caf\u00e9"


def test_stdin_is_read(tmp_path: Path) -> None:
    """Before: "the run file '/dev/stdin' does not exist"."""
    qrels, _ = _files(tmp_path, QRELS, RUN)
    done = _command("trec_eval", "-m", "map", qrels, "/dev/stdin", stdin=RUN.encode())
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == MAP_LINE


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash for <(...)")
def test_process_substitution_is_read(tmp_path: Path) -> None:
    """trec_eval's idiom: duckrank trec_eval qrels <(zcat run.gz)."""
    qrels, run = _files(tmp_path, QRELS, RUN)
    done = subprocess.run(["bash", "-c", f'"{sys.executable}" -m duckrank.cli trec_eval -m map '
                           f'"{qrels}" <(cat "{run}")'], capture_output=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == MAP_LINE


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_read_once_and_copied(tmp_path: Path) -> None:
    qrels, run = _files(tmp_path, QRELS, RUN)
    fifo = tmp_path / "run.fifo"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f'cat "{run}" > "{fifo}"'])
    try:
        # The evaluation reads the run more than once (the ranking, the duplicate check).
        assert trec_eval(qrels, str(fifo), ["map", "num_ret"]) == [
            ("num_ret", "all", 3), ("map", "all", 0.5)]
    finally:
        # A reader that never opened the FIFO leaves the writer blocked: end it.
        if writer.poll() is None:
            writer.kill()
        writer.wait()


def test_a_missing_file_and_a_folder_are_still_errors(tmp_path: Path, capsys) -> None:
    qrels, _ = _files(tmp_path, QRELS, RUN)
    assert main(["trec_eval", qrels, str(tmp_path / "nope")]) == 1
    assert "the run file" in capsys.readouterr().err
    assert main(["trec_eval", qrels, str(tmp_path)]) == 1
    assert "is a folder, not a file" in capsys.readouterr().err


@pytest.mark.parametrize("measure", ["ndcg", "ndcg_cut.5", "bpref", "map"])
def test_a_document_judged_twice_names_file_query_and_document(tmp_path: Path, capsys,
                                                                measure: str) -> None:
    """trec_eval 10: 'duplicate docs a' for any measure. Before: a graded measure failed with
    DuckDB's bare 'Map keys must be unique'."""
    qrels, run = _files(tmp_path, "1 0 a 1\n1 0 a 2\n1 0 c 2\n", RUN)
    assert main(["trec_eval", "-m", measure, qrels, run]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert (f"the qrels file {qrels!r} judges document 'a' twice for query '1' (trec_eval: "
            "duplicate docs)") in captured.err


def test_swapped_files_say_which_is_which(tmp_path: Path, capsys) -> None:
    qrels, run = _files(tmp_path, QRELS, RUN)
    assert main(["trec_eval", "-m", "map", run, qrels]) == 1
    err = capsys.readouterr().err
    assert "look swapped" in err and f"{qrels!r}, given as RUN, has lines of 4 fields" in err
    assert "duckrank trec_eval QRELS RUN" in err
    assert main(["evaluate", qrels, run, "-m", "map"]) == 1
    err = capsys.readouterr().err
    assert "look swapped" in err and "the order is duckrank evaluate RUN QRELS" in err
    # In the right order both work.
    assert main(["trec_eval", "-m", "map", qrels, run]) == 0
    assert capsys.readouterr().out == MAP_LINE
    assert main(["evaluate", run, qrels, "-m", "map", "--format", "csv"]) == 0


def test_the_docs_example_is_what_the_command_prints(tmp_path: Path, capsys) -> None:
    """docs/trec_eval.md's first example (-m map -m P.5,10): trec_eval 10 prints no runid line
    unless runid (or a set holding it) is asked for, and neither does duckrank."""
    qrels, run = _files(tmp_path, QRELS, RUN)
    assert main(["trec_eval", "-m", "map", "-m", "P.5,10", qrels, run]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[0].strip() for line in printed] == ["map", "P_5", "P_10"]
    docs = (Path(__file__).resolve().parents[2] / "docs" / "trec_eval.md").read_text()
    example = docs.split("$ duckrank trec_eval -m map -m P.5,10", 1)[1].split("```", 1)[0]
    assert [line.split("\t")[0].strip() for line in example.strip().splitlines()[1:]] == [
        "map", "P_5", "P_10"]
