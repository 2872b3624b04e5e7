"""A CPU stand-in for the parts of ``torch_npu`` that MindSpeed's attention uses.

Not a test module: smoke tests load it to run MindSpeed's real attention code on a
machine without an Ascend NPU. It stands in only for what cannot exist here:

- ``torch_npu.npu_fusion_attention``: the fused attention kernel, computed in plain
  torch following its documented semantics (below);
- ``torch_npu.npu`` (also ``torch.npu``): ``Stream``, ``Event``, ``stream()``,
  ``current_stream``, ``default_stream``, ``synchronize`` and the device queries that
  MindSpeed's attention and context-parallel code call. It names the stream types in
  annotations at import time and creates a stream only for context parallelism; on CPU
  nothing runs asynchronously, so every ordering call is a no-op.

Semantics of ``npu_fusion_attention`` are those of the torch_npu API reference,
``docs/context/torch_npu-npu_fusion_attention.md`` in Ascend/op-plugin
(https://gitcode.com/Ascend/op-plugin; the same text is the Ascend page
https://www.hiascend.com/document/detail/zh/Pytorch/600/apiref/apilist/ptaoplist_000850.html):

- attention_out = Dropout(Softmax(Mask(scale * query @ key^T, atten_mask)), keep_prob) @ value;
  head_num is the number of query heads; key/value may have fewer (GQA, Nq/Nkv an integer).
- input_layout BSH, SBH, BSND, BNSD, or TND (varlen: needs actual_seq_qlen/kvlen, the
  cumulative sequence ends, "S lengths 2 2 2 2 2 are passed as 2 4 6 8 10"; a length may
  be 0; trailing 0 entries leave the last batches out of the computation).
- atten_mask: True/1 means "masked out, does not take part"; BNSS, B1SS, 11SS or SS;
  varlen takes only SS, [maxSq, maxSkv], read from the top-left for every sequence;
  varlen rejects a mask with a fully masked row.
- "When atten_mask is None, sparse_mode, pre_tockens and next_tockens do not take
  effect: everything is computed."
- sparse_mode 0, defaultMask: atten_mask as given, and only keys j with
  -pre_tockens <= j - i <= next_tockens are computed (the mask must agree with them).
  sparse_mode 1, allMask: the full atten_mask as given; pre/next ignored.
  sparse_mode 2, leftUpCausal: causal from the top-left corner of each sequence;
  pre/next ignored; atten_mask must be the compressed 2048x2048 upper-triangular mask,
  "otherwise the result is wrong", so any other mask is refused here.
  Other sparse modes (3-8), pse, padding_mask and prefix are not implemented.
- Returns 7 values: attention_out (layout of query), softmax_max and softmax_sum (float32,
  [B, N, Sq, 8], or [T, N, 8] for TND: the row max and the sum of exp(score - max),
  repeated over the last axis), a reserved tensor, then the dropout seed, offset and
  mask length as ints.
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterator, Sequence

import pytest
import torch

COMPRESSED_MASK_SIZE = 2048
_SOFTMAX_STAT_WIDTH = 8


class Stream:
    """``torch_npu.npu.Stream``: nothing runs asynchronously on CPU, so every ordering call is a no-op."""

    def __init__(self, device=None, priority: int = 0, **kwargs) -> None:
        self.device = device
        self.priority = priority

    def wait_stream(self, stream: Stream) -> None:
        return None

    def wait_event(self, event: Event) -> None:
        return None

    def record_event(self, event: Event | None = None) -> Event:
        return event or Event()

    def synchronize(self) -> None:
        return None

    def query(self) -> bool:
        return True

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc) -> None:
        return None


class Event:
    """``torch.npu.Event``: work on CPU is done when issued."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        self.enable_timing = enable_timing

    def record(self, stream: Stream | None = None) -> None:
        return None

    def wait(self, stream: Stream | None = None) -> None:
        return None

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def elapsed_time(self, end_event: Event) -> float:
        return 0.0


_DEFAULT_STREAM = Stream()
_current = [_DEFAULT_STREAM]


def current_stream(device=None) -> Stream:
    return _current[-1]


def default_stream(device=None) -> Stream:
    return _DEFAULT_STREAM


@contextlib.contextmanager
def stream(chosen: Stream | None) -> Iterator[Stream | None]:
    """``torch.npu.stream(s)``: s is the current stream inside; None leaves it as it is."""
    if chosen is None:
        yield None
        return
    _current.append(chosen)
    try:
        yield chosen
    finally:
        _current.pop()


