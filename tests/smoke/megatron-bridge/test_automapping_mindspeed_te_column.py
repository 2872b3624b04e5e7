"""Smoke test for patches/megatron-bridge/automapping-mindspeed-te-column.patch.

MindSpeed swaps TEColumnParallelLinear for MindSpeedTEColumnParallelLinear on
Ascend; AutoMapping goes by class name, so without the registry entry it
raises "Cannot determine parallelism type for module ...".
"""

from __future__ import annotations

import torch

PARAM_MAPPING = "megatron.bridge.models.conversion.param_mapping"


class MindSpeedTEColumnParallelLinear(torch.nn.Module):
    """Stands in for mindspeed.te.pytorch.module.linear.MindSpeedTEColumnParallelLinear.

    Detection looks only at the class name, and like the real class (a
    Megatron-Core ColumnParallelLinear) the module itself carries no
    ``tensor_model_parallel``/``partition_dim`` attributes: those live on its weight.
    """

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(4, 2))


def test_mindspeed_te_column_parallel_linear_is_column_parallel(load_upstream):
    param_mapping = load_upstream("megatron.bridge", PARAM_MAPPING)
    mapping = param_mapping.AutoMapping(
        megatron_param="language_model.decoder.layers.*.mlp.linear_fc1.weight",
        hf_param="model.language_model.layers.*.mlp.up_proj.weight",
    )

    # Unpatched: ValueError("Cannot determine parallelism type for module
    # 'MindSpeedTEColumnParallelLinear' ...") from the real detection code.
    detected = mapping._detect_parallelism_type(MindSpeedTEColumnParallelLinear())

    assert detected == "column"
    assert isinstance(mapping._get_or_create_mapping(detected), param_mapping.ColumnParallelMapping)
