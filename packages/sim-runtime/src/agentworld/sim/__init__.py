"""agentworld package."""
