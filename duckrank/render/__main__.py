"""``python -m duckrank.render``: rewrite the generated files from the records: sql/duckrank.sql,
docs/reference.md and the statistical tests' part of docs/compare.md (tests check that each is
current)."""

import sys

from duckrank.render.compare import COMPARE_FILE, updated
from duckrank.render.macros import SQL_FILE, render_sql_file
from duckrank.render.reference import REFERENCE_FILE, render_reference

compare = updated(COMPARE_FILE.read_text() if COMPARE_FILE.exists() else "")
for path, text in (
    (SQL_FILE, render_sql_file()), (REFERENCE_FILE, render_reference()), (COMPARE_FILE, compare)
):
    path.write_text(text)
    sys.stdout.write(f"wrote {path}\n")
