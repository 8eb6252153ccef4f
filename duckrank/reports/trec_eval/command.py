"""The computation of ``duckrank trec_eval``: the flags (``Options``), the one DuckDB query over
per-query lists, the checks trec_eval makes, and the printed lines."""

from __future__ import annotations

import argparse
import gzip
import os
import re
import sys
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import duckdb

from duckrank.engines.duckdb import register
from duckrank.files.trec import LATIN1, UTF8, check_order, encoding, file_paths, first_blank_line
from duckrank.matching import native as _native
from duckrank.matching.sql import native_top_grades_sql, top_grades_sql
from duckrank.metrics.trec_eval import NONREL_ABOVE, POSITIVE_RANKS, POSITIVE_TERMS
from duckrank.render.quoting import quote_identifier, quote_literal
from duckrank.render.trec import RUN_COLUMNS, table_macro
from duckrank.reports.command_line import connect_within, opened_here
from duckrank.reports.trec_eval import prefs
from duckrank.reports.trec_eval.measures import (
    COMPAT_9,
    COMPAT_10,
    COMPATS,
    COMPLETE_NUM_REL,
    GAINS,
    GRADES,
    GROUPS,
    JUDGED_MATCH,
    JUDGMENTS,
    MATCH,
    NUM_DOCS,
    QRELS,
    QRELS_JG,
    REC,
    REL,
    REL_INFO_FORMATS,
    Measure,
    log_floor,
    sql_number,
)
from duckrank.reports.trec_eval.requests import (
    Value,
    check_available,
    formula_macros,
    judged_match_fields,
    needed_functions,
    requested_values,
)
from duckrank.reports.trec_eval.zscores import load_zscores, zscored


@dataclass(frozen=True)
class Options:
    """trec_eval's flags: ``-q`` per_query, ``-c`` complete, ``-n`` not summary, ``-M``
    max_docs, ``-l`` level, ``-J`` judged_only, ``-N`` num_docs, ``-Z`` zscores (the path of
    a file of ``qid measure mean stddev`` lines), ``-D`` debug_level and only_query (``-D
    0.QID``), ``-R`` rel_info_format ('qrels', 'qrels_jg', 'prefs', 'qrels_prefs'), ``-T``
    results_format; and duckrank's ``--compat``: the trec_eval version reproduced, '10.0'
    (NIST's current) or '9.0.8' (pytrec-eval-terrier's), and ``--memory-limit``: DuckDB's
    memory_limit for the connection the command opens (None: DuckDB's default, 80% of the
    machine's memory). The keyword arguments of ``trec_eval`` and ``trec_eval_lines``."""

    per_query: bool = False
    complete: bool = False
    summary: bool = True
    max_docs: int | None = None
    level: int = 1
    compat: str = COMPAT_10
    judged_only: bool = False
    num_docs: int = 0
    zscores: str | Path | None = None
    only_query: str | None = None
    rel_info_format: str = "qrels"
    results_format: str = "trec_results"
    debug_level: int = 0
    memory_limit: str | None = None


def _check_options(options: Options) -> None:
    if options.max_docs is not None and options.max_docs < 1:
        raise ValueError(f"-M {options.max_docs}: the documents kept per query must be 1 or "
                         "more (trec_eval's -M 0 divides by zero)")
    if options.level < 0:
        raise ValueError(f"-l {options.level}: the relevance level must be 0 or more (below 0, "
                         "trec_eval counts documents absent from the qrels as relevant)")
    if options.compat not in COMPATS:
        raise ValueError(f"--compat {options.compat}: the trec_eval versions are "
                         f"{', '.join(COMPATS)}")
    if options.num_docs < 0:
        raise ValueError(f"-N {options.num_docs}: the number of documents in the collection "
                         "must be 0 or more")
    _check_formats(options)


def debug_flag(text: str) -> tuple[int, str | None]:
    """-D's ``N[.QID]``: the debug level and the one query to evaluate (trec_eval.c,
    get_debug_level_query)."""
    level, dot, query = text.partition(".")
    if not level.strip().lstrip("+-").isdigit():
        raise ValueError(f"-D {text}: write the debug level as N or N.QID, e.g. -D 0.301")
    return int(level), (query if dot else None)


def _check_measure_formats(values: Sequence[Value], options: Options) -> None:
    """Each measure needs its -R formats (``Measure.formats``): trec_eval 10 stops otherwise
    (form_res_rels.c, form_res_rels_jg.c, form_prefs_counts.c: rel_info format not ...).
    -R qrels_jg computes only runid, num_q and the judgment groups' measures; -R prefs and
    qrels_prefs only runid, num_q and the prefs_* measures."""
    given = options.rel_info_format
    wrong = sorted({v.measure.name for v in values if given not in v.measure.formats})
    if not wrong:
        return
    if given != QRELS:
        sets = {QRELS_JG: "the judgment groups' measures (-m qrels_jg)",
                **dict.fromkeys(prefs.FORMATS, "the preference measures (-m all_prefs)")}
        raise ValueError(f"-R {given}: trec_eval computes only runid, num_q and {sets[given]} "
                         f"from it, not {', '.join(wrong)}")
    needed = {f for v in values if given not in v.measure.formats for f in v.measure.formats}
    which = "it" if len(wrong) == 1 else "them"
    raise ValueError(f"-m {', '.join(wrong)}: trec_eval computes {which} from "
                     f"-R {' or -R '.join(sorted(needed))} only, not from qrels")


