"""A CPU stand-in for the parts of ``torch_npu`` that verl's ``npu_patch.py`` calls.

Not a test module: the verl smoke tests load it to run verl's real NPU code on a machine
without an Ascend NPU. ``verl/models/transformers/npu_patch.py`` (v0.7.0) does
``import torch_npu`` at the top and calls exactly these six functions; each is computed here
in plain torch following the torch_npu API reference (``docs/context/torch_npu-*.md`` in
Ascend/op-plugin, https://gitcode.com/Ascend/op-plugin, which gives the Python reference of
the MoE ops; they are Megatron-core's ``permute``/``unpermute``):

- ``npu_rms_norm(x, gamma, epsilon=1e-6)`` -> ``(y, rstd)``: ``rstd = rsqrt(mean(x^2) + eps)``
  over the trailing ``gamma.dim()`` axes (float32), ``y = x * rstd * gamma`` in x's dtype.
- ``npu_swiglu(x, dim=-1)``: x split in two halves A, B along ``dim``; ``silu(A) * B``.
- ``npu_rotary_mul(x, r1, r2, rotary_mode="half")``: ``x * r1 + rotate_half(x) * r2`` with
  ``rotate_half(x) = cat(-x2, x1)``; "interleave" rotates adjacent pairs.
- ``npu_grouped_matmul(x, weight, *, bias=None, group_list=None, split_item=0, group_type=-1,
  group_list_type=0, ...)``: lists in, list out. ``group_list`` gives the group sizes along
  the grouped axis: cumulative ends (``group_list_type=0``) or counts (``1``), int64.
  ``group_type=0`` groups the rows (M) of ``x[0]`` [M, K]: rows of group e times
  ``weight[0][e]`` [K, N], out [M, N]. ``group_type=2`` groups the K axis: ``x[0]`` [K, M]
  with M grouped, ``weight[0]`` [M, N], out[e] = x[:, rows_e] @ w[rows_e], [E, K, N].
  ``split_item`` 2/3 return one concatenated tensor, 0/1 one tensor per group. Rows past the
  last group are not computed (zeros here).
- ``npu_moe_token_permute(tokens, indices, num_out_tokens=None, padded_mode=False)`` ->
  ``(permuted_tokens, sorted_indices)``: ``sorted_indices = argsort(indices.view(-1),
  stable)``, ``permuted_tokens = tokens[sorted_indices[:num_out_tokens] // topk]``.
- ``npu_moe_token_unpermute(permuted_tokens, sorted_indices, probs=None, padded_mode=False,
  restore_shape=None)``: with ``probs`` [tokens, topk], rows are put back with
  ``index_copy`` into ``probs.numel()`` rows, reshaped to [-1, topk, hidden], weighted by
  ``probs`` and summed over topk. Like the kernel (and its reference), nothing checks that
  ``probs`` is [tokens, topk]: handed a [tokens, num_experts] matrix, it reads the rows with
  the wrong stride and returns wrong numbers without an error, as seen on the NPU.

One torch call of that code behaves differently on the CPU: ``torch.histc`` on an integer
tensor (verl counts tokens per expert from the int64 ``router_indices`` and hands the result
to ``npu_grouped_matmul`` as its int64 ``group_list``). The NPU, like CUDA, has an integer
kernel that returns the input's dtype; the CPU has none ("histogram_cpu" not implemented for
'Long'), so while installed, ``torch.histc`` of an integer tensor counts as the NPU does.
``padded_mode=True`` and the quantisation arguments are not implemented (refused).
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import sys
import types
from collections.abc import Iterator, Sequence

import pytest
import torch
import torch.nn.functional as F


def npu_rms_norm(x, gamma, epsilon=1e-6):
    dims = tuple(range(x.dim() - gamma.dim(), x.dim()))
    if tuple(x.shape[d] for d in dims) != tuple(gamma.shape):
        raise ValueError(f"gamma {tuple(gamma.shape)} does not match the trailing axes of x {tuple(x.shape)}")
    rstd = torch.rsqrt(x.float().pow(2).mean(dim=dims, keepdim=True) + epsilon)
    return (x.float() * rstd * gamma.float()).to(x.dtype), rstd


def npu_swiglu(x, dim=-1):
    if x.shape[dim] % 2:
        raise ValueError(f"npu_swiglu: axis {dim} of {tuple(x.shape)} is not even")
    a, b = x.chunk(2, dim=dim)
    return F.silu(a) * b


def npu_rotary_mul(x, r1, r2, rotary_mode="half"):
    if rotary_mode == "half":
        x1, x2 = x.chunk(2, dim=-1)
        rotated = torch.cat((-x2, x1), dim=-1)
    elif rotary_mode == "interleave":
        rotated = torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)
    else:
        raise ValueError(f"npu_rotary_mul: unknown rotary_mode {rotary_mode!r}")
    return x * r1 + rotated * r2


def _group_ends(group_list, group_list_type, total):
    if isinstance(group_list, torch.Tensor):
        if group_list.dtype != torch.int64:
            raise TypeError(f"npu_grouped_matmul: group_list must be int64, got {group_list.dtype}")
        values = [int(v) for v in group_list.tolist()]
    else:
        values = [int(v) for v in group_list]
    if group_list_type == 0:
        ends = values
    elif group_list_type == 1:
        ends, running = [], 0
        for count in values:
            running += count
            ends.append(running)
    else:
        raise NotImplementedError(f"stand-in: group_list_type {group_list_type} is not implemented")
    if any(b < a for a, b in zip([0, *ends], ends)) or (ends and ends[-1] > total):
        raise ValueError(f"npu_grouped_matmul: group_list {values} does not fit {total} rows")
    return ends


def npu_grouped_matmul(
    x: Sequence[torch.Tensor],
    weight: Sequence[torch.Tensor],
    *,
    bias=None,
    scale=None,
    offset=None,
    antiquant_scale=None,
    antiquant_offset=None,
    per_token_scale=None,
    group_list=None,
    activation_input=None,
    activation_quant_scale=None,
    activation_quant_offset=None,
    split_item=0,
    group_type=-1,
    group_list_type=0,
    act_type=0,
    output_dtype=None,
    tuning_config=None,
):
    quantised = (
        scale,
        offset,
        antiquant_scale,
        antiquant_offset,
        per_token_scale,
        activation_input,
        activation_quant_scale,
        activation_quant_offset,
    )
    if any(arg is not None for arg in quantised) or act_type != 0:
        raise NotImplementedError("stand-in: quantisation and fused activations are not implemented")
    if len(x) != 1 or len(weight) != 1 or group_list is None:
        raise NotImplementedError("stand-in: only one x, one stacked weight and a group_list are implemented")
    a, w = x[0], weight[0]
    if group_type == 0:
        ends = _group_ends(group_list, group_list_type, a.shape[0])
        if len(ends) != w.shape[0]:
            raise ValueError(f"npu_grouped_matmul: {len(ends)} groups for {w.shape[0]} weights")
        out = a.new_zeros(a.shape[0], w.shape[-1])
        groups = []
        for e, (start, end) in enumerate(zip([0, *ends], ends)):
            out[start:end] = a[start:end] @ w[e]
            groups.append(out[start:end])
        if bias is not None:
            raise NotImplementedError("stand-in: bias is not implemented")
    elif group_type == 2:
        ends = _group_ends(group_list, group_list_type, a.shape[1])
        groups = [a[:, start:end] @ w[start:end] for start, end in zip([0, *ends], ends)]
        out = torch.stack(groups)
    else:
        raise NotImplementedError(f"stand-in: group_type {group_type} is not implemented")
    if output_dtype is not None:
        out = out.to(output_dtype)
        groups = [g.to(output_dtype) for g in groups]
    return [out] if split_item in (2, 3) else groups


def npu_moe_token_permute(tokens, indices, num_out_tokens=None, padded_mode=False):
    if padded_mode:
        raise NotImplementedError("stand-in: padded_mode is not implemented")
    if indices.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"npu_moe_token_permute: indices must be int32 or int64, got {indices.dtype}")
    topk = indices.shape[1] if indices.dim() == 2 else 1
    flat = indices.reshape(-1)
    sorted_indices = torch.argsort(flat, stable=True)
    if num_out_tokens is not None and num_out_tokens > 0:
        sorted_indices = sorted_indices[:num_out_tokens]
    permuted = tokens.index_select(0, sorted_indices // topk)
    return permuted, sorted_indices.to(torch.int32)


def npu_moe_token_unpermute(permuted_tokens, sorted_indices, probs=None, padded_mode=False, restore_shape=None):
    if padded_mode or restore_shape is not None:
        raise NotImplementedError("stand-in: padded_mode and restore_shape are not implemented")
    if sorted_indices.numel() != permuted_tokens.shape[0]:
        raise ValueError("npu_moe_token_unpermute: sorted_indices and permuted_tokens differ in length")
    if probs is not None:
        rows, topk = probs.numel(), probs.shape[1]
    else:
        rows, topk = permuted_tokens.shape[0], 1
    out = permuted_tokens.new_zeros(rows, permuted_tokens.shape[-1])
    out.index_copy_(0, sorted_indices.long(), permuted_tokens)
    out = out.reshape(-1, topk, permuted_tokens.shape[-1])
    if probs is not None:
        out = out * probs.unsqueeze(-1).to(out.dtype)
    return out.sum(dim=1)


_cpu_histc = torch.histc


def histc(input, bins=100, min=0, max=0, *, out=None):
    """``torch.histc`` as the NPU computes it: integer input counted, in the input's dtype."""
    if input.dtype.is_floating_point or out is not None:
        return _cpu_histc(input, bins=bins, min=min, max=max, out=out)
    return _cpu_histc(input.double(), bins=bins, min=min, max=max).to(input.dtype)


CALLS = (
    "npu_rms_norm",
    "npu_swiglu",
    "npu_rotary_mul",
    "npu_grouped_matmul",
    "npu_moe_token_permute",
    "npu_moe_token_unpermute",
)


@contextlib.contextmanager
def installed() -> Iterator[types.ModuleType]:
    """Make ``import torch_npu`` resolve to this stand-in (and torch.histc count integers)."""
    torch_npu = types.ModuleType("torch_npu")
    torch_npu.__file__ = __file__
    # importlib.util.find_spec("torch_npu") (transformers' is_torch_npu_available) needs a spec;
    # torch.npu stays absent, so transformers still sees no NPU device.
    torch_npu.__spec__ = importlib.machinery.ModuleSpec("torch_npu", None, origin=__file__)
    for name in CALLS:
        setattr(torch_npu, name, globals()[name])
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(sys.modules, "torch_npu", torch_npu)
        patch.setattr(torch, "histc", histc)
        yield torch_npu
