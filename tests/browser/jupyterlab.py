"""Start and stop a private JupyterLab on 127.0.0.1 for the browser tests.

`running_jupyterlab(root_dir)` is a context manager that starts `jupyter lab` on a free
127.0.0.1 port with a random token, in its own process group and with its own (temporary)
config, data and runtime folders, waits until it answers, yields (base URL, token), and
always kills the whole process group afterwards. News, update checks and the extension
manager's index are turned off, so nothing tries to reach the network; autosave is off (a test
never writes a notebook) and every cell stays in the page (no windowing), so a test can inspect
cells that are scrolled out of view.

`require_browser()` returns Playwright and the Chromium to drive, or skips the test saying
what is missing (fails instead when D2LMINI_REQUIRE_BROWSER=1, as in CI).
"""

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

CHROMIUM_ENV = "D2LMINI_CHROMIUM"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--no-proxy-server"]


def find_chromium() -> Path | None:
    """Return the Chromium to drive: `$D2LMINI_CHROMIUM` if set, else the first on the PATH, else None."""
    if os.environ.get(CHROMIUM_ENV):
        return Path(os.environ[CHROMIUM_ENV])
    found = next((shutil.which(name) for name in CHROMIUM_NAMES if shutil.which(name)), None)
    return Path(found) if found else None


def require_browser():
    """Return (sync_playwright, Chromium's path), or skip (fail when D2LMINI_REQUIRE_BROWSER=1)."""
    required = os.environ.get("D2LMINI_REQUIRE_BROWSER") == "1"
    problem, chromium, sync_playwright = None, find_chromium(), None
    if chromium is None or not chromium.exists():
        named = os.environ.get(CHROMIUM_ENV) or "nothing"
        problem = (f"Chromium is missing: none of {', '.join(CHROMIUM_NAMES)} is on the PATH and "
                   f"{CHROMIUM_ENV} names {named} (apt-get install chromium)")
    else:
        try:
            from playwright.sync_api import sync_playwright  # optional: only the browser tests need it
        except ImportError as error:
            problem = f"Python Playwright is not importable ({error}); pip install playwright"
    if problem is None:
        return sync_playwright, chromium
    if required:
        pytest.fail(f"D2LMINI_REQUIRE_BROWSER=1 but {problem}")
    pytest.skip(problem)


def write_lab_settings(settings_dir: Path) -> None:
    """Write the JupyterLab user settings the browser tests run with into `settings_dir`."""
    settings = {
        ("apputils-extension", "notification"): {"fetchNews": "false"},  # don't ask about Jupyter news
        ("docmanager-extension", "plugin"): {"autosave": False},  # a test never writes a notebook
        ("notebook-extension", "tracker"): {"windowingMode": "none"},  # every cell in the page
    }
    for (extension, plugin), values in settings.items():
        path = Path(settings_dir, "@jupyterlab", extension, f"{plugin}.jupyterlab-settings")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values), "utf-8")


def free_port() -> int:
    """Return a port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get_json(url: str, timeout: float = 2.0):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via a proxy
    with opener.open(url, timeout=timeout) as response:
        return json.loads(response.read())


def shutdown_kernels(base: str, token: str) -> None:
    """Ask the server at `base` to shut down every kernel it started (ignore errors)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with contextlib.suppress(Exception):
        for kernel in _get_json(f"{base}/api/kernels?token={token}"):
            url = f"{base}/api/kernels/{kernel['id']}?token={token}"
            request = urllib.request.Request(url, method="DELETE")
            with contextlib.suppress(Exception), opener.open(request, timeout=10):
                pass


def strip_outputs(source: Path, target: Path) -> None:
    """Copy the notebook at `source` to `target` without outputs or saved widget state."""
    notebook = json.loads(source.read_text("utf-8"))
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    notebook["metadata"].pop("widgets", None)
    target.write_text(json.dumps(notebook, indent=1), "utf-8")


@contextlib.contextmanager
def running_jupyterlab(root_dir: Path, startup_timeout: float = 60.0, keep_log: Path | None = None):
    """Run JupyterLab serving `root_dir`; yield (base_url, token); kill it on exit.

    `keep_log`: where to copy the server's log once it has stopped (what a failed run is read from).
    """
    port, token = free_port(), secrets.token_hex(16)
    with tempfile.TemporaryDirectory(prefix="d2lmini-jupyter-") as home:
        env = dict(os.environ, JUPYTER_CONFIG_DIR=f"{home}/config", JUPYTER_RUNTIME_DIR=f"{home}/runtime",
                   JUPYTERLAB_SETTINGS_DIR=f"{home}/settings", JUPYTERLAB_WORKSPACES_DIR=f"{home}/workspaces",
                   IPYTHONDIR=f"{home}/ipython", NO_PROXY="127.0.0.1,localhost",
                   no_proxy="127.0.0.1,localhost",
                   # One thread per kernel: the tiny matrices gain nothing from more, and on a busy
                   # shared machine two spinning threads per kernel slow training down many times.
                   OMP_NUM_THREADS="1")
        command = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
                   "--port-retries=0", f"--IdentityProvider.token={token}", "--allow-root",
                   f"--ServerApp.root_dir={root_dir}", "--LabApp.news_url=None",
                   "--LabApp.check_for_updates_class=jupyterlab.handlers.announcements.NeverCheckForUpdate",
                   "--LabApp.extension_manager=readonly", "--ServerApp.open_browser=False"]
        write_lab_settings(Path(home, "settings"))
        log = open(Path(home) / "jupyter.log", "w")  # noqa: SIM115 - closed below
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + startup_timeout
            while True:
                if process.poll() is not None:
                    output = (Path(home) / "jupyter.log").read_text()
                    raise RuntimeError(f"JupyterLab exited early:\n{output}")
                try:
                    _get_json(f"{base}/api/status?token={token}")
                    break
                except (urllib.error.URLError, OSError) as error:
                    if time.monotonic() > deadline:
                        message = f"JupyterLab did not answer on {base} within {startup_timeout} s"
                        raise TimeoutError(message) from error
                    time.sleep(0.5)
            yield base, token
        finally:
            shutdown_kernels(base, token)  # kernels run in sessions of their own: stop them first
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
            log.close()
            if keep_log is not None:
                keep_log.parent.mkdir(exist_ok=True)
                shutil.copyfile(Path(home) / "jupyter.log", keep_log)


@contextlib.contextmanager
def notebook_page(root_dir: Path, viewport: dict, failure_png: Path, reduced_motion: str | None = None):
    """Serve `root_dir` in JupyterLab and yield (page, base URL, token) in headless Chromium.

    `reduced_motion="reduce"` emulates a system that asks for reduced motion (prefers-reduced-motion).
    Skips or fails as `require_browser` says. On an exception the page is saved to
    `failure_png` before the browser, then JupyterLab, are closed.
    """
    sync_playwright, chromium = require_browser()
    with running_jupyterlab(root_dir) as (base, token), sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport=viewport, reduced_motion=reduced_motion)
            try:
                yield page, base, token
            except Exception:
                failure_png.parent.mkdir(exist_ok=True)
                page.screenshot(path=str(failure_png))
                raise
        finally:
            browser.close()


def run_all_cells(page, base: str, token: str, name: str, idle_timeout_ms: int = 60_000) -> None:
    """Open the notebook `name`, wait until its kernel is idle, then choose Run > Run All Cells."""
    page.goto(f"{base}/lab/tree/{name}?reset&token={token}")
    page.get_by_text(re.compile(r"\| Idle")).wait_for(timeout=idle_timeout_ms)
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel").get_by_text("Run All Cells", exact=True).click()
