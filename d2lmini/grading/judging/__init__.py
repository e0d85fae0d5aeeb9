"""Judging one student's notebook: run it (`judge`, through `run`), mark each exercise, and
gather the evidence the instructor reads (`evidence`, `similarity`). Imports only `base`,
`assignment` and `run`."""