def npu_fusion_attention_grad(*args, **kwargs):
    raise NotImplementedError("stand-in: npu_fusion_attention_grad (the backward kernel) is not implemented")


def npu_fusion_attention(
    query,
    key,
    value,
    head_num,
    input_layout,
    pse=None,
    padding_mask=None,
    atten_mask=None,
    scale=1.0,
    keep_prob=1.0,
    pre_tockens=2147483647,
    next_tockens=2147483647,
    inner_precise=0,
    prefix=None,
    actual_seq_qlen=None,
    actual_seq_kvlen=None,
    sparse_mode=0,
    gen_mask_parallel=True,
    sync=False,
):
    if pse is not None or padding_mask is not None or prefix is not None:
        raise NotImplementedError("stand-in: pse, padding_mask and prefix are not implemented")
    if sparse_mode not in (0, 1, 2):
        raise NotImplementedError(f"stand-in: sparse_mode {sparse_mode} is not implemented")
    if not 0.0 < keep_prob <= 1.0:
        raise ValueError(f"keep_prob must be in (0, 1], got {keep_prob}")
    band = (pre_tockens, next_tockens)
    if input_layout == "TND":
        return _varlen(
            query,
            key,
            value,
            head_num,
            atten_mask,
            scale,
            keep_prob,
            band,
            actual_seq_qlen,
            actual_seq_kvlen,
            sparse_mode,
        )
    q, k, v = _to_bnsd(query, key, value, head_num, input_layout)
    mask = None
    if atten_mask is not None:
        mask = _mask(atten_mask.bool(), q.shape[-2], k.shape[-2], sparse_mode, band, varlen=False)
    out, row_max, row_sum = _attend(q, k, v, mask, scale, keep_prob)
    return (_from_bnsd(out, input_layout), _stat(row_max), _stat(row_sum), *_reserved(query))


def _varlen(
    query, key, value, head_num, atten_mask, scale, keep_prob, band, actual_seq_qlen, actual_seq_kvlen, sparse_mode
):
    if actual_seq_qlen is None or actual_seq_kvlen is None:
        raise ValueError("input_layout TND needs actual_seq_qlen and actual_seq_kvlen")
    if query.shape[1] != head_num:
        raise ValueError(f"head_num {head_num} does not match query heads {query.shape[1]}")
    if atten_mask is not None and atten_mask.dim() != 2:
        raise ValueError("input_layout TND takes atten_mask only as SS [maxSq, maxSkv]")
    q_spans = _spans(actual_seq_qlen, query.shape[0])
    kv_spans = _spans(actual_seq_kvlen, key.shape[0])
    if len(q_spans) != len(kv_spans):
        raise ValueError("actual_seq_qlen and actual_seq_kvlen describe different batch counts")
    out = query.new_zeros(query.shape[:2] + value.shape[2:])
    row_max = torch.zeros(query.shape[:2], dtype=torch.float32, device=query.device)
    row_sum = torch.zeros_like(row_max)
    for (q0, q1), (k0, k1) in zip(q_spans, kv_spans):
        if q1 == q0:
            continue
        if k1 == k0:
            raise ValueError("a batch with Sq > 0 and Skv == 0 is not supported")
        q, k, v = (t.permute(1, 0, 2).unsqueeze(0) for t in (query[q0:q1], key[k0:k1], value[k0:k1]))
        mask = None
        if atten_mask is not None:
            mask = _mask(atten_mask.bool(), q1 - q0, k1 - k0, sparse_mode, band, varlen=True)
        o, m, s = _attend(q, k, v, mask, scale, keep_prob)
        out[q0:q1] = o[0].permute(1, 0, 2)
        row_max[q0:q1] = m[0].T
        row_sum[q0:q1] = s[0].T
    return (out, _stat(row_max), _stat(row_sum), *_reserved(query))


def _spans(cumulative: Sequence[int], total: int) -> list[tuple[int, int]]:
    spans, start = [], 0
    for end in (int(e) for e in cumulative):
        if end == 0 and start > 0:
            break  # trailing zeros: the remaining batches are left out
        if end < start or end > total:
            raise ValueError(f"bad cumulative sequence lengths {list(cumulative)} for {total} tokens")
        spans.append((start, end))
        start = end
    return spans


