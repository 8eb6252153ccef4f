"""``python -m duckrank.render``: rewrite the generated files, sql/duckrank.sql and
docs/reference.md, from the metric records (tests check that both are current)."""

import sys

from duckrank.render.macros import SQL_FILE, render_sql_file
from duckrank.render.reference import REFERENCE_FILE, render_reference

for path, text in ((SQL_FILE, render_sql_file()), (REFERENCE_FILE, render_reference())):
    path.write_text(text)
    sys.stdout.write(f"wrote {path}\n")
