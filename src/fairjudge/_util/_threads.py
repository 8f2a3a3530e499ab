"""BLAS thread control for many small linear-algebra calls."""

from __future__ import annotations

from contextlib import contextmanager

from threadpoolctl import threadpool_limits


@contextmanager
def single_threaded_blas():
    """Run the block with one BLAS thread.

    Thousands of factorisations of 30 x 30 matrices (the active loop, the experiments) are
    several times slower when OpenBLAS wakes its thread pool for each one.
    """
    with threadpool_limits(limits=1, user_api="blas"):
        yield


@contextmanager
def factorising_blas(threads: int | None):
    """Run the block with numpy's BLAS on one thread and scipy's on ``threads``.

    numpy and scipy each load their own OpenBLAS with its own thread pool. A fit alternates
    between numpy's small matrix-vector products and scipy's factorisations; with both
    pools awake, the idle pool's spinning threads steal the cores. So numpy's pool always
    gets one thread, and scipy's (which factors the Hessian) gets ``threads`` (None: as
    many as it has). With one shared BLAS (a source build) it gets ``threads``.
    """
    from threadpoolctl import ThreadpoolController

    blas = [c for c in ThreadpoolController().lib_controllers if c.user_api == "blas"]
    previous = [c.num_threads for c in blas]
    try:
        for c in blas:
            numpy_pool = "numpy" in str(c.filepath) and len(blas) > 1
            wanted = 1 if numpy_pool else (threads or c.num_threads)
            if wanted != c.num_threads:
                c.set_num_threads(wanted)
        yield
    finally:
        for c, n in zip(blas, previous):
            if c.num_threads != n:
                c.set_num_threads(n)
