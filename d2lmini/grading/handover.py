"""Hand a kernel's connection file to the sandbox user, then start the kernel as that user.

    python -m d2lmini.grading.handover CONNECTION_FILE -- PROGRAM ARGS...

For "user" isolation (`d2lmini.grading.sandbox`, a grader running as root without user
namespaces): jupyter_client writes the connection file readable by root alone just before it
starts the kernel, so this starter, still root, copies it to a file the sandbox user owns and
replaces the program's mention of the original by the copy before it runs the program
(`setpriv ... ipykernel_launcher -f FILE`).
"""

import os
import shutil
import sys

from d2lmini.grading.sandbox import SANDBOX_UID


def main(argv: list[str]) -> None:
    """Copy the connection file for the sandbox user, then replace this process by the program."""
    original, separator, *program = argv
    if separator != "--" or not program:
        raise SystemExit("usage: python -m d2lmini.grading.handover CONNECTION_FILE -- PROGRAM ARGS...")
    copy = original.removesuffix(".json") + "-user.json"
    shutil.copyfile(original, copy)
    os.chown(copy, SANDBOX_UID, SANDBOX_UID)
    os.chmod(copy, 0o600)
    os.execv(program[0], [copy if arg == original else arg for arg in program])


if __name__ == "__main__":
    main(sys.argv[1:])
