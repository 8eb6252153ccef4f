"""The TREC table macros as SQL text: ``read_trec_run(path)`` and ``read_trec_qrels(path)``.

* A run file has one line per retrieved document: ``qid Q0 docid rank score tag``.
* A qrels file has one line per judgment: ``qid iteration docid grade``.

Fields are separated by any run of spaces or tabs (as trec_eval reads them); blank lines are
skipped; a line with the wrong number of fields, a rank or grade that is not an integer or a score
that is not a number is an error that quotes the line. The macros are pure SQL (they are in
sql/duckrank.sql too) and give the columns the rest of duckrank expects:

* ``read_trec_run(path)``: ``query, q0, item, rank, score, tag`` (rank BIGINT, score DOUBLE).
* ``read_trec_qrels(path)``: ``query, iteration, item, grade`` (grade BIGINT).

Every id is read as VARCHAR, as trec_eval compares them as strings. Like trec_eval, duckrank ranks a
run by its score and ignores the rank column (``duckrank.evaluate`` breaks ties in score by docid,
descending, which is also trec_eval's order). ``duckrank.files.trec`` reads the files from Python.
"""


from __future__ import annotations

# One VARCHAR per line: chr(0) never occurs in a text file, so read_csv never splits a line, and
# quote/escape are off so that quotes in ids are kept as they are.
_LINES = (
    "read_csv(path, columns = {'line': 'VARCHAR'}, delim = chr(0), quote = '', escape = '', "
    "header = false, auto_detect = false, new_line = '\\n', strict_mode = false)"
)
_FIELDS = r"string_split_regex(regexp_replace(line, '^\s+|\s+$', '', 'g'), '\s+')"


def _table_macro(fn: str, layout: str, columns: list[tuple[str, int, str]]) -> str:
    """``columns``: (name, field number, type VARCHAR, BIGINT or DOUBLE). A bad line is an error
    that names the macro and quotes the line."""

    def fail(problem: str) -> str:
        return f"error('{fn}: ' || {problem} || ' in line ''' || line || '''')"

    selected = []
    for name, field, sql_type in columns:
        value = f"f[{field}]"
        if sql_type != "VARCHAR":
            kind = "an integer" if sql_type == "BIGINT" else "a number"
            text = value
            if sql_type == "BIGINT":  # a cast would round '0.5'
                text = f"CASE WHEN regexp_full_match({value}, '[+-]?[0-9]+') THEN {value} END"
            parsed = f"try_cast({text} AS {sql_type})"
            problem = f"'{name} ''' || {value} || ''' is not {kind}'"
            value = f"CASE WHEN {parsed} IS NULL THEN {fail(problem)} ELSE {parsed} END"
        selected.append(f"{value} AS {name}")
    count = len(columns)
    wrong_count = fail(f"'expected {count} fields ({layout}), got ' || len(f)")
    return (
        f"CREATE OR REPLACE MACRO {fn}(path) AS TABLE\n"
        f"SELECT {', '.join(selected)}\n"
        f"FROM (SELECT line, {_FIELDS} AS f FROM {_LINES})\n"
        f"WHERE f <> [''] AND (CASE WHEN len(f) <> {count} THEN {wrong_count} END) IS NULL"
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
    _table_macro("read_trec_run", "qid Q0 docid rank score tag", RUN_COLUMNS),
    _table_macro("read_trec_qrels", "qid iteration docid grade", QRELS_COLUMNS),
)