def _check_formats(options: Options) -> None:
    """-R, -T and -D as trec_eval 10 takes them, where duckrank follows."""
    if options.rel_info_format not in REL_INFO_FORMATS:
        raise ValueError(f"-R {options.rel_info_format}: trec_eval 10's formats are "
                         f"{', '.join(REL_INFO_FORMATS)} (trec_eval: Illegal rel_format)")
    if options.rel_info_format in prefs.FORMATS and options.compat != COMPAT_10:
        raise ValueError(f"-R {options.rel_info_format} with --compat {options.compat}: "
                         "duckrank reproduces the preference measures of trec_eval 10 only")
    if options.results_format != "trec_results":
        raise ValueError(f"-T {options.results_format}: trec_eval 10 reads trec_results only "
                         "(trec_eval: Illegal retrieval results format)")
    if options.debug_level != 0:
        raise ValueError(f"-D {options.debug_level}: duckrank prints no debugging output; "
                         "-D 0.QID evaluates the query QID alone")
    if options.rel_info_format == QRELS_JG and options.judged_only:
        raise ValueError("-J with -R qrels_jg: not supported (trec_eval drops the unjudged "
                         "documents of each judgment group apart)")
    if options.only_query is not None and options.complete:
        raise ValueError("-D 0.QID with -c: trec_eval 10 evaluates the one query but averages "
                         "over every query of the qrels; not supported")


def _encoding(qrels: str, run: str) -> str:
    """Both files' encoding: Latin-1 when either is not UTF-8. trec_eval compares ids as bytes;
    read as Latin-1 (each byte one character) both files' ids are equal when their bytes are
    (a UTF-8 file read as UTF-8 and a Latin-1 one as Latin-1 would make 'caf\\xc3\\xa9' equal
    to 'caf\\xe9'), and the lines are written back as the same bytes (``output_bytes``)."""
    return UTF8 if encoding(qrels) == encoding(run) == UTF8 else LATIN1


def output_bytes(line: str, file_encoding: str) -> bytes:
    """A printed line as trec_eval prints it: the ids' bytes as the files hold them."""
    return line.encode(file_encoding)


def run_tag(path: str, file_encoding: str = UTF8) -> str:
    """The tag (6th field) of the run file's last line that is not blank or a comment: what
    trec_eval prints as runid. The file is read backwards from its end, in blocks; a ``.gz``
    one forwards (seeking back in it decompresses it from its start), decompressed."""
    if path.lower().endswith(".gz"):
        last = b""
        with gzip.open(path, "rb") as file:
            tail = b""
            while block := file.read(1 << 20):
                complete, _, tail = (tail + block).rpartition(b"\n")
                last = _last_tagged_line(complete) or last
            last = _last_tagged_line(tail) or last
        return _tag(last, file_encoding)
    with open(path, "rb") as file:
        end = file.seek(0, 2)
        tail = b""
        while True:
            start = max(0, end - 65536)
            file.seek(start)
            tail = file.read(end - start) + tail
            end = start
            # Before the first block, the first line may be a part.
            line = _last_tagged_line(tail if start == 0 else tail.partition(b"\n")[2])
            if line is not None:
                return _tag(line, file_encoding)
            if start == 0:
                return ""


def _last_tagged_line(lines: bytes) -> bytes | None:
    """The last of ``lines`` that is not blank or a comment (None: there is none)."""
    for line in reversed(lines.split(b"\n")):
        fields = line.split()
        if fields and not fields[0].startswith(b"#"):
            return line
    return None


def _tag(line: bytes, file_encoding: str) -> str:
    """A run line's 6th field, its tag ('' for a line without one)."""
    fields = line.split()
    return fields[5].decode(file_encoding, "replace") if len(fields) > 5 else ""


# -J: the ids of a query's judgments of grade >= 0.
JUDGED_IDS = "duckrank_judged_ids"

# The lambda parameter that stands for a cut-off or a level in a measure's SQL.
PARAMETER = "duckrank_p"


def _when_ranked(sql: str, missing: str | None, complete: bool) -> str:
    # Only -c has queries the run lacks: a CASE around every measure costs time otherwise.
    # (missing None: the measure's value on the empty ranking.)
    if not complete or missing is None:
        return sql
    return f"CASE WHEN duckrank_ranked THEN {sql} ELSE {missing} END"


def _value_sql(measure: Measure, parameter: Any, options: Options) -> str:
    """One value's SQL under the flags: the version's form, -c's value for a query the run
    lacks, -J's for a ranking left empty."""
    sql = _when_ranked(measure.sql_for(options.compat)(parameter), measure.missing,
                       options.complete)
    if options.judged_only and measure.on_empty is not None:
        empty = measure.on_empty(parameter, options.compat)
        sql = f"CASE WHEN len({REC}) = 0 THEN {empty} ELSE {sql} END"
    return sql


def _columns(values: Sequence[Value], options: Options) -> tuple[list[str], list[str]]:
    """The per-query columns (SQL, one per measure) and, for each value, the expression that
    reads it from them. A measure of several cut-offs or levels is one call in a lambda over
    them (``list_transform([5, 10], lambda duckrank_p: precision_at(..., duckrank_p, ...))``):
    DuckDB expands a duckrank macro once instead of once per cut-off, which divides the time to
    plan the query by 6 and to run it by 10 for trec_eval's default measures."""
    columns: list[str] = []
    reads: list[str] = []
    for index, value in enumerate(values):
        measure = value.measure
        first = index == 0 or values[index - 1].measure is not measure
        if measure.params in ("cutoffs", "levels"):
            if first:
                group = [v.parameter for v in values if v.measure is measure]
                items = ", ".join(str(p) if measure.params == "cutoffs" else sql_number(p)
                                  for p in group)
                computed = _value_sql(measure, PARAMETER, options)
                columns.append(f"list_transform([{items}], lambda {PARAMETER}: {computed})")
                position = 0
            position += 1
            reads.append(f"m{len(columns) - 1}[{position}]")
        else:
            columns.append(_value_sql(measure, value.parameter, options))
            reads.append(f"m{len(columns) - 1}")
    return columns, reads


def _distinct(ids: str) -> str:
    """The number of distinct ids in the list ``ids``: the n (distinct relevant items) of the
    matching step of the binary metrics, with the list as its own truth and nothing ranked.
    With the native step, 7 times faster than DuckDB's list_unique (0.02 s against 0.15 s on
    1,000 lists of 1,000 ids)."""
    return f"duckrank_matched('trec_eval', {ids}, {ids}, 0).n"


