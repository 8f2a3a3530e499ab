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
