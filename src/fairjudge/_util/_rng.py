"""Seeded randomness helpers."""

from __future__ import annotations

import hashlib

import numpy as np


def as_generator(rng) -> np.random.Generator:
    """Return a ``numpy.random.Generator`` from anything ``default_rng`` accepts."""
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(rng)


def content_seed(*parts: object) -> int:
    """A 64-bit seed derived from the content of ``parts`` (stable across processes).

    Used where a random choice must depend only on *what* is being decided (a pair, a seed),
    never on the order or timing in which decisions are made.
    """
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little")