def _judgments_sql(options: Options, built: str, only: str) -> str:
    """The judged CTE's query: per query, the relevant documents (REL), the truths ``built``
    (the MAPs the measures read), -J's judged ids, whether a document is judged twice
    (``JUDGED_TWICE``, when ``_folds_judged_check``); with -R qrels_jg, one list of relevant
    documents per judgment group (the iteration field), in the groups' order
    (get_qrels_jg.c sorts them)."""
    qrels = f"read_trec_qrels($qrels, file_encoding := $encoding){only}"
    relevant = "coalesce(list(item) FILTER (WHERE grade >= $level), []::VARCHAR[])"
    if options.rel_info_format == QRELS_JG:
        return f"""
  SELECT query, list({REL} ORDER BY jg) AS {GROUPS}, []::VARCHAR[] AS {REL}
  FROM (SELECT query, iteration AS jg, {relevant} AS {REL} FROM {qrels} GROUP BY query, jg)
  GROUP BY query"""
    extra = (f",\n         coalesce(list(item) FILTER (WHERE grade >= 0), []::VARCHAR[]) "
             f"AS {JUDGED_IDS}" if options.judged_only else "")
    if _folds_judged_check(options):
        extra += f",\n         {TWICE} AS {JUDGED_TWICE}"
    return f"""
  SELECT query,{built}
         {relevant} AS {REL}{extra}
  FROM {qrels} GROUP BY query"""


# Whether a query's judgments name a document twice (an aggregate of the judged CTE), and the
# column that carries it to the per-query table.
TWICE, JUDGED_TWICE = "count(*) > count(DISTINCT item)", "duckrank_judged_twice"


def _folds_judged_check(options: Options) -> bool:
    """Whether the per-query table says which queries judge a document twice, in place of a
    pass over the qrels before it (``_check_judged_once``; 25 ms at 200,000 judgments): where
    it holds every query of the qrels (a LEFT JOIN from them, no -D 0.QID) and a document is
    judged once per query (not -R qrels_jg's once per judgment group)."""
    return (options.rel_info_format == QRELS and options.only_query is None
            and (options.complete or options.compat == COMPAT_10))


def _only(options: Options) -> str:
    # -D 0.QID: that query alone (trec_eval.c skips the others).
    return " WHERE query = $only_query" if options.only_query is not None else ""


# The judged match's inputs, built with the judgments: the ids of truth's judged non-relevant
# documents (grade 0 or more, below -l) and of its documents of negative grade, its judged
# non-relevant documents' count and its positive grades, largest first; and, bound once per
# query, the grades of the ranking's documents (0 unjudged) and the ranks of its relevant and of
# its judged non-relevant documents.
NONREL, POOL = "duckrank_nonrel", "duckrank_pool"
NONREL_COUNT, IDEAL = "duckrank_nn", "duckrank_ideal"
RANKED_GRADES = "duckrank_ranked_grades"
POS_RANKS, NONREL_RANKS = "duckrank_pos_ranks", "duckrank_nonrel_ranks"
GPOS_RANKS = "duckrank_gpos_ranks"


def _reads(sql: str, column: str) -> bool:
    """Whether ``sql`` reads the column ``column`` (not a longer name, nor the native function
    duckrank_grades, which has the name of the column of grades)."""
    return re.search(rf"(?<![\w.]){column}(?!\w)", sql) is not None


def _ranks(values: str, test: str) -> str:
    """The ranks (1-based) of the elements ``x`` of the list ``values`` for which ``test``."""
    return (f"list_filter(list_transform({values}, lambda x, i: CASE WHEN {test} THEN i END), "
            "lambda i: i IS NOT NULL)")


def _judged_match_sql(source: str, fields: frozenset[str], native: bool,
                      matched: bool, level: int) -> str:
    """``source`` (the per-query lists; ``matched``: with the query's match, ``MATCH``) with the
    query's judged match (``JUDGED_MATCH``): the STRUCT of the ``fields`` its formulas read,
    over the whole ranking. The grades of its documents come from one lookup per document in a
    hash table of the judgments (the native step, when loaded); the ranks of the relevant,
    judged non-relevant and negative-grade documents from binary matches against their ids
    (REL, NONREL, POOL), the judged ones the union of the first two: no MAP of codes to build
    and look up, nor a pass over the ranking per kind (trec_eval's default measures, whose
    bpref reads them, took 0.1 s less CPU at 1,000,000 run lines). The native step gives the
    ranks of a match in ascending order (the SQL form in none: sorted then). (Relevant means
    grade >= -l, which is 0 or more: ``relevant_grade_sql`` with min_grade -l.) The ranks of
    positive grade (gpos) and their grades: at -l 1 (the default) the relevant documents' ranks,
    as the grades are integers, and the grades there picked from the ranking's; else from a
    pass over the ranking's grades (all_trec took 0.02 s less CPU at 1,000,000 run lines)."""
    lookup = native_top_grades_sql if native else top_grades_sql
    k = f"len({REC})"

    def ranks(truth: str) -> str:
        found = f"duckrank_matched('trec_eval', {REC}, {truth}, {k}).pos"
        return found if native else f"list_sort({found})"

    positive = level == 1
    values = {
        "K": k, "cut": k, "gains": RANKED_GRADES, "n": f"len({REL})", "nn": NONREL_COUNT,
        "ideal": IDEAL, "gpos": POS_RANKS if positive else GPOS_RANKS,
        "ggrades": (f"list_select({RANKED_GRADES}, {POS_RANKS})" if positive
                    else f"list_filter({RANKED_GRADES}, lambda x: x > 0)"),
        "pos": POS_RANKS, "nonrel": NONREL_RANKS,
        "judged": f"list_sort(list_concat({POS_RANKS}, {NONREL_RANKS}))", "pool": ranks(POOL),
        "above": NONREL_ABOVE.format(pos=POS_RANKS, nonrel=NONREL_RANKS),
    }
    values["gp"] = POSITIVE_TERMS.replace(POSITIVE_RANKS, values["gpos"]).format(
        gains=RANKED_GRADES)
    packed = ", ".join(f"{field} := {values[field]}" for field in sorted(fields))
    own = f"{MATCH}.pos" if native else f"list_sort({MATCH}.pos)"
    # (gpos off -l 1: bound over the grades, which are bound first, and read by gpos and gp)
    later = {GPOS_RANKS: _ranks(RANKED_GRADES, "x > 0")}
    later = {name: sql for name, sql in later.items() if _reads(packed, name)}
    bindings = {RANKED_GRADES: lookup(REC, GRADES, k),
                POS_RANKS: own if matched else ranks(REL),
                NONREL_RANKS: ranks(NONREL)}
    reading = packed + " ".join(later.values())
    bound = "".join(f", {sql} AS {name}" for name, sql in bindings.items()
                    if _reads(reading, name))
    lists = f"(SELECT *{bound} FROM {source})"
    if later:
        lists = f"(SELECT *{''.join(f', {sql} AS {name}' for name, sql in later.items())} " \
                f"FROM {lists})"
    return f"(SELECT *, struct_pack({packed}) AS {JUDGED_MATCH} FROM {lists})"


