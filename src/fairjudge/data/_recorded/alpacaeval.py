"""AlpacaEval's published model- and annotator-level tables (aggregates, no verdicts)."""

from __future__ import annotations

import pandas as pd

from fairjudge.data._recorded._common import data_root, require

_ALPACAEVAL_FILES = {
    "leaderboard": ("src/alpaca_eval/leaderboards/data_AlpacaEval_2/"
                    "weighted_alpaca_eval_gpt4_turbo_leaderboard.csv", "model"),
    "leaderboard_v1": ("src/alpaca_eval/leaderboards/data_AlpacaEval/"
                       "alpaca_eval_gpt4_leaderboard.csv", "model"),
    "benchmarks": ("notebooks/benchmarks.csv", "model"),
    "evaluators": ("src/alpaca_eval/leaderboards/evaluators/evaluators_leaderboard.csv",
                   "annotator"),
}


def load_alpacaeval(*, root=None) -> dict[str, pd.DataFrame]:
    """Load AlpacaEval's model- and annotator-level tables, as published.

    Parameters
    ----------
    root : path, optional
        The shared data directory; default :func:`~fairjudge.data.shared_data_dir`.

    Returns
    -------
    dict of str to pandas.DataFrame
        ``"leaderboard"``: AlpacaEval 2 with the weighted GPT-4-turbo annotator (win rate,
        length-controlled win rate, average length, ...); ``"leaderboard_v1"``: AlpacaEval 1
        (GPT-4 annotator); ``"benchmarks"``: per-model Arena Elo, AlpacaEval and other
        benchmark scores (``notebooks/benchmarks.csv``); ``"evaluators"``: per-annotator
        human agreement and biases (``Proba. prefer longer``, ``Proba. prefer lists``,
        ``Proba. prefer 1``). Each is indexed by its first column, the model or annotator
        name (named ``model``/``annotator`` where the file leaves it unnamed); the other
        columns are as in the file.

    Raises
    ------
    FileNotFoundError
        If a file is missing (naming the path).

    Examples
    --------
    >>> tables = load_alpacaeval()  # doctest: +SKIP
    >>> sorted(tables)  # doctest: +SKIP
    ['benchmarks', 'evaluators', 'leaderboard', 'leaderboard_v1']
    """
    base = data_root(root) / "alpacaeval"
    tables = {}
    for key, (relative, index_name) in _ALPACAEVAL_FILES.items():
        frame = pd.read_csv(require(base / relative), index_col=0)
        if frame.index.name is None or str(frame.index.name).startswith("Unnamed"):
            frame.index.name = index_name
        tables[key] = frame
    return tables
