"""Names a package exports without importing their modules until first use (PEP 562), so that
importing one module of a package (``duckrank.evaluation.inputs``, ``duckrank.reports.fusion.api``)
does not import every sibling the package re-exports (issue 32: ``duckrank fuse`` and the
command line pay only for what they use)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(
    namespace: dict[str, Any], exports: dict[str, str],
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for the module whose globals are ``namespace``:
    ``exports`` maps each public name to the module that defines it, imported on first access
    and then bound in ``namespace`` (later look-ups do not come back here)."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return __getattr__, __dir__
