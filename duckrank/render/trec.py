"""The TREC table macros as SQL text: ``read_trec_run(path, file_encoding := 'utf-8')`` and
``read_trec_qrels(path, file_encoding := 'utf-8')``.

* A run file has one line per retrieved document: ``qid Q0 docid rank score tag``.
* A qrels file has one line per judgment: ``qid iteration docid grade``.

The files are read as trec_eval 10 reads them:

* fields are separated by any run of spaces, tabs, vertical tabs or form feeds (C's
  ``isspace``); a line ends at LF or CRLF (a lone CR, which trec_eval reads as a space, also ends
  a line in DuckDB's reader, which drops the character after it: such files are not supported);
* blank lines and comment lines (first non-blank character ``#``) are skipped; a ``#`` anywhere
  else is data (document ids may hold one);
* a run line needs at least 6 fields and every field after the tag is ignored; a qrels line has
  exactly 4 fields;
* a negative grade is a judgment like any other (non-relevant, as grade 0 is).

duckrank is stricter where trec_eval reads a bad value as a number without a word: a score that is
not a decimal number (or ``inf``), a rank or grade that is not an integer, a line with too few
fields (or a qrels line with more than 4) and a NUL byte anywhere (C strings end at one, so
trec_eval cuts a field or the file) are errors naming the macro, the file and the line number, and
quoting at most 100 characters of the line (lines up to 32 MiB; a longer one stops at DuckDB's own
line-size error). trec_eval ignores the rank; duckrank checks it because it gives it as a column.

The path names one file: the glob characters ``*``, ``?`` and ``[`` in it are read as themselves
(``read_trec_run('run[1].txt')`` reads that file, never ``run1.txt``); to read several files, UNION
ALL one call per file. The macros are pure SQL (they are in sql/duckrank.sql too) and give:

* ``read_trec_run(path)``: ``query, q0, item, rank, score, tag`` (rank BIGINT, score DOUBLE).
* ``read_trec_qrels(path)``: ``query, iteration, item, grade`` (grade BIGINT).

Every id is read as VARCHAR, as trec_eval compares them as strings. trec_eval reads bytes: a file
that is not UTF-8 (a Latin-1 docid) is read with ``file_encoding := 'latin-1'``, each byte one
character, so that equal bytes are equal ids (``duckrank.files.trec`` picks it for such files);
DuckDB's readers refuse a byte that is not UTF-8 otherwise. Like trec_eval, duckrank ranks a
run by its score and ignores the rank column (``duckrank.evaluate`` breaks ties in score by docid,
descending, which is also trec_eval's order). ``duckrank.files.trec`` reads the files from Python.
"""


from __future__ import annotations

# C's isspace() in the "C" locale, what trec_eval splits fields on (RE2's \s has no \v).
_SPACE = r"[ \t\n\v\f\r]+"

# DuckDB's file readers take a path as a glob pattern; each of its glob characters becomes a
# one-character class ('[' -> '[[]'), so the pattern matches the one file of that exact name.
LITERAL_PATH = r"regexp_replace(path, '([*?\[])', '[\1]', 'g')"

# One VARCHAR per line, numbered from 1. The delimiter is U+10FFFF, a noncharacter no text holds
# (a NUL delimiter would cut a line at a NUL byte without a word, and any other delimiter would cut
# a line that holds it); new_line = CRLF also ends lines at a lone LF; quote and escape are off so
# that quotes in ids are kept as they are. max_line_size lifts DuckDB's 2 MiB limit (whose error
# prints the whole line) to 32 MiB, so that a long line reaches the checks below, which quote 100
# characters of it; buffer_size stays DuckDB's default 32 MiB (DuckDB 1.x makes it 16 times the
# line limit unless set, which ran out of memory). parallel = false: DuckDB 2.0's parallel reader
# refused a 10,000,000-line run in this layout ("does not support a full read on this file"), and
# the numbered lines are one pass in order anyway (the serial read was as fast, 1.6 s).
_LINE_BYTES = 32 * 1024 * 1024
_LINES = (
    f"read_csv({LITERAL_PATH}, columns = {{'line': 'VARCHAR'}}, delim = chr(1114111), "
    "quote = '', escape = '', header = false, auto_detect = false, new_line = '\\r\\n', "
    f"strict_mode = false, parallel = false, max_line_size = {_LINE_BYTES}, "
    f"buffer_size = {_LINE_BYTES}, encoding = file_encoding) "
    "WITH ORDINALITY"
)
_FIELDS = f"string_split_regex(regexp_replace(line, '^{_SPACE}|{_SPACE}$', '', 'g'), '{_SPACE}')"