# The largest k duckrank_top_k takes (topk.c: its heap counts in 32 bits); no query's ranking
# is longer.
TOP_K_LIMIT = 2**32 - 1


def _ranking_sql(score: str, max_docs: int | None, native: bool) -> str:
    """The aggregate of a query's ranking: its documents by ``score`` (SQL), highest first, ties
    by document id, descending; the first ``max_docs`` (-M) when given. With the native step,
    its aggregate duckrank_top_k, which keeps (score, id) pairs in a heap: the same list as
    to_ordered_list's sort of STRUCTs, in 0.32 s of CPU against 0.39 s for the 1,000,000 lines
    read and ranked (the scores cast to DOUBLE: --compat 9.0.8's FLOAT ones keep their order)."""
    if native:
        k = min(max_docs, TOP_K_LIMIT) if max_docs is not None else TOP_K_LIMIT
        return f"system.main.duckrank_top_k(item, CAST({score} AS DOUBLE), {k})"
    cut = f"[1:{int(max_docs)}]" if max_docs is not None else ""
    return f"to_ordered_list(item, {score}, '-reverse'){cut}"


# The command's reader of the run: read_trec_run's, in parts (``table_macro``'s ``parts``), so
# that the run's lines are split, checked, cast and ranked on as many threads; its errors name
# read_trec_run. A TEMP macro of the command's, as its formula macros.
RUN_READER = "duckrank_trec_eval_read_run"
# The most parts the run is read in (each reads every line again), and the size of a run file
# below which it is read in one (a second part's planning cost more than it saved).
MAX_RUN_PARTS = 4
RUN_PARTS_MIN_BYTES = 1 << 22


def run_reader_macros() -> dict[str, str]:
    """The CREATE statement of the TEMP macro ``RUN_READER``, by its quoted name."""
    return {quote_identifier(RUN_READER): table_macro(
        RUN_READER, "qid Q0 docid rank score tag", RUN_COLUMNS, extra=True, temp=True,
        parts=True, shown="read_trec_run")}


def _run_parts(con: duckdb.DuckDBPyConnection, run: str, memory_limit: str | None = None) -> int:
    """The parts the run file ``run`` is read in: one per thread of the connection, at most
    ``MAX_RUN_PARTS``; one for a file under ``RUN_PARTS_MIN_BYTES`` or a compressed one (each
    part would decompress it all), and under a ``memory_limit`` (--memory-limit): each thread
    ranks its part's lines, and the rankings merged hold a copy of them for a while, in memory
    DuckDB does not count (1.2 GB against 0.97 at 10,000,000 lines of -m official). At
    1,000,000 run lines on 2 threads, two parts read and rank the run in 0.23 s of wall time
    against 0.35 s (and 0.06 s more CPU)."""
    if (memory_limit is not None or os.path.getsize(run) < RUN_PARTS_MIN_BYTES
            or run.lower().endswith((".gz", ".gzip", ".zst", ".zstd"))):
        return 1
    threads = con.execute("SELECT current_setting('threads')").fetchall()[0][0]
    return max(1, min(int(threads), MAX_RUN_PARTS))


def _run_sql(parts: int) -> str:
    """The run's lines (query, item, score, ...) read in ``parts`` parts (``RUN_READER``); in
    one, by read_trec_run (the parts' filter of the line numbers, though it keeps every line,
    took 70 MB more at 10,000,000 lines)."""
    if parts == 1:
        return "read_trec_run($run, file_encoding := $encoding)"
    return "(" + " UNION ALL ".join(
        f"SELECT * FROM {RUN_READER}($run, file_encoding := $encoding, part := {part}, "
        f"parts := {parts})" for part in range(parts)) + ")"


