"""Orca, the GNOME screen reader, on a private X display, with what it speaks written to a file.

`running_orca(workdir)` starts, each in its own process group and all under `workdir`: Xvfb on a
free display, a D-Bus session bus, the AT-SPI accessibility bus (at-spi2-core's launcher) and
Orca (`--debug-file`). Orca speaks through speech-dispatcher, which it starts itself; a private
speechd.conf gives it one output module, speech-dispatcher's own `sd_generic`, whose "synthesiser"
is a shell command that appends each utterance to a file, and libao's null driver as its sound
device, so nothing needs a sound card. What lands in that file is exactly the text Orca sent to
be spoken, in order. It yields a `ScreenReader` (the environment a browser must be started with,
the transcript, xdotool key presses on that display), and stops everything it started afterwards.

Orca's say-all on page load is turned off (orca-customizations.py), so a test hears only what
it asks for; the page summary ("Page has N headings, ...") and key echo stay on, as Orca ships.

`require_screen_reader()` returns nothing or skips saying which program is missing and which
Debian package gives it (fails instead when D2LMINI_REQUIRE_BROWSER=1, as in CI). Orca allows one
instance per user: it also skips if another Orca of this user is running (Orca's --replace would
kill it).
"""

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

# program -> the Debian (bookworm) package that installs it
PROGRAMS = {"Xvfb": "xvfb", "dbus-daemon": "dbus", "orca": "orca", "speech-dispatcher": "speech-dispatcher",
            "xdotool": "xdotool"}
FILES = {"/usr/libexec/at-spi-bus-launcher": "at-spi2-core",
         "/usr/lib/speech-dispatcher-modules/sd_generic": "speech-dispatcher"}
PACKAGES = ("orca", "xvfb", "speech-dispatcher", "xdotool", "dbus", "at-spi2-core")
SCREEN = (1280, 900)

SPEECHD_CONF = """\
LogLevel 3
LogDir "{logs}"
AudioOutputMethod "libao"
AddModule "transcript" "sd_generic" "{module}"
DefaultModule transcript
"""
# sd_generic runs GenericExecuteSynth with /bin/sh for each utterance, $DATA already shell-quoted
# (it escapes the quotes inside). One utterance, one line; no chunking, so a long alt is one line.
MODULE_CONF = """\
GenericExecuteSynth "printf '%s\\\\n' \\'$DATA\\' >> '{transcript}'"
GenericMaxChunkLength 100000
AddVoice "en" "MALE1" "transcript"
DefaultVoice "transcript"
GenericLanguage "en" "en" "utf-8"
"""
CUSTOMIZATIONS = """\
# Written by tests/browser/screen_reader.py: no say-all when a page loads (a test asks for what it
# wants to hear), and the debug file written line by line, so it is whole even if Orca is killed.
from orca import debug, settings
settings.sayAllOnLoad = False
if debug.debugFile:
    debug.debugFile.reconfigure(line_buffering=True)
"""


def missing_programs() -> list[str]:
    """Return 'name (package)' for each program the screen-reader test needs and cannot find."""
    missing = [f"{name} ({package})" for name, package in PROGRAMS.items() if shutil.which(name) is None]
    return missing + [f"{path} ({package})" for path, package in FILES.items() if not Path(path).exists()]


def other_orcas() -> list[int]:
    found = subprocess.run(["pgrep", "-u", str(os.getuid()), "-x", "orca"], capture_output=True, text=True)
    return [int(pid) for pid in found.stdout.split()]


def require_screen_reader() -> None:
    """Skip (fail when D2LMINI_REQUIRE_BROWSER=1) unless Orca and what it needs can run here."""
    problem = None
    missing = missing_programs()
    if missing:
        problem = (f"the screen-reader test needs {', '.join(missing)}: "
                   f"apt-get install {' '.join(PACKAGES)}")
    elif other_orcas():
        problem = (f"another Orca of this user is running (pid {other_orcas()}); Orca runs once per user "
                   "and its --replace would kill that one")
    if problem is None:
        return
    if os.environ.get("D2LMINI_REQUIRE_BROWSER") == "1":
        pytest.fail(f"D2LMINI_REQUIRE_BROWSER=1 but {problem}")
    pytest.skip(problem)


