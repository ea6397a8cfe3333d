"""Sub-commands of the ``agentworld`` CLI, one module per topic; each adds its commands to the
root app of :mod:`agentworld.app.commands.root` when imported (:mod:`agentworld.app.cli`
imports them all)."""
