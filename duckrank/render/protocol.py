"""The top-N evaluation protocol as DuckDB table macros: splits of a ratings table and candidate
sampling (issue 18)."""

MACROS: tuple[str, ...] = ()
