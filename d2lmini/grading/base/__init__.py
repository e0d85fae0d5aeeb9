"""The grader's lowest layer, which every wing uses: values on the wire between a student's
kernel, the caller and the grading process (`remote`), and the grader's own safe file
operations (`files`, which `run/handover.py` also loads by its path, alone)."""
