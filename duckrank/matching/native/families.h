/* The function families of duckrank's native extension, each registered by the entry point
 * (extension.c) once per database: the binary matching step (match.c), the graded one
 * (graded.c), the preference metrics (edrc.c), the rank correlations (correlation.c), the
 * structural steps of rank fusion (fusion.c) and the top-K aggregate (topk.c). The scalar families count their memory in `account`, the database's
 * (budget.h; each function takes a reference to it). */
#ifndef DUCKRANK_FAMILIES_H
#define DUCKRANK_FAMILIES_H

#include "budget.h"

/* duckrank_match. */
duckdb_state duckrank_register_match(duckdb_connection connection, budget *account);

/* duckrank_grades and duckrank_graded. */
duckdb_state duckrank_register_graded(duckdb_connection connection, budget *account);

/* duckrank_native_edrc and duckrank_native_edrc_preferences. */
duckdb_state duckrank_register_edrc(duckdb_connection connection, budget *account);

/* duckrank_native_correlation (spearman, kendall_tau, ap_correlation and fcp). */
duckdb_state duckrank_register_correlation(duckdb_connection connection, budget *account);

/* duckrank_native_fusion_layout, _split and _order (the structural steps of rank fusion). */
duckdb_state duckrank_register_fusion(duckdb_connection connection, budget *account);

/* duckrank_top_k (with its overloads that order tied keys by an integer item's decimal text). */
duckdb_state duckrank_register_top_k(duckdb_connection connection);

#endif
