"""World-model backends: ``hf`` (Hugging Face transformers) in :mod:`.hf`."""
