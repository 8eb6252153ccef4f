"""Engines: wiring the rendered SQL and the numpy kernels into DuckDB connections (``duckdb``,
``python_udfs``), Apache Spark sessions (``spark``) and dbt-duckdb runs (``dbt``)."""
