"""A real headless Chromium (Debian's ``chromium`` package) driven through the Chrome DevTools
Protocol over a pipe (``--remote-debugging-pipe``: JSON messages ending in a NUL byte on file
descriptors 3 and 4; https://chromedevtools.github.io/devtools-protocol/), with no client library:
open a page, collect its console errors, exceptions and network requests, evaluate script in it,
and take a screenshot.

The flags are those this machine's Chromium needs as root and without a network (no sandbox, no
GPU, no background networking, a fresh profile folder).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--hide-scrollbars", "--remote-debugging-pipe")
TIMEOUT = 30.0


class Page:
    """One tab: its events so far (``errors``: console errors, exceptions and error log
    entries; ``requests``: every URL it asked for)."""

    def __init__(self, browser: Browser, session: str) -> None:
        self.browser, self.session = browser, session
        self.errors: list[str] = []
        self.requests: list[str] = []

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        return self.browser.send(method, params, self.session)

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path, width: int = 1200) -> None:
        height = int(self.evaluate("document.documentElement.scrollHeight"))
        self.send("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=False)
        shot = self.send("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(shot["data"]))


class Browser:
    """A Chromium process; ``open(url)`` loads a page and waits for its load event."""

    def __init__(self) -> None:
        self.profile = tempfile.TemporaryDirectory(prefix="duckrank-chromium-")
        to_browser_read, self._write = os.pipe()
        self._read, from_browser_write = os.pipe()
        # The browser reads commands on its fd 3 and writes replies on its fd 4.
        self.process = subprocess.Popen(
            [str(CHROMIUM), *FLAGS, f"--user-data-dir={self.profile.name}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4), preexec_fn=_dup_to(to_browser_read, from_browser_write),
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._buffer = b""
        self._next = 0
        self._events: list[dict[str, Any]] = []
        self._pages: dict[str, Page] = {}

    def send(self, method: str, params: dict[str, Any] | None = None,
             session: str | None = None) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._receive()
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise AssertionError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def _receive(self, deadline: float | None = None) -> dict[str, Any]:
        deadline = deadline or time.monotonic() + TIMEOUT
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._read], [], [], left)[0]:
                raise TimeoutError("Chromium did not answer")
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise ConnectionError("Chromium closed the pipe")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        message = json.loads(raw)
        if "method" in message:
            self._event(message)
        return message

    def _event(self, message: dict[str, Any]) -> None:
        page = self._pages.get(message.get("sessionId", ""))
        method, params = message["method"], message.get("params", {})
        if page is None:
            return
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            page.errors.append(details.get("exception", {}).get("description")
                               or details.get("text", "exception"))
        elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
            page.errors.append(" ".join(str(a.get("value", a.get("description")))
                                        for a in params["args"]))
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            page.errors.append(params["entry"]["text"])
        elif method == "Network.requestWillBeSent":
            page.requests.append(params["request"]["url"])
        elif method == "Page.loadEventFired":
            self._events.append(message)

    def open(self, url: str) -> Page:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target,
                                                      "flatten": True})["sessionId"]
        page = self._pages[session] = Page(self, session)
        for domain in ("Runtime", "Log", "Network", "Page"):
            page.send(f"{domain}.enable")
        self._events.clear()
        page.send("Page.navigate", url=url)
        deadline = time.monotonic() + TIMEOUT
        while not any(e.get("sessionId") == session for e in self._events):
            self._receive(deadline)
        page.evaluate("new Promise(r => setTimeout(r, 50))")  # a task after load: late errors
        return page

    def close(self) -> None:
        with contextlib.suppress(ConnectionError, TimeoutError, OSError):
            self.send("Browser.close")
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._write)
        os.close(self._read)
        self.profile.cleanup()


def _dup_to(read_end: int, write_end: int) -> Any:
    """In the child: the command pipe on fd 3 and the reply pipe on fd 4."""
    def child() -> None:
        os.dup2(read_end, 3)
        os.dup2(write_end, 4)
    return child
