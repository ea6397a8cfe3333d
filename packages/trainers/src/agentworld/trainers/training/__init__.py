"""The training machinery shared by every stage: the base loop (``loop``), crash-safe
checkpoints (``checkpoint``), options (``config``), samples and batches (``data``), the
progress bar (``progress``), experiment trackers (``tracking``) and the GRPO core (``grpo``).
Nothing heavy is imported here.
"""