def normalized(text: str) -> str:
    return " ".join(text.split())


class ScreenReader:
    """A running Orca: the environment for the browser it reads, its transcript, and a keyboard."""

    def __init__(self, env: dict, transcript: Path, debug_file: Path):
        self.env, self.transcript, self.debug_file = env, transcript, debug_file

    def utterances(self) -> list[str]:
        """Everything Orca has spoken so far, one utterance a line, whitespace collapsed."""
        if not self.transcript.exists():
            return []
        return [normalized(line) for line in self.transcript.read_text("utf-8").splitlines() if line.strip()]

    def mark(self) -> int:
        """The number of utterances so far: pass it to `heard` or `wait_for` to hear only what follows."""
        return len(self.utterances())

    def heard(self, since: int = 0) -> str:
        """What Orca spoke after `mark()` returned `since`, as one string."""
        return " ".join(self.utterances()[since:])

    def wait_for(self, text: str, since: int = 0, timeout: float = 15.0) -> str:
        """Wait until Orca has spoken `text` (whitespace collapsed) after `since`; return all it spoke."""
        wanted = normalized(text)
        deadline = time.monotonic() + timeout
        while True:
            spoken = self.heard(since)
            if wanted in spoken:
                return spoken
            if time.monotonic() > deadline:
                raise AssertionError(f"Orca did not say {wanted!r} within {timeout:g} s; it said: {spoken!r}")
            time.sleep(0.1)

    def quiet(self, seconds: float = 0.5, timeout: float = 10.0) -> None:
        """Wait until Orca has said nothing new for `seconds` (at most `timeout`)."""
        deadline = time.monotonic() + timeout
        count, since = self.mark(), time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.1)
            now = self.mark()
            if now != count:
                count, since = now, time.monotonic()
            elif time.monotonic() - since >= seconds:
                return

    def press(self, *keys: str) -> None:
        """Press each key (xdotool's names: Tab, h, g, Insert+space, ...) on Orca's display, one at a time."""
        for key in keys:
            subprocess.run(["xdotool", "key", "--clearmodifiers", key], env=self.env, check=True, timeout=10)


def _start(command: list[str], env: dict, log: Path, **kwargs) -> subprocess.Popen:
    with open(log, "wb") as out:
        return subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, **kwargs)


def _read_line(fd: int, timeout: float, what: str) -> str:
    """Read one line a child writes to the pipe `fd` (Xvfb's display, dbus-daemon's address)."""
    deadline, data = time.monotonic() + timeout, b""
    os.set_blocking(fd, False)
    while b"\n" not in data:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start within {timeout:g} s")
        try:
            chunk = os.read(fd, 4096)
        except BlockingIOError:
            time.sleep(0.05)
            continue
        if not chunk:
            raise RuntimeError(f"{what} exited before it started")
        data += chunk
    return data.decode().strip()


def _start_and_read(command: list[str], env: dict, log: Path, started: list, timeout: float) -> str:
    """Start `command` (added to `started`), "{fd}" in it a pipe; return the line it writes there."""
    read, write = os.pipe()
    try:
        command = [part.replace("{fd}", str(write)) for part in command]
        started.append(_start(command, env, log, pass_fds=(write,)))
        os.close(write)
        write = None
        return _read_line(read, timeout, command[0])
    finally:
        os.close(read)
        if write is not None:
            os.close(write)