def _per_query_sql(values: Sequence[Value], options: Options, native: bool,
                   parts: int = 1) -> str:
    """The per-query table's query (``native``: whether the native matching step is loaded;
    ``parts``: the parts the run is read in, ``_run_sql``)."""
    # trec_eval 10 stops at a qrels query the run lacks unless -c (``_check_all_ranked``).
    join = "LEFT JOIN" if options.complete or options.compat == COMPAT_10 else "JOIN"
    columns = ",\n       ".join(f"{sql} AS m{i}" for i, sql in enumerate(
        _columns(values, options)[0]))
    # trec_eval 10 reads the score as a double (get_trec_results.c: atof), 9.0.8 as a float.
    score = "score"
    if options.compat == COMPAT_9:
        # Imported here: duckrank.evaluation's modules take 20 ms to import, which every
        # trec_eval 10 command would pay for nothing.
        from duckrank.evaluation import float_score_sql

        score = float_score_sql(score)
    ranking = f"coalesce({REC}, []::VARCHAR[])"
    if options.judged_only:
        # -J: the documents of the first N (-M) with a judgment of grade >= 0, in their order
        # (form_res_rels.c); unjudged ones and negative grades are dropped.
        ranking = f"list_filter({ranking}, lambda d: list_contains({JUDGED_IDS}, d))"
    # The matches, once per query, for the formulas that read them (a column of a subquery, so
    # that DuckDB computes it once however many measures read it).
    lists = "lists"
    matched = _reads(columns, MATCH)
    if matched:
        lists = (f"(SELECT *, duckrank_matched('trec_eval', {REC}, {REL}, len({REC})) AS {MATCH} "
                 f"FROM {lists})")
    if _reads(columns, JUDGED_MATCH):
        lists = _judged_match_sql(lists, judged_match_fields(values), native, matched,
                                  options.level)
    # Only the truths the measures read: a MAP of every judgment costs a third of the time of
    # trec_eval's default measures, which need none.
    relevant = "grade >= $level"
    # A MAP of judgments fails on a document judged twice, with DuckDB's bare "Map keys must be
    # unique" naming no file, query or document: NULL there, and _check_judged_once says it.
    unique = (f"CASE WHEN {TWICE} THEN NULL ELSE {{}} END" if _folds_judged_check(options)
              else "{}")
    truths = {
        GRADES: unique.format("map_from_entries(list({'key': item, 'value': grade::DOUBLE}))"),
        GAINS: unique.format("map_from_entries(list({'key': item, 'value': "
                             "greatest(grade, 0)::DOUBLE}))"),
        NONREL_COUNT: f"count(*) FILTER (WHERE grade >= 0 AND NOT {relevant})",
        NONREL: (f"coalesce(list(item) FILTER (WHERE grade >= 0 AND NOT {relevant}), "
                 "[]::VARCHAR[])"),
        POOL: "coalesce(list(item) FILTER (WHERE grade < 0), []::VARCHAR[])",
        IDEAL: ("coalesce(list(grade::DOUBLE ORDER BY grade DESC) FILTER (WHERE grade > 0), "
                "[]::DOUBLE[])"),
        JUDGMENTS: "count(*)",
    }
    read_names = [name for name in truths if _reads(columns + lists, name)]
    built = "".join(f"\n         {truths[name]} AS {name}," for name in read_names)
    read = "".join(f", {name}" for name in read_names)
    if _folds_judged_check(options):
        read += f", {JUDGED_TWICE}"
    only = _only(options)
    judgments = _judgments_sql(options, built, only)
    if options.rel_info_format == QRELS_JG:
        read += f", {GROUPS}"
    twice = f" {JUDGED_TWICE}," if _folds_judged_check(options) else ""
    return f"""
WITH ranked AS (
  SELECT query, {_ranking_sql(score, options.max_docs, native)} AS {REC}
  FROM {_run_sql(parts)}{only} GROUP BY query
),
judged AS ({judgments}
),
lists AS (
  SELECT query, {REC} IS NOT NULL AS duckrank_ranked,
         {ranking} AS {REC}, {REL}{read}
  FROM judged {join} ranked USING (query)
)
SELECT query, duckrank_ranked, len({REC}) > {_distinct(REC)} AS duckrank_duplicate,{twice}
       {columns}
FROM {lists}"""


def _check_judged_once(con: duckdb.DuckDBPyConnection, params: dict[str, Any],
                       shown: str, groups: bool = False) -> None:
    """trec_eval's error for a document twice in one query's judgments (``shown``: the qrels
    path as given), from a pass over the qrels: before the measures are computed where the
    per-query table cannot say which queries have one (``_folds_judged_check``), after it
    otherwise, when one does."""
    # (-R qrels_jg: a document may be judged once in each judgment group; -D 0.QID: trec_eval
    # reads the judgments of that query only.)
    group = ", iteration" if groups else ""
    only = "only_query" in params
    found = con.execute(
        "SELECT query, item, count(*) FROM read_trec_qrels($qrels, file_encoding := $encoding) "
        f"{'WHERE query = $only_query ' if only else ''}"
        f"GROUP BY query, item{group} HAVING count(*) > 1 ORDER BY query, item LIMIT 1",
        {"qrels": params["qrels"], "encoding": params["encoding"],
         **({"only_query": params["only_query"]} if only else {})}
    ).fetchall()
    if found:
        query, item, times = found[0]
        count = "twice" if times == 2 else f"{times} times"
        raise ValueError(f"the qrels file {shown!r} judges document {item!r} {count} for query "
                         f"{query!r} (trec_eval: duplicate docs); keep one judgment")


def _check_ranked_once(con: duckdb.DuckDBPyConnection, table: str,
                       params: dict[str, Any], options: Options, shown: str) -> None:
    """trec_eval's error for a document twice in one query's ranking (``shown``: the run path
    as given)."""
    queries = con.execute(f"SELECT query FROM {table} WHERE duckrank_duplicate ORDER BY query "
                          "LIMIT 1").fetchall()
    if queries:
        where = f" among its first {options.max_docs}" if options.max_docs is not None else ""
        item = con.execute(
            "SELECT item FROM read_trec_run($run, file_encoding := $encoding) WHERE query = $query "
            "GROUP BY item "
            "HAVING count(*) > 1 ORDER BY item LIMIT 1",
            {"run": params["run"], "encoding": params["encoding"], "query": queries[0][0]}
        ).fetchall()
        doc = f"document {item[0][0]!r}" if item else "a document"
        raise ValueError(f"the run file {shown!r} ranks {doc} twice for query "
                         f"{queries[0][0]!r}{where} (trec_eval: duplicate docs)")


def _check_no_cycle(con: duckdb.DuckDBPyConnection, table: str, shown: str) -> None:
    """trec_eval's error for preferences of one judgment group that contradict each other
    (form_prefs_counts.c, add_transitives: Pref inconsistency found, then abort)."""
    found = con.execute(f"SELECT query, duckrank_cycle FROM {table} WHERE duckrank_cycle "
                        "IS NOT NULL ORDER BY query LIMIT 1").fetchall()
    if found:
        query, (group, item) = found[0]
        raise ValueError(f"the preferences of judgment group {group!r} of query {query!r} in "
                         f"{shown!r} contradict each other: document {item!r} is, through "
                         "other documents, preferred to itself (trec_eval: Pref inconsistency "
                         "found)")