def _mask(given, sq, skv, sparse_mode, band, varlen):
    rows = torch.arange(sq, device=given.device)[:, None]
    cols = torch.arange(skv, device=given.device)[None, :]
    if sparse_mode == 2:
        expected = torch.ones(COMPRESSED_MASK_SIZE, COMPRESSED_MASK_SIZE, dtype=torch.bool, device=given.device).triu(1)
        if given.shape[-2:] != expected.shape or not torch.equal(given.reshape(-1, *expected.shape)[0], expected):
            raise ValueError("sparse_mode 2 takes the compressed 2048x2048 upper-triangular atten_mask")
        mask = cols > rows
    else:
        if varlen:
            if given.shape[0] < sq or given.shape[1] < skv:
                raise ValueError(f"atten_mask {tuple(given.shape)} is smaller than [{sq}, {skv}]")
            mask = given[:sq, :skv]
        else:
            if given.shape[-2:] != (sq, skv):
                raise ValueError(f"atten_mask {tuple(given.shape)} does not end in [{sq}, {skv}]")
            mask = given
        if sparse_mode == 0:
            pre, nxt = band
            mask = mask | (cols - rows > nxt) | (rows - cols > pre)
    if bool(mask.all(dim=-1).any()):
        # varlen rejects such masks; elsewhere the kernel needs inner_precise=2 for them
        raise ValueError("stand-in: atten_mask masks out a whole row")
    return mask


def _attend(q, k, v, mask, scale, keep_prob):
    """q [B, Nq, Sq, D], k/v [B, Nkv, Skv, D]; returns out, row max, row sum ([B, Nq, Sq])."""
    groups, rest = divmod(q.shape[1], k.shape[1])
    if rest:
        raise ValueError(f"query heads {q.shape[1]} are not a multiple of key heads {k.shape[1]}")
    k = k.repeat_interleave(groups, dim=1).float()
    v = v.repeat_interleave(groups, dim=1).float()
    scores = scale * (q.float() @ k.transpose(-1, -2))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    row_max = scores.amax(dim=-1, keepdim=True)
    weights = torch.exp(scores - row_max)
    row_sum = weights.sum(dim=-1, keepdim=True)
    probs = weights / row_sum
    if keep_prob < 1.0:
        probs = torch.nn.functional.dropout(probs, p=1.0 - keep_prob, training=True)
    out = (probs @ v).to(q.dtype)
    return out, row_max.squeeze(-1), row_sum.squeeze(-1)


def _to_bnsd(query, key, value, head_num, layout):
    if layout == "BNSD":
        return query, key, value
    if layout == "BSND":
        return tuple(t.permute(0, 2, 1, 3) for t in (query, key, value))
    if layout in ("BSH", "SBH"):
        if layout == "SBH":
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        head_dim = query.shape[-1] // head_num
        kv_heads = key.shape[-1] // head_dim
        split = [
            t.unflatten(-1, (n, -1)).permute(0, 2, 1, 3)
            for t, n in ((query, head_num), (key, kv_heads), (value, kv_heads))
        ]
        return tuple(split)
    raise NotImplementedError(f"stand-in: input_layout {layout!r} is not implemented")


def _from_bnsd(out, layout):
    if layout == "BNSD":
        return out
    if layout == "BSND":
        return out.permute(0, 2, 1, 3)
    merged = out.permute(0, 2, 1, 3).flatten(-2)
    return merged if layout == "BSH" else merged.transpose(0, 1)


def _stat(values):
    return values.float().unsqueeze(-1).expand(*values.shape, _SOFTMAX_STAT_WIDTH).contiguous()


def _reserved(query):
    return query.new_empty(0), 0, 0, 0


@contextlib.contextmanager
def installed() -> Iterator[types.ModuleType]:
    """Make ``import torch_npu`` and ``torch.npu.Stream`` resolve to this stand-in."""
    torch_npu = types.ModuleType("torch_npu")
    torch_npu.__file__ = __file__
    torch_npu.npu_fusion_attention = npu_fusion_attention
    torch_npu.npu_fusion_attention_grad = npu_fusion_attention_grad
    torch_npu.npu = types.ModuleType("torch_npu.npu")
    # what MindSpeed's attention and context-parallel code call on torch.npu / torch_npu.npu
    npu = torch_npu.npu
    npu.Stream, npu.Event, npu.stream = Stream, Event, stream
    npu.current_stream, npu.default_stream = current_stream, default_stream
    npu.synchronize = lambda device=None: None
    npu.current_device = lambda: 0
    npu.set_device = lambda device: None
    npu.device_count = lambda: 1
    npu.is_available = lambda: True
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(sys.modules, "torch_npu", torch_npu)
        patch.setitem(sys.modules, "torch_npu.npu", torch_npu.npu)
        patch.setattr(torch, "npu", torch_npu.npu, raising=False)
        yield torch_npu
