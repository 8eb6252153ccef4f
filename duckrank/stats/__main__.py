"""``python -m duckrank.stats``: rewrite the statistical tests' part of docs/compare.md from the
records (a test checks it is current)."""

import sys

from duckrank.stats.docs import COMPARE_FILE, updated

old = COMPARE_FILE.read_text() if COMPARE_FILE.exists() else ""
COMPARE_FILE.write_text(updated(old))
sys.stdout.write(f"wrote {COMPARE_FILE}\n")
