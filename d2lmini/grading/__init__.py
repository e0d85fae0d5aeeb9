"""Grading a class's submitted notebooks, for instructors (docs/instructors.md).

`python -m d2lmini.grading SUBMISSIONS --out OUT [--config points.toml]` runs each notebook in a
fresh, limited kernel (`kernel`, `limits`), records what its check cells pass (`agent`), judges
it in this process with the notebooks' own checks on the instructor's seed (`judge`, `remote`),
and writes a gradebook and feedback (`gradebook`); `gradescope` builds the same as a Gradescope
autograder. The exercises come from the released notebooks (`manifest`), the points from a
TOML file (`config`).
"""
