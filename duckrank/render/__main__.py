"""``python -m duckrank.render``: rewrite the generated files from the records: sql/duckrank.sql,
docs/reference.md and the generated parts of docs/compare.md (the statistical tests) and
docs/beyond-accuracy.md and docs/off-policy.md (tests check that each is current)."""

import sys

from duckrank.render import beyond_accuracy, compare, off_policy
from duckrank.render.macros import SQL_FILE, render_sql_file
from duckrank.render.reference import REFERENCE_FILE, render_reference

for path, text in (
    (SQL_FILE, render_sql_file()),
    (REFERENCE_FILE, render_reference()),
    (compare.COMPARE_FILE, compare.updated(compare.COMPARE_FILE.read_text())),
    (beyond_accuracy.DOC_FILE, beyond_accuracy.updated(beyond_accuracy.DOC_FILE.read_text())),
    (off_policy.DOC_FILE, off_policy.updated(off_policy.DOC_FILE.read_text())),
):
    path.write_text(text)
    sys.stdout.write(f"wrote {path}\n")
