"""Smoke test for patches/megatron-bridge/automapping-mindspeed-te-column.patch.

On Ascend, MindSpeed (at the pin fc63de5c) replaces Megatron-Core's linear
layer classes with its own (mindspeed/features_manager/megatron_basic/
transformer_engine_basic.py, tensor_parallel/mc2.py and locl_coc.py).
Megatron-Bridge's AutoMapping picks the tensor-parallel split of a weight by
the class name of the module that holds it. Unpatched:

- MindSpeedTELayerNormColumnParallelLinear (every linear_qkv, and every
  linear_fc1 with a fused input norm) contains "Norm", so the normalization
  fallback calls it "replicated" for all its parameters; QKVMapping's inner
  AutoMapping does the same. At TP=2 nothing is split: a plain AutoMapping
  weight (the vision linear_fc1) is loaded whole on every rank and exported
  as each rank's half under the full HF name; QKVMapping's load fails on
  every rank but 0 and its export cannot split the half it is given.
- Every other MindSpeed class raises "Cannot determine parallelism type".

Each MindSpeed class is built here at tensor-parallel size 2, its
classification is checked, and each of its weights goes through a TP=2
split (HF -> Megatron) and gather (Megatron -> HF) through the real mapping
code, which must give back the HF tensor bit for bit. MindSpeed itself is not
importable here (it needs torch_npu and is another upstream), so its classes
are stand-ins with MindSpeed's exact names, base classes and weight layout:
those that subclass Megatron-Core's ColumnParallelLinear/RowParallelLinear
are built by the real Megatron-Core __init__ (the TE modules, plain nn.Modules
in MindSpeed, share one stand-in base for the keywords they all take: AutoMapping
goes by the class's own name only). The two ranks run as two
threads over a stand-in process group whose scatter, all_gather and broadcast
move real tensors between them and refuse a tensor of the wrong shape, as
gloo and NCCL do.

HALF_FIXES names the plausible wrong or partial fixes this module must catch;
each is a patch file under tests/halffixes/megatron-bridge/
automapping-mindspeed-te-column/<name>.patch that applies clean at the pin
instead of the real patch, and the reason each one fails here.
"""

from __future__ import annotations

import threading

import pytest
import torch
from megatron.core import parallel_state
from megatron.core.tensor_parallel.layers import (
    ColumnParallelLinear,
    RowParallelLinear,
    set_tensor_model_parallel_attributes,
)
from megatron.core.transformer.transformer_config import TransformerConfig

PARAM_MAPPING = "megatron.bridge.models.conversion.param_mapping"
TP = 2

HALF_FIXES = {
    "te-column-only": (
        "the first shipped patch: only MindSpeedTEColumnParallelLinear registered. The fused-norm "
        "class's weights (linear_qkv, linear_fc1) stay classified 'replicated', so they are not split "
        "at TP=2, and every MC2/CoC/grouped/TELinear/Layernorm class still raises "
        "'Cannot determine parallelism type'."
    ),
    "layernorm-as-column": (
        "every class registered, MindSpeedTELayerNormColumnParallelLinear in the 'column' set instead "
        "of being detected as the TELayerNormColumnParallelLinear it replaces: its "
        "layer_norm_weight/layer_norm_bias are then classified 'column' and split like the linear weight."
    ),
    "layernorm-as-replicated": (
        "MindSpeedTELayerNormColumnParallelLinear registered as 'replicated' (it 'is a norm'): "
        "its weight/bias, linear_qkv.weight included, are classified 'replicated' and not split at TP=2."
    ),
    "substring-mindspeed-column": (
        "one broad rule, any class name starting with 'MindSpeed' is 'column': it also captures the "
        "MC2/CoC/grouped row classes (split along the wrong dimension), MindSpeedTELinear and "
        "MindSpeedTELayernorm (split although replicated)."
    ),
    "mc2-coc-rows-as-column": (
        "all MindSpeed row classes put in the 'column' set next to the column classes: "
        "MindSpeedMC2RowParallelLinear/MindSpeedCoCRowParallelLinear/MindSpeedTERowParallelGroupedLinear "
        "weights are split along dim 0 instead of dim 1."
    ),
    "without-mc2-coc": (
        "the default path only (TE column, fused norm, grouped, TELinear, Layernorm): the classes "
        "substituted with --use-ascend-mc2 or --use-ascend-coc still raise "
        "'Cannot determine parallelism type'."
    ),
}
HALF_FIX_REASONS = {
    "te-column-only": "Cannot determine parallelism type",
    "layernorm-as-column": "MindSpeedTELayerNormColumnParallelLinear",
    "layernorm-as-replicated": "MindSpeedTELayerNormColumnParallelLinear",
    "substring-mindspeed-column": "MindSpeed shards",
    "mc2-coc-rows-as-column": "MindSpeed shards",
    "without-mc2-coc": "Cannot determine parallelism type",
}


