"""Reading files: TREC runs and qrels (``trec``), and run or qrels files in any format duckrank
reads, Parquet, CSV/TSV or TREC (``runs``), as relations of a DuckDB connection."""
