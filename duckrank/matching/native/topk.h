/* What match.c's entry point needs from topk.c. */
#ifndef DUCKRANK_TOPK_H
#define DUCKRANK_TOPK_H

/* Registers duckrank_top_k (with its overloads that order tied keys by an integer item's decimal text) in the
 * connection's database. */
duckdb_state duckrank_register_top_k(duckdb_connection connection);

#endif
