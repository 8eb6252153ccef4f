"""Recommenders for the seed-004 workflow (PopRec, CLiMF, xCLiMF), numpy only: they train on
arrays and return factors as Arrow tables; scoring and the top N run in DuckDB."""
