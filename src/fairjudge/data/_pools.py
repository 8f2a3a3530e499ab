"""Controlled item pools with known quality [bias-aware-active-topk, Technical Appendix].

Every item answers one fixed question ("Give an accurate and informative overview of
<topic>.") with ``C`` statements drawn from a bank of correct and incorrect statements, so
its quality is ``#correct - #incorrect`` by construction. Independently of quality, each item
is *terse* (the statements as written) or *elaborated* (every statement carries an added
content-free, authoritative-sounding clause: the same facts in more words). The texts are
real answers, ready to be shown to a real judge.
"""

from __future__ import annotations

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


def controlled_pool(topic: str = "the Moon", *, n_items: int = 30, statements_per_item: int = 6,
                    n_fully_correct: int = 5, max_abs_corr: float = 0.12,
                    rng=None) -> pd.DataFrame:
    """Build a pool of answers with known quality and a verbosity manipulation.

    ``n_fully_correct`` items use only correct statements (quality ``C``), so the true top-k
    for ``k = n_fully_correct`` is unambiguous; every other item has ``t`` correct statements
    with ``t`` uniform on ``0 .. C-1``. Verbosity is a balanced 0/1 assignment rejected unless
    ``|corr(quality, verbose)| < max_abs_corr``.

    Parameters
    ----------
    topic : str
        One of :func:`pool_topics`.
    n_items : int
    statements_per_item : int
        ``C`` (paper: 6); each item draws its statements without replacement, so ``C`` may
        not exceed the size of either half of the bank.
    n_fully_correct : int
    max_abs_corr : float
    rng : seed or numpy.random.Generator

    Returns
    -------
    pandas.DataFrame
        Indexed by id, with ``text``, ``quality`` (#correct - #incorrect), ``verbose`` (0/1)
        and ``length`` (words); ``attrs["question"]`` holds the question.

    Examples
    --------
    >>> pool = controlled_pool("the Moon", n_items=10, n_fully_correct=2, rng=0)
    >>> int((pool["quality"] == 6).sum()), sorted(pool["verbose"].unique().tolist())
    (2, [0.0, 1.0])
    """
    if topic not in TOPICS:
        raise FairjudgeInputError(f"`topic` must be one of {', '.join(TOPICS)}; got {topic!r}")
    bank_true, bank_false = TOPICS[topic]["true"], TOPICS[topic]["false"]
    c = statements_per_item
    if not (isinstance(c, (int, np.integer)) and 1 <= c <= min(len(bank_true), len(bank_false))):
        raise FairjudgeInputError(
            f"`statements_per_item` must be between 1 and "
            f"{min(len(bank_true), len(bank_false))} for {topic!r}; got {c!r}")
    if not (isinstance(n_items, (int, np.integer)) and n_items >= 2):
        raise FairjudgeInputError(f"`n_items` must be an integer >= 2; got {n_items!r}")
    if not (isinstance(n_fully_correct, (int, np.integer)) and 0 <= n_fully_correct <= n_items):
        raise FairjudgeInputError(f"`n_fully_correct` must be between 0 and n_items={n_items}; "
                                  f"got {n_fully_correct}")
    rng = as_generator(rng)
    n_true = np.concatenate([np.full(n_fully_correct, c),
                             rng.integers(0, c, n_items - n_fully_correct)])
    rng.shuffle(n_true)
    quality = 2.0 * n_true - c
    verbose = balanced_binary_covariate(quality, rng, max_abs_corr=max_abs_corr)
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
    return pool
