"""Start a program with limits on its memory and on the files it writes (the grader's kernels).

    python -I d2lmini/grading/limits.py MEMORY_MB FILE_MB -- PROGRAM ARGS...

RLIMIT_DATA bounds the memory the program allocates (a 10 GB tensor fails with an error in its
cell instead of exhausting the machine); RLIMIT_FSIZE bounds each file it writes. Where the
system has no such limit (Windows), the program starts without it.

The wrapper runs by its path (`limited_command`), never as `-m d2lmini.grading.limits`: that
would import the package, whose `__init__` imports torch whole, 2.5 s spent before every graded
kernel and every process that calls a student's function only to set two limits.
"""

import os
import sys
from pathlib import Path


def set_limits(memory_mb: int, file_mb: int) -> None:
    """Lower this process's data-segment and file-size limits (they pass on to what it runs)."""
    try:
        import resource
    except ImportError:  # Windows: no rlimits
        return
    for limit, megabytes in ((resource.RLIMIT_DATA, memory_mb), (resource.RLIMIT_FSIZE, file_mb)):
        _, hard = resource.getrlimit(limit)
        value = megabytes * 2**20
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(limit, (value, value))


def limited_command(memory_mb: int, file_mb: int, program: list[str]) -> list[str]:
    """The argv that starts `program` under these limits; the wrapper imports only the standard library.

    `-I`: neither this folder nor PYTHONPATH is on the wrapper's path (the program after `--` gets the
    environment as it is).
    """
    return [sys.executable, "-I", str(Path(__file__).resolve()), str(memory_mb), str(file_mb), "--", *program]


def main(argv: list[str]) -> None:
    """Apply the limits in `argv` and replace this process by the program after `--`."""
    memory_mb, file_mb, separator, *program = argv
    if separator != "--" or not program:
        raise SystemExit("usage: python -I limits.py MEMORY_MB FILE_MB -- PROGRAM ARGS...")
    set_limits(int(memory_mb), int(file_mb))
    os.execv(program[0], program)


if __name__ == "__main__":
    main(sys.argv[1:])
