"""One JSON serialisation for every ``--json`` output and report payload."""

from __future__ import annotations

import json
import math


def jsonable(value):
    """``value`` with JSON-safe types: objects with ``as_dict()`` (every result shape, such as
    :class:`fairjudge.stats.Estimate`) become dicts, numpy scalars become Python numbers,
    NaN and infinity become ``None``, tuples become lists, dict keys become strings."""
    if hasattr(value, "as_dict") and callable(value.as_dict):
        return jsonable(value.as_dict())
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    kind = type(value).__module__
    if kind == "numpy":
        import numpy as np

        if isinstance(value, np.bool_):
            return bool(value)
        if isinstance(value, np.integer):
            return int(value)
        if isinstance(value, np.floating):
            return jsonable(float(value))
        if isinstance(value, np.ndarray):
            return jsonable(value.tolist())
    if value.__class__.__name__ in ("NAType", "NaTType"):
        return None
    return value


def dumps(value, *, indent: int | None = 2) -> str:
    """``json.dumps`` of :func:`jsonable` (UTF-8 kept)."""
    return json.dumps(jsonable(value), indent=indent, ensure_ascii=False)
