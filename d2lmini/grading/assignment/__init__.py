"""What is graded: the exercises (`manifest`, `exercises.json`), the instructor's points and
settings (`config`, `settings`, `points.toml`) and the release of the notebooks with numbers
drawn from the instructor's seed (`release`). Imports only `base`."""
