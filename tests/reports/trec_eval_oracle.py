"""The trec_eval 10.0 binary as an oracle, and the generated files it is compared on.

``binary()`` finds NIST's trec_eval 10.0 (usnistgov/trec_eval, version 10.0): the environment
variable ``DUCKRANK_TREC_EVAL``, else ``~/.cache/trec_eval-10.0/trec_eval``, else the result of
the ``build`` script of a ``shared/tools/trec_eval`` folder beside the repository when there is
one; None otherwise (the live comparisons are then skipped, and the pinned outputs of
``tests/reports/data`` are what is checked).

``generate()`` writes seeded random qrels and runs with what trec_eval users meet: grades -1..3,
tied scores (equal doubles, and scores equal as C floats but not as doubles), documents the qrels
never judged, queries whose judgments hold no relevant document, queries only in the run, and (in
a second qrels file, for ``-c``) queries only in the qrels.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import subprocess
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
CACHED = Path.home() / ".cache" / "trec_eval-10.0" / "trec_eval"
BUILD = REPOSITORY.parent / "shared" / "tools" / "trec_eval" / "build"


def binary() -> str | None:
    """The path of a trec_eval 10.0 binary, or None when there is none (see the module)."""
    named = os.environ.get("DUCKRANK_TREC_EVAL")
    if named:
        return named if os.access(named, os.X_OK) else None
    if os.access(CACHED, os.X_OK):
        return str(CACHED)
    if BUILD.exists():
        built = subprocess.run([str(BUILD)], capture_output=True, text=True, check=False)
        path = built.stdout.strip()
        if built.returncode == 0 and os.access(path, os.X_OK):
            return path
    return None


def run_binary(path: str, args: list[str]) -> tuple[int, list[str], str]:
    """trec_eval's exit status, printed lines and standard error."""
    done = subprocess.run([path, *args], capture_output=True, check=False)
    return (done.returncode, done.stdout.decode("latin-1").splitlines(),
            done.stderr.decode("latin-1"))


def run_duckrank(args: list[str]) -> tuple[int, list[str], str]:
    """``duckrank trec_eval ARGS`` in this process: exit status, printed lines, standard error."""
    from duckrank.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(["trec_eval", *args])
        except SystemExit as stop:  # argparse: an unknown flag
            status = stop.code if isinstance(stop.code, int) else 2
    return status, out.getvalue().splitlines(), err.getvalue()


def duckrank_lines(args: list[str], connection) -> list[str]:
    """What ``duckrank trec_eval ARGS`` prints, its flags parsed by the command's parser, on a
    ``connection`` with duckrank registered (registering takes seconds per command)."""
    from duckrank.cli import build_parser
    from duckrank.reports.trec_eval import options_from_flags, printed_lines

    parsed = build_parser().parse_args(["trec_eval", *args])
    return printed_lines(parsed.qrels, parsed.run, parsed.measures, options_from_flags(parsed),
                         connection)


def _write(path: Path, lines: list[str]) -> str:
    path.write_text("\n".join(lines) + "\n")
    return str(path)


# The value names of trec_eval 10's all_trec with its default parameters, as the z-scores file
# of trec_eval's own tests (usnistgov/trec_eval, test/zscores_file) names them.
ZSCORE_NAMES = sorted({line.split()[1] for line in (
    REPOSITORY / "tests" / "reports" / "data" / "trec_eval_10_test" / "zscores_file"
).read_text().splitlines()})


def _zscore_lines(rnd: random.Random, qid: str, skip_map: bool) -> list[str]:
    """A mean and standard deviation for each value of the query (map left out when
    ``skip_map``: -1000000); a tenth with a standard deviation of 0 and a mean of 0 (then 0 when
    the value is 0, else -1000000). trec_eval 10's lookups (convert_zscores.c) read past the
    end of its tables for a query or measure above all of the file's: the ones left out here
    sort below the last."""
    lines = []
    for name in ZSCORE_NAMES:
        if skip_map and name == "map":
            continue
        if rnd.random() < 0.1:
            lines.append(f"{qid} {name} 0 0")
        else:
            lines.append(f"{qid} {name} {rnd.random():.4f} {rnd.random() + 0.05:.4f}")
    return lines


def _score(rnd: random.Random) -> str:
    """A score with ties: one decimal, a constant, near-ties equal as C floats, or any."""
    kind = rnd.random()
    if kind < 0.3:
        return repr(round(rnd.random(), 1))
    if kind < 0.4:
        return "2.0"
    if kind < 0.6:
        return repr(1.0 + 1e-9 * rnd.randint(0, 20))
    return repr(rnd.random() * 10)