def _check_no_blank_line(path: str, shown: str) -> None:
    """trec_eval 10's error for a blank line in the qrels (get_qrels.c: Malformed line)."""
    line = first_blank_line(path)
    if line is not None:
        raise ValueError(f"the qrels file {shown!r}, line {line}: a blank line (trec_eval 10 "
                         "stops at it: Malformed line); remove it")


def _check_all_ranked(con: duckdb.DuckDBPyConnection, table: str, qrels: str,
                      run: str) -> None:
    """trec_eval 10's error for a qrels query with no line in the run, without -c
    (trec_eval.c: "result qid not found in qrels", exit 4; it names the first such query by
    id, as this does)."""
    found = con.execute(f"SELECT query FROM {table} WHERE NOT duckrank_ranked ORDER BY query "
                        "LIMIT 1").fetchall()
    if found:
        raise ValueError(f"query {found[0][0]!r} of the qrels file {qrels!r} has no line in the "
                         f"run file {run!r} (trec_eval 10 stops: result qid {found[0][0]!r} not "
                         "found in qrels); give -c to score it 0, or --compat 9.0.8 to leave "
                         "it out")


_FORMATS = {
    "float": "printf('%-22s\t%s\t%6.4f', {name}, {query}, {value})",
    "zscore": "printf('Z%-22s\t%s\t%6.4f', {name}, {query}, CAST({value} AS DOUBLE))",
    "long": "printf('%-22s\t%s\t%d', {name}, {query}, CAST({value} AS BIGINT))",
    "string": "printf('%-22s\t%s\t''%s''', {name}, {query}, {text})",
    "runid": "printf('%-22s\t%s\t%s', {name}, {query}, {text})",
}


def _summary_select(values: Sequence[Value], reads: list[str], source: str, row: Any,
                    kind: Any, complete: bool, rows: Any) -> str | None:
    """The summary's rows (query 'all'): the mean, sum, count or geometric mean of each value
    over the queries, ``row`` making each output row and ``rows`` the select of them; None when
    no value has one. The values are summed in query order, as trec_eval sums them: the same
    double, bit for bit. One list of every query's values (a STRUCT each), sorted once, and
    list_sum over each field, not a list_reduce over a list sorted per value (all_trec's
    summary at 1,000 queries: 0.075 s of CPU instead of 0.09). list_sum adds in list order
    from 0.0, as trec_eval's accumulator; a NULL value makes the total NULL, as a + NULL does."""
    fields, totals, cells = [], [], []
    for i, v in enumerate(values):
        summary = v.measure.summary
        if complete and v.measure.complete_summary is not None:
            number = v.measure.complete_summary
        elif summary in ("mean", "sum", "gm"):
            fields.append(f"s{i} := {log_floor(reads[i]) if summary == 'gm' else reads[i]}")
            total = (f"list_transform([list_transform(duckrank_l, lambda duckrank_s: "
                     f"duckrank_s.s{i})], lambda duckrank_v: CASE WHEN list_count(duckrank_v) "
                     "= duckrank_n THEN list_sum(duckrank_v) END)[1]")
            number = {"mean": f"{total} / duckrank_n", "sum": total,
                      "gm": f"exp({total} / duckrank_n)"}[summary]
        else:
            number = {"count": "duckrank_n", "runid": "NULL", "none": None}[summary]
        if number is None:
            continue
        totals.append(f"{number} AS a{i}")
        text = "$runid" if v.measure.summary == "runid" else "NULL"
        cells.append(row(1, i, v, "'all'", f"a{i}", text,
                         "runid" if v.measure.summary == "runid" else kind(v)))
    if not cells:
        return None
    listed = (f", list(struct_pack({', '.join(fields)}) ORDER BY query) AS duckrank_l"
              if fields else "")
    return rows(cells, 1, "NULL", f"(SELECT {', '.join(totals)} FROM (SELECT count(*) AS "
                                  f"duckrank_n{listed} FROM {source}))")


def _cell(lines: bool, order: int, index: int, value: Value, query: str, number: str, text: str,
          kind: str) -> str:
    """One output row of ``_output_sql``: its line (``lines``), else a STRUCT of its fields."""
    name = quote_literal(value.name)
    line = _FORMATS[kind].format(name=name, query=query, value=number, text=text)
    if lines:
        return line
    return (f"{{'o': {order}, 'i': {index}, 'measure': {name}, 'query': {query}, "
            f"'number': CAST({number} AS DOUBLE), 'text': CAST({text} AS VARCHAR), "
            f"'line': {line}}}")


def _cells_select(lines: bool, cells: list[str], order: int, query: str, source: str) -> str:
    """The select of the output rows ``cells`` (``_cell``) of each row of ``source``: one row
    of them joined by newlines (``lines``), else one row each."""
    if lines:
        return (f"SELECT {order} AS o, {query} AS q, concat_ws(chr(10), {', '.join(cells)}) "
                f"AS block FROM {source}")
    return f"SELECT unnest([{', '.join(cells)}]) AS r, {query} AS q FROM {source}"


def _output_sql(table: str, values: Sequence[Value], options: Options,
                zscores: str | None = None, lines: bool = False) -> str:
    """The output rows, in trec_eval's order: measure, query, number, text, line (``zscores``:
    the table of -Z's file). With ``lines``, the printed lines alone, one row (``block``) per
    query and one for the summary, its lines joined by newlines: one row of each query's
    values, not one per value, to format and sort (``-q`` took a tenth of the command's time
    at 1,000,000 run lines)."""
    row, rows = partial(_cell, lines), partial(_cells_select, lines)

    def kind(value: Value) -> str:
        numeric = value.measure.value in ("float", "long")
        return "zscore" if zscores is not None and numeric else value.measure.value

    reads = _columns(values, options)[1]
    source = table
    if zscores is not None:
        source, reads = zscored(table, zscores, values, reads)
    selects = []
    if options.per_query:
        cells = [
            row(0, i, v, "query", "NULL" if v.measure.value == "string" else reads[i],
                reads[i] if v.measure.value == "string" else "NULL", kind(v))
            for i, v in enumerate(values) if v.measure.per_query
        ]
        if cells:
            selects.append(rows(cells, 0, "query", source))
    if options.summary:
        summary = _summary_select(values, reads, source, row, kind, options.complete, rows)
        if summary:
            selects.append(summary)
    if not selects:
        return ("SELECT NULL AS block WHERE false" if lines else
                "SELECT NULL AS measure, NULL AS query, NULL AS number, NULL AS text, "
                "NULL AS line WHERE false")
    union = " UNION ALL ".join(selects)
    if lines:
        return f"SELECT block FROM ({union}) ORDER BY o, q"
    return (f"SELECT r.measure, r.query, r.number, r.text, r.line FROM ({union}) "
            "ORDER BY r.o, q, r.i")