# ---------------------------------------------------------------------------
# Two tensor-parallel ranks in one process.
# ---------------------------------------------------------------------------


class _Wire:
    """What the ranks of one stand-in process group share."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.barrier = threading.Barrier(size, timeout=30)
        self.slots: list = [None] * size


class FakeTPGroup:
    """Stands in for one rank's torch.distributed.ProcessGroup of size TP.

    Megatron-Core and Bridge ask a group only for rank() and size()
    (megatron.core.utils.get_pg_rank/get_pg_size); the collectives Bridge
    calls with it (get_global_rank, scatter, all_gather, broadcast) are
    replaced below and move tensors between the rank threads.
    """

    def __init__(self, wire: _Wire, rank: int) -> None:
        self.wire = wire
        self._rank = rank

    def rank(self) -> int:
        return self._rank

    def size(self) -> int:
        return self.wire.size


def _receive(into: torch.Tensor, sent: torch.Tensor, what: str) -> None:
    # gloo and NCCL require every rank's tensor to have the sender's size;
    # copy_ alone would broadcast a smaller tensor silently.
    if tuple(into.shape) != tuple(sent.shape):
        raise RuntimeError(f"{what}: tensor of shape {tuple(sent.shape)} sent into one of shape {tuple(into.shape)}")
    into.copy_(sent)


def _get_global_rank(group, group_rank):
    return group_rank


def _scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    wire = group.wire
    if group.rank() == src:
        assert scatter_list is not None and len(scatter_list) == wire.size, "scatter source without a list per rank"
        wire.slots[src] = list(scatter_list)
    wire.barrier.wait()
    _receive(tensor, wire.slots[src][group.rank()], "scatter")
    wire.barrier.wait()


def _all_gather(tensor_list, tensor, group=None, async_op=False):
    wire = group.wire
    wire.slots[group.rank()] = tensor.clone()
    wire.barrier.wait()
    for rank, received in enumerate(tensor_list):
        _receive(received, wire.slots[rank], "all_gather")
    wire.barrier.wait()


def _broadcast(tensor, src, group=None, async_op=False):
    wire = group.wire
    if group.rank() == src:
        wire.slots[src] = tensor.clone()
    wire.barrier.wait()
    if group.rank() != src:
        _receive(tensor, wire.slots[src], "broadcast")
    wire.barrier.wait()


@pytest.fixture
def tp_groups(monkeypatch):
    """TP stand-in groups, one per rank; torch.distributed talks through them."""
    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.distributed, "get_global_rank", _get_global_rank)
    monkeypatch.setattr(torch.distributed, "scatter", _scatter)
    monkeypatch.setattr(torch.distributed, "all_gather", _all_gather)
    monkeypatch.setattr(torch.distributed, "broadcast", _broadcast)
    # ReplicatedMapping.hf_to_megatron moves the weight to torch.cuda.current_device()
    # unless the module's weight is already there; here the weights live on the CPU
    # and the "current device" is that one (its index is None).
    monkeypatch.setattr(torch.cuda, "current_device", lambda: None)
    # Bridge's mappings take their groups from megatron.core.mpu when it is initialized
    # (MegatronParamMapping.__init__, also for the delegate AutoMapping creates), as in
    # every training process: here each rank thread sees its own TP group.
    monkeypatch.setattr(parallel_state, "is_initialized", lambda: True)
    monkeypatch.setattr(parallel_state, "get_tensor_model_parallel_group", lambda *a, **k: _current("group"))
    monkeypatch.setattr(parallel_state, "get_expert_tensor_parallel_group", lambda *a, **k: _current("group"))
    monkeypatch.setattr(parallel_state, "get_pipeline_model_parallel_group", lambda *a, **k: None)
    # Expert parallelism 1: each TP rank is alone in its expert-parallel group.
    monkeypatch.setattr(parallel_state, "get_expert_model_parallel_group", lambda *a, **k: _current("ep"))
    wire = _Wire(TP)
    return [FakeTPGroup(wire, rank) for rank in range(TP)]


_CURRENT = threading.local()


def _current(name):
    """This rank thread's group (None outside the rank threads)."""
    return getattr(_CURRENT, name, None)


