"""Start a program with limits on its memory and on the files it writes (the grader's kernels).

    python -m d2lmini.grading.limits MEMORY_MB FILE_MB -- PROGRAM ARGS...

RLIMIT_DATA bounds the memory the program allocates (a 10 GB tensor fails with an error in its
cell instead of exhausting the machine); RLIMIT_FSIZE bounds each file it writes. Where the
system has no such limit (Windows), the program starts without it.
"""

import os
import sys


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


def main(argv: list[str]) -> None:
    """Apply the limits in `argv` and replace this process by the program after `--`."""
    memory_mb, file_mb, separator, *program = argv
    if separator != "--" or not program:
        raise SystemExit("usage: python -m d2lmini.grading.limits MEMORY_MB FILE_MB -- PROGRAM ARGS...")
    set_limits(int(memory_mb), int(file_mb))
    os.execv(program[0], program)


if __name__ == "__main__":
    main(sys.argv[1:])
