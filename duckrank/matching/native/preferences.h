/* What match.c's entry point needs from preferences.c. */
#ifndef DUCKRANK_PREFERENCES_H
#define DUCKRANK_PREFERENCES_H

/* Registers the preference functions in the connection's database. */
duckdb_state duckrank_register_preferences(duckdb_connection connection);

#endif
