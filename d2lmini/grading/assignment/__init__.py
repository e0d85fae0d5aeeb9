"""What is graded: the exercises (`manifest`, `exercises.json`), the instructor's points and
settings (`config`, `settings`, `points.toml`) and the release of the notebooks with numbers
drawn from the instructor's seed (`release`); and what a student hands in for it, read as a
notebook and matched to one of the course's (`submission`). Imports only `base`."""
