"""Smoke test for patches/megatron-bridge/nvtx-megatron-core-ranges.patch.

Qwen3VLModel.forward called torch.cuda.nvtx.range_push/range_pop directly. On
Ascend (a CPU build of torch plus torch_npu) those raise "NVTX functions not
installed", so no forward pass can run. The real forward is driven here on a
model built without its heavy __init__: only the attributes forward reads are
set, and the vision and language models are stand-ins that record their calls.

Every way through forward that opens an NVTX range is driven, because each one
closes its ranges at a place of its own:

- ``last-stage-text``: a pipeline stage without pre-process, text only;
- ``first-stage-image``: the first stage, an image through the vision model;
- ``dist-train-vision-encoder``: the dist-train vision stage, which pops the
  pre-process range and returns before the language model (from v0.5.0 on,
  where it came with a direct ``torch.cuda.nvtx.range_pop()`` of its own);
- ``dist-train-language-stage``: the dist-train language stage that gets the
  vision embeddings from the encoder and is not the last pipeline stage.

The two dist-train ways exist from Megatron-Bridge v0.5.0 on; on a forward
without them (v0.4.2, the pin) their tests are skipped with that reason.
"""

from __future__ import annotations

import inspect
import types

import pytest
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
HIDDEN = 8
IMAGE, VIDEO, VISION_START = 151655, 151656, 151652
PRE_PROCESS, LANGUAGE_MODEL = "Qwen3VLModel.forward.pre_process", "Qwen3VLModel.forward.language_model"
# the ways through forward, in the order smoke reports them: the first one is what a half-fix's reason quotes
WAYS = ("last-stage-text", "first-stage-image", "dist-train-vision-encoder", "dist-train-language-stage")
DIST_TRAIN = {"dist-train-vision-encoder", "dist-train-language-stage"}


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


class _Recording(torch.nn.Module):
    """What the stand-ins share: each call is kept, and logged as work while the NVTX recorder runs."""

    name = ""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[dict] = []
        self.log: list[tuple[str, ...]] | None = None  # set to the NVTX recorder's calls while profiling

    def _record(self, kwargs: dict) -> None:
        self.calls.append(kwargs)
        if self.log is not None:
            self.log.append(("work", self.name))


class _RecordingLanguageModel(_Recording):
    name = "language_model"

    def __init__(self) -> None:
        super().__init__()
        self.rotary_pos_emb = types.SimpleNamespace(is_thd_format=False)
        self.config = types.SimpleNamespace(hidden_size=HIDDEN)

    def embedding(self, input_ids, position_ids=None):
        batch, seq = input_ids.shape
        return torch.ones(seq, batch, HIDDEN)  # [s, b, h]

    def forward(self, **kwargs):
        self._record(kwargs)
        return torch.zeros(1)


class _RecordingVisionModel(_Recording):
    """Qwen3-VL's vision model in shape: one embedding per merged patch, and one deepstack feature list."""

    name = "vision_model"

    def __init__(self, square_merge_size: int) -> None:
        super().__init__()
        self.square_merge_size = square_merge_size
        self.config = types.SimpleNamespace(deepstack_visual_indexes=[0])

    def forward(self, hidden_states, grid_thw):
        self._record({"hidden_states": hidden_states, "grid_thw": grid_thw})
        tokens = hidden_states.shape[0] // self.square_merge_size
        return torch.full((tokens, HIDDEN), 2.0), [torch.full((tokens, HIDDEN), 3.0)]


def _tiny_qwen3_vl(model_module, way: str):
    """A Qwen3VLModel with just what forward reads on the given way through it."""
    model = object.__new__(model_module.Qwen3VLModel)
    torch.nn.Module.__init__(model)  # real __init__ builds TE layers; forward only needs these
    model.config = types.SimpleNamespace(
        sequence_parallel=False, spatial_merge_size=2, hidden_size=HIDDEN, vision_dp_when_cp=False
    )
    model.pg_collection = types.SimpleNamespace(
        cp=_SingleRankGroup(), tp=_SingleRankGroup(), dp=_SingleRankGroup(), pp=_SingleRankGroup()
    )
    model.pre_process = way != "last-stage-text"
    model.image_token_id, model.video_token_id, model.vision_start_token_id = IMAGE, VIDEO, VISION_START
    model.square_merge_size = model.config.spatial_merge_size**2
    model.vision_transformer_config = types.SimpleNamespace(deepstack_visual_indexes=[0])
    model.use_dist_train = way in DIST_TRAIN  # read by forward from v0.5.0 on
    model.vision_to_llm_dp_ratio = 1
    model.vision_embeds = model.deepstack_feature_lists = None
    model.vision_model = _RecordingVisionModel(model.square_merge_size)
    model.language_model = _RecordingLanguageModel()
    if way == "dist-train-vision-encoder":
        model.language_model = None  # the encoder stage has no language model
    elif way in ("last-stage-text", "dist-train-language-stage"):
        model.vision_model = None  # only a stage that pre-processes images has one (dist-train: the encoder's)
    return model


def _inputs(way: str) -> dict:
    if way == "last-stage-text":
        return {"input_ids": torch.tensor([[11, 12, 13, 14]])}
    # one image of 1 x 2 x 4 patches: two tokens once 2 x 2 patches are merged
    return {
        "input_ids": torch.tensor([[11, VISION_START, IMAGE, IMAGE, 12]]),
        "pixel_values": torch.randn(8, 6),
        "image_grid_thw": torch.tensor([[1, 2, 4]]),
    }


