/*
 * duckrank's preference metrics (edrc and the rank correlations) as native code, part of the
 * same DuckDB C API extension as match.c, whose entry point calls
 * duckrank_register_preferences once per database.
 */
#define DUCKDB_EXTENSION_API_VERSION_MAJOR 1
#define DUCKDB_EXTENSION_API_VERSION_MINOR 2
#define DUCKDB_EXTENSION_API_VERSION_PATCH 0
#include "duckdb_extension.h"

DUCKDB_EXTENSION_EXTERN

#include "preferences.h"

duckdb_state duckrank_register_preferences(duckdb_connection connection) {
	(void)connection;
	return DuckDBSuccess;
}
