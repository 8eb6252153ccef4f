"""Builds duckrank's native matching step (duckrank/matching/native/*.c), a DuckDB C API
extension.

The build is optional: without a C compiler duckrank installs without it and its macros use the
SQL matching step (same numbers, slower). A developer rebuilds it with scripts/build-native, which
fails loudly (docs/contributing.md, "The native step"). Both compile every .c file of the folder,
with the SHA-256 of the sources (duckrank/matching/native/sources.py) compiled in, so duckrank can
tell a stale library. Everything else is configured in pyproject.toml.
"""

import importlib.util
from pathlib import Path

from setuptools import Extension, setup

NATIVE = Path("duckrank/matching/native")


def _sources_hash() -> str:
    """sources.py's hash, loaded by path: duckrank itself is not importable before its install."""
    spec = importlib.util.spec_from_file_location("_duckrank_sources", NATIVE / "sources.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.sources_hash(NATIVE.resolve())


setup(
    ext_modules=[
        Extension(
            "duckrank.matching.native._match",
            sources=sorted(path.as_posix() for path in NATIVE.glob("*.c")),
            define_macros=[("DUCKRANK_SOURCES_HASH", _sources_hash())],
            include_dirs=["duckrank/matching/native/duckdb_capi"],
            extra_compile_args=["-O2", "-std=c11", "-fvisibility=hidden"],
            libraries=["m"],
            optional=True,
        )
    ]
)
