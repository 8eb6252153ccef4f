"""Pure rendering of text from the metric records: the DuckDB SQL macros (and sql/duckrank.sql),
the TREC and to_ordered_list table macros, and docs/reference.md. No connection is opened here."""