def _stop(process: subprocess.Popen, grace: float = 5.0) -> None:
    """SIGTERM the process group `process` leads, then SIGKILL it if it is still there after `grace`."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            pass
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(5)


def _stop_pidfile(path: Path) -> None:
    """Stop the daemon whose pid `path` holds (speech-dispatcher, which detaches from its parent)."""
    with contextlib.suppress(OSError, ValueError):
        pid = int(path.read_text().strip())
        os.kill(pid, signal.SIGTERM)
        for _ in range(30):
            os.kill(pid, 0)
            time.sleep(0.1)
        os.kill(pid, signal.SIGKILL)


def _wait_for_x(env: dict, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while subprocess.run(["xdotool", "getmouselocation"], env=env, capture_output=True).returncode != 0:
        if time.monotonic() > deadline:
            raise RuntimeError("Xvfb does not answer")
        time.sleep(0.1)


@contextlib.contextmanager
def running_orca(workdir: Path, startup_timeout: float = 30.0):
    """Start Xvfb, D-Bus, AT-SPI and Orca under `workdir`; yield a ScreenReader; stop them all."""
    home, logs = workdir / "home", workdir / "logs"
    for folder in (home, logs, home / ".config" / "speech-dispatcher", home / ".local" / "share" / "orca"):
        folder.mkdir(parents=True, exist_ok=True)
    # The runtime folder holds the sockets of speech-dispatcher and AT-SPI: a short path (a socket's
    # path must fit in 108 bytes), made private (mode 0700) by mkdtemp.
    runtime = Path(tempfile.mkdtemp(prefix="d2l-orca-", dir="/tmp"))
    transcript, debug_file = workdir / "speech.txt", workdir / "orca-debug.txt"
    module = home / ".config" / "speech-dispatcher" / "transcript.conf"
    module.write_text(MODULE_CONF.format(transcript=transcript), "utf-8")
    (home / ".config" / "speech-dispatcher" / "speechd.conf").write_text(
        SPEECHD_CONF.format(logs=logs, module=module), "utf-8")
    (home / ".libao").write_text("default_driver=null\n", "utf-8")
    (home / ".local" / "share" / "orca" / "orca-customizations.py").write_text(CUSTOMIZATIONS, "utf-8")
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("DBUS_", "AT_SPI", "XDG_", "SPEECHD_", "LC_"))
           and key not in ("DISPLAY", "NO_AT_BRIDGE", "LANGUAGE", "LANG")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
               XDG_DATA_HOME=str(home / ".local" / "share"), XDG_CACHE_HOME=str(home / ".cache"),
               XDG_RUNTIME_DIR=str(runtime), GSETTINGS_BACKEND="memory", GTK_MODULES="gail:atk-bridge",
               LANG="C.UTF-8", LC_ALL="C.UTF-8")  # Orca's words in English, whatever the machine's locale
    started: list[subprocess.Popen] = []
    try:
        screen = f"{SCREEN[0]}x{SCREEN[1]}x24"
        display = _start_and_read(["Xvfb", "-displayfd", "{fd}", "-screen", "0", screen, "-nolisten", "tcp"],
                                  env, logs / "xvfb.log", started, startup_timeout)
        env["DISPLAY"] = f":{display}"
        _wait_for_x(env)
        env["DBUS_SESSION_BUS_ADDRESS"] = _start_and_read(
            ["dbus-daemon", "--session", "--nofork", "--print-address={fd}"], env, logs / "dbus.log", started,
            startup_timeout)
        started.append(_start(["/usr/libexec/at-spi-bus-launcher", "--launch-immediately"], env,
                              logs / "at-spi.log"))
        started.append(_start(["orca", f"--debug-file={debug_file}"], env, logs / "orca.log"))
        reader = ScreenReader(env, transcript, debug_file)
        try:
            reader.wait_for("Screen reader on", timeout=startup_timeout)
        except AssertionError as error:
            output = (logs / "orca.log").read_text("utf-8", "replace")[-2000:]
            raise RuntimeError(f"Orca did not start: {error}\norca's output: {output}") from None
        yield reader
    finally:
        for process in reversed(started):
            _stop(process)
            if process.args[0] == "orca":
                _stop_pidfile(runtime / "speech-dispatcher" / "pid" / "speech-dispatcher.pid")
        shutil.rmtree(runtime, ignore_errors=True)
