"""agentworld-trainers: tokenizer training and the ``cpt`` / ``sft`` stages.

Import the pieces from their modules (``agentworld.trainers.cpt.CptTrainer``,
``agentworld.trainers.tokenizer.train_tokenizer``, ...); this package module
imports nothing heavy, so plugin discovery stays fast.
"""
