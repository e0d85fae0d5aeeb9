"""Notebook 08's exercise is the capstone: its pieces are in solutions/capstone.py.

`ANSWERS` is empty because 08 asks no question; the tests that read every notebook's answers
(tests/test_exercise_outputs.py) find none to search for here.
"""

ANSWERS: dict = {}