def on_every_rank(groups, work):
    """Run work(rank, group) on TP threads at once; return the results by rank."""
    results: list = [None] * len(groups)
    errors: list = [None] * len(groups)

    def run(rank):
        _CURRENT.group = groups[rank]
        _CURRENT.ep = FakeTPGroup(_Wire(1), 0)
        try:
            results[rank] = work(rank, groups[rank])
        except BaseException as error:  # noqa: BLE001 - reported to the test below
            errors[rank] = error
            groups[rank].wire.barrier.abort()

    threads = [threading.Thread(target=run, args=(rank,)) for rank in range(len(groups))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(thread.is_alive() for thread in threads), "a TP rank hung in a collective"
    real = [e for e in errors if e is not None and not isinstance(e, threading.BrokenBarrierError)]
    first = (real or [e for e in errors if e is not None] or [None])[0]
    assert first is None, f"a TP rank raised {type(first).__name__}: {first}"
    return results


# ---------------------------------------------------------------------------
# MindSpeed's classes (stand-ins: the real modules import torch_npu).
# ---------------------------------------------------------------------------

HIDDEN, HEADS, GROUPS, HEAD_DIM = 64, 4, 2, 16
QKV_OUT = (HEADS + 2 * GROUPS) * HEAD_DIM  # 128


def make_config() -> TransformerConfig:
    return TransformerConfig(
        num_layers=1,
        hidden_size=HIDDEN,
        num_attention_heads=HEADS,
        num_query_groups=GROUPS,
        kv_channels=HEAD_DIM,
        tensor_model_parallel_size=TP,
        use_cpu_initialization=True,
        perform_initialization=False,
        normalization="LayerNorm",
    )


# mindspeed/te/pytorch/module/linear.py:833
class MindSpeedTEColumnParallelLinear(ColumnParallelLinear):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)


# The MC2/CoC Impl mixins (mindspeed/core/tensor_parallel/{mc2,coc}_feature/*_parallel_linear.py)
# run fused NPU kernels; their __init__ allocates the same weight as Megatron-Core's
# ColumnParallelLinear/RowParallelLinear ([out/tp, in] and [out, in/tp]) and sets the
# tensor-parallel attributes on the weight only. The stand-in mixins leave __init__ to
# the Megatron-Core base, which builds exactly that layout.
class MC2ColumnParallelLinearImpl(torch.nn.Module):
    pass


class MC2RowParallelLinearImpl(torch.nn.Module):
    pass


class CoCColumnParallelLinearImpl(torch.nn.Module):
    pass


class CoCRowParallelLinearImpl(torch.nn.Module):
    pass


# mindspeed/core/tensor_parallel/mc2_feature/adaptor.py:25 and :40
class MindSpeedMC2ColumnParallelLinear(MC2ColumnParallelLinearImpl, ColumnParallelLinear):
    pass


