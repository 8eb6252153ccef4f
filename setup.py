"""Builds duckrank's native matching step (duckrank/matching/native/match.c), a DuckDB C API
extension.

The build is optional: without a C compiler duckrank installs without it and its macros use the
SQL matching step (same numbers, slower). Everything else is configured in pyproject.toml.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "duckrank.matching.native._match",
            sources=[
                "duckrank/matching/native/match.c",
                "duckrank/matching/native/budget.c",
                "duckrank/matching/native/preferences.c",
                "duckrank/matching/native/topk.c",
            ],
            include_dirs=["duckrank/matching/native/duckdb_capi"],
            extra_compile_args=["-O2", "-std=c11", "-fvisibility=hidden"],
            libraries=["m"],
            optional=True,
        )
    ]
)
