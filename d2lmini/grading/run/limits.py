"""Start a program with limits on its memory, its processes and the files it writes (the grader's sandboxes).

    python -I d2lmini/grading/run/limits.py MEMORY_MB FILE_MB ADDRESS_MB TASKS -- PROGRAM ARGS...

Each limit is the kernel's, on this process and each it starts (rlimits pass on):

- RLIMIT_DATA, MEMORY_MB: the memory it allocates for itself (a 10 GB tensor fails with an error
  in its cell instead of exhausting the machine);
- RLIMIT_AS, ADDRESS_MB: everything it maps, shared memory too (an mmap of /dev/shm, a MAP_SHARED
  region), which RLIMIT_DATA does not count. A kernel maps its libraries before any student's code
  runs, and more for a CUDA build of torch than for a CPU one, so ADDRESS_MB is MEMORY_MB plus the
  address space that Python needs to import what a graded kernel imports, measured once per
  process (`code_mb`), plus `RESERVE_MB` for what it reserves later (threads, malloc's arenas);
- RLIMIT_NPROC, TASKS: its processes and threads, counted per user: in a bubblewrap sandbox of a
  grader that is not root, the sandbox's own; as uid 65534 ("user" isolation), all of that user's;
  for root, not at all (the kernel exempts it);
- RLIMIT_FSIZE, FILE_MB: each file it writes.

What its processes hold together, and the files it keeps, no rlimit bounds: a cgroup of its own
(`d2lmini.grading.run.cgroups`) and size-capped file systems (`d2lmini.grading.run.sandbox`) do, where
this machine has them. Where the system has no rlimits (Windows), the program starts without them.

The wrapper runs by its path (`limited_command`), never as `-m d2lmini.grading.run.limits`: that
would import the package, whose `__init__` imports torch whole, 2.5 s spent before every graded
kernel and every process that calls a student's function only to set its limits.
"""

import functools
import os
import subprocess
import sys
from pathlib import Path

TASKS = 128  # processes and threads of one sandbox (a graded kernel has about 15)
RESERVE_MB = 512  # address space a kernel reserves after its imports, beyond the memory it allocates
FALLBACK_CODE_MB = 2048  # where the measurement fails (the kernel's own start then says why)
KERNEL_IMPORTS = "import ipykernel, d2lmini.grading.run.agent"  # what every graded kernel imports first
MEASURE = KERNEL_IMPORTS + "; print(open('/proc/self/status').read().split('VmPeak:')[1].split()[0])"
ENVIRONMENT = {"MALLOC_ARENA_MAX": "2", "OMP_NUM_THREADS": "1"}  # a kernel's, from `sandbox.clean_env`


def set_limits(memory_mb: int, file_mb: int, address_mb: int | None = None, tasks: int | None = None) -> None:
    """Lower this process's limits (they pass on to what it runs); None leaves that limit as it is."""
    try:
        import resource
    except ImportError:  # Windows: no rlimits
        return
    wanted = [(resource.RLIMIT_DATA, memory_mb * 2**20), (resource.RLIMIT_FSIZE, file_mb * 2**20)]
    if address_mb is not None:
        wanted.append((resource.RLIMIT_AS, address_mb * 2**20))
    if tasks is not None and hasattr(resource, "RLIMIT_NPROC"):
        wanted.append((resource.RLIMIT_NPROC, tasks))
    for limit, value in wanted:
        _, hard = resource.getrlimit(limit)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(limit, (value, value))


@functools.cache
def code_mb() -> int:
    """The address space (MB) a fresh Python of this installation maps to import a graded kernel's modules.

    Measured once per process, as the grader: only installed code runs, from the root folder.
    """
    if not Path("/proc/self/status").exists():
        return FALLBACK_CODE_MB
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(Path(__file__).resolve().parents[3]),
           **ENVIRONMENT}
    try:
        done = subprocess.run([sys.executable, "-c", MEASURE], capture_output=True, text=True, timeout=300,
                              env=env, cwd="/")
        return int(done.stdout.split()[-1]) // 1024 + 1 if done.returncode == 0 else FALLBACK_CODE_MB
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return FALLBACK_CODE_MB


def address_mb(memory_mb: int) -> int:
    """The address space (MB) a sandbox's process may map: `memory_mb`, its code, and a reserve."""
    return memory_mb + code_mb() + RESERVE_MB


def limited_command(memory_mb: int, file_mb: int, program: list[str]) -> list[str]:
    """The argv that starts `program` under these limits; the wrapper imports only the standard library.

    `-I`: neither this folder nor PYTHONPATH is on the wrapper's path (the program after `--` gets the
    environment as it is).
    """
    return [sys.executable, "-I", str(Path(__file__).resolve()), str(memory_mb), str(file_mb),
            str(address_mb(memory_mb)), str(TASKS), "--", *program]


def main(argv: list[str]) -> None:
    """Apply the limits in `argv` and replace this process by the program after `--`."""
    memory_mb, file_mb, address, tasks, separator, *program = argv
    if separator != "--" or not program:
        raise SystemExit("usage: python -I limits.py MEMORY_MB FILE_MB ADDRESS_MB TASKS -- PROGRAM ARGS...")
    set_limits(int(memory_mb), int(file_mb), int(address), int(tasks))
    os.execv(program[0], program)


if __name__ == "__main__":
    main(sys.argv[1:])
