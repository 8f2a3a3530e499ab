"""Acquisition scores for the next comparison [bias-aware-active-topk §4, Eq. (3)]."""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from fairjudge._util._warnings import FairjudgeInputError

SCORED_RULES = ("topk", "global", "entropy", "topk-no-variance", "topk-no-informativeness")
UNSCORED_RULES = ("random", "round-robin")
RULES = SCORED_RULES + UNSCORED_RULES

RULE_DESCRIPTIONS = {
    "topk": "p(1-p) * Var(theta_i - theta_j) * (H(p_i) + H(p_j))  [Eq. 3]",
    "global": "p(1-p) * Var(theta_i - theta_j)  [D-optimal; Eq. 3 without the boundary factor]",
    "entropy": "H(p_i) + H(p_j)  [boundary relevance only]",
    "topk-no-variance": "p(1-p) * (H(p_i) + H(p_j))  [Fig. 5 ablation]",
    "topk-no-informativeness": "Var(theta_i - theta_j) * (H(p_i) + H(p_j))  [Fig. 5 ablation]",
    "random": "uniformly random unqueried pair",
    "round-robin": "pairs in round-robin tournament order (every item equally often)",
}


def binary_entropy(p) -> np.ndarray:
    """``H(p) = -p log p - (1-p) log(1-p)`` in nats, with ``H(0) = H(1) = 0``."""
    p = np.clip(np.asarray(p, dtype=float), 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -(p * np.log(p) + (1 - p) * np.log1p(-p))
    return np.nan_to_num(h, nan=0.0)


def pair_scores(rule: str, scores, covariance, membership) -> np.ndarray:
    """Score every pair ``(i, j)`` under an acquisition rule; shape (N, N), symmetric.

    Parameters
    ----------
    rule : str
        One of ``SCORED_RULES``:

        - ``"topk"``: Eq. (3), ``p_ij (1 - p_ij) Var(theta_i - theta_j) (H(p_i) + H(p_j))``
          with ``p_ij = sigmoid(theta_i - theta_j)`` and ``p_i = P(i in top-k)``;
        - ``"global"``: without the boundary factor (D-optimal / global uncertainty);
        - ``"entropy"``: the boundary factor alone;
        - ``"topk-no-variance"`` and ``"topk-no-informativeness"``: Eq. (3) without the
          variance or the ``p(1-p)`` factor (the single-factor ablations of Fig. 5).
    scores : ndarray, shape (N,)
        Posterior mode of quality.
    covariance : ndarray, shape (N, N)
        Posterior covariance of quality.
    membership : ndarray, shape (N,)
        Top-k membership probabilities.

    Returns
    -------
    ndarray, shape (N, N)
        ``s(i, j)``; the diagonal is ``-inf`` so that it is never selected.
    """
    if rule not in SCORED_RULES:
        raise FairjudgeInputError(f"`rule` must be one of {', '.join(SCORED_RULES)}; got {rule!r}")
    scores = np.asarray(scores, dtype=float)
    n = scores.shape[0]
    out = np.ones((n, n))
    if rule in ("topk", "global", "topk-no-variance"):
        p = expit(scores[:, None] - scores[None, :])
        out *= p * (1.0 - p)
    if rule in ("topk", "global", "topk-no-informativeness"):
        d = np.diag(covariance)
        out *= np.maximum(d[:, None] + d[None, :] - 2.0 * covariance, 0.0)
    if rule != "global":
        h = binary_entropy(membership)
        out *= h[:, None] + h[None, :]
    np.fill_diagonal(out, -np.inf)
    return out


def round_robin_schedule(n_items: int, rng) -> np.ndarray:
    """All unordered pairs in round-robin tournament order (circle method), shape (n(n-1)/2, 2).

    After every round each item has played the same number of times (±1 with an odd
    ``n_items``); item labels and round order are shuffled by ``rng``.
    """
    players = list(rng.permutation(n_items))
    if n_items % 2:
        players.append(-1)  # a bye
    m = len(players)
    rounds = []
    for _ in range(m - 1):
        rounds.append([(players[i], players[m - 1 - i]) for i in range(m // 2)
                       if players[i] >= 0 and players[m - 1 - i] >= 0])
        players = [players[0], players[-1]] + players[1:-1]
    pairs = [pair for r in rng.permutation(len(rounds)) for pair in rounds[r]]
    return np.array([(min(a, b), max(a, b)) for a, b in pairs], dtype=np.int64).reshape(-1, 2)
