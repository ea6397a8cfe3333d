"""FSDP across CPU processes (gloo) through accelerate.

accelerate 1.x turns ``ACCELERATE_USE_FSDP`` (what ``accelerate launch`` exports for a config
with ``distributed_type: FSDP``) into FSDP only for accelerator back-ends: in
``AcceleratorState.__init__`` (``accelerate/state.py``) the branch that sets
``distributed_type = FSDP`` and keeps the plugin lists ``MULTI_GPU``, ``MULTI_XPU`` and the other
devices, not ``MULTI_CPU``. On a machine without a GPU the processes therefore ran plain data
parallel, each holding the whole model, without a word. torch itself shards on CPU:
``torch.distributed.fsdp.fully_shard`` (FSDP2) all-gathers and reduce-scatters over gloo.

:func:`cpu_fsdp_plugin` builds the plugin accelerate would have built (from the same ``FSDP_*``
variables), refusing what torch cannot do there; :func:`enable_cpu_fsdp` sets the two fields of
the accelerator state that accelerate's FSDP branch sets (``distributed_type``, in both
``AcceleratorState`` and ``PartialState`` as accelerate does, and ``fsdp_plugin``), after which ``Accelerator.prepare``, ``get_state_dict``, ``save_state`` and
``load_state`` take their FSDP paths unchanged. ``examples/accelerate/README.md`` lists what was
run and what is refused.
"""

from __future__ import annotations

import os

from accelerate import Accelerator, FullyShardedDataParallelPlugin
from accelerate.state import PartialState
from accelerate.utils import DistributedType
from torch.distributed.fsdp import CPUOffloadPolicy


class CpuFsdpError(ValueError):
    """An FSDP launch configuration that torch cannot run on CPU processes."""


def fsdp_requested() -> bool:
    """Whether the launch asked for FSDP (``ACCELERATE_USE_FSDP=true``: ``accelerate launch``
    with a ``distributed_type: FSDP`` config, or set by hand under ``torchrun``)."""
    return os.environ.get("ACCELERATE_USE_FSDP", "false").lower() == "true"


def cpu_fsdp_plugin() -> FullyShardedDataParallelPlugin:
    """The FSDP plugin of the launch (``FSDP_*`` environment variables, as
    ``FullyShardedDataParallelPlugin()`` reads them), checked for CPU processes.

    Mixed precision is not decided here: :func:`enable_cpu_fsdp` gives the plugin the
    accelerator's (bf16 runs: bf16 compute and gradient reduce-scatter, fp32 shards).

    Raises:
        CpuFsdpError: ``fsdp_version`` 1 (torch's ``FullyShardedDataParallel`` wrapper needs a
            device index: accelerate passes ``device_id=cpu:0`` and torch refuses it, "Inconsistent
            compute device and `device_id`: cpu vs cpu:0"), or parameter offload
            (``fsdp_offload_params``: the parameters are on the CPU already); each message says
            what to set.
    """
    plugin = FullyShardedDataParallelPlugin()
    if plugin.fsdp_version != 2:
        raise CpuFsdpError(
            f"fsdp_version {plugin.fsdp_version} on CPU processes: FSDP1 needs an accelerator "
            "device (torch refuses device_id cpu:0); FSDP2 (fully_shard) runs on CPU: set "
            "fsdp_version: 2 in the launch config"
        )
    if isinstance(plugin.cpu_offload, CPUOffloadPolicy):
        raise CpuFsdpError(
            "fsdp_offload_params: true on CPU processes: the parameters are on the CPU already; "
            "set fsdp_offload_params: false"
        )
    return plugin


def enable_cpu_fsdp(acc: Accelerator, plugin: FullyShardedDataParallelPlugin) -> None:
    """Make ``acc`` (created with ``cpu=True`` under several processes, so ``MULTI_CPU``) an
    FSDP accelerator with ``plugin``: what ``AcceleratorState.__init__`` does for GPUs.

    Raises:
        CpuFsdpError: ``acc`` is not a multi-process CPU accelerator.
    """
    state = acc.state
    if state.distributed_type != DistributedType.MULTI_CPU:
        raise CpuFsdpError(
            f"CPU FSDP needs a multi-process CPU accelerator, got {state.distributed_type}"
        )
    state.distributed_type = DistributedType.FSDP
    if state.mixed_precision != "no":
        plugin.set_mixed_precision(state.mixed_precision)
    state.fsdp_plugin = plugin
    # as accelerate's own __init__ ends: every later AcceleratorState() copies PartialState's
    # fields over its own, which would turn this state back into MULTI_CPU
    PartialState().distributed_type = DistributedType.FSDP
