"""RL agents trained on real, simulated or mixed experience (``agentworld train agent``).

Modules: ``qlearning`` (tabular Q-learning over observation text), ``envs`` (``--env``
specs and the real / simulated episode runners), ``evaluate`` (real-env evaluation with
95% confidence intervals, random baseline), ``trainer`` (the ``agent`` Trainer plugin),
``config`` (its options), ``dyna`` (Q-learning on real, simulated or mixed experience), ``lm`` (the language-model policy trained with
multi-turn GRPO), ``policy_sft`` / ``policy_data`` (behaviour cloning), ``trl_env`` /
``trl_tool_env`` (TRL's ``environment_factory``).
Nothing heavy is imported here.
"""
