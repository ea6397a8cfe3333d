"""SFT preprocessing cost against episode length: seconds and characters rendered by the chat
template per episode, for episodes of T turns (issue 44: it grew quadratically, 302 renders
and 146x the episode's text at 48 turns).

    uv run python bench/sft_preprocess.py --turns 6 12 24 48

Prints, per T: ms per episode, template renders per episode, characters rendered divided by
the episode's rendered length (1.0 would be one render of the whole chat), for the ChatML
template (strategy "prefix") and a byte-level BPE tokenizer trained here.
"""

from __future__ import annotations

import argparse
import time

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from agentworld.core.types import Action, Episode, Observation, Step
from agentworld.trainers.training.data import sft_samples

CHATML = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + "
          "message['content'] + '<|im_end|>' + '\n' }}{% endfor %}"
          "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")


def tokenizer(corpus: list[str]) -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok.train_from_iterator(corpus, trainers.BpeTrainer(
        vocab_size=2000, special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>",
                                   pad_token="<|endoftext|>", chat_template=CHATML)


def episode(turns: int, k: int) -> Episode:
    steps = [Step(action=Action(text=f"echo line {k}-{t} && ls -la /tmp/d{t}"),
                  observation=Observation(text=f"line {k}-{t}\n" + "-rw-r--r-- 1 u u 12 f.txt\n" * 3))
             for t in range(turns)]
    return Episode(id=f"e{k}", domain="terminal", system_prompt="You simulate a bash terminal.",
                   initial_observation=Observation(text="user@sandbox:~$ "), steps=steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[6, 12, 24, 48])
    parser.add_argument("--episodes", type=int, default=8)
    args = parser.parse_args()
    tok = tokenizer([s.action.text + s.observation.text for s in episode(8, 0).steps] * 50)
    calls = {"renders": 0, "chars": 0}
    render = tok.apply_chat_template

    def counted(*a, **kw):
        out = render(*a, **kw)
        calls["renders"] += 1
        calls["chars"] += len(out) if isinstance(out, str) else 0
        return out

    tok.apply_chat_template = counted  # type: ignore[method-assign]
    print("turns  ms/episode  renders/episode  chars rendered / chat length")
    for turns in args.turns:
        episodes = [episode(turns, k) for k in range(args.episodes)]
        whole = len(render([{"role": "system", "content": "x"}], tokenize=False))  # warm
        calls.update(renders=0, chars=0)
        start = time.perf_counter()
        sft_samples(episodes, tok, max_seq_len=1 << 20)
        ms = (time.perf_counter() - start) * 1000 / len(episodes)
        from agentworld.core.formats import episode_messages

        whole = len(render(episode_messages(episodes[0]), tokenize=False))
        print(f"{turns:5d}  {ms:10.1f}  {calls['renders'] / len(episodes):15.1f}  "
              f"{calls['chars'] / len(episodes) / whole:10.1f}")


if __name__ == "__main__":
    main()
