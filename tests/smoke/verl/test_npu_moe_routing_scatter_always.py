"""Smoke test for patches/verl/npu-moe-routing-scatter-always.patch.

verl 0.7.0 replaces transformers' Qwen3-VL-MoE sparse MoE block on Ascend
(``verl/models/transformers/npu_patch.py``, loaded by ``import verl``):
``NPUQwen3VLMoeTextSparseMoeBlock`` scattered the top-k routing weights into the dense
``[tokens, num_experts]`` matrix only ``if not self.training``, and its experts' training
path handed whatever it got to ``npu_moe_token_unpermute`` as the ``[tokens, top_k]``
probs. On transformers <= 4.57.3, ``apply_monkey_patch`` then replaces that block's forward
(step 1.5, ``patch_qwen3_vl_moe_sparse_moe_block_forward``: it imports
``Qwen3VLMoeTextSparseMoeBlock`` from transformers, which by then is the NPU class) with one
that always scatters: in training the experts weighted their outputs with the dense matrix
read as top-k probs, so every token got wrong routing weights (reward flat, ppo-kl orders of
magnitude below the GPU run). The patch makes the block always hand the dense matrix, as
the experts' docstring and transformers' experts take it, and the experts' training path
gather the top-k weights from it.

The test builds the block from the tree (transformers' own config class, seeded weights)
and runs it through both forwards verl can leave on it: the NPU block's own, and the one
verl's monkey patch installs. For each, in training and in eval mode: the experts must
receive the dense routing matrix of the same gate, and the output must equal a dense
reference (each token's top-k experts weighted by its renormalised top-k softmax).

Half-fixes it guards against: HALF_FIXES below (tests/halffixes/verl/npu-moe-routing-scatter-always/).

Written against the bug's behaviour, not one release's code: npu_patch.py at v0.7.0 patches transformers
4.x classes (``modeling_qwen2_5_vl.Qwen2RMSNorm``), at v0.8.0 it imports ``transformers.models.qwen3_5``
(5.x only), and verl 0.8.0's experts pick the top-k weights by indexing instead of ``gather``. The manifest's
``[[upstreams.verl.smoke-env]]`` tables give each release the transformers it loads with; run in another, the
test is skipped naming the import that failed in the tree under test. The forward apply_monkey_patch
installs is checked where verl installs it (transformers <= 4.57.3, at both releases).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

# Plausible wrong or partial fixes (tests/halffixes/verl/npu-moe-routing-scatter-always/<name>.patch),
# each failing here for the bug's own reason, the routing weights the experts get or use: smoke's
# failure reason contains HALF_FIX_REASONS[name].
HALF_FIXES = {
    "scatter-only": (
        "upstream PR #6131's change alone, what the issue asked for at v0.7.0: the NPU forward scatters in "
        "training too, but the experts still hand the dense matrix to npu_moe_token_unpermute as top-k probs, "
        "so the training output is wrong in both forwards"
    ),
    "gather-only": (
        "upstream PR #4888's change alone (verl main until #6131): the experts gather from a dense matrix, but "
        "npu_patch's own forward still hands them the [tokens, top_k] weights in training"
    ),
    "scatter-inverted": "scatter only if self.training: eval hands the experts the [tokens, top_k] weights",
    "scatter-wrong-width": (
        "scatter into a [tokens, hidden] matrix (transformers 4.57.3's zeros_like(hidden_states) mistake, which "
        "verl's step 1.5 exists for): the experts get a matrix of the wrong width"
    ),
}
HALF_FIX_REASONS = {
    "scatter-only": "(wrong routing weights)",
    "gather-only": "not the dense [tokens, num_experts] matrix",
    "scatter-inverted": "eval mode: the experts got routing weights of shape (10, 2)",
    "scatter-wrong-width": "not the dense [tokens, num_experts] matrix",
}

NPU_PATCH = "verl.models.transformers.npu_patch"
QWEN3_VL = "verl.models.transformers.qwen3_vl"
# every module npu_patch.py assigns into, at any release (those the installed transformers lacks are passed over)
TRANSFORMERS_MODULES = (
    "transformers.models.qwen2.modeling_qwen2",
    "transformers.models.qwen2_5_vl.modeling_qwen2_5_vl",
    "transformers.models.qwen3.modeling_qwen3",
    "transformers.models.qwen3_moe.modeling_qwen3_moe",
    "transformers.models.qwen3_vl.modeling_qwen3_vl",
    "transformers.models.qwen3_vl_moe.modeling_qwen3_vl_moe",
    "transformers.models.qwen3_next.modeling_qwen3_next",
    "transformers.models.qwen3_5.modeling_qwen3_5",
    "transformers.models.qwen3_5_moe.modeling_qwen3_5_moe",
)
# verl applies its step 1.5 forward (patch_qwen3_vl_moe_sparse_moe_block_forward) on transformers up to this one
MONKEY_PATCHED_UP_TO = "4.57.3"
BATCH, SEQ, HIDDEN, EXPERTS, TOP_K, INTERMEDIATE = 2, 5, 16, 8, 2, 12
# (dtype, tolerance) of the conftest's ``target``: the real torch_npu on an NPU, npu_stand_in.py on the CPU elsewhere
TARGETS = {"npu": (torch.float32, 1e-4), "cpu": (torch.float32, 1e-5)}
FORWARDS = ("npu_patch's own forward", "the forward apply_monkey_patch installs (transformers <= 4.57.3)")


def _snapshot_transformers():
    """npu_patch.py and verl's monkey patch assign into transformers: put everything back after."""
    import importlib

    saved = []
    for name in TRANSFORMERS_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:  # not in this transformers: npu_patch.py of a release that needs it does not load
            continue
        saved.append((module, dict(vars(module))))
        for value in list(vars(module).values()):
            if isinstance(value, type) and value.__module__ == name:
                saved.append((value, {k: v for k, v in vars(value).items() if k == "forward"}))

    def restore():
        for owner, attrs in saved:
            for key, value in attrs.items():
                if getattr(owner, key, None) is not value:
                    setattr(owner, key, value)

    return restore