def _expected_output(way: str, model):
    if way == "dist-train-vision-encoder":
        (call,) = model.vision_model.calls
        tokens = call["hidden_states"].shape[0] // model.square_merge_size
        packed = torch.cat([torch.full((tokens, HIDDEN), 2.0), torch.full((tokens, HIDDEN), 3.0)]).unsqueeze(0)
        return {"vision_module": packed}
    if way == "dist-train-language-stage":
        return {"language_module": torch.zeros(1)}
    return torch.zeros(1)


def _same(output, expected) -> bool:
    if isinstance(expected, dict):
        return (
            isinstance(output, dict)
            and output.keys() == expected.keys()
            and all(torch.equal(output[k], expected[k]) for k in expected)
        )
    return isinstance(output, torch.Tensor) and torch.equal(output, expected)


def _expected_ranges(way: str) -> list[tuple[str, ...]]:
    pre = [("push", PRE_PROCESS)] + (
        [("work", "vision_model")] if way in ("first-stage-image", "dist-train-vision-encoder") else []
    )
    if way == "dist-train-vision-encoder":  # returns the vision output before the language model
        return [*pre, ("pop",)]
    return [*pre, ("work", "get_rope_index"), ("pop",), ("push", LANGUAGE_MODEL), ("work", "language_model"), ("pop",)]


def _prepare(way: str, model_module, model, monkeypatch) -> None:
    if way == "dist-train-language-stage":
        # what the encoder stage sent, set the way the pipeline schedule sets it: [b, s, h], the final
        # embeddings after the deepstack features
        sent = torch.cat([torch.full((2, HIDDEN), 3.0), torch.full((2, HIDDEN), 2.0)]).unsqueeze(0)
        model.set_input_tensor([{"vision_module": sent}])
        # not the last pipeline stage, which returns its output for the next one
        monkeypatch.setattr(model_module, "is_pp_last_stage", lambda group: False)


@pytest.mark.parametrize("way", WAYS)
def test_forward_runs_without_nvtx(way, load_upstream, monkeypatch):
    model_module = load_upstream("megatron.bridge", MODEL)
    if way in DIST_TRAIN and "use_dist_train" not in inspect.getsource(model_module.Qwen3VLModel.forward):
        pytest.skip("this Qwen3VLModel.forward has no dist-train path (Megatron-Bridge added it in v0.5.0)")
    model = _tiny_qwen3_vl(model_module, way)
    _prepare(way, model_module, model, monkeypatch)
    inputs = _inputs(way)

    # Ascend's torch is a CPU build, where torch.cuda.nvtx is torch's own stub;
    # on a CUDA build, put the same stub in place so the test means the same.
    if not hasattr(torch.cuda.nvtx, "_NVTXStub"):
        monkeypatch.setattr(torch.cuda.nvtx, "_nvtx", _NoNvtx())
    # Unpatched: RuntimeError: NVTX functions not installed, at the first direct call on this way.
    try:
        output = model(**inputs)
    except RuntimeError as exc:
        if "NVTX" not in str(exc):
            raise
        raise AssertionError(f"Qwen3VLModel.forward ({way}) still calls torch.cuda.nvtx directly: {exc}") from exc

    expected_output = _expected_output(way, model)
    assert _same(output, expected_output), f"{way}: forward returned {output!r}, not {expected_output!r}"
    if model.language_model is not None:
        (call,) = model.language_model.calls
        assert torch.equal(call["input_ids"], inputs["input_ids"])
        seq = inputs["input_ids"].shape[1]
        if way == "last-stage-text":
            assert torch.equal(call["position_ids"][:, 0], torch.arange(seq).expand(3, seq))
        else:  # the image's two tokens carry the vision embeddings into the first decoder stage
            assert call["decoder_input"].shape == (seq, 1, HIDDEN)
            assert torch.equal(call["decoder_input"][2:4, 0], torch.full((2, HIDDEN), 2.0))
    if model.vision_model is not None:
        assert len(model.vision_model.calls) == 1

    # With Megatron-Core NVTX profiling switched on, the ranges are still emitted, balanced, and each
    # covers its work: the vision model and the rope index of the pre-process phase, the language model's call.
    recorder = _RecordingNvtx()
    monkeypatch.setattr(torch.cuda.nvtx, "_nvtx", recorder)
    get_rope_index = model_module.get_rope_index

    def recording_get_rope_index(*args, **kwargs):
        recorder.calls.append(("work", "get_rope_index"))
        return get_rope_index(*args, **kwargs)

    monkeypatch.setattr(model_module, "get_rope_index", recording_get_rope_index)
    stand_ins = [m for m in (model.vision_model, model.language_model) if m is not None]
    for stand_in in stand_ins:
        stand_in.log = recorder.calls
    mcore_utils.configure_nvtx_profiling(True)
    try:
        model(**inputs)
    finally:
        mcore_utils.configure_nvtx_profiling(False)
        # a forward that failed half way leaves its open ranges on Megatron-Core's stack: not for the next test
        del getattr(mcore_utils, "_nvtx_range_messages", [])[:]
        for stand_in in stand_ins:
            stand_in.log = None
    ranges = [c for c in recorder.calls if c[0] != "work"]
    assert ranges, (
        f"forward ({way}) emits no NVTX range with Megatron-Core NVTX profiling on (only {recorder.calls}): "
        "the profile of an Ascend run shows nothing"
    )
    expected = _expected_ranges(way)
    assert recorder.calls == expected, (
        f"forward's NVTX ranges ({way}) do not cover the work they name: {recorder.calls} instead of {expected}"
    )
