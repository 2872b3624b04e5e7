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

# The half-fixes these tests catch, each a plausible wrong or partial version of the patch:
# tests/halffixes/megatron-bridge/nvtx-megatron-core-ranges/<name>.patch.
# tests/test_half_fixes.py applies each in its place and requires smoke to fail by assertion with a
# reason containing HALF_FIX_REASONS[name].
HALF_FIXES = {
    "first-call-only": (
        "only the first range_push goes through Megatron-Core; the direct pop/push/pop left behind still "
        "raise on a build without NVTX, which the plain forward runs on"
    ),
    "lm-range-closed-early": (
        "the language_model range is popped before self.language_model runs, which the profiled forward sees: "
        "the recorded language-model call falls outside its range"
    ),
    "cuda-available-guard": (
        "the direct calls are kept behind torch.cuda.is_available(): forward runs, but with Megatron-Core "
        "profiling on no range is emitted on Ascend, which the profiled forward checks"
    ),
}
HALF_FIX_REASONS = {
    "first-call-only": "still calls torch.cuda.nvtx directly",
    "lm-range-closed-early": "do not cover the work they name",
    "cuda-available-guard": "emits no NVTX range",
}

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
        self.log: list[tuple[str, ...]] | None = None  # set to the NVTX recorder's calls while profiling

    def forward(self, **kwargs):
        self.calls.append(kwargs)
        if self.log is not None:
            self.log.append(("work", "language_model"))
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
    model_module = load_upstream("megatron.bridge", MODEL)
    model = _tiny_qwen3_vl(model_module)
    input_ids = torch.tensor([[11, 12, 13, 14]])

    # Ascend's torch is a CPU build, where torch.cuda.nvtx is torch's own stub;
    # on a CUDA build, put the same stub in place so the test means the same.
    if not hasattr(torch.cuda.nvtx, "_NVTXStub"):
        monkeypatch.setattr(torch.cuda.nvtx, "_nvtx", _NoNvtx())
    # Unpatched: RuntimeError: NVTX functions not installed, at the first range_push.
    try:
        output = model(input_ids=input_ids)
    except RuntimeError as exc:
        if "NVTX" not in str(exc):
            raise
        raise AssertionError(f"Qwen3VLModel.forward still calls torch.cuda.nvtx directly: {exc}") from exc

    assert torch.equal(output, torch.zeros(1))
    (call,) = model.language_model.calls
    assert torch.equal(call["input_ids"], input_ids)
    assert torch.equal(call["position_ids"][:, 0], torch.arange(4).expand(3, 4))

    # With Megatron-Core NVTX profiling switched on, the ranges are still emitted, balanced, and each
    # covers its work: the rope index of the pre-process phase and the language model's call.
    recorder = _RecordingNvtx()
    monkeypatch.setattr(torch.cuda.nvtx, "_nvtx", recorder)
    get_rope_index = model_module.get_rope_index

    def recording_get_rope_index(*args, **kwargs):
        recorder.calls.append(("work", "get_rope_index"))
        return get_rope_index(*args, **kwargs)

    monkeypatch.setattr(model_module, "get_rope_index", recording_get_rope_index)
    model.language_model.log = recorder.calls
    mcore_utils.configure_nvtx_profiling(True)
    try:
        model(input_ids=input_ids)
    finally:
        mcore_utils.configure_nvtx_profiling(False)
        model.language_model.log = None
    ranges = [c for c in recorder.calls if c[0] != "work"]
    assert ranges, (
        f"forward emits no NVTX range with Megatron-Core NVTX profiling on (only {recorder.calls}): "
        "the profile of an Ascend run shows nothing"
    )
    expected = [
        ("push", "Qwen3VLModel.forward.pre_process"),
        ("work", "get_rope_index"),
        ("pop",),
        ("push", "Qwen3VLModel.forward.language_model"),
        ("work", "language_model"),
        ("pop",),
    ]
    assert recorder.calls == expected, (
        f"forward's NVTX ranges do not cover the work they name: {recorder.calls} instead of {expected}"
    )