@pytest.fixture(scope="module")
def verl_moe(target, load_upstream, built_for_other):
    """verl's block class and the forwards it can carry, in the order verl applies them."""
    import transformers
    from packaging.version import Version

    restore = _snapshot_transformers()
    try:
        with built_for_other("transformers", "verl's npu_patch.py"):
            npu = load_upstream("verl", NPU_PATCH)  # what `import verl` does on an NPU machine
        block_class = npu.NPUQwen3VLMoeTextSparseMoeBlock
        own_forward = block_class.forward
        from transformers.models.qwen3_vl_moe import modeling_qwen3_vl_moe

        assert modeling_qwen3_vl_moe.Qwen3VLMoeTextSparseMoeBlock is block_class
        forwards = {FORWARDS[0]: own_forward}
        if Version(transformers.__version__) <= Version(MONKEY_PATCHED_UP_TO):
            # apply_monkey_patch, step 1.5, for qwen3_vl_moe on transformers <= 4.57.3
            load_upstream("verl", QWEN3_VL).patch_qwen3_vl_moe_sparse_moe_block_forward()
            forwards[FORWARDS[1]] = block_class.forward
            block_class.forward = own_forward
        yield block_class, forwards
    finally:
        restore()


def make_block(block_class, target):
    from transformers.models.qwen3_vl_moe.configuration_qwen3_vl_moe import Qwen3VLMoeTextConfig

    config = Qwen3VLMoeTextConfig(
        hidden_size=HIDDEN,
        num_experts=EXPERTS,
        num_experts_per_tok=TOP_K,
        moe_intermediate_size=INTERMEDIATE,
        hidden_act="silu",
    )
    block = block_class(config)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for param in block.parameters():
            param.copy_(torch.randn(param.shape, generator=generator) * 0.5)
    return block.to(target[0], target[1])


def dense_reference(block, hidden):
    """Each token's top-k experts (SwiGLU, gate half first) weighted by its renormalised top-k softmax."""
    x = hidden.reshape(-1, HIDDEN).double()
    probs = F.softmax(x @ block.gate.weight.double().T, dim=-1)
    weights, experts = probs.topk(TOP_K, dim=-1)
    weights = weights / weights.sum(dim=-1, keepdim=True)
    gate_up, down = block.experts.gate_up_proj.double(), block.experts.down_proj.double()
    out = torch.zeros_like(x)
    for token in range(x.shape[0]):
        for slot in range(TOP_K):
            e = int(experts[token, slot])
            gate, up = (x[token] @ gate_up[e]).chunk(2)
            out[token] += weights[token, slot] * ((F.silu(gate) * up) @ down[e])
    dense = torch.zeros_like(probs).scatter_(1, experts, weights)
    return out.reshape(hidden.shape), dense


@pytest.mark.parametrize("forward", FORWARDS)
def test_experts_get_dense_routing_weights_and_training_equals_eval(verl_moe, target, forward):
    """Training output == eval output == dense reference, with the dense routing matrix handed on.

    Without the patch, npu_patch's own forward hands the experts top-k weights in training,
    and the forward verl's monkey patch installs hands them the dense matrix, which the
    experts' training path reads as top-k probs: wrong outputs.
    """
    block_class, forwards = verl_moe
    if forward not in forwards:
        import transformers

        pytest.skip(
            f"verl leaves the block its own forward with transformers {transformers.__version__} (it installs "
            f"another only on transformers <= {MONKEY_PATCHED_UP_TO})"
        )
    block = make_block(block_class, target)
    block.forward = forwards[forward].__get__(block)
    generator = torch.Generator().manual_seed(1)
    hidden = torch.randn(BATCH, SEQ, HIDDEN, generator=generator).to(target[0], target[1])
    expected, expected_routing = dense_reference(block, hidden)
    tol = target[2]

    def check_routing(module, args):
        routing = args[1]
        assert tuple(routing.shape) == tuple(expected_routing.shape), (
            f"{forward}, {mode} mode: the experts got routing weights of shape {tuple(routing.shape)}, "
            f"not the dense [tokens, num_experts] matrix {tuple(expected_routing.shape)}"
        )
        torch.testing.assert_close(
            routing.double().cpu(),
            expected_routing.cpu(),
            rtol=tol,
            atol=tol,
            msg=lambda m: (
                f"{forward}, {mode} mode: the experts' routing matrix is not the gate's "
                f"renormalised top-k softmax scattered densely:\n{m}"
            ),
        )

    block.experts.register_forward_pre_hook(check_routing)
    outputs = {}
    with torch.no_grad():
        for mode in ("train", "eval"):
            block.train(mode == "train")
            outputs[mode] = block(hidden).double().cpu()
    for mode in ("train", "eval"):
        torch.testing.assert_close(
            outputs[mode],
            expected.cpu(),
            rtol=tol,
            atol=tol,
            msg=lambda m, mode=mode: (
                f"{forward}, {mode} mode: the MoE output is not the dense "
                f"reference of the same gate (wrong routing weights):\n{m}"
            ),
        )
