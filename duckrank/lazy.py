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


class LazyModule:
    """A module imported on its first attribute access: ``np = LazyModule("numpy")`` at the top
    of a record module keeps ``import duckrank.metrics`` from importing numpy and pyarrow (about
    80 ms) for the commands that only read the records (``duckrank trec_eval``, ``evaluate``'s
    request parsing), while the kernels that run over Arrow batches read ``np.x`` as before (one
    attribute look-up more per access, per batch: nothing against a batch's work)."""

    __slots__ = ("_name", "_module")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: Any = None

    def __getattr__(self, attribute: str) -> Any:
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attribute)

    def __reduce__(self) -> tuple[type, tuple[str]]:
        # Spark pickles a kernel with its globals: unpickled, the stand-in is made anew (without
        # this, unpickling reads ``_module`` before it exists, through ``__getattr__``).
        return LazyModule, (self._name,)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"
