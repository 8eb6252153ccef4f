"""duckrank's version, importable from every layer (the macros stored in a database carry it)."""

__version__ = "0.1.0"
