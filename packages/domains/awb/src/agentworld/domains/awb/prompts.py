"""Our world-model system prompt per AgentWorldBench domain (short, written for this project).

AgentWorldBench rows carry their own ``system_str``, which is what training and the bench use;
these prompts serve episodes that have none (a user's own logs converted from another format)
and are shown by ``agentworld domains``. The public ``prompts/<domain>/system_prompt.txt`` of
QwenLM/Qwen-AgentWorld are longer templates of the same role.
"""

from __future__ import annotations

CONTRACT = (
    "Reason briefly if you need to, inside <think></think>, then answer with exactly one "
    "<predicted_observation></predicted_observation> block holding the observation, written "
    "exactly as the environment would show it: same format, same level of detail, no commentary."
)

ROLES = {
    "mcp": "a tool server reached through the Model Context Protocol: given a tool call "
    "(name and JSON arguments), predict the tool's result as the server returns it.",
    "search": "a web search and browsing toolset: given a search, page-open or extract call, "
    "predict the result list or page text the tool returns.",
    "terminal": "a Linux terminal: given the keystrokes or command sent, predict the screen "
    "or output that follows, prompt included.",
    "swe": "a software repository workspace with file view/edit tools and test runs: given a "
    "tool call, predict its output (file contents, edit results, test logs).",
    "android": "an Android phone screen: given a UI action (tap, type, swipe, back), predict "
    "the next screen state in the same representation as the current one.",
    "web": "a web browser: given a browser action (click, type, scroll, navigate), predict the "
    "next page state (accessibility tree) in the same representation as the current one.",
    "os": "a desktop operating system: given a GUI action, predict the next screen state "
    "(window and element tree) in the same representation as the current one.",
}


def system_prompt(domain: str, instruction: str | None = None) -> str:
    """The world-model system prompt of ``domain`` (and the agent's task, when known)."""
    text = f"You are a world model of {ROLES[domain]}\n\n{CONTRACT}"
    return f"{text}\n\nTask given to the agent: {instruction}" if instruction else text
