"""``agentworld bench``: AgentWorldBench's protocol on a directory of ``{domain}_test.jsonl`` rows.

``infer`` (world-model answers with the full history), ``judge`` (five 1-5 dimensions from an
LLM judge behind any OpenAI-compatible endpoint), ``score`` (the public normalisation and
averages, rule metrics beside) and ``run`` (all three). Results are append-only JSONL files
keyed by ``(task, id, turn_idx)``, so a killed run resumes where it stopped. The protocol is
that of QwenLM/Qwen-AgentWorld ``eval/eval.py`` (arXiv 2606.24597); the code is ours.
"""
