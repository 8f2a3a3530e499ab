"""Judge audits: position consistency, slot preference, agreement with gold labels."""

from fairjudge.audit._position import first_position_rate, gold_accuracy, position_consistency

__all__ = ["first_position_rate", "gold_accuracy", "position_consistency"]
