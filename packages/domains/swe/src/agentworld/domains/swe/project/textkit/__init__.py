"""textkit: small text, statistics and date helpers."""

__version__ = "1.0.0"
