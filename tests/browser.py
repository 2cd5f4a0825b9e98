"""A real browser for the tests: Debian's chromium, headless, driven over the DevTools protocol
(its websocket, with aiohttp, already installed by MLflow's dependencies; no driver download).

    page = open_page("file:///.../report.html", ready="document.images.length > 0",
                     evaluate="document.title", screenshot="first_screen.png")
    page["errors"]   # console errors, uncaught exceptions and failed loads
    page["value"]    # what `evaluate` returned
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "chrome")


def executable() -> str | None:
    """The browser binary, or None (make test's service step installs Debian's chromium)."""
    if os.environ.get("PERFSTUDY_CHROMIUM"):
        return os.environ["PERFSTUDY_CHROMIUM"]
    return next((path for name in CANDIDATES if (path := shutil.which(name))), None)


class _Session:
    """One page's DevTools connection: commands by id, events kept in order."""

    def __init__(self, ws) -> None:
        self.ws = ws
        self.ids = itertools.count(1)
        self.pending: dict[int, asyncio.Future] = {}
        self.events: list[dict[str, Any]] = []
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        async for message in self.ws:
            data = message.json()
            if "id" in data and data["id"] in self.pending:
                self.pending.pop(data["id"]).set_result(data)
            elif "method" in data:
                self.events.append(data)

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        key = next(self.ids)
        future = asyncio.get_running_loop().create_future()
        self.pending[key] = future
        await self.ws.send_json({"id": key, "method": method, "params": params})
        reply = await asyncio.wait_for(future, 60)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    async def evaluate(self, expression: str) -> Any:
        result = await self.send("Runtime.evaluate", expression=expression, returnByValue=True,
                                 awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:80]}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions, failed resource loads, in order."""
        out = []
        for event in self.events:
            method, params = event["method"], event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") == "error":
                out.append("console.error: " + " ".join(str(a.get("value", a.get("description", "")))
                                                        for a in params.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                out.append("exception: " + str((details.get("exception") or {}).get(
                    "description", details.get("text"))))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                entry = params["entry"]
                out.append(f"{entry.get('source')}: {entry.get('text')} {entry.get('url', '')}".strip())
            elif method == "Network.loadingFailed" and not params.get("canceled"):
                out.append(f"load failed: {params.get('errorText')}")
        return out


async def _wait(page: _Session, condition: str | None, deadline: float) -> bool:
    while time.monotonic() < deadline:
        state = await page.evaluate("document.readyState")
        if state == "complete" and (condition is None or await page.evaluate(condition)):
            return True
        await asyncio.sleep(0.25)
    return False


async def _visit(port: int, url: str, ready: str | None, evaluate: str | None,
                 screenshot: str | Path | None, timeout: float, width: int, height: int,
                 steps: list[tuple[str, str]]) -> dict[str, Any]:
    async with aiohttp.ClientSession() as http:
        async with http.put(f"http://127.0.0.1:{port}/json/new?about:blank") as reply:
            target = await reply.json(content_type=None)
        async with http.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as ws:
            page = _Session(ws)
            for domain in ("Runtime", "Log", "Page", "Network"):
                await page.send(f"{domain}.enable")
            await page.send("Emulation.setDeviceMetricsOverride", width=width, height=height,
                            deviceScaleFactor=1, mobile=False)
            await page.send("Page.navigate", url=url)
            deadline = time.monotonic() + timeout
            done = await _wait(page, ready, deadline)
            for action, condition in steps if done else ():
                done = False
                while not done and time.monotonic() < deadline:
                    # the page may still be rendering what the action needs: try again
                    with contextlib.suppress(RuntimeError):
                        await page.evaluate(action)
                    done = await _wait(page, condition, min(deadline, time.monotonic() + 3))
            await asyncio.sleep(0.5)  # late console messages and image decodes
            value = await page.evaluate(evaluate) if evaluate else None
            shot = None
            if screenshot:
                data = await page.send("Page.captureScreenshot", format="png")
                shot = Path(screenshot)
                shot.write_bytes(base64.b64decode(data["data"]))
            page.reader.cancel()
            return {"ready": done, "value": value, "errors": page.errors(), "screenshot": shot,
                    "url": await _current_url(http, port, target["id"])}


async def _current_url(http, port: int, target_id: str) -> str:
    async with http.get(f"http://127.0.0.1:{port}/json/list") as reply:
        for target in await reply.json(content_type=None):
            if target.get("id") == target_id:
                return target.get("url", "")
    return ""


class Chromium:
    """A headless chromium for one test module; `with Chromium() as b: b.open(url, ...)`."""

    def __init__(self, exe: str | None = None) -> None:
        self.exe = exe or executable()
        if self.exe is None:
            raise RuntimeError("chromium is not installed; run make test (it installs Debian's "
                               "chromium) or set PERFSTUDY_CHROMIUM to a Chrome binary")
        self.profile = tempfile.mkdtemp(prefix="perfstudy-chromium-")
        self.proc: subprocess.Popen | None = None
        self.port = 0

    def __enter__(self) -> Chromium:
        self.proc = subprocess.Popen(
            [self.exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-dev-shm-usage", "--disable-extensions", "--remote-debugging-port=0",
             "--remote-allow-origins=*", f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.is_file() and port_file.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.__exit__()
                raise RuntimeError(f"{self.exe} did not start its DevTools endpoint")
            time.sleep(0.1)
        self.port = int(port_file.read_text().split()[0])
        return self

    def open(self, url: str, *, ready: str | None = None, evaluate: str | None = None,
             screenshot: str | Path | None = None, timeout: float = 60, width: int = 1280,
             height: int = 900, steps: list[tuple[str, str]] = ()) -> dict[str, Any]:
        """Load `url` in a new tab; wait until it loaded and `ready` (JS) is true; then each of
        `steps` (an action in JS, then the condition to wait for); return the value of
        `evaluate` (JS), whether every wait succeeded, the page's errors and its screenshot."""
        return asyncio.run(_visit(self.port, url, ready, evaluate, screenshot, timeout, width,
                                  height, list(steps)))

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        shutil.rmtree(self.profile, ignore_errors=True)
