"""The verdict parser loses no verdict of real judges: on LLMBar and JudgeBench it agrees with
the winners their authors' own parsers recorded.

Reference, computed once from ../shared/data with ``verdict@1`` (before the injection fix)
and ``verdict@2``, each reply parsed with the two answers it was shown::

    data (calls with text)   recorded valid   agree verdict@1   agree verdict@2
    LLMBar      17,360        0.9992           0.9999            0.9999
    JudgeBench   2,860        0.9640           0.0378            0.9979

verdict@1 did not read Arena-Hard tags (``[[A>B]]``), hence JudgeBench. Every disagreement
left is a verdict against no verdict, never one side against the other: 2 LLMBar Falcon
replies that ramble on after "Output (a) is better." (no form either parser reads), and 6
JudgeBench replies with several Arena-Hard tags that JudgeBench rejects outright and
verdict@2 reads as the stated final verdict (``Final verdict: ... [[A>B]]`` after per-answer
ratings) or as agreeing tags (``[[A>>B]]`` and ``[[A>B]]``).
"""

import pandas as pd
import pytest

from fairjudge.data import llmbar_subsets, load_judgebench, load_llmbar
from fairjudge.judges import parse_verdict

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]


def _compare(benches) -> pd.DataFrame:
    rows = []
    for bench in benches:
        texts = bench.items["text"]
        calls = bench.verdicts[bench.verdicts["raw"].notna()]
        for call in calls.itertuples():
            answers = (texts.get(call.item_a, ""), texts.get(call.item_b, ""))
            recorded = call.winner if isinstance(call.winner, str) else "invalid"
            rows.append((recorded, parse_verdict(call.raw, answers=answers)[0].value))
    return pd.DataFrame(rows, columns=["recorded", "parsed"])


@pytest.mark.parametrize("name, benches, agreement, lost, gained", [
    ("llmbar", lambda: [load_llmbar(s) for s in llmbar_subsets()], 0.9998, 2, 0),
    ("judgebench", lambda: [load_judgebench(p) for p in ("claude", "gpt-4o")], 0.997, 0, 6),
])
def test_no_recorded_verdict_is_lost_or_flipped(name, benches, agreement, lost, gained):
    table = _compare(benches())
    decisive = table != "invalid"
    assert (table["recorded"] == table["parsed"]).mean() >= agreement
    flipped = decisive.all(axis=1) & (table["recorded"] != table["parsed"])
    assert not flipped.any()
    assert (decisive["recorded"] & ~decisive["parsed"]).sum() == lost
    assert (~decisive["recorded"] & decisive["parsed"]).sum() == gained
