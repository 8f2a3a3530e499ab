"""Connectivity of the comparison graph (identifiability of the scores)."""

from __future__ import annotations

import warnings

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from fairjudge._util._warnings import ComparisonGraphWarning
from fairjudge.data._encode import Comparisons
from fairjudge.models._engine import PairTable, aggregate_pairs, distinct_pairs


def pair_components(n_items: int, first, second, *, distinct: bool = False
                    ) -> list[np.ndarray]:
    """Connected components of the undirected graph with an edge per compared pair.

    Parameters
    ----------
    n_items : int
    first, second : array_like of int, shape (M,)
        Item indices of the two sides of each comparison.
    distinct : bool
        The pairs are already distinct (as :meth:`PairTable.unordered_pairs` gives them):
        skip collapsing repeated pairs.

    Returns
    -------
    list of ndarray of int
        Item indices of each component, largest first; an item never compared is its own
        component.
    """
    first = np.asarray(first, dtype=np.int64)
    second = np.asarray(second, dtype=np.int64)
    if not distinct and first.size > 4 * n_items:
        # Many verdicts per pair: the distinct pairs (a histogram pass) make a smaller graph.
        first, second, _ = distinct_pairs(first, second, n_items)
    graph = coo_matrix((np.ones(first.size), (first, second)), shape=(n_items, n_items))
    n_comp, labels = connected_components(graph, directed=False)
    comps = [np.flatnonzero(labels == c) for c in range(n_comp)]
    return sorted(comps, key=lambda c: (-c.size, c[0]))


def comparison_components(comparisons: Comparisons) -> list[np.ndarray]:
    """Connected components of the undirected comparison graph, largest first.

    Returns
    -------
    list of ndarray of int
        Item indices of each component; an item never compared is its own component.
    """
    return table_components(aggregate_pairs(comparisons))  # the table the fit shares


def table_components(pairs: PairTable) -> list[np.ndarray]:
    """:func:`pair_components` of an aggregated pair table, from its distinct pairs."""
    lo, hi, _ = pairs.unordered_pairs()
    return pair_components(pairs.n_items, lo, hi, distinct=True)


def describe_components(item_ids, components: list[np.ndarray], max_shown: int = 4) -> str:
    """``{'a', 'b', 'c'}; {'dog', 'emu'}``: the first items of the first components."""
    parts = []
    for comp in components[:max_shown]:
        names = ", ".join(repr(item_ids[i]) for i in comp[:4])
        more = f", ... ({comp.size} items)" if comp.size > 4 else ""
        parts.append("{" + names + more + "}")
    if len(components) > max_shown:
        parts.append(f"and {len(components) - max_shown} more")
    return "; ".join(parts)


def warn_disconnected(components: list[np.ndarray], item_ids, *, stacklevel: int = 2) -> None:
    """Warn with :class:`ComparisonGraphWarning` naming the components if there are several
    (the one message of ``rank``, ``select`` and every fit)."""
    if len(components) > 1:
        warnings.warn(
            f"the comparison graph has {len(components)} disconnected components "
            f"({describe_components(item_ids, components)}); scores are comparable only "
            "within a component, and across components they are set by the prior alone. "
            "Add comparisons that link the components.",
            ComparisonGraphWarning, stacklevel=stacklevel + 1)


def warn_if_disconnected(comparisons: Comparisons) -> list[np.ndarray]:
    """Warn with :class:`ComparisonGraphWarning` naming the components if there are several."""
    components = comparison_components(comparisons)
    warn_disconnected(components, comparisons.item_ids, stacklevel=4)
    return components
