"""Plugin entry point."""