class MindSpeedMC2RowParallelLinear(MC2RowParallelLinearImpl, RowParallelLinear):
    pass


# mindspeed/core/tensor_parallel/coc_feature/adaptor.py:29 and :51
class MindSpeedCoCColumnParallelLinear(CoCColumnParallelLinearImpl, ColumnParallelLinear):
    pass


class MindSpeedCoCRowParallelLinear(CoCRowParallelLinearImpl, RowParallelLinear):
    pass


# The keywords MindSpeed's TE modules below all take (each adds its own): a plain nn.Module, and a
# keyword that MindSpeed's constructor lacks fails here as it would there.
class MindSpeedTEModule(torch.nn.Module):
    def __init__(
        self, *, config, init_method, bias, skip_bias_add, is_expert=False, tp_comm_buffer_name=None, tp_group=None
    ):
        super().__init__()
        self.config = config


# mindspeed/te/pytorch/module/layernorm_column_parallel_linear.py:60
class MindSpeedTELayerNormColumnParallelLinear(MindSpeedTEModule):
    def __init__(self, input_size, output_size, *, gather_output, skip_weight_param_allocation=False, **common):
        super().__init__(**common)
        self.input_size = input_size
        self.output_size = output_size
        self.parallel_mode = "column"
        self.parallel_group = tp_group = common.get("tp_group")
        self.output_size_per_partition = output_size // tp_group.size()
        self.weight = torch.nn.Parameter(torch.empty(self.output_size_per_partition, input_size))
        set_tensor_model_parallel_attributes(self.weight, True, 0, 1)
        if common["bias"]:
            self.bias = torch.nn.Parameter(torch.empty(self.output_size_per_partition))
            set_tensor_model_parallel_attributes(self.bias, True, 0, 1)
        else:
            self.register_parameter("bias", None)
        self.layer_norm_weight = torch.nn.Parameter(torch.ones(input_size))
        if self.config.normalization != "RMSNorm":
            self.layer_norm_bias = torch.nn.Parameter(torch.ones(input_size))
        else:
            self.layer_norm_bias = None


# mindspeed/te/pytorch/module/linear.py:679: only parallel_mode="duplicated" builds
# (any other mode leaves tp_size unbound), so its weight is whole on every rank.
class MindSpeedTELinear(MindSpeedTEModule):
    def __init__(
        self, input_size, output_size, *, parallel_mode, skip_weight_param_allocation, symmetric_ar_type=None, **common
    ):
        super().__init__(**common)
        if parallel_mode != "duplicated":
            raise UnboundLocalError("cannot access local variable 'tp_size' where it is not associated with a value")
        self.weight = torch.nn.Parameter(torch.empty(output_size, input_size))
        self.bias = torch.nn.Parameter(torch.empty(output_size)) if common["bias"] else None


# mindspeed/te/pytorch/module/grouped_linear.py:67, :227, :274
class MindSpeedTEGroupedLinear(MindSpeedTEModule):
    def __init__(self, num_gemms, input_size, output_size, *, parallel_mode, pg_collection=None, **common):
        super().__init__(**common)
        self.num_gemms = num_gemms
        # MindSpeed's own (inverted) bookkeeping; Bridge must not go by it.
        self.partition_dim = 1 if parallel_mode == "column" else 0
        self.parallel_mode = parallel_mode
        tp_size = common.get("tp_group").size()
        if parallel_mode == "column":
            output_size //= tp_size
        else:
            input_size //= tp_size
        for i in range(num_gemms):
            self.register_parameter(f"weight{i}", torch.nn.Parameter(torch.empty(output_size, input_size)))


class MindSpeedTEColumnParallelGroupedLinear(MindSpeedTEGroupedLinear):
    def __init__(self, num_gemms, input_size, output_size, **kwargs):
        super().__init__(num_gemms, input_size, output_size, parallel_mode="column", **kwargs)


