/* What match.c's entry point needs from preferences.c. */
#ifndef DUCKRANK_PREFERENCES_H
#define DUCKRANK_PREFERENCES_H

#include "budget.h"

/* Registers the preference functions in the connection's database, counting their memory in
 * `account`, the matching step's (each function takes a reference to it). */
duckdb_state duckrank_register_preferences(duckdb_connection connection, budget *account);

#endif
