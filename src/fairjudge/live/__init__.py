"""A live leaderboard: verdicts counted as they arrive, the posterior refitted warm
(:class:`LiveLeaderboard`, ``update``/``snapshot``), and a file followed as it grows
(:class:`VerdictTail`)."""

from fairjudge.live._board import LiveLeaderboard
from fairjudge.live._tail import VerdictTail

__all__ = ["LiveLeaderboard", "VerdictTail"]
