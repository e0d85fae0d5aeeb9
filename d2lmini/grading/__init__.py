"""Grading a class's submitted notebooks, for instructors (docs/instructors.md).

`python -m d2lmini.grading SUBMISSIONS --out OUT [--config points.toml]` runs each notebook in a
fresh, limited kernel (`run/`), judges it in this process with the notebooks' own checks on the
instructor's seed (`judging/`), and writes a gradebook and feedback (`gradebook/`); `gradescope`
builds the same as a Gradescope autograder. The exercises, points and settings, and the release,
are `assignment/`; values on the wire and safe file operations, `base/`. Each wing imports only
those named before it here in reverse: base < assignment < run < judging < gradebook < the ways
in (`__main__`, `gradescope`).
"""
