"""Recommenders for the xCLiMF paper's workflow (Shi et al., RecSys 2013: PopRec, CLiMF, xCLiMF),
numpy only: they train on arrays and return factors as Arrow tables; scoring and the top N run in
DuckDB."""
