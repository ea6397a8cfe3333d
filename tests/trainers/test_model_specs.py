"""What ``model`` may name: presets, pretrained bases by name, checkpoint directories, hub ids
(with a clear error when the hub cannot be reached)."""

from __future__ import annotations

import pytest

from agentworld.trainers.models.specs import ModelSpecError, check_model_spec, is_hub_id, load_model


def test_names_that_resolve_without_loading(tmp_path):
    check_model_spec("copy")
    check_model_spec("smollm2")  # a pretrained base, prepared into the cache on first use
    check_model_spec("HuggingFaceTB/SmolLM2-135M-Instruct", allow_hub=True)
    assert is_hub_id("owner/name") and not is_hub_id("runs/x/checkpoints/sft")
    assert not is_hub_id(str(tmp_path))  # an existing path is never a hub id
    with pytest.raises(ModelSpecError, match="hub id owner/name with allow_hub=True"):
        check_model_spec("HuggingFaceTB/SmolLM2-135M-Instruct", allow_hub=False)
    with pytest.raises(ModelSpecError, match="pretrained bases: smollm2"):
        check_model_spec("no/such/dir", allow_hub=True)


def test_hub_id_offline_gives_a_clear_error(monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ModelSpecError) as err:
        load_model("agentworld-tests/no-such-model", allow_hub=True)
    text = str(err.value)
    assert "'agentworld-tests/no-such-model'" in text and "hub did not provide it" in text
    assert "hf download agentworld-tests/no-such-model --local-dir DIR" in text
