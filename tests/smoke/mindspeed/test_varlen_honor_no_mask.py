"""Smoke test for patches/mindspeed/varlen-honor-no-mask.patch.

``MindSpeedTEDotProductAttention.forward`` hands the model-wide
``config.attention_mask_type`` ('causal' by default) to the fused-attention
config for every layer, so a layer declared ``no_mask`` (Qwen3-VL's vision
tower) runs with sparse_mode 2, leftUpCausal. npu_fusion_attention ignores
sparse_mode when no atten_mask is given, so the damage shows as soon as the
layer is handed a mask, e.g. the model's compressed causal mask that vime and
slime forced onto every layer: the vision tokens then attend causally. The
patch gives a no_mask layer its own mask type and no mask.

MindSpeed's real forward, backend and mask generator run from the tree; only
torch_npu (the kernel and the stream type) is stood in for, see npu_stand_in.py.
Packed sequences (THD, the TND layout) of different lengths, and unpacked
[s, b, n, d] ones (SBHD, the SBH layout), are checked against plain
attention within each sequence.
"""

from __future__ import annotations

import inspect

import pytest
import torch
import torch.nn.functional as F

# The half-fixes these tests catch, each a plausible wrong or partial version of the patch:
# tests/halffixes/mindspeed/varlen-honor-no-mask/<name>.patch.
# tests/test_half_fixes.py applies each in its place and requires smoke to fail by assertion with a
# reason containing HALF_FIX_REASONS[name].
HALF_FIXES = {
    "mask-type-only": (
        "passes the layer's mask type (sparse_mode 0) but keeps the mask the layer is handed: sparse_mode 0 "
        "with the causal mask is still causal, which the packed no_mask layer handed the model's mask shows"
    ),
    "mask-still-built": (
        "passes the layer's mask type but builds the causal mask for every layer handed none (vime's forced "
        "mask): the packed no_mask layer handed no mask attends causally"
    ),
    "thd-only": (
        "honors no_mask only with packed_seq_params: the unpacked SBHD no_mask layer handed the model's "
        "causal mask still attends causally"
    ),
}
HALF_FIX_REASONS = {
    "mask-type-only": "handed the model's causal mask (packed THD) is not bidirectional",
    "mask-still-built": "handed no mask (packed THD) is not bidirectional",
    "thd-only": "handed the model's causal mask (unpacked SBHD) is not bidirectional",
}

DPA_MODULE = "mindspeed.te.pytorch.attention.dot_product_attention.dot_product_attention"
MASK_MODULE = "mindspeed.core.transformer.flash_attention.generate_mask.generate_mask"
# (dtype, tolerance) of the conftest's ``target``: the real kernel on an NPU, npu_stand_in.py on the CPU elsewhere
TARGETS = {"npu": (torch.float16, 2e-3), "cpu": (torch.float32, 1e-5)}
SEQ_LENS = (3, 5, 4)
HEADS, GROUPS, HEAD_DIM = 4, 2, 8


@pytest.fixture(scope="module")
def mindspeed(target, load_upstream):
    dpa = load_upstream("mindspeed", DPA_MODULE)
    mask = load_upstream("mindspeed", MASK_MODULE)
    yield dpa, mask
    mask.set_attention_mask(None)


def make_layer(mindspeed, target, attn_mask_type):
    from megatron.core.transformer.transformer_config import TransformerConfig

    dpa, mask = mindspeed
    config = TransformerConfig(
        num_layers=1,
        hidden_size=HEADS * HEAD_DIM,
        num_attention_heads=HEADS,
        num_query_groups=GROUPS,
        kv_channels=HEAD_DIM,
        attention_dropout=0.0,
    )
    # What MindSpeed's argument features add to the config: the default
    # --attention-mask-type and flash attention (compressed 2048x2048 mask).
    config.attention_mask_type = "causal"
    config.use_flash_attn = True
    # MindSpeed's own mask generator, on the device at hand: get_attention_mask
    # would otherwise build it on 'npu'.
    mask.set_attention_mask(None)
    mask.generate_attention_mask(config, True, target[0])
    layer = dpa.MindSpeedTEDotProductAttention(
        config, layer_number=1, attn_mask_type=attn_mask_type, attention_type="self"
    )
    # megatron-core 0.19 grew PackedSeqParams fields (local_cp_size, cp_group,
    # total_tokens, ...) that the pinned DotProductAttention.forward does not
    # take; hand on only those it does, as with the megatron-core it was built for.
    accepted = inspect.signature(dpa.DotProductAttention.forward).parameters
    layer.kept_packed_seq_params &= set(accepted)
    return layer, mask.get_attention_mask(config)


