"""Pure rendering of text from the records: the DuckDB SQL macros (and sql/duckrank.sql), the
TREC and to_ordered_list table macros, docs/reference.md and docs/compare.md. No connection."""
