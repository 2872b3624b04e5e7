"""Smoke test for patches/verl/vision-pos-embed-grid-device.patch.

transformers 4.57's ``Qwen3VLVisionModel.fast_pos_embed_interpolate`` (and the MoE tower's
copy) builds its bilinear index and weight tensors on ``self.pos_embed.weight.device``.
Under FSDP2 with CPU offload that is the CPU between calls: the embedding's own unit
gathers its weight onto the accelerator only inside its forward, and a non-root unit does
not move its inputs. grid_thw and the hidden states are on the accelerator, so the lookup
fails: "Expected all tensors to be on the same device, but got index is on cpu, different
from other tensors on cuda:0". The patch adds a ``fast_pos_embed_interpolate`` to verl's
qwen3_vl module that takes the device from grid_thw, and ``apply_monkey_patch`` assigns it
to both vision towers.

The test runs verl's real ``apply_monkey_patch`` on a tiny Qwen3-VL model from the tree, then runs each
vision tower's forward (the call that failed in training) with its ``pos_embed`` offloaded the way FSDP2
offloads a non-root unit: its weight lives on a storage device between calls and is on the compute device
only during its own forward. On the GPU lane (``--device cuda``) storage is the CPU and compute CUDA, the
real failure. On the CPU lane there is no second real device: storage is the meta device, compute the CPU;
the lookup there checks the index device as the accelerator kernels do, and tensors built on the meta device
fail the same way ("Tensor on device meta is not on the expected device cpu"). Patched, the output is on the
compute device and equals transformers' own forward (with its own interpolation) of a tower held wholly there.

Written against the bug's behaviour, so that it holds for every release: with transformers 4.57 the tower's
forward calls ``fast_pos_embed_interpolate`` (verl 0.8.0 assigns its own device-safe one, as the patch
does); transformers 5 restructured the towers (no such method: the forward builds its interpolation indices
from grid_thw itself), and verl 0.8.0 needs transformers 5 (its npu_patch.py imports ``qwen3_5``). The
manifest's ``[[upstreams.verl.smoke-env]]`` tables give each verl release its transformers.

Half-fixes it guards against: HALF_FIXES below (tests/halffixes/verl/vision-pos-embed-grid-device/).
"""

from __future__ import annotations

import importlib
import re
import types

import pytest
import torch

# Plausible wrong or partial fixes (tests/halffixes/verl/vision-pos-embed-grid-device/<name>.patch), each
# failing here for the bug's own reason, a tensor of the lookup on pos_embed's device: smoke's failure
# reason contains HALF_FIX_REASONS[name].
HALF_FIXES = {
    "idx-only": (
        "the index tensor on grid_thw's device, the weight tensor still on pos_embed's: the weighting of the "
        "looked-up embeddings mixes devices"
    ),
    "dense-tower-only": (
        "only Qwen3VLVisionModel patched: Qwen3VLMoeVisionModel (Qwen3-VL-30B-A3B) keeps transformers' method"
    ),
    "embed-on-weight-device": (
        "indices moved to pos_embed's device for the lookup: inside the embedding's forward the weight is "
        "gathered on the compute device, so the lookup mixes devices"
    ),
}
HALF_FIX_REASONS = {
    "idx-only": "builds tensors on pos_embed's device",
    "dense-tower-only": "Qwen3VLMoeVisionModel's forward with pos_embed offloaded",
    "embed-on-weight-device": "builds tensors on pos_embed's device",
}

MONKEY_PATCH = "verl.models.transformers.monkey_patch"
PATCHED_MODULES = (
    "transformers.models.qwen3_vl.modeling_qwen3_vl",
    "transformers.models.qwen3_vl_moe.modeling_qwen3_vl_moe",
    "transformers.integrations.flash_attention",
)
TOWERS = ("Qwen3VLVisionModel", "Qwen3VLMoeVisionModel")
# several images and a video (t > 1), non-square, larger and smaller than the 8x8 table
GRID_THW = [[1, 4, 6], [2, 8, 4], [1, 12, 10], [3, 2, 2]]
WIDTH = 32  # of both towers: tiny models, built on the CPU in a moment
DEVICE_ERROR = re.compile(r"same device|expected device|mixed torch\.Tensor and DTensor")


def _vision_config(module_name, class_name):
    config_class = getattr(importlib.import_module(module_name), class_name)
    return config_class(
        depth=1,
        hidden_size=WIDTH,
        num_heads=2,
        intermediate_size=WIDTH,
        out_hidden_size=WIDTH,  # the merger's output is the text model's input
        num_position_embeddings=64,
        spatial_merge_size=2,
        patch_size=4,
        temporal_patch_size=2,
        deepstack_visual_indexes=[],
    )


def _snapshot():
    saved = []
    for name in PATCHED_MODULES:
        module = importlib.import_module(name)
        saved.append((module, dict(vars(module))))
        for value in list(vars(module).values()):
            if isinstance(value, type) and value.__module__ == name:
                saved.append((value, dict(vars(value))))

    def restore():
        for owner, attrs in saved:
            for key, value in attrs.items():
                if key not in ("__dict__", "__weakref__") and getattr(owner, key, None) is not value:
                    setattr(owner, key, value)
            if isinstance(owner, type):
                for key in set(vars(owner)) - set(attrs):
                    delattr(owner, key)

    return restore


@pytest.fixture(scope="module")
def lane(smoke_device):
    """(storage, compute): where the offloaded pos_embed weight lives between calls and during its forward."""
    if smoke_device == "cuda":
        if not torch.cuda.is_available():
            pytest.skip("no CUDA device for the GPU lane")
        return "cpu", "cuda"
    return "meta", "cpu"


