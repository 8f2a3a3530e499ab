"""Controlled item pools with known quality [bias-aware-active-topk, Technical Appendix].

Every item answers one fixed question ("Give an accurate and informative overview of
<topic>.") with ``C`` statements drawn from a bank of correct and incorrect statements, so
its quality is ``#correct - #incorrect`` by construction. Independently of quality, each item
is *terse* (the statements as written) or *elaborated* (every statement carries an added
content-free, authoritative-sounding clause: the same facts in more words). The texts are
real answers, ready to be shown to a real judge.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from fairjudge._util._rng import as_generator
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._simulator import balanced_binary_covariate
from fairjudge.data._statement_banks import ELABORATION_CLAUSES, TOPICS

QUESTION_TEMPLATE = "Give an accurate and informative overview of {topic}."


def pool_topics() -> tuple[str, ...]:
    """Topics with a statement bank."""
    return tuple(TOPICS)


def pool_question(topic: str) -> str:
    """The fixed question every item of a ``topic`` pool answers."""
    return QUESTION_TEMPLATE.format(topic=topic)


def _elaborate(statement: str, clause: str) -> str:
    return f"{statement.rstrip('.')}, {clause}."


#: Statements per half of the paper's banks: "a bank of 12 true and 12 false statements"
#: [bias-aware-active-topk, Technical Appendix].
PAPER_BANK_SIZE = 12
#: Bank choices of :func:`controlled_pool`: the paper's 12 + 12 statements per topic (the
#: first 12 of each half of :data:`TOPICS`), or every statement fairjudge holds (15-17 + 15-16).
BANKS = ("paper", "extended")
#: Quality draws tried before a pool is declared impossible (see :func:`controlled_pool`).
_MAX_DRAWS = 200


def pool_bank(topic: str, bank: str = "paper") -> dict[str, tuple[str, ...]]:
    """The ``true`` and ``false`` statements a ``topic`` pool draws from.

    Parameters
    ----------
    topic : str
        One of :func:`pool_topics`.
    bank : {"paper", "extended"}
        ``paper``: the first :data:`PAPER_BANK_SIZE` statements of each half, as in the paper
        (12 true + 12 false); ``extended``: the whole bank.

    Returns
    -------
    dict
        ``{"true": tuple of str, "false": tuple of str}``.
    """
    if topic not in TOPICS:
        raise FairjudgeInputError(f"`topic` must be one of {', '.join(TOPICS)}; got {topic!r}")
    if bank not in BANKS:
        raise FairjudgeInputError(f"`bank` must be one of {', '.join(BANKS)}; got {bank!r}")
    size = PAPER_BANK_SIZE if bank == "paper" else None
    return {half: TOPICS[topic][half][:size] for half in ("true", "false")}


@dataclass(frozen=True)
class TrueTopK:
    """The true top-k of a pool whose qualities may tie.

    Controlled pools have discrete quality (``2t - C``), so several items often share the
    k-th largest quality. Every item strictly above it is in the top-k; of the items tied at
    it, any ``k - n_certain`` complete it equally well. No arbitrary tie-break (by id or
    position) decides the truth.

    Attributes
    ----------
    certain : numpy.ndarray of bool, shape (N,)
        Items whose quality exceeds the k-th largest: in every true top-k.
    tied : numpy.ndarray of bool, shape (N,)
        Items whose quality equals the k-th largest.
    k : int
    """

    certain: np.ndarray
    tied: np.ndarray
    k: int

    @property
    def open_slots(self) -> int:
        """Places of the top-k that the tied items fill: ``k - certain.sum()``."""
        return self.k - int(self.certain.sum())

    def recall(self, selected) -> float:
        """Top-k recall of ``selected`` (item indices) against the best-matching true top-k:
        ``(#certain selected + min(#tied selected, open_slots)) / k``.

        Without ties this is ``|selected ∩ T| / k``; with ties, picking tied items beyond
        the open slots earns nothing (five items of quality 4 chosen when four items of
        quality 6 exist score 1/5, not 1).
        """
        chosen = np.unique(np.asarray(selected, dtype=np.int64))
        hits = int(self.certain[chosen].sum()) + min(int(self.tied[chosen].sum()),
                                                     self.open_slots)
        return hits / self.k


def true_topk(quality, k: int) -> TrueTopK:
    """The true top-k of items with known ``quality``, ties included (see :class:`TrueTopK`).

    Parameters
    ----------
    quality : array_like, shape (N,)
    k : int
        Between 1 and N.

    Returns
    -------
    TrueTopK

    Examples
    --------
    >>> truth = true_topk([6, 6, 4, 4, 4, 2], 3)
    >>> truth.certain.tolist(), truth.tied.tolist(), truth.open_slots
    ([True, True, False, False, False, False], [False, False, True, True, True, False], 1)
    >>> truth.recall([0, 2, 3]), truth.recall([0, 1, 4])
    (0.6666666666666666, 1.0)
    """
    quality = np.asarray(quality, dtype=float)
    if quality.ndim != 1 or quality.size == 0 or not np.isfinite(quality).all():
        raise FairjudgeInputError("`quality` must be a non-empty 1-d array of finite numbers")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= quality.size:
        raise FairjudgeInputError(f"`k` must be between 1 and n_items={quality.size}; got {k!r}")
    threshold = np.sort(quality)[::-1][k - 1]
    return TrueTopK(certain=quality > threshold, tied=quality == threshold, k=int(k))


def boundary_distance(quality, k: int) -> np.ndarray:
    """How far each item's true quality is from the top-k boundary, in quality levels (Fig. 4).

    With ``L`` the distinct qualities in decreasing order and ``L[b]`` the k-th largest
    quality, an item at level ``L[i]`` is at distance ``b - i`` when ``i <= b`` (in, or tied
    at, the boundary) and ``i - b - 1`` below it. With distinct qualities this is the rank
    distance (ranks k and k + 1 are at distance 0); with ties every item tied at the k-th
    quality is at distance 0, as :func:`true_topk` cannot tell them apart, and so is the
    next level below -- no tie is broken by index.

    Parameters
    ----------
    quality : array_like, shape (N,)
    k : int

    Returns
    -------
    numpy.ndarray of int, shape (N,)

    Examples
    --------
    >>> boundary_distance([6, 6, 4, 4, 4, 2, 0], 3).tolist()
    [1, 1, 0, 0, 0, 0, 1]
    """
    truth = true_topk(quality, k)  # validates
    quality = np.asarray(quality, dtype=float)
    levels = np.unique(quality)[::-1]
    level = np.searchsorted(-levels, -quality)
    boundary = int(np.searchsorted(-levels, -quality[truth.tied][0]))
    return np.where(level <= boundary, boundary - level, level - boundary - 1).astype(int)


def controlled_pool(topic: str = "the Moon", *, n_items: int = 30, statements_per_item: int = 6,
                    bank: str = "paper", n_fully_correct: int | None = None,
                    max_abs_corr: float = 0.12, rng=None) -> pd.DataFrame:
    """Build a pool of answers with known quality and a verbosity manipulation.

    The paper's construction [bias-aware-active-topk §6, Technical Appendix]: each item holds
    ``C`` statements drawn without replacement from a bank of 12 true and 12 false statements
    about ``topic``. The paper does not say how many of them are correct; fairjudge's reading
    (the paper's "true top-k are the fully-correct items" needs several such items) is that
    the number of correct statements ``t`` is uniform on ``0 .. C``, so its
    quality ``2t - C`` takes each of the ``C + 1`` levels with equal probability and the
    number of fully correct items (quality ``C``) arises from the draw (about ``N / (C + 1)``,
    4.3 for N = 30, C = 6). Verbosity is a balanced 0/1 assignment rejected unless
    ``|corr(quality, verbose)| < max_abs_corr`` (a small pool whose qualities admit no such
    split is drawn again).

    Qualities tie by construction; :func:`true_topk` says which items form the true
    top-k and scores a selection against it.

    Parameters
    ----------
    topic : str
        One of :func:`pool_topics`.
    n_items : int
        ``N`` (paper: 30).
    statements_per_item : int
        ``C`` (paper: 6); at most the size of either half of the bank.
    bank : {"paper", "extended"}
        ``paper`` (default): 12 true + 12 false statements per topic; ``extended``: every
        statement of the topic (15-17 true, 15-16 false), for more distinct answers.
    n_fully_correct : int, optional
        Off by default. When given, exactly this many items are fully correct (quality
        ``C``) and every other item has ``t`` uniform on ``0 .. C-1`` -- a pool whose true
        top-k for ``k = n_fully_correct`` has no ties (not the paper's draw).
    max_abs_corr : float
    rng : seed or numpy.random.Generator

    Returns
    -------
    pandas.DataFrame
        Indexed by id, with ``text``, ``quality`` (#correct - #incorrect), ``verbose`` (0/1)
        and ``length`` (words); ``attrs`` hold ``question``, ``source``, ``topic``, ``bank``
        and ``statements_per_item``.

    Raises
    ------
    FairjudgeInputError
        Naming the argument that is out of range.

    Examples
    --------
    >>> pool = controlled_pool("the Moon", n_items=10, n_fully_correct=2, rng=0)
    >>> int((pool["quality"] == 6).sum()), sorted(pool["verbose"].unique().tolist())
    (2, [0.0, 1.0])
    >>> sorted(set(controlled_pool("the Moon", rng=0)["quality"]))[-1]
    6.0
    """
    halves = pool_bank(topic, bank)
    bank_true, bank_false = halves["true"], halves["false"]
    c = statements_per_item
    if isinstance(c, bool) or not (isinstance(c, (int, np.integer))
                                   and 1 <= c <= min(len(bank_true), len(bank_false))):
        raise FairjudgeInputError(
            f"`statements_per_item` must be between 1 and "
            f"{min(len(bank_true), len(bank_false))} for {topic!r} (bank {bank!r}); got {c!r}")
    if isinstance(n_items, bool) or not (isinstance(n_items, (int, np.integer)) and n_items >= 2):
        raise FairjudgeInputError(f"`n_items` must be an integer >= 2; got {n_items!r}")
    if n_fully_correct is not None and (
            isinstance(n_fully_correct, bool)
            or not (isinstance(n_fully_correct, (int, np.integer))
                    and 0 <= n_fully_correct <= n_items)):
        raise FairjudgeInputError(f"`n_fully_correct` must be None or between 0 and "
                                  f"n_items={n_items}; got {n_fully_correct!r}")
    rng = as_generator(rng)
    for _ in range(_MAX_DRAWS):
        if n_fully_correct is None:
            n_true = rng.integers(0, c + 1, n_items)  # every quality level equally likely
        else:
            n_true = np.concatenate([np.full(n_fully_correct, c),
                                     rng.integers(0, c, n_items - n_fully_correct)])
            rng.shuffle(n_true)
        quality = 2.0 * n_true - c
        try:
            # A small pool of discrete qualities may admit no balanced split below the
            # correlation bound: draw its qualities again rather than give up.
            verbose = balanced_binary_covariate(quality, rng, max_abs_corr=max_abs_corr,
                                                max_tries=2_000)
            break
        except RuntimeError:
            continue
    else:
        raise FairjudgeInputError(
            f"no balanced verbosity assignment with |corr(quality, verbose)| < "
            f"{max_abs_corr} in {_MAX_DRAWS} draws of {n_items} items; raise `max_abs_corr` "
            "or `n_items`")
    texts, seen = [], set()
    for t, v in zip(n_true, verbose):
        while True:
            chosen = ([bank_true[i] for i in rng.choice(len(bank_true), t, replace=False)]
                      + [bank_false[i] for i in rng.choice(len(bank_false), c - t,
                                                            replace=False)])
            order = rng.permutation(c)
            key = tuple(chosen[i] for i in order)
            if key not in seen:  # identical answers would make two items one
                seen.add(key)
                break
        if v:
            clauses = rng.choice(len(ELABORATION_CLAUSES), c, replace=False)
            sentences = [_elaborate(s, ELABORATION_CLAUSES[k]) for s, k in zip(key, clauses)]
        else:
            sentences = list(key)
        texts.append(" ".join(sentences))
    width = len(str(n_items - 1))
    ids = [f"ans{i:0{width}d}" for i in range(n_items)]
    pool = pd.DataFrame(
        {"text": texts, "quality": quality, "verbose": verbose,
         "length": [float(len(t.split())) for t in texts]},
        index=pd.Index(ids, name="id"))
    pool.attrs["question"] = pool_question(topic)
    pool.attrs["source"] = f"controlled pool ({topic})"
    pool.attrs["topic"] = topic
    pool.attrs["bank"] = bank
    pool.attrs["statements_per_item"] = int(c)
    return pool
