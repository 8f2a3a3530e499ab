"""Internal helpers shared by several packages (not public API)."""
