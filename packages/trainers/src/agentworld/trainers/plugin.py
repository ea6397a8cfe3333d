"""Plugin entry point (filled in by the package)."""
