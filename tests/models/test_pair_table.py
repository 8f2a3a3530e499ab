"""The aggregated pair table, computed once per comparisons and shared, against numpy."""

import numpy as np

from fairjudge.data import Comparisons
from fairjudge.models._engine import aggregate_pairs


def comparisons(seed=0, n=30, m=4000, judges=3):
    rng = np.random.default_rng(seed)
    first = rng.integers(0, n, m)
    second = (first + rng.integers(1, n, m)) % n
    score = rng.choice([0.0, 0.5, 1.0], m)
    return Comparisons(first, second, score, rng.uniform(0.5, 2.0, m), rng.integers(0, judges, m),
                       tuple(f"i{i}" for i in range(n)), tuple(f"j{j}" for j in range(judges)))


def test_the_pair_table_is_shared_and_equals_a_numpy_aggregation():
    c = comparisons()
    table = aggregate_pairs(c)
    assert aggregate_pairs(c) is table  # one aggregation per comparisons
    triples = np.column_stack([c.judge, c.first, c.second])
    distinct, inverse = np.unique(triples, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    np.testing.assert_array_equal(np.column_stack([table.judge, table.first, table.second]),
                                  distinct)
    np.testing.assert_allclose(table.n, np.bincount(inverse, c.weight))
    np.testing.assert_allclose(table.wins, np.bincount(inverse, c.weight * c.first_score))
    lo, hi, pair_of_row = table.unordered_pairs()
    pairs = np.unique(np.column_stack([np.minimum(table.first, table.second),
                                       np.maximum(table.first, table.second)]), axis=0)
    np.testing.assert_array_equal(np.column_stack([lo, hi]), pairs)
    np.testing.assert_array_equal(lo[pair_of_row], np.minimum(table.first, table.second))
    np.testing.assert_array_equal(hi[pair_of_row], np.maximum(table.first, table.second))
    incidence, per_judge = table.signed_incidence()
    w = np.random.default_rng(1).normal(size=table.n.size)
    expected = np.bincount(table.first, w, c.n_items) - np.bincount(table.second, w, c.n_items)
    np.testing.assert_allclose(incidence @ w, expected)
    for rows, block in zip(table.judge_slices(), per_judge):
        assert np.all(table.judge[rows] == table.judge[rows.start])
        np.testing.assert_allclose(block @ w[rows], incidence[:, rows] @ w[rows])


def test_a_table_with_per_verdict_covariates_does_not_replace_the_shared_one():
    c = comparisons(1)
    shared = aggregate_pairs(c)
    design = np.random.default_rng(2).normal(size=(len(c.first), 1))
    assert aggregate_pairs(c, design).n.size == len(c.first)  # continuous: nothing merges
    assert shared.n.size < len(c.first) and aggregate_pairs(c) is shared
