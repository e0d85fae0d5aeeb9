"""Everything that starts and runs a student's code: the sandbox (`sandbox`, `cgroups`,
`reasons`), the limits (`limits`), whether this machine can start one at all (`preflight`), a
submitted notebook's run, handed back finished (`notebook`), in its kernel with the kernel's side
inside it (`kernel`, `agent`, `handover`), the functions that kernel saved (`saved`), and the
process that calls one for its check (`calling`, the grader's side; `caller` and `copies`, inside
it). Imports only `base` and `assignment`. `limits.py` and `handover.py` also run by their paths."""
