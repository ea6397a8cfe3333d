"""Our chat ``messages`` export is usable as-is by TRL's ``SFTTrainer`` with
``assistant_only_loss``: a tiny Qwen3 model with the stock Qwen3 template trains two steps on
it (``datasets.load_dataset("json", ...)`` of the file ``agentworld convert --to messages``
writes), and the loss falls on the assistant messages only."""

from __future__ import annotations

import pytest
from test_chat_mask import family_tokenizer
from transformers import Qwen3Config, Qwen3ForCausalLM

from agentworld.core.dataformats import write_as

pytest.importorskip("trl")


def test_sft_trainer_runs_on_our_messages_export(corpus, tmp_path):
    import torch
    from datasets import load_dataset
    from trl import SFTConfig, SFTTrainer

    url = str(tmp_path / "messages.jsonl.gz")
    n = write_as(url, corpus[:6], "messages")
    ds = load_dataset("json", data_files=url, split="train", cache_dir=str(tmp_path / "cache"))
    assert ds.num_rows == n == sum(len(e.steps) for e in corpus[:6])
    tok = family_tokenizer("qwen3")
    torch.manual_seed(0)
    cfg = Qwen3Config(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, head_dim=16, max_position_embeddings=2048,
        eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tok.convert_tokens_to_ids("<|endoftext|>"),
    )  # fmt: skip
    args = SFTConfig(
        output_dir=str(tmp_path / "out"), max_steps=2, per_device_train_batch_size=2,
        assistant_only_loss=True, report_to=[], use_cpu=True, logging_steps=1,
        save_strategy="no", max_length=1024, dataset_num_proc=None,
    )  # fmt: skip
    trainer = SFTTrainer(
        model=Qwen3ForCausalLM(cfg), args=args, train_dataset=ds, processing_class=tok
    )
    row = trainer.train_dataset[0]
    masked = tok.decode([t for t, lab in zip(row["input_ids"], row["labels"]) if lab != -100])
    assert "<predicted_observation>" in masked and "Explore" not in masked  # no prompt tokens
    result = trainer.train()
    assert result.global_step == 2 and result.training_loss > 0


def test_our_checkpoints_template_passes_assistant_only_loss(corpus, tokenizer_dir, tmp_path):
    """The tokenizer of our own checkpoints (ChatML) has ``{% generation %}`` markers, so TRL's
    ``assistant_only_loss`` takes it as it is (without them TRL has no training variant of it
    and refuses), and the loss falls on the observation answers only."""
    import torch
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    from agentworld.core.formats import episode_messages

    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    ds = Dataset.from_list([{"messages": episode_messages(e)} for e in corpus[:4]])
    torch.manual_seed(0)
    cfg = Qwen3Config(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, head_dim=16, max_position_embeddings=2048,
        eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
    )  # fmt: skip
    args = SFTConfig(
        output_dir=str(tmp_path / "out"), max_steps=1, per_device_train_batch_size=2,
        assistant_only_loss=True, report_to=[], use_cpu=True, logging_steps=1,
        save_strategy="no", max_length=1024, dataset_num_proc=None,
    )  # fmt: skip
    trainer = SFTTrainer(
        model=Qwen3ForCausalLM(cfg), args=args, train_dataset=ds, processing_class=tok
    )
    assert trainer.chat_template is None  # our own template, not a TRL variant
    row = trainer.train_dataset[0]
    masked = tok.decode([t for t, lab in zip(row["input_ids"], row["labels"]) if lab != -100])
    steps = corpus[0].steps
    assert masked.count("<predicted_observation>") == len(steps)
    assert masked.count("<|im_end|>") == len(steps)  # each answer's end-of-turn is trained
    assert "<|im_start|>" not in masked and steps[0].action.text not in masked
    assert trainer.train().global_step == 1
