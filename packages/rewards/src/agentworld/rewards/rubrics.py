"""Judge prompts of the ``llm_judge`` reward: our rubrics per domain and the answer contract.

A judge request is two chat messages: the *system* message is a rubric (the
built-in one of the transition's domain, :data:`GENERIC_RUBRIC` otherwise, or
a user-supplied prompt file) and the *user* message is the case (the agent's
action when known, the real reference observation, the predicted one) followed
by :data:`ANSWER_FORMAT`, which every rubric shares so that answers stay
parseable (:func:`agentworld.rewards.verdict.parse_scores`).

The five dimensions are those of AgentWorldBench (Qwen-AgentWorld,
arXiv 2606.24597): format, factuality, consistency, realism, quality, each
scored 1 to 5. The rubric texts are ours.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

DIMENSIONS: tuple[str, ...] = ("format", "factuality", "consistency", "realism", "quality")

_SCALE = """Score each dimension from 1 to 5 (integers):
5 = indistinguishable from the reference in this respect;
4 = small deviations an agent would not act on differently;
3 = partly right, with deviations an agent could notice;
2 = mostly wrong, a few elements right;
1 = missing or entirely wrong."""

GENERIC_RUBRIC = f"""You grade a world model: a model that predicts what an environment shows an agent
after the agent's action. You are given the real observation the environment returned (the
reference) and the model's predicted observation. Compare the prediction with the reference on
five dimensions:

- format: the prediction has the structure and layout of this environment's observations
  (fields, markup, ordering, line structure), with no commentary about being a simulation.
- factuality: the facts in the prediction (names, values, counts, messages, status codes) agree
  with the reference; invented or missing facts lower the score.
- consistency: the prediction agrees with the action taken and the state it implies (what was
  created, changed or read by this action and earlier ones, as the reference reflects it).
- realism: the prediction reads like a real observation of this environment, with its exact
  conventions and error messages, not like a paraphrase.
- quality: overall, how well the prediction could replace the reference for an agent deciding
  its next action.

{_SCALE}"""

TERMINAL_RUBRIC = f"""You grade a world model of a Linux bash terminal: a model that predicts what the
terminal shows after a command. You are given the real terminal output (the reference) and the
model's predicted output. An observation is the command's output (stdout and stderr, the command
itself not echoed) followed by the prompt line `user@sandbox:DIR$ `, prefixed by `[N] ` when the
command exited with a non-zero status N. Compare the prediction with the reference on five
dimensions:

- format: output first, then exactly one prompt line in the form above; no commentary, no
  Markdown fences, no echoed command.
- factuality: file and directory names, file contents, counts, error messages and the exit
  status marker agree with the reference; invented or missing lines lower the score.
- consistency: the working directory in the prompt, and the files and contents the output
  implies, agree with what the command does and with the reference.
- realism: the output is what bash and GNU coreutils really print (exact error wording such as
  `No such file or directory`, `ls` ordering and spacing), not a description of it.
- quality: overall, how well the prediction could replace the real output for an agent choosing
  its next command.

{_SCALE}"""

RUBRICS: dict[str, str] = {"terminal": TERMINAL_RUBRIC}
"""Built-in rubrics by domain name; other domains use :data:`GENERIC_RUBRIC`."""

ANSWER_FORMAT = (
    "Answer with one JSON object and nothing after it, with an integer from 1 to 5 for each "
    'dimension: {"format": N, "factuality": N, "consistency": N, "realism": N, "quality": N}'
)


def read_prompt_file(path: str | Path) -> str:
    """The rubric text of a user-supplied prompt file (UTF-8 plain text, used as the system message).

    Raises:
        FileNotFoundError: ``path`` is not a file.
        ValueError: The file is empty (whitespace only).
    """
    file = Path(path).expanduser()
    if not file.is_file():
        raise FileNotFoundError(f"judge prompt file {str(file)!r} does not exist")
    text = file.read_text(encoding="utf-8").strip()
    if not text:
        raise ValueError(f"judge prompt file {str(file)!r} is empty")
    return text


def load_rubrics(prompt_file: str | Path | Mapping[str, str | Path] | None) -> dict[str, str]:
    """Rubrics by domain name, the key ``"generic"`` holding the one for all other domains.

    Args:
        prompt_file: ``None``: the built-in rubrics. A path: that file's text is the rubric for
            every domain. A mapping: domain name (or ``"generic"``) -> path, overriding the
            built-in rubric of those domains only.

    Raises:
        FileNotFoundError, ValueError: As :func:`read_prompt_file`.
    """
    rubrics = {"generic": GENERIC_RUBRIC, **RUBRICS}
    if prompt_file is None:
        return rubrics
    if isinstance(prompt_file, Mapping):
        return rubrics | {name: read_prompt_file(p) for name, p in prompt_file.items()}
    return {"generic": read_prompt_file(prompt_file)}


def render_case(prediction: str, reference: str, action: str | None = None) -> str:
    """The user message of one judge request: action (when known), reference, prediction, format."""
    parts = [f"<action>\n{action}\n</action>"] if action is not None else []
    parts += [
        f"<reference>\n{reference}\n</reference>",
        f"<prediction>\n{prediction}\n</prediction>",
        ANSWER_FORMAT,
    ]
    return "\n\n".join(parts)
