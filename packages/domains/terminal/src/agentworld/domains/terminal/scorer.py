"""Domain fidelity score of a predicted terminal observation.

Both texts are split into output and trailing prompt line
(:func:`agentworld.domains.terminal.prompt.split_prompt`). With ``L`` the
length of the longest common subsequence of output lines (exact line
equality, order-aware) and ``p``/``r`` the numbers of predicted/reference
output lines::

    lines = 2 L / (p + r)                      (1 when both outputs are empty)
    exit  = 1 if the prompts show the same exit status else 0
    cwd   = 1 if the prompts show the same working directory else 0
    score = 0.6 * lines + 0.2 * exit + 0.2 * cwd

A missing prompt counts as a mismatch of both exit and cwd (unless the
reference has none either). An exact text match scores 1.0.
"""

from __future__ import annotations

from agentworld.core.sequences import lcs_f1
from agentworld.core.types import Observation
from agentworld.domains.terminal.prompt import split_prompt

W_LINES, W_EXIT, W_CWD = 0.6, 0.2, 0.2
MAX_LINES = 400


def line_f1(predicted: str, reference: str) -> float:
    """Order-aware line F1 ``2 LCS / (p + r)`` in [0, 1]; 1.0 when both have no lines."""
    return lcs_f1(predicted.splitlines()[:MAX_LINES], reference.splitlines()[:MAX_LINES])


def score(predicted_text: str, reference: Observation | str) -> float:
    """Fidelity of ``predicted_text`` to the real observation, in [0, 1] (formula above)."""
    ref_text = reference.text if isinstance(reference, Observation) else reference
    if predicted_text == ref_text:
        return 1.0
    out_p, prompt_p = split_prompt(predicted_text)
    out_r, prompt_r = split_prompt(ref_text)
    if prompt_r is None:
        exit_ok = cwd_ok = float(prompt_p is None)
    elif prompt_p is None:
        exit_ok = cwd_ok = 0.0
    else:
        exit_ok = float(prompt_p.exit_code == prompt_r.exit_code)
        cwd_ok = float(prompt_p.cwd == prompt_r.cwd)
    return W_LINES * line_f1(out_p, out_r) + W_EXIT * exit_ok + W_CWD * cwd_ok