def _blank(characters: str) -> str:
    return " OR ".join(f"contains(line, chr({ord(c)}))" for c in characters)


# The fields of a line whose fields are separated by single spaces (most TREC files) or single
# tabs, and no other blank: a plain split, 3x faster than the regular expression. ``spaces`` is
# that line split on spaces, computed once (a subquery below); an empty field means a run of
# separators or one at an end, which the general split handles.
_TABS = "string_split(line, chr(9))"
_FAST_FIELDS = (
    f"CASE WHEN NOT ({_blank(chr(9) + chr(11) + chr(12) + chr(13))}) "
    "AND NOT list_contains(spaces, '') THEN spaces "
    f"WHEN NOT ({_blank(' ' + chr(11) + chr(12) + chr(13))}) AND NOT list_contains({_TABS}, '') "
    f"THEN {_TABS} ELSE {_FIELDS} END"
)

# The numbers C's strtod reads in decimal, as trec_eval reads a score, and infinity; not 'nan',
# which has no order, nor DuckDB's own extensions ('1_000' would be 1000 in DuckDB and 1 in C).
_NUMBER = r"[+-]?(([0-9]+[.]?[0-9]*|[.][0-9]+)(e[+-]?[0-9]+)?|inf|infinity)"
_INTEGER = r"[+-]?[0-9]+"
QUOTED_LENGTH = 100


def _quoted(text: str) -> str:
    """SQL quoting ``text`` in an error message: at most 100 characters, NUL shown as \\0."""
    cut = f"replace(left({text}, {QUOTED_LENGTH}), chr(0), '\\0')"
    return (
        f"'''' || {cut} || '''' || CASE WHEN length({text}) > {QUOTED_LENGTH} "
        f"THEN '... (' || length({text}) || ' characters)' ELSE '' END"
    )


# A field of a line in the common form: no blank (C's isspace) and no NUL.
_FIELD = r"[^\x00 \t\n\v\f\r]+"


def _common_form(columns: list[tuple[str, int, str]], extra: bool) -> str:
    """The pattern of a line in the common form: single spaces between the fields, none at either
    end, no other blank, no NUL, a first field that does not open a comment, each typed field
    of its type (matched case-insensitively: ``_NUMBER`` is written in lower case) and the
    right number of fields. Such a line is split on spaces and cast without the checks of a
    line in any other form: one match instead of a dozen tests (the six columns of a run of
    1,000,000 lines in 0.33 s of CPU instead of 0.36 s; a query that reads no rank, as duckrank
    trec_eval, skipped the rank's test already and takes as long as before)."""
    fields = {field: sql_type for _, field, sql_type in columns}
    patterns = [{"BIGINT": _INTEGER, "DOUBLE": f"({_NUMBER})"}.get(fields.get(field), _FIELD)
                for field in range(1, max(fields) + 1)]
    if patterns[0] == _FIELD:
        patterns[0] = r"[^\x00 \t\n\v\f\r#]" + _FIELD.removesuffix("+") + "*"
    return " ".join(patterns) + (f"( {_FIELD})*" if extra else "")


