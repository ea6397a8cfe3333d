"""The `accelerate launch` configs kept in examples/accelerate load with accelerate's own readers.

The launch itself (single process) runs in test_trainers_smollm2.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from accelerate.commands.config.config_args import load_config_from_file
from accelerate.commands.launch import launch_command_parser

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "accelerate"
EXPECTED = {
    "cpu_single.yaml": ("NO", "no", 1),
    "fsdp.yaml": ("FSDP", "bf16", 2),
    "fsdp_cpu.yaml": ("FSDP", "no", 2),
    "deepspeed_zero2.yaml": ("DEEPSPEED", "bf16", 2),
    "deepspeed_zero3.yaml": ("DEEPSPEED", "bf16", 2),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_launch_config_loads_and_names_only_known_options(name):
    path = EXAMPLES / name
    config = load_config_from_file(str(path))
    kind, precision, processes = EXPECTED[name]
    assert (config.distributed_type.value, config.mixed_precision, config.num_processes) == (
        kind, precision, processes)
    # Nested plugin options become `accelerate launch --<key>` arguments: each must be one.
    known = set(launch_command_parser()._option_string_actions)
    raw = yaml.safe_load(path.read_text())
    nested = {**raw.get("fsdp_config", {}), **raw.get("deepspeed_config", {})}
    assert [key for key in nested if f"--{key}" not in known] == []
    if kind == "DEEPSPEED" and raw["deepspeed_config"]["zero_stage"] == 3:
        assert raw["deepspeed_config"]["zero3_save_16bit_model"] is True


def test_every_example_config_is_covered():
    assert sorted(p.name for p in EXAMPLES.glob("*.yaml")) == sorted(EXPECTED)