def generate(folder: Path, seed: int = 0, queries: int = 40) -> dict[str, str]:
    """Files written to ``folder``: ``qrels`` (every query of it is in the run), ``qrels_extra``
    (with queries only in the qrels, for ``-c``), ``run``, and ``zscores`` (a mean and standard
    deviation for most (query, value) pairs of all_trec, for ``-Z``)."""
    rnd = random.Random(seed)
    qrels, extra, run, zscores = ["# pool of depth 10"], [], [], []
    for q in range(queries):
        qid = str(q) if q % 3 else f"q{q}"
        docs = list(dict.fromkeys(f"d{rnd.randint(0, 80)}" for _ in range(40)))
        only_run, only_qrels = q % 9 == 4, q % 11 == 7
        if not only_run:
            grades = [0, -1] if q % 7 == 0 else [-1, 0, 0, 1, 1, 2, 3]
            lines = [f"{qid} 0 {doc} {rnd.choice(grades)}"
                     for doc in rnd.sample(docs, k=rnd.randint(1, 20)) + [f"x{q}"]]
            (extra if only_qrels else qrels).extend(lines)
        if not only_qrels:
            for rank, doc in enumerate(docs[:rnd.randint(1, len(docs))], 1):
                run.append(f"{qid} Q0 {doc} {rank} {_score(rnd)} run{seed}")
        if q % 13 != 6:  # (a query the file lacks: every value -1000000)
            zscores.extend(_zscore_lines(rnd, qid, skip_map=q % 2 == 1))
    rnd.shuffle(run)
    rnd.shuffle(qrels)
    return {
        "qrels": _write(folder / "qrels.txt", qrels),
        "qrels_extra": _write(folder / "qrels_extra.txt", qrels + extra),
        "run": _write(folder / "run.txt", run),
        "zscores": _write(folder / "zscores.txt", zscores),
    }


# The value names of the prefs measures (trec_eval 10's all_prefs but runid and num_q:
# measures.c, prefs_names).
PREFS_NAMES = sorted(f"prefs_{name}" for name in (
    "num_prefs_poss", "num_prefs_ful", "num_prefs_ful_ret", "simp", "pair", "avgjg",
    "avgjg_Rnonrel", "simp_ret", "pair_ret", "avgjg_ret", "avgjg_Rnonrel_ret", "simp_imp",
    "pair_imp", "avgjg_imp"))


def _prefs_groups(rnd: random.Random, qid: str, docs: list[str], jsg_field: bool) -> list[str]:
    """A query's preference lines: two to four judgment groups (users), each ranking its own
    documents by a hidden level (ties, and level 0 for nonrelevant), in one to three sub-groups
    that each show some of them (levels rescaled, order kept: the group stays consistent, as
    trec_eval requires, while the users disagree with each other); ``jsg_field``: the prefs
    layout (qid jg jsg docno level), else qrels_prefs's (qid jg docno level, one sub-group)."""
    lines = []
    for user in range(rnd.randint(2, 4) if jsg_field else rnd.randint(1, 2)):
        levels = {doc: rnd.choice([0, 0, 0, 1, 1, 2, 3]) for doc in
                  rnd.sample(docs, k=rnd.randint(2, min(len(docs), 14)))}
        subgroups = rnd.randint(1, 3) if jsg_field else 1
        jg = f"u{user}" if user or rnd.random() < 0.5 else "0"
        for sub in range(subgroups):
            shown = levels if subgroups == 1 else {
                doc: level for doc, level in levels.items() if rnd.random() < 0.6}
            scale = rnd.choice([1, 2, 0.5])
            for doc, level in shown.items():
                prefix = f"{qid} {jg} s{sub}" if jsg_field else f"{qid} {jg}"
                lines.append(f"{prefix} {doc} {level * scale:g}")
    return lines


def generate_prefs(folder: Path, seed: int = 0, queries: int = 40) -> dict[str, str]:
    """Files written to ``folder`` for ``-R prefs`` and ``-R qrels_prefs``: ``prefs`` (every
    query of it is in the run), ``prefs_extra`` (with queries only in it, for ``-c``),
    ``qrels_prefs`` (levels 0..3, one or two judgment groups per query, each in the run),
    ``prefs_run`` (with unjudged documents, tied scores and queries only in the run) and
    ``prefs_zscores`` (for ``-Z``)."""
    rnd = random.Random(seed)
    prefs, extra, qrels_prefs, run, zscores = ["# preferences"], [], [], [], []
    for q in range(queries):
        qid = f"p{q}" if q % 4 else str(q)
        docs = list(dict.fromkeys(f"d{rnd.randint(0, 40)}" for _ in range(24)))
        only_run, only_prefs = q % 9 == 4, q % 11 == 7
        if not only_run:
            (extra if only_prefs else prefs).extend(_prefs_groups(rnd, qid, docs, True))
            lines = _prefs_groups(rnd, qid, docs, False)
            if not only_prefs:
                qrels_prefs.extend(lines)
        if not only_prefs:
            # (a group's first document is often left out: implied and unretrieved pairs)
            ranked = docs[rnd.randint(0, 3):rnd.randint(4, len(docs))] + [f"u{q}"]
            for rank, doc in enumerate(ranked, 1):
                run.append(f"{qid} Q0 {doc} {rank} {_score(rnd)} prefs{seed}")
        if q % 13 != 6:
            zscores.extend(f"{qid} {name} {rnd.random():.4f} {rnd.random() + 0.05:.4f}"
                           for name in PREFS_NAMES if rnd.random() < 0.9)
    rnd.shuffle(run)
    return {
        "prefs": _write(folder / "prefs.txt", prefs),
        "prefs_extra": _write(folder / "prefs_extra.txt", prefs + extra),
        "qrels_prefs": _write(folder / "qrels_prefs.txt", qrels_prefs),
        "prefs_run": _write(folder / "prefs_run.txt", run),
        "prefs_zscores": _write(folder / "prefs_zscores.txt", zscores),
    }
