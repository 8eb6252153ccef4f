"""The Hivemall compatibility layer: the ``hivemall`` schema's macros with Hivemall's own rules
(``macros``) and the translation of Hive queries to DuckDB SQL (``translate``)."""