Row = tuple[str, str, float | int | str]


def _create(con: duckdb.DuckDBPyConnection, table: str, per_query: str, params: dict[str, Any],
            in_one_part: Callable[[], str], qrels_error: Callable[[], None] | None) -> None:
    """The TEMP table ``table`` of the query ``per_query``. On an error, ``qrels_error()`` first
    raises the qrels' own, where the query carries their check (``_folds_judged_check``):
    trec_eval reads the qrels before the run, so a document judged twice is its first error,
    before a bad run line or another query's gains. Where it reads the run in parts, read at
    once, the error of a bad line may be another part's later one: the query again with the run
    read in one part (``in_one_part()``) raises the first, as trec_eval stops at it."""
    try:
        con.execute(f"CREATE TEMP TABLE {table} AS {per_query}", params)
    except duckdb.InterruptException:
        raise
    except duckdb.Error:
        if qrels_error is not None:
            qrels_error()
        if "part := 1" not in per_query:
            raise
        con.execute(f"CREATE TEMP TABLE {table} AS {in_one_part()}", params)


def _per_query_table(con: duckdb.DuckDBPyConnection, table: str, values: Sequence[Value],
                     options: Options, qrels: str | Path, run: str | Path) -> dict[str, Any]:
    """Check the files as trec_eval does and compute every query's values into the TEMP table
    ``table`` (``_per_query_sql``); the parameters of that query (the files' paths, their
    encoding, ...)."""
    qrels_file = file_paths(con, qrels, "qrels")[0]
    run_file = file_paths(con, run, "run")[0]
    check_order(run_file, qrels_file, "duckrank trec_eval QRELS RUN, as trec_eval's "
                "(duckrank evaluate takes RUN QRELS)")
    if options.compat == COMPAT_10:
        _check_no_blank_line(qrels_file, str(qrels))
    params = {"run": run_file, "qrels": qrels_file, "encoding": _encoding(qrels_file, run_file)}
    if options.only_query is not None:
        params["only_query"] = options.only_query
    if options.rel_info_format in prefs.FORMATS:
        prefs.check_lines(con, options.rel_info_format, params, str(qrels))
        per_query = prefs.per_query_sql(options.rel_info_format, options.max_docs,
                                        options.complete, _only(options),
                                        _columns(values, options)[0])
    else:
        # (-l: relevant means grade >= level; the preferences read no level, as trec_eval's)
        params["level"] = options.level
        if not _folds_judged_check(options):
            _check_judged_once(con, params, str(qrels), options.rel_info_format == QRELS_JG)
        parts = _run_parts(con, run_file, options.memory_limit)
        per_query = _per_query_sql(values, options, _native.is_loaded(con), parts)
    if NUM_DOCS in per_query:
        params["num_docs"] = options.num_docs
    _create(con, table, per_query, params,
            partial(_per_query_sql, values, options, _native.is_loaded(con)),
            partial(_check_judged_once, con, params, str(qrels))
            if _folds_judged_check(options) else None)
    if _folds_judged_check(options) and con.execute(
            f"SELECT count(*) FROM {table} WHERE {JUDGED_TWICE}").fetchall() != [(0,)]:
        _check_judged_once(con, params, str(qrels))
    _check_ranked_once(con, table, params, options, str(run))
    if options.rel_info_format in prefs.FORMATS:
        _check_no_cycle(con, table, str(qrels))
    if not options.complete and options.compat == COMPAT_10:
        _check_all_ranked(con, table, str(qrels), str(run))
    if con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0] == 0:
        raise ValueError("no query is in both the qrels and the run (trec_eval: No queries "
                         "with both results and relevance info)")
    return params


def _output_params(con: duckdb.DuckDBPyConnection, sql: str,
                   params: dict[str, Any]) -> dict[str, Any]:
    """The parameters the output's query ``sql`` reads: the run's tag (runid), and the
    judgments of grade > 0 in the whole qrels (-c's num_rel)."""
    found = {}
    if "$runid" in sql:
        found["runid"] = run_tag(params["run"], params["encoding"])
    if COMPLETE_NUM_REL in sql:
        found[COMPLETE_NUM_REL[1:]] = con.execute(
            "SELECT count(*) FROM read_trec_qrels($qrels, file_encoding := $encoding) "
            "WHERE grade > 0", {"qrels": params["qrels"], "encoding": params["encoding"]}
        ).fetchall()[0][0]
    return found


def _functions(values: Sequence[Value], options: Options) -> list[str]:
    """The duckrank functions the command's queries call (``needed_functions``)."""
    return needed_functions(values, " ".join(_columns(values, options)[0]))


def _connect(values: Sequence[Value], options: Options) -> duckdb.DuckDBPyConnection:
    """A new connection with the functions the command calls (``_functions``): to_ordered_list
    only where the native step did not load, since the rankings are duckrank_top_k's otherwise
    (``_ranking_sql``; registering to_ordered_list's macros took 19 ms of CPU)."""
    con = connect_within("trec_eval", options.memory_limit,
                         functions=[f for f in _functions(values, options)
                                    if f != "to_ordered_list"])
    if not _native.is_loaded(con):
        register(con, native=False, functions=["to_ordered_list"])
    return con


