"""Entry point of the classic domain (filled in by the classic domain work)."""
