"""The SHA-256 of the native step's sources, which the build compiles into the library.

scripts/build-native and setup.py pass ``sources_hash()`` of the tree as
``-DDUCKRANK_SOURCES_HASH=<hex>``; ``duckrank.matching.native`` compares the hash in the loaded
library with that of the sources next to it, so a library built from other sources (a build that
failed and left the old one, an edit not rebuilt) is found. Standalone (no duckrank import): the
build runs it as ``python duckrank/matching/native/sources.py`` before duckrank is importable.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def source_files(directory: Path = HERE) -> list[Path]:
    """The C sources and headers, the vendored DuckDB headers included, in a fixed order."""
    files = [*directory.glob("*.c"), *directory.glob("*.h"), *directory.glob("duckdb_capi/*.h")]
    return sorted(files, key=lambda path: path.relative_to(directory).as_posix())


def sources_hash(directory: Path = HERE) -> str | None:
    """SHA-256 over each source's relative path and bytes; None where there are no sources (an
    installed wheel without them)."""
    files = source_files(directory)
    if not files:
        return None
    digest = hashlib.sha256()
    for path in files:
        content = path.read_bytes()
        name = path.relative_to(directory).as_posix().encode()
        digest.update(b"%d:%s\0%d:" % (len(name), name, len(content)))
        digest.update(content)
    return digest.hexdigest()


if __name__ == "__main__":
    found = sources_hash(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
    if found is None:
        sys.exit("sources.py: no C sources found")
    print(found)
