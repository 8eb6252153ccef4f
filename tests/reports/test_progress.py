"""The progress bar (``duckrank.reports.progress``): drawn on a terminal only, never when quiet,
erased at the end; fed by counted steps (the callback form a training loop takes) or by
DuckDB's progress of the running query."""

from __future__ import annotations

import io

import duckdb
import pytest

from duckrank.reports import progress
from duckrank.reports.progress import Progress, shown, watch


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_nothing_on_a_pipe_or_when_quiet() -> None:
    for stream, quiet in ((io.StringIO(), False), (Terminal(), True)):
        with Progress("x", stream=stream, quiet=quiet, delay=0) as bar:
            bar(1, 2)
        assert stream.getvalue() == "" and not shown(stream, quiet)


def test_steps_are_drawn_then_erased() -> None:
    stream = Terminal()
    with Progress("duckrank compare", stream=stream, delay=0) as bar:
        bar(3, 10, "systems")  # the first draw; 3 of 10 steps is 30%
        drawn = stream.getvalue()
    assert drawn == "\rduckrank compare [#########.....................]  30% 3/10 systems"
    assert stream.getvalue().endswith("\r" + " " * (len(drawn) - 1) + "\r")  # erased


def test_short_work_draws_nothing() -> None:
    stream = Terminal()
    with Progress("x", stream=stream) as bar:  # the default delay: nothing in the first second
        bar(1, 2)
    assert stream.getvalue() == ""


def test_bad_total_names_itself() -> None:
    with pytest.raises(ValueError, match="Progress: total must be positive, got 0"):
        Progress("x", stream=Terminal(), delay=0)(1, 0)


def test_watch_draws_duckdbs_progress_and_restores_settings(monkeypatch) -> None:
    monkeypatch.setattr(progress, "DELAY", 0.0)
    monkeypatch.setattr(progress, "INTERVAL", 0.02)
    con = duckdb.connect()
    settings = ("SELECT current_setting('enable_progress_bar'), "
                "current_setting('enable_progress_bar_print')")
    # DuckDB's Python client chooses the defaults from its environment (a pytest-xdist worker
    # starts with the bar on): what was there before is what must be there after.
    before = con.execute(settings).fetchone()
    stream = Terminal()
    with watch(con, "duckrank evaluate", stream=stream):
        con.execute("SELECT count(*) FROM range(40000000) t(x) WHERE x % 7 = 3").fetchall()
    assert "duckrank evaluate [" in stream.getvalue() and "of the current query" in \
        stream.getvalue()
    assert con.execute(settings).fetchone() == before
