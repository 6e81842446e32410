"""Where a sweep's batches run: in this process, in a local process pool, or on Ray.

Each executor yields a batch's results as the batch completes. A worker that dies without a Python
exception stops the sweep with ``WorkerLost`` rather than leaving it waiting for ever.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
from collections.abc import Iterator
from typing import Any

from srezero.sweep.runner import Batch, run_batch


def _ignore_interrupt() -> None:
    """Ctrl-C is the sweep process's to handle (it stops the pool); workers that also raised it printed
    a traceback each."""
    import signal

    from srezero.agents import runner

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the sweep turns SIGTERM into an interrupt; the pool's own
    # terminate() must still just end a worker
    runner.CAUGHT = (*runner.CAUGHT, KeyboardInterrupt)  # from here on only an agent can raise it


def _start_method() -> str:
    method = os.environ.get("SREZERO_MP_START")
    if method:
        return method
    return "fork" if "fork" in mp.get_all_start_methods() and sys.platform != "darwin" else "spawn"


def execute(batches: list[Batch], workers: int, executor: str = "process",
            ray_address: str | None = None) -> Iterator[list[tuple[dict[str, Any], bytes | None]]]:
    """Yield each batch's results as it completes. ``workers <= 1`` runs in this process."""
    if executor == "ray":
        yield from _ray(batches, workers, ray_address)
        return
    if executor != "process":
        raise ValueError(f"unknown executor {executor!r}; use process or ray")
    if workers <= 1 or len(batches) <= 1:
        for b in batches:
            yield run_batch(b)
        return
    yield from _process_pool(batches, min(workers, len(batches)))


class WorkerLost(RuntimeError):
    """A worker process died without a Python exception; the sweep stops rather than wait for it."""


def _process_pool(batches: list[Batch], workers: int) -> Iterator[list[tuple[dict[str, Any], bytes | None]]]:
    """concurrent.futures rather than multiprocessing.Pool: a worker that dies (``os._exit`` in an agent,
    a crash in native code, the out-of-memory killer) breaks the executor, where Pool replaces the worker
    and waits for ever for the batch it took."""
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    pool = ProcessPoolExecutor(workers, mp_context=mp.get_context(_start_method()), initializer=_ignore_interrupt)
    futures = {pool.submit(run_batch, b): b for b in batches}
    finished = False
    try:
        for future in as_completed(futures):
            try:
                results = future.result()
            except BrokenProcessPool:
                lost = [futures[f] for f in futures if not f.done() or f.cancelled() or f.exception() is not None]
                raise WorkerLost(_lost_message(lost)) from None
            yield results
        finished = True
    finally:
        if not finished:  # interrupted, stopped early or broken: end the workers now, as Pool.terminate did
            _terminate(pool)
        pool.shutdown(wait=True, cancel_futures=True)


def _terminate(pool: Any) -> None:
    stop = getattr(pool, "terminate_workers", None)  # Python 3.14
    if stop is not None:
        stop()
        return
    for proc in list((getattr(pool, "_processes", None) or {}).values()):  # private, but there since 3.2
        proc.terminate()


def _lost_message(lost: list[Batch]) -> str:
    agents = sorted({a.name for b in lost for a in b.agents.values()})
    return (f"a worker process died without a Python exception (os._exit, a crash in native code or the "
            f"out-of-memory killer) with up to {sum(len(b.jobs) for b in lost)} episode(s) of "
            f"{', '.join(agents)} left to run; the episodes recorded so far are kept. If an agent ends its process, fix it; "
            "`srezero run --task ID --seed N --agent NAME` runs one episode to find which. Then rerun the same "
            "command to resume")


def _ray(batches: list[Batch], workers: int, address: str | None) -> Iterator[list[tuple[dict[str, Any], bytes | None]]]:
    try:
        import ray
        from ray.util.multiprocessing import Pool
    except ImportError:
        raise ValueError("--executor ray needs Ray: pip install 'srezero[ray]'") from None
    from srezero.agents.registry import user_source

    # a user's agent module that is not installed (say, in the working directory) is shipped to the
    # workers, which run elsewhere: another directory locally, other machines on a cluster
    shipped = sorted({src for b in batches for a in b.agents.values() if (src := user_source(a.name))})
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                 **({} if address else {"num_cpus": max(1, workers)}),
                 **({"runtime_env": {"py_modules": shipped}} if shipped else {}))
    elif shipped:  # Ray ships local code only at ray.init: the caller's runtime_env must have done it
        env = ray.get_runtime_context().runtime_env
        if not (env.get("py_modules") or env.get("working_dir")):
            raise ValueError(f"Ray was initialised before the sweep without the agent code its workers need "
                             f"({', '.join(shipped)}, not installed): pass runtime_env={{'py_modules': "
                             f"{shipped!r}}} to ray.init, or install the module")
    pool = Pool(processes=max(1, workers))
    try:
        yield from pool.imap_unordered(run_batch, batches)
    finally:
        pool.terminate()
