import pytest

from agentworld.core.config import ConfigError, parse_config, quickstart_config


def test_quickstart_config_is_complete():
    config = quickstart_config()
    assert config.stages() == ["collect", "cpt", "sft", "eval", "simulate"]
    assert config.collect.episodes >= 400
    assert config.cpt.trainer == "cpt" and config.cpt.options()["tokenizer"] == "train"


def test_stage_order_is_fixed_and_options_pass_through():
    config = parse_config('[sft]\ntrainer = "sft"\nlr = 0.001\n[collect]\nepisodes = 5\n')
    assert config.stages() == ["collect", "sft"]
    assert config.sft.options() == {"lr": 0.001}


def test_bad_config_names_field():
    with pytest.raises(ConfigError, match=r"\[collect.episodes\]"):
        parse_config("[collect]\nepisodes = 0\n", "p.toml")
    with pytest.raises(ConfigError, match="valid tables"):
        parse_config("[colect]\nepisodes = 3\n", "p.toml")
    with pytest.raises(ConfigError, match="invalid TOML"):
        parse_config("[collect\n", "p.toml")