class MindSpeedTERowParallelGroupedLinear(MindSpeedTEGroupedLinear):
    def __init__(self, num_gemms, input_size, output_size, **kwargs):
        super().__init__(num_gemms, input_size, output_size, parallel_mode="row", **kwargs)


# mindspeed/te/pytorch/module/layernorm.py:5 (MindSpeed's transformer_engine.pytorch.LayerNorm)
class MindSpeedTELayernorm(torch.nn.LayerNorm):
    def __init__(self, hidden_size, eps=1e-5, sequence_parallel=False, zero_centered_gamma=False, **kwargs):
        super().__init__(hidden_size, eps=eps)
        self.sequence_parallel = sequence_parallel
        self.zero_centered_gamma = zero_centered_gamma


def _with_experts(config, number=2):
    config.num_moe_experts = number
    return config


def _linear_kwargs(config, group):
    return dict(config=config, init_method=torch.nn.init.zeros_, bias=True, skip_bias_add=False, tp_group=group)


def _column_and_row(column, row):
    """The CLASSES entries of one MindSpeed family's column and row class (MC2, CoC): the merger's fc1 and fc2."""
    return {
        column.__name__: (
            lambda c, g: column(HIDDEN, 96, gather_output=False, **_linear_kwargs(c, g)),
            [("vision_model.merger.linear_fc1.weight", "model.visual.merger.linear_fc1.weight", "column", 0)],
        ),
        row.__name__: (
            lambda c, g: row(96, HIDDEN, input_is_parallel=True, **_linear_kwargs(c, g)),
            [("vision_model.merger.linear_fc2.weight", "model.visual.merger.linear_fc2.weight", "row", 1)],
        ),
    }


LANG = "language_model.decoder.layers.0"
VISION = "vision_model.decoder.layers.0"

# class -> (builder(config, group), [(megatron param, hf param, expected type, split dim or None)])
CLASSES = {
    "MindSpeedTEColumnParallelLinear": (
        lambda c, g: MindSpeedTEColumnParallelLinear(HIDDEN, 96, gather_output=False, **_linear_kwargs(c, g)),
        [
            ("vision_model.merger.linear_fc1.weight", "model.visual.merger.linear_fc1.weight", "column", 0),
            ("vision_model.merger.linear_fc1.bias", "model.visual.merger.linear_fc1.bias", "column", 0),
        ],
    ),
    "MindSpeedTELayerNormColumnParallelLinear": (
        lambda c, g: MindSpeedTELayerNormColumnParallelLinear(HIDDEN, 96, gather_output=False, **_linear_kwargs(c, g)),
        [
            (f"{VISION}.mlp.linear_fc1.weight", "model.visual.blocks.0.mlp.linear_fc1.weight", "column", 0),
            (f"{VISION}.mlp.linear_fc1.bias", "model.visual.blocks.0.mlp.linear_fc1.bias", "column", 0),
            (f"{VISION}.mlp.linear_fc1.layer_norm_weight", "model.visual.blocks.0.norm2.weight", "replicated", None),
            (f"{VISION}.mlp.linear_fc1.layer_norm_bias", "model.visual.blocks.0.norm2.bias", "replicated", None),
        ],
    ),
    **_column_and_row(MindSpeedMC2ColumnParallelLinear, MindSpeedMC2RowParallelLinear),
    **_column_and_row(MindSpeedCoCColumnParallelLinear, MindSpeedCoCRowParallelLinear),
    "MindSpeedTEColumnParallelGroupedLinear": (
        lambda c, g: MindSpeedTEColumnParallelGroupedLinear(
            2, HIDDEN, 96, config=_with_experts(c), init_method=None, bias=False, skip_bias_add=False, tp_group=g
        ),
        [
            (
                f"{LANG}.mlp.experts.linear_fc1.weight0",
                "model.language_model.layers.0.mlp.experts.0.up_proj.weight",
                "column",
                0,
            )
        ],
    ),
    "MindSpeedTERowParallelGroupedLinear": (
        lambda c, g: MindSpeedTERowParallelGroupedLinear(
            2, 96, HIDDEN, config=_with_experts(c), init_method=None, bias=False, skip_bias_add=False, tp_group=g
        ),
        [
            (
                f"{LANG}.mlp.experts.linear_fc2.weight0",
                "model.language_model.layers.0.mlp.experts.0.down_proj.weight",
                "row",
                1,
            )
        ],
    ),
    "MindSpeedTELinear": (
        lambda c, g: MindSpeedTELinear(
            HIDDEN,
            32,
            parallel_mode="duplicated",
            config=c,
            init_method=None,
            bias=False,
            skip_bias_add=False,
            skip_weight_param_allocation=False,
        ),
        [
            (
                f"{LANG}.self_attention.linear_q_down_proj.weight",
                "model.language_model.layers.0.self_attn.q_a_proj.weight",
                "replicated",
                None,
            )
        ],
    ),
    "MindSpeedTELayernorm": (
        lambda c, g: MindSpeedTELayernorm(HIDDEN),
        [("vision_model.merger.patch_norm.weight", "model.visual.merger.norm.weight", "replicated", None)],
    ),
}


