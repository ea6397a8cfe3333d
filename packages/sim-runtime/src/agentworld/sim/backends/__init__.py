"""World-model backends. ``hf`` (Hugging Face transformers) lives in :mod:`agentworld.sim.backends.hf`."""
