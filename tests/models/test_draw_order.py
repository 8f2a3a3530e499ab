"""Ordering posterior draws: the float32 sort with float64 repair of ties, and rank
summaries over many items, against numpy references."""

import numpy as np
import pytest

from fairjudge.models._leaderboard import descending_order, posterior_rank_summaries


def reference_order(block):
    """Best first by float64 value, ties by index."""
    return np.array([np.lexsort((np.arange(row.size), -row)) for row in block])


@pytest.mark.parametrize("seed", range(5))
def test_float32_ties_are_put_in_float64_order(seed):
    rng = np.random.default_rng(seed)
    # Values equal in float32 but not in float64 (runs of two, three and more), and values
    # equal in float64 too (broken by index).
    coarse = rng.integers(0, 6, size=(7, 500)).astype(float)
    block = coarse + rng.integers(0, 4, size=coarse.shape) * 1e-12
    assert np.unique(block.astype(np.float32)).size < np.unique(block).size
    np.testing.assert_array_equal(descending_order(block), reference_order(block))


def test_continuous_draws_are_ordered_as_by_float64():
    block = np.random.default_rng(9).normal(size=(20, 30000))
    np.testing.assert_array_equal(descending_order(block), reference_order(block))


def test_rank_summaries_over_many_items_and_blocks_match_numpy():
    rng = np.random.default_rng(4)
    samples = rng.normal(size=(101, 5000)) + np.linspace(0, 3, 5000)
    samples[:, 10] = samples[:, 11]  # an exact tie: the lower index ranks first
    blocks = [samples[:30], samples[30:64], samples[64:]]
    membership, low, high = posterior_rank_summaries(blocks, 50, level=0.8)
    ranks = np.empty(samples.shape, dtype=int)
    np.put_along_axis(ranks, reference_order(samples), np.arange(1, 5001)[None], axis=1)
    np.testing.assert_array_equal(low, np.quantile(ranks, 0.1, axis=0, method="inverted_cdf"))
    np.testing.assert_array_equal(high, np.quantile(ranks, 0.9, axis=0, method="inverted_cdf"))
    np.testing.assert_allclose(membership, (ranks <= 50).mean(axis=0))
