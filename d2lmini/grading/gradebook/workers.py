"""Grade students in worker processes, so that a worker that dies costs no classmate a mark.

A worker process can die outright (the kernel's OOM killer sends SIGKILL): Python's process pool
then fails every task it still holds with `BrokenProcessPool`, those of students who did nothing
wrong. Each student whose task was lost so is graded once more, alone in a fresh process of their
own, so a worker that dies again ends only that student's grading; a student lost twice is given
to `failed` ("not graded — the grader failed"), never a mark of 0.
"""

import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool


def _pool(jobs: int, initializer: Callable, initargs: tuple) -> ProcessPoolExecutor:
    # processes, not threads: a guarded call redirects its process's sys.stdout while it runs
    return ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"),
                               initializer=initializer, initargs=initargs)


def _alone(grade: Callable, arguments: tuple, initializer: Callable, initargs: tuple):
    """`grade(*arguments)` in a process of its own; its death raises `BrokenProcessPool` for it alone."""
    with _pool(1, initializer, initargs) as pool:
        return pool.submit(grade, *arguments).result()


def grade_in_processes(tasks: Sequence[tuple], jobs: int, grade: Callable,
                       arguments: Callable[[tuple], tuple], done: Callable[[tuple, object], None],
                       failed: Callable[[tuple, BaseException], None], initializer: Callable,
                       initargs: tuple) -> None:
    """Run `grade(*arguments(task))` for each task in `jobs` processes; `done(task, result)` for each
    result, `failed(task, error)` for a task that raised or whose process died twice.

    `done` and `failed` run in this thread, one at a time.
    """
    lost = []
    with _pool(jobs, initializer, initargs) as pool:
        futures = {pool.submit(grade, *arguments(task)): task for task in tasks}
        for future in as_completed(futures):
            _settle(futures[future], future, done, failed, lost)
    if not lost:
        return
    with ThreadPoolExecutor(jobs) as threads:  # each lost student alone, in a fresh process
        futures = {threads.submit(_alone, grade, arguments(task), initializer, initargs): task
                   for task in lost}
        for future in as_completed(futures):
            _settle(futures[future], future, done, failed, None)


def _settle(task: tuple, future: Future, done: Callable, failed: Callable, lost: list | None) -> None:
    """Hand the outcome of `future` on: a result to `done`, an error to `failed`; a dead worker's task to
    `lost`, when given (a first loss), else to `failed`."""
    try:
        result = future.result()
    except BrokenProcessPool as error:
        if lost is not None:
            lost.append(task)
        else:
            failed(task, error)
        return
    except Exception as error:  # one student's failure costs the batch nothing
        failed(task, error)
        return
    done(task, result)
