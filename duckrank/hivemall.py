"""The ``hivemall`` schema: Hivemall's ranking-evaluation functions with Hivemall's numbers.

See docs/hivemall.md and shared/notes/hivemall-semantics.md.
"""

from __future__ import annotations

SCHEMA = "hivemall"


def sql_statements() -> list[str]:
    """Pure-SQL statements creating the hivemall schema and its macros."""
    return [f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}"]
