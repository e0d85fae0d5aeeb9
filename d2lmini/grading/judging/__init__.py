"""Judging one student's notebook from its finished run (`run.notebook`): judge each recorded
exercise with its check (`judge`), give it its points and message (`marks`), and gather the
evidence the instructor reads (`evidence`, `similarity`). Imports only `base`, `assignment` and
`run`."""
