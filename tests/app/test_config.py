import pytest

from agentworld.app.config import ConfigError, parse_config, quickstart_config


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
    with pytest.raises(ConfigError, match=r"\[colect\] unknown table; valid tables: run, collect, cpt"):
        parse_config("[colect]\nepisodes = 3\n", "p.toml")
    with pytest.raises(ConfigError) as err:  # a key typo lists its own table's keys
        parse_config("[collect]\nepisodez = 3\n[eval]\nnum_beam = 2\n", "p.toml")
    assert str(err.value) == (
        "p.toml: [collect.episodez] unknown key; valid keys: episodes, policies, max_steps, "
        "heldout_fraction, workers, executor, ray_address, ood_task_kinds, ood_commands, eval_sets, "
        "eval_max_steps, realistic_sources, env_options; [eval.num_beam] unknown key; "
        "valid keys: backend, model, baselines, rewards, reward_options, max_transitions, "
        "ood_max_transitions, realistic_max_transitions, eval_sets, batch_size, max_new_tokens, "
        "num_beams, allow_hub")
    with pytest.raises(ConfigError, match="invalid TOML"):
        parse_config("[collect\n", "p.toml")


def test_collect_env_options_are_a_table_of_any_values():
    """``[collect] env_options`` holds what ``collect --set`` gives; the domain's options class
    checks it when the collect stage starts (tests/app/test_collect_options_cli.py)."""
    config = parse_config("[collect]\nenv_options = { max_steps = 5, sandbox = 'unshare' }\n")
    assert config.collect.env_options == {"max_steps": 5, "sandbox": "unshare"}
    assert parse_config("[collect]\n").collect.env_options == {}


def test_quickstart_full_is_the_same_pipeline_with_larger_budgets():
    fast, full = quickstart_config(), quickstart_config(full=True)
    assert full.stages() == fast.stages()
    for key in ("policies", "max_steps", "ood_task_kinds", "ood_commands", "realistic_sources",
                "eval_sets", "eval_max_steps"):  # the same splits, so the figures compare
        assert getattr(full.collect, key) == getattr(fast.collect, key), key
    assert full.cpt.options() | {"max_steps": 0} == fast.cpt.options() | {"max_steps": 0}
    assert full.collect.episodes >= 3 * fast.collect.episodes
    assert full.sft.options()["max_steps"] >= 3 * fast.sft.options()["max_steps"]
    assert full.eval.num_beams > fast.eval.num_beams == 1
