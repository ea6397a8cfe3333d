"""The world-model stages: ``cpt`` (continued pretraining), ``sft`` (with ``reasoning``
rationales), ``rl`` (GRPO on next-observation fidelity, data in ``rl_data``) and ``bench``
(training throughput of a preset). Nothing heavy is imported here.
"""