def packed_inputs(target):
    from megatron.core.packed_seq_params import PackedSeqParams

    device, dtype, _ = target
    generator = torch.Generator().manual_seed(0)
    tokens = sum(SEQ_LENS)
    q, k, v = (
        torch.randn(tokens, heads, HEAD_DIM, generator=generator).to(device, dtype) for heads in (HEADS, GROUPS, GROUPS)
    )
    cu_seqlens = torch.tensor([0, *torch.tensor(SEQ_LENS).cumsum(0).tolist()], dtype=torch.int32)
    params = PackedSeqParams(
        qkv_format="thd",
        cu_seqlens_q=cu_seqlens,
        cu_seqlens_kv=cu_seqlens,
        max_seqlen_q=max(SEQ_LENS),
        max_seqlen_kv=max(SEQ_LENS),
    )
    return q, k, v, params


def reference(q, k, v, causal):
    """Plain attention within each packed sequence, [T, N, D]."""
    outputs, start = [], 0
    for length in SEQ_LENS:
        qs, ks, vs = (t[start : start + length].float().transpose(0, 1) for t in (q, k, v))
        ks, vs = (t.repeat_interleave(HEADS // GROUPS, dim=0) for t in (ks, vs))
        outputs.append(F.scaled_dot_product_attention(qs, ks, vs, is_causal=causal).transpose(0, 1))
        start += length
    return torch.cat(outputs)


def run(layer, attention_mask, attn_mask_type, target):
    q, k, v, params = packed_inputs(target)
    out = layer(q, k, v, attention_mask, attn_mask_type, packed_seq_params=params)
    return out.float().cpu(), reference(q, k, v, attn_mask_type.name == "causal").cpu()


SBHD_SEQ, SBHD_BATCH = 5, 2


def run_unpacked(layer, attention_mask, attn_mask_type, target):
    """The same layer on unpacked [s, b, n, d] sequences (the SBHD path, layout SBH): plain attention per batch."""
    device, dtype, _ = target
    generator = torch.Generator().manual_seed(1)
    q, k, v = (
        torch.randn(SBHD_SEQ, SBHD_BATCH, heads, HEAD_DIM, generator=generator).to(device, dtype)
        for heads in (HEADS, GROUPS, GROUPS)
    )
    out = layer(q, k, v, attention_mask, attn_mask_type, packed_seq_params=None)
    qs, ks, vs = (t.float().permute(1, 2, 0, 3) for t in (q, k, v))  # [b, n, s, d]
    ks, vs = (t.repeat_interleave(HEADS // GROUPS, dim=1) for t in (ks, vs))
    expected = F.scaled_dot_product_attention(qs, ks, vs, is_causal=attn_mask_type.name == "causal")
    expected = expected.permute(2, 0, 1, 3).reshape(SBHD_SEQ, SBHD_BATCH, -1)
    return out.float().cpu().reshape(SBHD_SEQ, SBHD_BATCH, -1), expected.cpu()


def assert_within(out, expected, target, msg):
    """``out`` equals ``expected`` within the target's tolerance (relative and absolute); ``msg`` says how not."""
    torch.testing.assert_close(out, expected, rtol=target[2], atol=target[2], msg=msg)


def test_no_mask_layers_attend_bidirectionally_and_causal_layers_stay_causal(mindspeed, target):
    """One test, so that it fails on the unpatched tree as a whole.

    The bug: a no_mask layer handed the model's causal mask attends causally, on packed (THD) and
    unpacked (SBHD) sequences alike. The same test also guards the cases the pin already gets right, so
    a fix that breaks them (vime's forced 2048x2048 causal mask on every layer, say) fails here too: a
    no_mask layer handed no mask stays bidirectional, and a causal layer stays causal.
    """
    from megatron.core.transformer.enums import AttnMaskType

    layer, model_mask = make_layer(mindspeed, target, AttnMaskType.no_mask)
    for runner, layout in ((run, "packed THD"), (run_unpacked, "unpacked SBHD")):
        for handed, attention_mask in (("no mask", None), ("the model's causal mask", model_mask)):
            out, expected = runner(layer, attention_mask, AttnMaskType.no_mask, target)
            assert_within(
                out,
                expected,
                target,
                lambda m, handed=handed, layout=layout: (
                    f"no_mask layer handed {handed} ({layout}) is not bidirectional within each sequence:\n{m}"
                ),
            )
    causal_layer, _ = make_layer(mindspeed, target, AttnMaskType.causal)
    for runner, layout in ((run, "packed THD"), (run_unpacked, "unpacked SBHD")):
        out, expected = runner(causal_layer, None, AttnMaskType.causal, target)
        assert_within(
            out,
            expected,
            target,
            lambda m, layout=layout: f"causal layer ({layout}) is not causal within each sequence:\n{m}",
        )
