"""Worker process pools that stop cleanly on Ctrl-C: workers ignore SIGINT (the parent alone sees it
and exits 130 with one line), and an interrupted pool is torn down without waiting for its jobs."""

from __future__ import annotations

import contextlib
import signal
from concurrent.futures import ProcessPoolExecutor


def ignore_sigint() -> None:
    """Pool initializer. NOTE: Ctrl-C reaches the whole process group; without this every worker
    prints its own KeyboardInterrupt traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def process_pool(max_workers: int, mp_context=None):
    """A ProcessPoolExecutor whose workers ignore SIGINT. On KeyboardInterrupt (or any exception) in
    the body, pending jobs are cancelled and running workers terminated, then the exception goes on."""
    pool = ProcessPoolExecutor(max_workers=max_workers, mp_context=mp_context, initializer=ignore_sigint)
    try:
        yield pool
    except BaseException:
        # NOTE: _processes is the only handle on the workers; shutdown(wait=False) alone lets the
        # running jobs finish (minutes for a large NVRTC program) before the interpreter exits.
        workers = list((getattr(pool, "_processes", None) or {}).values())
        manager = getattr(pool, "_executor_manager_thread", None)  # shutdown() drops the reference
        pool.shutdown(wait=False, cancel_futures=True)
        for process in workers:
            process.terminate()
        for process in workers:
            process.join(timeout=5)
        # the executor's manager thread marks the killed jobs' futures as failed: wait for it, so the
        # caller never sees a future still "running" on a worker that is gone
        if manager is not None:
            manager.join(timeout=5)
        raise
    pool.shutdown(wait=True)
