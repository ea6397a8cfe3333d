"""RL agents trained on real, simulated or mixed experience (``agentworld train agent``).

Modules: ``qlearning`` (tabular Q-learning over observation text), ``envs`` (``--env``
specs and the real / simulated episode runners), ``evaluate`` (real-env evaluation with
95% confidence intervals, random baseline), ``trainer`` (the ``agent`` Trainer plugin).
Nothing heavy is imported here.
"""
