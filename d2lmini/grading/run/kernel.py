"""A fresh, limited kernel for a submitted notebook, which the grader runs cells in (`Kernel.run`).

The kernel is a child process started through `d2lmini.grading.run.limits` (rlimits on its memory,
address space, processes and file sizes) inside a bubblewrap sandbox (`d2lmini.grading.run.sandbox`:
no network, the system read-only, its scratch folder a size-capped tmpfs, its own PID namespace,
a cgroup of its own where there can be one), talking to the grader over Unix sockets it makes in
a small tmpfs of its own, which the grader reaches through the sandbox's root in /proc (a link in
a short temporary folder of the grader's, beside the connection file the kernel reads). The
functions it saved are copied out of its scratch folder before it ends (`Kernel.bring_out`).
Without a sandbox (no bwrap) it runs as the grader's user, with HOME, TMPDIR and caches in the
scratch folder and a proxy that answers nothing, and the results say it was not isolated. Each
cell runs with a time limit; a cell still running then is interrupted, and a cell that prints
more than `OUTPUT_LIMIT` characters is stopped. A cell that ends the kernel (`os._exit`, a crash, too
much memory) is reported as such, so that the notebook is run again in a fresh kernel without it
(`d2lmini.grading.run.notebook`). `Kernel.shutdown` returns once every process of the sandbox is gone.
"""

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path, PurePosixPath

import zmq
from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpecManager

from d2lmini.grading.assignment.settings import Limits
from d2lmini.grading.base.files import create_plain, read_plain
from d2lmini.grading.base.remote import MIME
from d2lmini.grading.run import handover, sandbox
from d2lmini.grading.run.limits import limited_command
from d2lmini.i18n import _

OUTPUT_LIMIT = 1_000_000  # characters a cell may print before it is stopped
RECORD_LIMIT = 64 * 2**20  # characters of one grading message the grader reads (a record)
# Bytes of one message the grader's sockets take from a kernel (ZeroMQ's MAXMSGSIZE): a larger one
# ends that socket's connection before the grader holds it, so no kernel can fill the grader's memory.
MESSAGE_LIMIT = 4 * RECORD_LIMIT
LOST_OUTPUT_SECONDS = 10.0  # after the cell's reply, how long its outputs may take before they count as lost
KERNEL_NAME = "d2lmini-grading"
BLOCKED_NETWORK = "http://127.0.0.1:9"  # the discard port: every HTTP(S) request fails at once
CONNECTION, IPC = "connection.json", "ipc"  # in a kernel's sockets folder: its connection file, its sockets


