"""Builds duckrank's native matching step (duckrank/native/match.c), a DuckDB C API extension.

The build is optional: without a C compiler duckrank installs without it and its macros use the
SQL matching step (same numbers, slower). Everything else is configured in pyproject.toml.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "duckrank.native._match",
            sources=["duckrank/native/match.c"],
            include_dirs=["duckrank/native/duckdb_capi"],
            extra_compile_args=["-O2", "-std=c11", "-fvisibility=hidden"],
            libraries=["m"],
            optional=True,
        )
    ]
)
