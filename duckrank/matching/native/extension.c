/*
 * The entry point of duckrank's native extension (duckrank_native): DuckDB calls it once per
 * database that loads the library, and it registers every function family (families.h), each
 * implemented in its own file, with one memory account (budget.h) for the scalar ones.
 *
 * The library also carries the SHA-256 of the sources it was built from (duckrank_sources_hash:
 * scripts/build-native and setup.py compute it with duckrank/matching/native/sources.py and pass
 * it as -DDUCKRANK_SOURCES_HASH=<hex>), so that duckrank/matching/native/__init__.py can tell a
 * library built from the sources next to it from a stale one ("unknown": built by other means).
 */
#define DUCKDB_EXTENSION_NAME duckrank_native
#include "capi.h"

DUCKDB_EXTENSION_EXTERN

#include "families.h"

#ifndef DUCKRANK_SOURCES_HASH
#define DUCKRANK_SOURCES_HASH unknown
#endif
#define DUCKRANK_TEXT(x) #x
#define DUCKRANK_STRING(x) DUCKRANK_TEXT(x)

/* Read from the library's bytes (not called): the marker, then the 64 hex digits. */
__attribute__((used)) static const char duckrank_sources_hash[] =
    "duckrank_native sources sha256:" DUCKRANK_STRING(DUCKRANK_SOURCES_HASH);

DUCKDB_EXTENSION_ENTRYPOINT(duckdb_connection connection, duckdb_extension_info info,
                            struct duckdb_extension_access *access) {
	/* One account for every scalar function registered here (budget.h); the reference
	 * budget_new gives is this function's, dropped at its end. */
	budget *account = budget_new(connection);
	if (!account) {
		access->set_error(info, "duckrank_native: out of memory");
		return false;
	}
	duckdb_state state = duckrank_register_match(connection, account);
	if (state == DuckDBSuccess) {
		state = duckrank_register_graded(connection, account);
	}
	if (state == DuckDBSuccess) {
		state = duckrank_register_edrc(connection, account);
	}
	if (state == DuckDBSuccess) {
		state = duckrank_register_correlation(connection, account);
	}
	if (state == DuckDBSuccess) {
		state = duckrank_register_fusion(connection, account);
	}
	if (state == DuckDBSuccess) {
		state = duckrank_register_top_k(connection);
	}
	budget_drop(account);
	if (state != DuckDBSuccess) {
		access->set_error(info, "duckrank_native: could not register its functions");
		return false;
	}
	return true;
}