def table_macro(fn: str, layout: str, columns: list[tuple[str, int, str]], extra: bool,
                temp: bool = False, parts: bool = False, shown: str | None = None) -> str:
    """The CREATE statement of a table macro reading a space-separated file. ``columns``: (name,
    field number, type VARCHAR, BIGINT or DOUBLE); ``extra``: whether fields after the last
    column are allowed (and ignored); ``temp``: a TEMP macro (a command's own reader). A bad
    line is an error that names the macro, the file and the line number and quotes the line.
    ``parts``: the macro also takes ``part := 0, parts := 1`` and gives (and checks) only the
    lines whose number is ``part`` modulo ``parts``: the UNION ALL of the parts of one file is
    the file, read by as many threads (DuckDB reads a file's lines on one, and splitting and
    casting them took most of the time to rank a run; each part reads the lines again, 0.04 s
    per 1,000,000, and keeps only its own). ``shown``: the name its errors give (``fn``'s by
    default)."""

    def fail(problem: str) -> str:
        return (
            f"error('{shown or fn}: file ' || '''' || path || '''' || ', line ' || line_number "
            "|| ': ' "
            f"|| {problem} || ' in ' || {_quoted('line')})"
        )

    selected = []
    for name, field, sql_type in columns:
        value = f"f[{field}]"
        if sql_type != "VARCHAR":
            kind, pattern = ("an integer", _INTEGER) if sql_type == "BIGINT" else ("a number",
                                                                                 _NUMBER)
            # A value that matches its pattern may still not cast (an integer beyond BIGINT):
            # an error too, in either form.
            parsed = (f"CASE WHEN common OR regexp_full_match(lower({value}), '{pattern}') "
                      f"THEN try_cast({value} AS {sql_type}) END")
            problem = f"'{name} ' || {_quoted(value)} || ' is not {kind}'"
            value = f"coalesce({parsed}, {fail(problem)})"
        selected.append(f"{value} AS {name}")
    count = len(columns)
    wrong_count = f"len(f) < {count}" if extra else f"len(f) <> {count}"
    expected = f"at least {count}" if extra else str(count)
    has_nul = fail("'a NUL byte (shown as \\0)'")
    bad_count = fail(f"'expected {expected} fields ({layout}), got ' || len(f)")
    common = f"regexp_full_match(line, '{_common_form(columns, extra)}', 'i')"
    return (
        f"CREATE OR REPLACE {'TEMP ' if temp else ''}MACRO {fn}(path, file_encoding := 'utf-8'"
        f"{', part := 0, parts := 1' if parts else ''}) AS TABLE\n"
        f"SELECT {', '.join(selected)}\n"
        f"FROM (SELECT line, line_number, common, CASE WHEN common THEN spaces ELSE "
        f"{_FAST_FIELDS} END AS f FROM (\n"
        f"  SELECT line, ordinality AS line_number, coalesce({common}, false) AS common, "
        f"string_split(line, ' ') AS spaces FROM {_LINES}"
        f"{' WHERE ordinality % parts = part' if parts else ''}))\n"
        "WHERE CASE\n"
        "  WHEN common THEN true\n"
        f"  WHEN contains(line, chr(0)) THEN {has_nul}\n"
        "  WHEN line IS NULL OR f = [''] OR starts_with(f[1], '#') THEN false\n"
        f"  WHEN {wrong_count} THEN {bad_count}\n"
        "  ELSE true END"
    )


RUN_COLUMNS = [
    ("query", 1, "VARCHAR"),
    ("q0", 2, "VARCHAR"),
    ("item", 3, "VARCHAR"),
    ("rank", 4, "BIGINT"),
    ("score", 5, "DOUBLE"),
    ("tag", 6, "VARCHAR"),
]
QRELS_COLUMNS = [
    ("query", 1, "VARCHAR"),
    ("iteration", 2, "VARCHAR"),
    ("item", 3, "VARCHAR"),
    ("grade", 4, "BIGINT"),
]

MACROS = (
    table_macro("read_trec_run", "qid Q0 docid rank score tag", RUN_COLUMNS, extra=True),
    table_macro("read_trec_qrels", "qid iteration docid grade", QRELS_COLUMNS, extra=False),
)
