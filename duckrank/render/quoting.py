"""Quoting for SQL text that duckrank writes: one rule each for string literals and identifiers
(every caller-supplied name reaches SQL through these or as a query parameter)."""


def quote_literal(text: str) -> str:
    """``text`` as a SQL string literal: ``it's`` -> ``'it''s'``."""
    return "'" + text.replace("'", "''") + "'"


def quote_identifier(name: str) -> str:
    """``name`` as a quoted SQL identifier, its double quotes doubled."""
    return '"' + name.replace('"', '""') + '"'
