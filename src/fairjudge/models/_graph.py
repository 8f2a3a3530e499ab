"""Connectivity of the comparison graph (identifiability of the scores)."""

from __future__ import annotations

import warnings

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from fairjudge._util._warnings import ComparisonGraphWarning
from fairjudge.data._encode import Comparisons


def comparison_components(comparisons: Comparisons) -> list[np.ndarray]:
    """Connected components of the undirected comparison graph, largest first.

    Returns
    -------
    list of ndarray of int
        Item indices of each component; an item never compared is its own component.
    """
    n = comparisons.n_items
    graph = coo_matrix((np.ones(len(comparisons)), (comparisons.first, comparisons.second)),
                       shape=(n, n))
    n_comp, labels = connected_components(graph, directed=False)
    comps = [np.flatnonzero(labels == c) for c in range(n_comp)]
    return sorted(comps, key=lambda c: (-c.size, c[0]))


def describe_components(comparisons: Comparisons, components: list[np.ndarray],
                        max_shown: int = 4) -> str:
    ids = comparisons.item_ids
    parts = []
    for comp in components[:max_shown]:
        names = ", ".join(repr(ids[i]) for i in comp[:4])
        more = f", ... ({comp.size} items)" if comp.size > 4 else ""
        parts.append("{" + names + more + "}")
    if len(components) > max_shown:
        parts.append(f"and {len(components) - max_shown} more")
    return "; ".join(parts)


def warn_if_disconnected(comparisons: Comparisons) -> list[np.ndarray]:
    """Warn with :class:`ComparisonGraphWarning` naming the components if there are several."""
    components = comparison_components(comparisons)
    if len(components) > 1:
        warnings.warn(
            f"the comparison graph has {len(components)} disconnected components "
            f"({describe_components(comparisons, components)}); scores are comparable only "
            "within a component, and across components they are set by the prior alone. "
            "Add comparisons that link the components.",
            ComparisonGraphWarning, stacklevel=4)
    return components