def _kernel_spec_dir(scratch: Path, private: Path, limits: Limits, sockets: Path, cgroup) -> Path:
    """A kernel spec (outside the scratch folder, which the student's code may write) for the kernel, which
    starts in `cgroup` (a `cgroups.Cgroup`, or None) and, in bubblewrap, reads its connection file from
    `sockets` and makes its Unix sockets in `sockets`/`IPC`."""
    folder = private / KERNEL_NAME
    folder.mkdir(parents=True, exist_ok=True)
    program = limited_command(limits.memory_mb, limits.file_mb,
                          [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"])
    spec = {"display_name": "d2lmini grading", "language": "python"}
    if sandbox.probe().namespaces:
        # Interrupted by a message: a signal would reach bwrap, not the kernel inside it.
        argv = sandbox.command(program, scratch, sandbox.clean_env(scratch), status=private / "status",
                               sockets=sockets / IPC, scratch_mb=limits.scratch_mb, cgroup=cgroup,
                               inputs=(sockets / CONNECTION,))
        spec |= {"argv": argv, "interrupt_mode": "message"}
    elif sandbox.probe().isolated:  # setpriv execs the kernel: a signal reaches it
        spec["argv"] = handover.command("{connection_file}", scratch, sandbox.SANDBOX_UID,
                                        sandbox.command(program, scratch, sandbox.clean_env(scratch),
                                                        cgroup=cgroup))
    else:
        spec["argv"] = program
    (folder / "kernel.json").write_text(json.dumps(spec), "utf-8")
    return folder.parent


def kernel_env(scratch: Path) -> dict:
    """The unsandboxed kernel's environment: the grader's, with paths into the scratch folder, no network."""
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(sandbox.clean_env(scratch) | {"PATH": env.get("PATH", ""),
                                             "PYTHONPATH": env.get("PYTHONPATH", "")})
    env.update(http_proxy=BLOCKED_NETWORK, https_proxy=BLOCKED_NETWORK, HTTP_PROXY=BLOCKED_NETWORK,
               HTTPS_PROXY=BLOCKED_NETWORK, PIP_FIND_LINKS="", PIP_CONFIG_FILE=os.devnull)
    return env


class GraderFailure(RuntimeError):
    """The grader's own failure on a student's files (a kernel or a sandbox that did not start, a dead
    worker): never the student's, so it is retried once and then recorded as "not graded", never as 0."""


class Kernel:
    """A fresh kernel for one submission, started in `scratch` under `limits`.

    A kernel that does not start raises `GraderFailure`: no code of the student's has run yet.
    """

    def __init__(self, scratch: Path, limits: Limits):
        self.scratch, self.limits = scratch, limits
        self.private = scratch.parent / f".{scratch.name}-grader"  # beside the scratch, outside the sandbox
        shutil.rmtree(self.private, ignore_errors=True)
        # Unix socket paths must be short (107 bytes): not in a scratch folder that may lie deep.
        short = "/tmp" if Path("/tmp").is_dir() else None
        self.sockets = Path(tempfile.mkdtemp(prefix="d2lmini-kernel-", dir=short))
        try:
            self.cgroup = sandbox.new_cgroup(limits.memory_mb)
        except OSError as error:
            shutil.rmtree(self.sockets, ignore_errors=True)
            raise GraderFailure(
                _("the grading kernel did not start ({error})").format(error=error)) from error
        spec_dir = _kernel_spec_dir(scratch, self.private, limits, self.sockets, self.cgroup)
        specs = KernelSpecManager(kernel_dirs=[str(spec_dir)])
        isolation = sandbox.probe()
        # Unix sockets cross the sandbox's network namespace; TCP would not. The kernel makes them in a small
        # tmpfs of its own (`sandbox.command`), which the grader reaches through the sandbox's root in /proc:
        # nothing of the sandbox's is written in the machine's /tmp. A restarted kernel gets a fresh folder.
        ipc = {"transport": "ipc", "ip": str(self.sockets / IPC / "kernel")}
        ports = ipc if isolation.namespaces else {}
        self.context = capped_context(MESSAGE_LIMIT)
        self.manager = KernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=specs, context=self.context,
                                     **ports)
        # Written by the grader (root, maybe) in its own fresh folder, never in the scratch folder, where an
        # earlier kernel of the student's may have planted a link under this name. A bubblewrap sandbox sees
        # it there, read-only; in "user" isolation `handover` copies it for the sandbox user.
        self.manager.connection_file = str(self.sockets / CONNECTION)
        env = sandbox.clean_env(scratch) if isolation.isolated else kernel_env(scratch)
        env = {} if isolation.namespaces else env  # bwrap sets the kernel's environment itself
        # The kernel's own stderr (ipykernel's warnings, a student's os.write(2, ...)) is not the grader's.
        try:
            self.manager.start_kernel(env=env, cwd=str(scratch), stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
        except Exception as error:  # the sandbox's program, or the folder it starts in, is not there
            self.context.destroy(linger=0)
            shutil.rmtree(self.sockets, ignore_errors=True)
            if self.cgroup is not None:
                self.cgroup.remove()
            raise GraderFailure(
                _("the grading kernel did not start ({error})").format(error=error)) from error
        self.client = self.manager.client(context=self.context)
        try:
            if isolation.namespaces:
                self._reach_sockets()
            self.client.start_channels()
            self.client.wait_for_ready(timeout=120)
        except BaseException as error:  # a kernel that never answered: end it, and its sockets' folder
            self.shutdown()
            if isinstance(error, Exception):
                raise GraderFailure(
                    _("the grading kernel did not start ({error})").format(error=error)) from error
            raise

    def _reach_sockets(self, seconds: float = 60.0) -> None:
        """Make the sockets' folder, as the grader names it, the started sandbox's own (a link into its root
        in /proc), so that the grader's sockets reach the kernel's."""
        deadline = time.monotonic() + seconds
        while (pid := sandbox.sandbox_pid(self.private / "status")) is None:
            if time.monotonic() > deadline or not self.alive():
                raise RuntimeError(_("the kernel's sandbox did not start"))
            time.sleep(0.02)
        os.symlink(f"/proc/{pid}/root{self.sockets / IPC}", self.sockets / IPC)

    def alive(self) -> bool:
        return self.manager.is_alive()

    def run(self, code: str, seconds: float, on_message=None) -> tuple[str | None, bool]:
        """Run `code`; return (what went wrong or None, whether the kernel ended).

        What went wrong is "time limit" or "printing" (values the judge compares), or in words.

        `on_message(content)` gets the content of each grading message the code publishes.
        """
        msg_id = self.client.execute(code, store_history=False, allow_stdin=False)
        deadline, printed, interrupted, error = time.monotonic() + seconds, 0, None, None
        replied = None  # when the cell's execute_reply came (its outputs follow at once)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 and interrupted is None:
                interrupted, deadline = "time limit", time.monotonic() + 10
                self.manager.interrupt_kernel()
                continue
            if remaining <= 0:
                return interrupted or error, self._end()
            try:
                message = self.client.get_iopub_msg(timeout=min(remaining, 1.0))
            except Exception:  # no message within a second: is the kernel still there?
                if not self.alive():
                    return error or _("the kernel stopped"), True
                replied = replied or self._replied(msg_id)
                if replied and time.monotonic() - replied > LOST_OUTPUT_SECONDS:
                    # The cell is done, but its outputs never came: a message over MESSAGE_LIMIT ended
                    # the connection. Run the notebook again without this cell, in a fresh kernel.
                    problem = _("the cell sent a message over {mb} MB").format(mb=MESSAGE_LIMIT // 2**20)
                    return problem, self._end()
                continue
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = message["msg_type"], message["content"]
            if kind == "stream":
                printed += len(content.get("text", ""))
                if printed > OUTPUT_LIMIT and interrupted is None:
                    interrupted, deadline = "printing", time.monotonic() + 10
                    self.manager.interrupt_kernel()
            elif kind == "error":
                error = f"{content.get('ename', 'Error')}: {content.get('evalue', '')}"[:300]
            elif kind in ("display_data", "update_display_data") and MIME in content.get("data", {}):
                if on_message is not None and len(json.dumps(content["data"][MIME])) <= RECORD_LIMIT:
                    on_message(content["data"][MIME])
            elif kind == "status" and content.get("execution_state") == "idle":
                return interrupted or error, False

    def _replied(self, msg_id: str) -> float | None:
        """The time now if the shell channel holds the execute_reply to `msg_id`, else None."""
        while True:
            try:
                reply = self.client.get_shell_msg(timeout=0)
            except Exception:  # nothing waiting
                return None
            if reply["parent_header"].get("msg_id") == msg_id:
                return time.monotonic()

    def _end(self) -> bool:
        """Kill a kernel that did not stop when interrupted; report that it ended."""
        self.shutdown()
        return True

    def bring_out(self, files: list[str], limit: int) -> None:
        """Copy `files` (paths relative to the scratch folder, of at most `limit` bytes each) from the
        running sandbox, where the scratch folder is a tmpfs of its own, into the grader's scratch folder,
        where the judge reads them once the sandbox is gone. Read as `files.read_plain` reads: no link
        followed; a file that is not there, or is not a plain file, is not copied. Elsewhere the kernel
        writes in the grader's scratch folder itself: nothing to do."""
        if not sandbox.probe().namespaces or not self.alive():
            return
        try:
            inside = sandbox.open_inside(self.private / "status", self.scratch)
        except OSError:  # its sandbox ended meanwhile, or its scratch folder is a link now: nothing saved
            return
        try:
            for relative in dict.fromkeys(files):
                with contextlib.suppress(OSError, ValueError):
                    data = read_plain(inside, relative, limit)
                    if len(data) <= limit:
                        *folders, name = PurePosixPath(relative).parts
                        (self.scratch / Path(*folders)).mkdir(parents=True, exist_ok=True)
                        create_plain(self.scratch / Path(*folders), name, data, 0o644)
        finally:
            os.close(inside)

    def peak_mb(self) -> float:
        """The peak resident memory of the kernel's processes so far, in MB (Linux; else 0)."""
        pid = getattr(self.manager.provisioner, "pid", None)
        inner = sandbox.sandbox_pid(self.private / "status")
        return max((peak_of_tree(p) for p in (pid, inner) if p), default=0.0)

    def shutdown(self) -> None:
        """Stop the kernel and its channels, and wait until every process of its sandbox is gone.

        Always safe to call; keeps the kernel's peak memory in `peak`.
        """
        self.peak = max(getattr(self, "peak", 0.0), self.peak_mb() if self.manager.has_kernel else 0.0)
        try:
            self.client.stop_channels()
        finally:
            if self.manager.has_kernel:
                self.manager.shutdown_kernel(now=True)
            if not self.context.closed:
                self.context.destroy(linger=0)
            gone = sandbox.wait_gone(self.private / "status")
            shutil.rmtree(self.sockets, ignore_errors=True)
            if gone and self.cgroup is not None:
                self.cgroup.remove()
            if not gone:
                raise RuntimeError(_("the sandbox of {folder} did not end").format(folder=self.scratch))


def capped_context(limit: int) -> zmq.Context:
    """A ZeroMQ context whose sockets drop a peer that sends a message of over `limit` bytes."""
    context = zmq.Context()
    context.setsockopt(zmq.MAXMSGSIZE, limit)
    return context


def peak_of_tree(pid: int) -> float:
    """The largest peak resident memory (VmHWM, MB) among `pid` and its descendants."""
    peak, stack, seen = 0.0, [pid], set()
    while stack and len(seen) < 1000:
        current = stack.pop()
        seen.add(current)
        try:
            status = Path(f"/proc/{current}/status").read_text()
        except OSError:
            continue
        try:
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:  # a kernel built without CONFIG_PROC_CHILDREN: this process alone
            children = []
        line = next((x for x in status.splitlines() if x.startswith("VmHWM:")), "VmHWM: 0 kB")
        peak = max(peak, int(line.split()[1]) / 1024)
        stack += [int(c) for c in children if int(c) not in seen]
    return peak
