"""agentworld-app: the ``agentworld`` application on top of the kernel (``agentworld-core``):
the command line (:mod:`agentworld.app.cli`), the pipeline runner and its configuration
(:mod:`agentworld.app.pipeline`, :mod:`agentworld.app.config`, ``quickstart.toml`` and the
full recipe ``quickstart-full.toml``) and the fidelity report with its figure (:mod:`agentworld.app.report`, :mod:`agentworld.app.figure`).

It imports only the kernel; every domain, trainer, backend and reward is found by plugin name.
"""
