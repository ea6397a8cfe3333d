"""agentworld-trainers: tokenizer training and the ``cpt`` / ``sft`` stages.

Import the pieces from their modules (``agentworld.trainers.world_model.cpt.CptTrainer``,
``agentworld.trainers.models.tokenizer.train_tokenizer``, ...); this package module
imports nothing heavy, so plugin discovery stays fast.
"""
