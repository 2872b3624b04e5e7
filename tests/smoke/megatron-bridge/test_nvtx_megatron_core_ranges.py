"""Smoke test for patches/megatron-bridge/nvtx-megatron-core-ranges.patch.

Qwen3VLModel.forward called torch.cuda.nvtx.range_push/range_pop directly. On
Ascend (a CPU build of torch plus torch_npu) those raise "NVTX functions not
installed", so no forward pass can run. The real forward is driven here on a
model built without its heavy __init__: only the attributes forward reads are
set, and the language model is a stand-in that records its call.
"""

from __future__ import annotations

import types

import torch
import torch.cuda.nvtx
from megatron.core import utils as mcore_utils

MODEL = "megatron.bridge.models.qwen_vl.modelling_qwen3_vl.model"


class _NoNvtx:
    """What torch.cuda.nvtx falls back to on a build without NVTX (torch's own _NVTXStub)."""

    @staticmethod
    def _fail(*args, **kwargs):
        raise RuntimeError("NVTX functions not installed. Are you sure you have a CUDA build?")

    rangePushA = _fail
    rangePop = _fail
    markA = _fail


class _RecordingNvtx:
    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def rangePushA(self, msg):
        self.calls.append(("push", msg))
        return len(self.calls)

    def rangePop(self):
        self.calls.append(("pop",))
        return len(self.calls)


class _SingleRankGroup:
    def rank(self) -> int:
        return 0

    def size(self) -> int:
        return 1


class _RecordingLanguageModel(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rotary_pos_emb = types.SimpleNamespace(is_thd_format=False)
        self.calls: list[dict] = []

    def forward(self, **kwargs):
        self.calls.append(kwargs)
        return torch.zeros(1)


def _tiny_qwen3_vl(model_module):
    """A Qwen3VLModel with just what forward needs: a text-only, last-stage (no pre_process) model."""
    model = object.__new__(model_module.Qwen3VLModel)
    torch.nn.Module.__init__(model)  # real __init__ builds TE layers; forward only needs these
    model.config = types.SimpleNamespace(sequence_parallel=False, spatial_merge_size=2)
    model.pg_collection = types.SimpleNamespace(cp=_SingleRankGroup(), tp=_SingleRankGroup())
    model.pre_process = False
    model.image_token_id, model.video_token_id, model.vision_start_token_id = 151655, 151656, 151652
    model.square_merge_size = model.config.spatial_merge_size**2
    model.use_dist_train = False  # read by forward from v0.5.0 on
    model.language_model = _RecordingLanguageModel()
    return model


def test_forward_runs_without_nvtx(load_upstream, monkeypatch):
    model = _tiny_qwen3_vl(load_upstream("megatron.bridge", MODEL))
    input_ids = torch.tensor([[11, 12, 13, 14]])

    # Ascend's torch is a CPU build, where torch.cuda.nvtx is torch's own stub;
    # on a CUDA build, put the same stub in place so the test means the same.
    if not hasattr(torch.cuda.nvtx, "_NVTXStub"):
        monkeypatch.setattr(torch.cuda.nvtx, "_nvtx", _NoNvtx())
    # Unpatched: RuntimeError: NVTX functions not installed, at the first range_push.
    output = model(input_ids=input_ids)

    assert torch.equal(output, torch.zeros(1))
    (call,) = model.language_model.calls
    assert torch.equal(call["input_ids"], input_ids)
    assert torch.equal(call["position_ids"][:, 0], torch.arange(4).expand(3, 4))

    # With Megatron-Core NVTX profiling switched on, the ranges are still emitted, balanced.
    recorder = _RecordingNvtx()
    monkeypatch.setattr(torch.cuda.nvtx, "_nvtx", recorder)
    mcore_utils.configure_nvtx_profiling(True)
    try:
        model(input_ids=input_ids)
    finally:
        mcore_utils.configure_nvtx_profiling(False)
    assert recorder.calls == [
        ("push", "Qwen3VLModel.forward.pre_process"),
        ("pop",),
        ("push", "Qwen3VLModel.forward.language_model"),
        ("pop",),
    ]
