"""Everything that starts and runs a student's code: the sandbox (`sandbox`, `cgroups`,
`reasons`), the limits (`limits`), the kernel and its side inside it (`kernel`, `agent`,
`handover`), and the caller that calls a saved function for its check (`caller`, `copies`).
Imports only `base` and `assignment`. `limits.py` and `handover.py` also run by their paths."""
