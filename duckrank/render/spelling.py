"""How an error names what the caller wrote: ``evaluate()``'s keyword arguments or the command
line's flags (one evaluation, one beyond-accuracy engine and one comparison run behind both)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Spelling:
    """Keyword arguments (``cli=False``) or command-line flags (``cli=True``)."""

    cli: bool = False

    def argument(self, keyword: str, value: Any = None) -> str:
        """``query_column='user_id'`` / ``--query-column user_id``; ``per_user=True`` /
        ``--per-user``; without a value, ``query_column=`` / ``--query-column``."""
        if not self.cli:
            return f"{keyword}=" + ("" if value is None else repr(value))
        flag = "-m" if keyword == "metrics" else "--" + keyword.replace("_", "-")
        return flag if value is None or value is True else f"{flag} {value}"

    def columns(self, kind: str, role: str, name: str = "NAME") -> str:
        """``run_columns={'query': 'NAME'}`` / ``--run-columns query=NAME``."""
        if self.cli:
            return f"--{kind}-columns {role}={name}"
        return f"{kind}_columns={{{role!r}: {name!r}}}"

    def metric(self, request: str) -> str:
        """``metrics=['err(max_grade=5)@5']`` / ``-m 'err(max_grade=5)@5'``."""
        return f"-m '{request}'" if self.cli else f"metrics=[{request!r}]"


PYTHON = Spelling()
COMMAND_LINE = Spelling(cli=True)