def detect(param_mapping, module, megatron_param) -> str:
    """AutoMapping's classification of module for megatron_param, or the error it raises."""
    mapping = param_mapping.AutoMapping(megatron_param=megatron_param, hf_param=megatron_param)
    try:
        return mapping._detect_parallelism_type(module)
    except ValueError as error:
        return f"ValueError: {str(error).splitlines()[0]}"


def param_of(module, megatron_param) -> torch.nn.Parameter:
    return getattr(module, megatron_param.rsplit(".", 1)[-1])


@pytest.mark.parametrize("class_name", sorted(CLASSES))
def test_mindspeed_class_splits_like_megatron(load_upstream, tp_groups, class_name):
    param_mapping = load_upstream("megatron.bridge", PARAM_MAPPING)
    build, params = CLASSES[class_name]
    config = make_config()
    modules = [build(config, group) for group in tp_groups]
    assert type(modules[0]).__name__ == class_name

    # Classification, per parameter (the fused-norm class holds both kinds).
    detected = {megatron_param: detect(param_mapping, modules[0], megatron_param) for megatron_param, *_ in params}
    expected = {megatron_param: kind for megatron_param, _, kind, _ in params}
    assert detected == expected, f"{class_name}: AutoMapping classified {detected}, MindSpeed shards {expected}"

    # TP=2 split (HF -> Megatron), then gather (Megatron -> HF), through the mapping.
    for megatron_param, hf_param, _kind, split_dim in params:
        local_shape = tuple(param_of(modules[0], megatron_param).shape)
        full_shape = list(local_shape)
        if split_dim is not None:
            full_shape[split_dim] *= TP
        generator = torch.Generator().manual_seed(len(megatron_param))
        hf_weight = torch.randn(full_shape, generator=generator)
        expected_shards = torch.chunk(hf_weight, TP, dim=split_dim) if split_dim is not None else [hf_weight] * TP

        def load(rank, group):
            mapping = param_mapping.AutoMapping(megatron_param=megatron_param, hf_param=hf_param)
            return mapping.hf_to_megatron(hf_weight.clone(), modules[rank])

        shards = on_every_rank(tp_groups, load)
        for rank, shard in enumerate(shards):
            assert tuple(shard.shape) == local_shape, (
                f"{class_name}.{megatron_param}: rank {rank} received {tuple(shard.shape)} for its "
                f"{local_shape} parameter (HF {tuple(hf_weight.shape)}): not split the way MindSpeed shards it"
            )
            assert torch.equal(shard, expected_shards[rank]), (
                f"{class_name}.{megatron_param}: rank {rank} got the wrong part"
            )
            with torch.no_grad():
                param_of(modules[rank], megatron_param).copy_(shard)

        def export(rank, group):
            mapping = param_mapping.AutoMapping(megatron_param=megatron_param, hf_param=hf_param)
            return mapping.megatron_to_hf(param_of(modules[rank], megatron_param).detach(), modules[rank])

        for rank, exported in enumerate(on_every_rank(tp_groups, export)):
            assert list(exported) == [hf_param]
            assert torch.equal(exported[hf_param], hf_weight), (
                f"{class_name}.{megatron_param}: rank {rank} exported {tuple(exported[hf_param].shape)}, "
                f"not the HF tensor {tuple(hf_weight.shape)} it was loaded from"
            )