@pytest.fixture(scope="module")
def towers(load_upstream, built_for_other):
    """The tower classes after verl's apply_monkey_patch, and transformers' own interpolation where it has one."""
    from transformers.models.qwen3_vl import modeling_qwen3_vl
    from transformers.models.qwen3_vl.configuration_qwen3_vl import Qwen3VLConfig
    from transformers.models.qwen3_vl_moe import modeling_qwen3_vl_moe

    classes = {
        "Qwen3VLVisionModel": modeling_qwen3_vl.Qwen3VLVisionModel,
        "Qwen3VLMoeVisionModel": modeling_qwen3_vl_moe.Qwen3VLMoeVisionModel,
    }
    # transformers 4.x: the method the forward calls (verl may replace it); 5.x has none
    originals = {name: vars(cls)["fast_pos_embed_interpolate"] for name, cls in classes.items() if _own(cls)}
    restore = _snapshot()
    try:
        with built_for_other("transformers", "verl's monkey_patch.py"):
            monkey_patch = load_upstream("verl", MONKEY_PATCH)
        config = Qwen3VLConfig(
            text_config=dict(
                hidden_size=WIDTH,
                intermediate_size=WIDTH,
                num_hidden_layers=1,
                num_attention_heads=2,
                num_key_value_heads=2,
                head_dim=WIDTH // 2,  # hidden_size over num_attention_heads
                vocab_size=64,
                rope_scaling={"rope_type": "default", "mrope_section": [2, 3, 3]},
            ),
            vision_config=_vision_config(
                "transformers.models.qwen3_vl.configuration_qwen3_vl", "Qwen3VLVisionConfig"
            ).to_dict(),
        )
        model = modeling_qwen3_vl.Qwen3VLForConditionalGeneration(config)
        with built_for_other("transformers", "verl's apply_monkey_patch"):
            monkey_patch.apply_monkey_patch(model)  # what verl's FSDP workers do for a qwen3_vl model
        yield classes, originals
    finally:
        restore()


def _own(cls):
    return "fast_pos_embed_interpolate" in vars(cls)


def make_tower(cls, name):
    config_module = (
        "transformers.models.qwen3_vl.configuration_qwen3_vl"
        if name == "Qwen3VLVisionModel"
        else "transformers.models.qwen3_vl_moe.configuration_qwen3_vl_moe"
    )
    tower = cls(_vision_config(config_module, name.replace("Model", "Config")))
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        tower.pos_embed.weight.copy_(torch.randn(tower.pos_embed.weight.shape, generator=generator))
    return tower


def offload(embedding, storage, compute):
    """FSDP2 CPU offload of a non-root unit: the weight is on `compute` only inside its own forward."""
    gathered = torch.nn.Parameter(embedding.weight.detach().to(compute))
    resting = torch.nn.Parameter(embedding.weight.detach().to(storage))
    embedding.weight = resting

    def unshard(module, args):
        module.weight = gathered  # the inputs are not moved: only a root unit moves them
        index = args[0]
        if storage == "meta" and index.device != gathered.device:
            # The CPU lane's stand-in device: a kernel's own device check (CUDA's, the NPU's) for
            # what the CPU kernels let through with meta indices.
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but got index is on "
                f"{index.device}, different from other tensors on {gathered.device}"
            )

    def reshard(module, args, output):
        module.weight = resting

    embedding.register_forward_pre_hook(unshard)
    embedding.register_forward_hook(reshard)


def first_tensor(output):
    """The tower's hidden states: the first item of its output (a tuple in 4.x, a ModelOutput in 5.x)."""
    return output[0]


@pytest.mark.parametrize("name", TOWERS)
def test_pos_embed_follows_grid_device_and_matches_transformers(towers, lane, name):
    classes, originals = towers
    storage, compute = lane
    cls = classes[name]
    grid_thw = torch.tensor(GRID_THW, device=compute)

    reference_tower = make_tower(cls, name).to(compute).eval()
    if name in originals:  # transformers' own interpolation, on a tower held wholly on the compute device
        reference_tower.fast_pos_embed_interpolate = types.MethodType(originals[name], reference_tower)
    config = reference_tower.config
    features = config.in_channels * config.temporal_patch_size * config.patch_size**2
    patches = sum(t * h * w for t, h, w in GRID_THW)
    pixels = torch.randn(patches, features, generator=torch.Generator().manual_seed(2)).to(compute)
    with torch.no_grad():
        expected = first_tensor(reference_tower(pixels, grid_thw=grid_thw))

    tower = make_tower(cls, name)
    tower.load_state_dict(reference_tower.state_dict())
    tower.to(compute).eval()
    offload(tower.pos_embed, storage, compute)
    try:
        with torch.no_grad():
            out = first_tensor(tower(pixels, grid_thw=grid_thw))
    except RuntimeError as error:
        if not DEVICE_ERROR.search(str(error)):
            raise
        pytest.fail(
            f"{name}'s forward with pos_embed offloaded to {storage} and grid_thw on {compute} builds tensors on "
            f"pos_embed's device: {error}"
        )
    assert out.device == expected.device, (
        f"{name}'s forward returned its hidden states on {out.device}, not on grid_thw's {compute}"
    )
    torch.testing.assert_close(
        out,
        expected,
        rtol=1e-5,
        atol=1e-5,
        msg=lambda m: f"{name}: the tower's output with verl's interpolation differs from transformers' own:\n{m}",
    )
