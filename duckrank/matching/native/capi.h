/* The DuckDB C API version every file of the extension is written against, in one place, then
 * DuckDB's extension header. Each .c file includes this first (extension.c defines
 * DUCKDB_EXTENSION_NAME before it) and then says DUCKDB_EXTENSION_EXTERN, or
 * DUCKDB_EXTENSION_ENTRYPOINT for the entry point. duckrank/matching/native/__init__.py writes the
 * same version into the footer DuckDB reads (C_API_VERSION there; tests/matching/test_native.py
 * checks the two agree). */
#ifndef DUCKRANK_CAPI_H
#define DUCKRANK_CAPI_H

#define DUCKDB_EXTENSION_API_VERSION_MAJOR 1
#define DUCKDB_EXTENSION_API_VERSION_MINOR 2
#define DUCKDB_EXTENSION_API_VERSION_PATCH 0
#include "duckdb_extension.h"

#endif
