"""Names a package exports without importing their modules until first use (PEP 562), so that
importing one module of a package (``duckrank.evaluation.inputs``, ``duckrank.reports.fusion.api``)
does not import every sibling the package re-exports (issue 32: ``duckrank fuse`` and the
command line pay only for what they use)."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from typing import Any


def lazy_exports(
    namespace: dict[str, Any], exports: dict[str, str],
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for the package whose globals are ``namespace``:
    ``exports`` maps each public name to the module that defines it, imported on first access
    and then bound in ``namespace`` (later look-ups do not come back here). Any other public name
    is tried as a submodule (``duckrank.evaluation.api`` after ``import duckrank.evaluation``),
    as when the package imported its modules eagerly."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        if name in exports:
            value = getattr(importlib.import_module(exports[name]), name)
            namespace[name] = value
            return value
        if not name.startswith("_") and importlib.util.find_spec(f"{package}.{name}"):
            return importlib.import_module(f"{package}.{name}")  # binds it in the package
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

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
        if attribute.startswith("__") or attribute in ("_name", "_module"):
            # Python's own probes (``__dict__``, ``__wrapped__``...) and an instance made
            # without ``__init__`` are not the module's business: no import for them.
            raise AttributeError(attribute)
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
