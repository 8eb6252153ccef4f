"""``duckrank trec_eval`` against the trec_eval 10.0 binary, line for line, on generated files.

    .venv/bin/python tests/reports/trec_eval_differential.py [--queries 400] [--seed 0] [--show 5]
    .venv/bin/python tests/reports/trec_eval_differential.py --queries 12 --seed 7 \
        --pin tests/reports/data/trec_eval_10_generated
    .venv/bin/python tests/reports/trec_eval_differential.py --sets prefs --queries 12 \
        --seed 7 --pin tests/reports/data/trec_eval_10_prefs

For each flag set of ``FLAG_SETS`` both commands read the same seeded random qrels and run
(``trec_eval_oracle.generate``: grades -1..3, ties, unjudged documents, queries in one file
only), and for each of ``PREFS_FLAG_SETS`` the preference files (``generate_prefs``: several
judgment groups and sub-groups, tied levels, unjudged documents, queries in one file only);
``--sets`` picks them (default both). The script prints, per flag set, the lines trec_eval
prints, how many of them duckrank does not print (``missing``), how many duckrank prints that
trec_eval does not (``extra``), whether the order is the same, and the first differing lines.
Exit status 1 when any differ.

``--pin FOLDER`` writes the generated files to FOLDER and, for each flag set, what trec_eval
prints (``<n>.out``, its exit status in ``commands.tsv`` with the command that printed it):
the pinned outputs that ``test_trec_eval_10.py`` checks without the binary.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

from trec_eval_oracle import binary, generate, generate_prefs, run_binary, run_duckrank

# (name, qrels file key, flags): -c reads the qrels with queries the run lacks; trec_eval 10
# stops on those without -c, which the last set checks (both commands fail).
FLAG_SETS = (
    ("-q all_trec", "qrels", ["-q", "-m", "all_trec"]),
    ("-q -c all_trec", "qrels_extra", ["-q", "-c", "-m", "all_trec"]),
    ("-q -l2 all_trec", "qrels", ["-q", "-l", "2", "-m", "all_trec"]),
    ("-q -M10 all_trec", "qrels", ["-q", "-M", "10", "-m", "all_trec"]),
    ("-q -J all_trec", "qrels", ["-q", "-J", "-m", "all_trec"]),
    ("-q -c -J -M5 official", "qrels_extra", ["-q", "-c", "-J", "-M", "5", "-m", "official"]),
    ("-q -N100 utility", "qrels", ["-q", "-N", "100", "-m", "utility.1,-1,0,0.5",
                                   "-m", "official"]),
    # (not rbp with other parameters: on graded qrels trec_eval 10's rbp reads two variables it
    # never set, which the measure computed before it leaves on the stack; see docs)
    ("-q parameters", "qrels", ["-q", "-m", "11pt_avg..25,.5,.75", "-m", "ndcg_cut.10,20,23.4",
                                "-m", "relstring.20", "-m", "ndcg.1=3,2=9", "-m", "P.3,8",
                                "-m", "iprec_at_recall..15,.5,1", "-m", "rbp_resid.p=0.5"]),
    # (yaap is computed just before rbp: not with rbp, whose value then depends on yaap's stack)
    ("-q -c dcg ideal_dcg yaap", "qrels_extra", ["-q", "-c", "-m", "dcg", "-m", "ideal_dcg",
                                                 "-m", "yaap", "-m", "official"]),
    ("-q -c all_trec rbp.p=0.8", "qrels_extra", ["-q", "-c", "-m", "all_trec",
                                                 "-m", "rbp.p=0.8"]),
    ("-q -Z all_trec", "qrels", ["-q", "-Z", "{zscores}", "-m", "all_trec"]),
    ("-c -n -o official", "qrels_extra", ["-q", "-c", "-n", "-o", "-m", "official"]),
    ("-c -T trec_results -D 0", "qrels_extra", ["-c", "-T", "trec_results", "-D", "0"]),
    ("-q -R qrels_jg", "qrels", ["-q", "-R", "qrels_jg", "-m", "qrels_jg"]),
    ("no -c, qrels-only queries", "qrels_extra", ["-m", "map"]),
)

# (name, file key, flags) on generate_prefs's files, the run being prefs_run: -J, -l and -N
# are accepted and change nothing, as in trec_eval; the qrels of ``generate`` (grades -1..3)
# read as qrels_prefs take the prefs set, without prefs_avgjg_Rnonrel*, which read past their
# data on groups of a few negative grades (docs/trec_eval.md).
PREFS_FLAG_SETS = (
    ("-q -R prefs all_prefs", "prefs", ["-q", "-R", "prefs", "-m", "all_prefs"]),
    ("-q -c -R prefs all_prefs", "prefs_extra", ["-q", "-c", "-R", "prefs", "-m", "all_prefs"]),
    ("-q -M6 -R prefs all_prefs", "prefs", ["-q", "-M", "6", "-R", "prefs", "-m", "all_prefs"]),
    ("-q -J -l2 -N50 -R prefs", "prefs", ["-q", "-J", "-l", "2", "-N", "50", "-R", "prefs",
                                          "-m", "all_prefs"]),
    ("-q -Z -R prefs all_prefs", "prefs", ["-q", "-Z", "{prefs_zscores}", "-R", "prefs",
                                           "-m", "all_prefs"]),
    ("-R prefs -m prefs -m num_q", "prefs", ["-R", "prefs", "-m", "prefs", "-m", "num_q"]),
    ("-q -R qrels_prefs all_prefs", "qrels_prefs", ["-q", "-R", "qrels_prefs",
                                                    "-m", "all_prefs"]),
    ("-q -c -R qrels_prefs, grades -1..3", "qrels_extra", ["-q", "-c", "-R", "qrels_prefs",
                                                           "-m", "prefs"]),
    ("no -c, prefs-only queries", "prefs_extra", ["-R", "prefs", "-m", "prefs_simp"]),
)
SETS = {"qrels": FLAG_SETS, "prefs": PREFS_FLAG_SETS}


def _files(folder: Path, seed: int, queries: int) -> dict[str, str]:
    """Both generators' files (the qrels_prefs sets also read ``generate``'s qrels)."""
    return {**generate(folder, seed, queries), **generate_prefs(folder, seed, queries)}


def _run_file(files: dict[str, str], key: str) -> str:
    return files["prefs_run" if key.startswith("prefs") or key == "qrels_prefs" else "run"]


def compare(expected: list[str], got: list[str]) -> tuple[int, int, bool]:
    """(lines of ``expected`` not in ``got``, lines of ``got`` not in ``expected``, same
    order), counted as multisets."""
    want, have = Counter(expected), Counter(got)
    return sum((want - have).values()), sum((have - want).values()), expected == got


def pin(oracle: str, folder: Path, seed: int, queries: int, sets: str) -> None:
    """The generated files and trec_eval's outputs in ``folder`` (see the module)."""
    folder.mkdir(parents=True, exist_ok=True)
    files = (generate if sets == "qrels" else _files)(folder, seed, queries)
    names = {path: Path(path).name for path in files.values()}
    commands = []
    for index, (name, qrels, flags) in enumerate(SETS[sets]):
        command = [f.format(**files) for f in flags] + [files[qrels], _run_file(files, qrels)]
        status, lines, _ = run_binary(oracle, command)
        (folder / f"{index}.out").write_text("".join(line + "\n" for line in lines))
        shown = " ".join(names.get(arg, arg) for arg in command)
        commands.append(f"{index}.out\t{status}\t{name}\ttrec_eval {shown}")
    (folder / "commands.tsv").write_text("\n".join(commands) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=3, help="differing lines shown per set")
    parser.add_argument("--pin", type=Path, help="write the files and trec_eval's outputs here")
    parser.add_argument("--sets", choices=("qrels", "prefs", "all"), default="all",
                        help="the flag sets run (--pin: qrels or prefs)")
    args = parser.parse_args(argv)
    oracle = binary()
    if oracle is None:
        print("no trec_eval 10.0 binary (set DUCKRANK_TREC_EVAL)", file=sys.stderr)
        return 2
    if args.pin is not None:
        if args.sets == "all":
            parser.error("--pin takes --sets qrels or --sets prefs")
        pin(oracle, args.pin, args.seed, args.queries, args.sets)
        return 0
    flag_sets = FLAG_SETS + PREFS_FLAG_SETS if args.sets == "all" else SETS[args.sets]
    failed = False
    total_lines = total_missing = 0
    with tempfile.TemporaryDirectory() as folder:
        files = _files(Path(folder), args.seed, args.queries)
        for name, qrels, flags in flag_sets:
            flags = [f.format(**files) for f in flags]
            command = [*flags, files[qrels], _run_file(files, qrels)]
            status, expected, error = run_binary(oracle, command)
            ours, got, our_error = run_duckrank(command)
            missing, extra, ordered = compare(expected, got)
            total_lines += len(expected)
            total_missing += missing
            same_status = (status == 0) == (ours == 0)
            failed |= bool(missing or extra or not ordered or not same_status)
            print(f"{name:<28} lines {len(expected):>6}  missing {missing:>6}  extra {extra:>6}"
                  f"  order {'same' if ordered else 'differs'}  exit {status}/{ours}")
            if not same_status:
                print(f"    trec_eval: {error.strip()[:200]}\n    duckrank:  "
                      f"{our_error.strip()[:200]}")
            got_set, expected_set = set(got), set(expected)
            for line in [line for line in expected if line not in got_set][:args.show]:
                print(f"    - {line}")
            for line in [line for line in got if line not in expected_set][:args.show]:
                print(f"    + {line}")
    print(f"total: {total_lines} lines, {total_missing} not reproduced")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