def test_linear_qkv_tp2_round_trip(load_upstream, tp_groups):
    """Qwen3-VL's language linear_qkv under MindSpeed is a MindSpeedTELayerNormColumnParallelLinear."""
    param_mapping = load_upstream("megatron.bridge", PARAM_MAPPING)
    config = make_config()
    modules = [
        MindSpeedTELayerNormColumnParallelLinear(HIDDEN, QKV_OUT, gather_output=False, **_linear_kwargs(config, group))
        for group in tp_groups
    ]
    megatron_param = f"{LANG}.self_attention.linear_qkv.weight"
    hf = {
        "q": "model.language_model.layers.0.self_attn.q_proj.weight",
        "k": "model.language_model.layers.0.self_attn.k_proj.weight",
        "v": "model.language_model.layers.0.self_attn.v_proj.weight",
    }
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(HEADS * HEAD_DIM, HIDDEN, generator=generator)
    k = torch.randn(GROUPS * HEAD_DIM, HIDDEN, generator=generator)
    v = torch.randn(GROUPS * HEAD_DIM, HIDDEN, generator=generator)
    merged = param_mapping.merge_qkv_weights(config, q, k, v)

    # Unpatched the fused-norm class falls to the "Norm" fallback: "replicated". Then rank 0
    # broadcasts the whole merged tensor, and QKVMapping hands the other ranks None to
    # replicate (AttributeError on the load); on export each rank's half is taken for the
    # whole tensor (split_qkv_weights cannot view it). Name the cause before that happens.
    inner = param_mapping.QKVMapping(megatron_param, q=hf["q"], k=hf["k"], v=hf["v"])._tp_mapping
    assert detect(param_mapping, modules[0], inner.megatron_param) == "column", (
        f"linear_qkv.weight of a MindSpeedTELayerNormColumnParallelLinear is classified "
        f"{detect(param_mapping, modules[0], inner.megatron_param)!r}: at TP={TP} it would not be split"
    )

    def new_mapping(group):
        return param_mapping.QKVMapping(megatron_param, q=hf["q"], k=hf["k"], v=hf["v"])

    shards = on_every_rank(
        tp_groups, lambda rank, group: new_mapping(group).hf_to_megatron({"q": q, "k": k, "v": v}, modules[rank])
    )
    local_shape = tuple(modules[0].weight.shape)
    for rank, shard in enumerate(shards):
        assert tuple(shard.shape) == local_shape, (
            f"linear_qkv.weight: rank {rank} received {tuple(shard.shape)} for its {local_shape} shard of the "
            f"{tuple(merged.shape)} merged QKV: AutoMapping did not split it column-wise"
        )
        assert torch.equal(shard, torch.chunk(merged, TP, dim=0)[rank])
        with torch.no_grad():
            modules[rank].weight.copy_(shard)

    exported = on_every_rank(
        tp_groups, lambda rank, group: new_mapping(group).megatron_to_hf(modules[rank].weight.detach(), modules[rank])
    )
    for rank, result in enumerate(exported):
        assert sorted(result) == sorted(hf.values())
        for name, original in (("q", q), ("k", k), ("v", v)):
            assert torch.equal(result[hf[name]], original), f"rank {rank}: {name}_proj did not round-trip bit-exact"