@contextmanager
def _evaluation(qrels: str | Path, run: str | Path, measures: Sequence[str], options: Options,
                connection: duckdb.DuckDBPyConnection | None, lines: bool = False
                ) -> Iterator[tuple[duckdb.DuckDBPyConnection, str]]:
    """The output rows (see ``_output_sql``; ``lines``: its blocks of lines), executed on the
    connection, which gives them (fetchall, fetchmany) inside the ``with`` block, and the files'
    encoding (``_encoding``); every check runs before they are computed. (Not a relation: it
    binds its query twice, to be made and to run, 0.02 s for all_trec's.)"""
    _check_options(options)
    values = requested_values(measures, options.compat)
    _check_measure_formats(values, options)
    check_available(values)
    con = connection if connection is not None else _connect(values, options)
    table = quote_identifier(f"duckrank_trec_eval_{uuid.uuid4().hex}")
    zscores = (quote_identifier(f"duckrank_trec_eval_zscores_{uuid.uuid4().hex}")
               if options.zscores is not None else None)
    formulas = {**formula_macros(values, _native.is_loaded(con)),
                **prefs.reader_macros(options.rel_info_format),
                **({} if options.rel_info_format in prefs.FORMATS else run_reader_macros())}
    try:
        for statement in formulas.values():
            con.execute(statement)
        params = _per_query_table(con, table, values, options, qrels, run)
        if zscores is not None:
            load_zscores(con, zscores, file_paths(con, options.zscores, "z-scores")[0],
                         str(options.zscores), params["encoding"])
        sql = _output_sql(table, values, options, zscores, lines)
        yield con.execute(sql, _output_params(con, sql, params) or None), params["encoding"]
    finally:
        for name in (table, zscores):
            if name is not None:
                con.execute(f"DROP TABLE IF EXISTS {name}")
        for name in formulas:
            con.execute(f"DROP MACRO IF EXISTS temp.main.{name}")
        if connection is None:
            con.close()


def trec_eval(qrels: str | Path, run: str | Path, measures: Sequence[str] = (), *,
              connection: duckdb.DuckDBPyConnection | None = None, **flags: Any) -> list[Row]:
    """What ``trec_eval [-q] [-c] [-n] [-M max_docs] [-l level] [-J] [-N num_docs] [-Z zscores]
    [-R rel_info_format] -m ... qrels run`` prints (trec_eval 10.0's; ``compat='9.0.8'``: the
    trec_eval 9.0.8 of pytrec-eval-terrier), as rows (measure, query, value): the value a
    float at full precision, an int for the counts, a str for ``runid`` and ``relstring``;
    query ``'all'`` for the summary. ``measures`` as ``-m`` takes them
    (``requested_values``); none: trec_eval's ``official`` set. ``flags``: the fields of
    ``Options`` (per_query=False, complete=False, summary=True, max_docs=None, level=1,
    compat='10.0', judged_only=False, num_docs=0, zscores=None, rel_info_format='qrels', ...)."""
    options = Options(**flags)
    opened_here("trec_eval", connection, options.memory_limit)
    rows: list[Row] = []
    with _evaluation(qrels, run, measures, options, connection) as (relation, _):
        kinds = {v.name: v.measure.value for v in requested_values(measures, options.compat)}
        for measure, query, number, text, _ in relation.fetchall():
            if text is not None or kinds[measure] == "string":
                rows.append((measure, query, text or ""))
            elif kinds[measure] == "long":
                rows.append((measure, query, int(number)))
            else:
                rows.append((measure, query, number))
    return rows


def trec_eval_lines(qrels: str | Path, run: str | Path, measures: Sequence[str] = (), *,
                    connection: duckdb.DuckDBPyConnection | None = None,
                    **flags: Any) -> list[str]:
    """The lines ``trec_eval`` prints (without their newlines); arguments as ``trec_eval``."""
    return printed_lines(qrels, run, measures, Options(**flags), connection)


def printed_lines(qrels: str | Path, run: str | Path, measures: Sequence[str],
                  options: Options,
                  connection: duckdb.DuckDBPyConnection | None = None) -> list[str]:
    """The lines the command prints for its flags ``options`` (``options_from_flags``)."""
    opened_here("trec_eval", connection, options.memory_limit)
    with _evaluation(qrels, run, measures, options, connection, lines=True) as (relation, _):
        return [line for (block,) in relation.fetchall() for line in block.split("\n")]


def options_from_flags(args: argparse.Namespace) -> Options:
    """The ``Options`` of the command's parsed flags (``duckrank.cli``'s trec_eval parser)."""
    debug_level, only_query = debug_flag(args.debug)
    return Options(
        args.per_query, args.complete, args.summary, args.max_docs, args.level,
        compat=args.compat, judged_only=args.judged_only, num_docs=args.num_docs,
        zscores=args.zscores, only_query=only_query, rel_info_format=args.rel_info_format,
        results_format=args.results_format, debug_level=debug_level,
        memory_limit=args.memory_limit,
    )


# --- the command (its flags are in duckrank.cli) ----------------------------------------------

def write_lines(qrels: str | Path, run: str | Path, measures: Sequence[str],
                options: Options) -> None:
    """Write what ``trec_eval`` prints to stdout, in the files' encoding (``duckrank trec_eval``;
    errors are raised before any line)."""
    con = None
    try:
        # The flags are checked before duckrank is registered (which takes seconds).
        _check_options(options)
        values = requested_values(measures, options.compat)
        _check_measure_formats(values, options)
        check_available(values)
        con = _connect(values, options)
        # trec_eval's output only: no progress bar drawn among the lines on a terminal.
        con.execute("SET enable_progress_bar = false")
        with _evaluation(qrels, run, measures, options, con, lines=True) as (relation,
                                                                             file_encoding):
            while blocks := relation.fetchmany(1_000):
                block = "\n".join(b for (b,) in blocks)
                if file_encoding == UTF8:
                    sys.stdout.write(block + "\n")
                else:
                    sys.stdout.flush()
                    sys.stdout.buffer.write(output_bytes(block + "\n", file_encoding))
    finally:
        if con is not None:
            con.close()

