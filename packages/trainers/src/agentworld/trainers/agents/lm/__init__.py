"""The language-model agent policy trained with multi-turn GRPO (``policy="lm"``): options
(``config``), prompts and answer parsing (``data``), batched episodes (``rollout``) and the
trainer (``trainer``). Nothing heavy is imported here.
"""
