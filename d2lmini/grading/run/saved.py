"""The functions a student's kernel saved for grading (`agent.save_function`, by value, into its scratch
folder): which files a run's records name (`function_files`, brought out of the sandbox before it
ends), and reading one back for the judge (`saved_function`), never through a link and at most
`FUNCTION_LIMIT` bytes.
"""

from pathlib import Path

from d2lmini.grading.base.files import NotPlainFile, read_plain

FUNCTION_LIMIT = 64 * 2**20  # bytes of a saved function the grader passes on to a caller process


def function_files(records: dict) -> list[str]:
    """The files, relative to the scratch folder, that the functions in a run's `records` were saved in."""
    return [str(data["file"]) for values in records.values() if isinstance(values, dict)
            for data in values.values()
            if isinstance(data, dict) and data.get("t") == "function" and isinstance(data.get("file"), str)]


def saved_function(data: dict, scratch: Path) -> bytes | None:
    """The saved function's bytes, read from its file inside the kernel's scratch folder; None if there is
    none there or it is too large.

    The scratch folder is the student's: the file is read without following a link anywhere on its way
    (`files.read_plain`), so a link planted there, to a classmate's files or the grader's, is refused
    (`NotPlainFile`, the student's fault) and nothing is read through it.
    """
    try:
        content = read_plain(scratch, str(data.get("file", "")), FUNCTION_LIMIT)
    except NotPlainFile:
        raise
    except (OSError, ValueError):
        return None
    return content if len(content) <= FUNCTION_LIMIT else None
