"""Smoke test for patches/megatron-bridge/thd-bool-attention-mask.patch.

With packed sequences and no attention mask, Qwen3VLModel.forward built the
mask as int32; preprocess_packed_seqs indexes input_ids[i, attention_mask[i]],
which for an integer tensor is a fancy index: every row repeats element 1, so
the packed ids, embeddings and mrope positions collapse ([1, 1, 1, ...]).

The real forward is driven on a model built without its heavy __init__ (only
the attributes forward reads are set), with a stand-in language model that
records what it is given, so the mask is the one forward itself builds.
Tensors stay on the CPU: the indexing bug does not depend on the device.
"""

from __future__ import annotations

import types

import pytest
import torch
import torch.cuda.nvtx
from megatron.core.packed_seq_params import PackedSeqParams

# The half-fixes these tests catch, each a plausible wrong or partial version of the patch:
# tests/halffixes/megatron-bridge/thd-bool-attention-mask/<name>.patch.
# tests/test_half_fixes.py applies each in its place and requires smoke to fail by assertion with a
# reason containing HALF_FIX_REASONS[name].
HALF_FIXES = {
    "int32-only": (
        "preprocess_packed_seqs converts only int32 masks: the int64 0/1 mask of a tokenizer is still a fancy "
        "index, which the integer-mask test packs in every dtype"
    ),
    "first-stage-only": (
        "only the pre_process branch builds a bool mask: on a later pipeline stage the THD ids and mrope "
        "positions still collapse, which the later-stage forward checks"
    ),
    "cp1-index-only": (
        "the .bool() is added at the cp_size == 1 indexing only: the context-parallel split still "
        "fancy-indexes, which the integer-mask test checks on two CP ranks"
    ),
    "model-only": (
        "model.py builds bool masks but preprocess_packed_seqs takes a caller's 0/1 integer mask as indices, "
        "which the integer-mask test passes it"
    ),
}
HALF_FIX_REASONS = {
    "int32-only": "as a fancy index",
    "first-stage-only": "THD packing collapsed",
    "cp1-index-only": "as a fancy index",
    "model-only": "as a fancy index",
}

MODEL = "megatron.bridge.models.qwen_vl.modelling_qwen3_vl.model"
UTILS = "megatron.bridge.models.qwen_vl.modelling_qwen3_vl.utils"

# Two packed sequences of 6 text tokens each.
INPUT_IDS = torch.tensor([[11, 12, 13, 14, 15, 16], [21, 22, 23, 24, 25, 26]])
PACKED_IDS = torch.tensor([11, 12, 13, 14, 15, 16, 21, 22, 23, 24, 25, 26])
PACKED_POSITIONS = torch.tensor([0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5])


class _NoOpNvtx:
    """Lets forward run on builds without NVTX whether or not the nvtx patch is applied."""

    def rangePushA(self, msg):
        return 0

    def rangePop(self):
        return 0


class _SingleRankGroup:
    def rank(self) -> int:
        return 0

    def size(self) -> int:
        return 1


class _TokenEmbedding(torch.nn.Module):
    """Embeds token id t as the 1-vector [t], in Megatron's [s, b, h] layout."""

    def forward(self, input_ids, position_ids=None):
        return input_ids.transpose(0, 1).unsqueeze(-1).float()


class _RecordingLanguageModel(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embedding = _TokenEmbedding()
        self.rotary_pos_emb = types.SimpleNamespace(is_thd_format=False)
        self.calls: list[dict] = []

    def forward(self, **kwargs):
        self.calls.append(kwargs)
        return torch.zeros(1)


def _tiny_qwen3_vl(model_module, pre_process: bool):
    """A text-only Qwen3VLModel with just the attributes its forward reads."""
    model = object.__new__(model_module.Qwen3VLModel)
    torch.nn.Module.__init__(model)  # real __init__ builds TE layers; forward only needs these
    model.config = types.SimpleNamespace(sequence_parallel=False, spatial_merge_size=2)
    model.pg_collection = types.SimpleNamespace(cp=_SingleRankGroup(), tp=_SingleRankGroup())
    model.pre_process = pre_process
    model.image_token_id, model.video_token_id, model.vision_start_token_id = 151655, 151656, 151652
    model.square_merge_size = model.config.spatial_merge_size**2
    model.use_dist_train = False  # read by forward from v0.5.0 on
    model.language_model = _RecordingLanguageModel()
    return model


@pytest.mark.parametrize("pre_process", [True, False], ids=["first-stage", "later-stage"])
def test_forward_packs_thd_with_true_mrope_positions(load_upstream, monkeypatch, pre_process):
    monkeypatch.setattr(torch.cuda.nvtx, "_nvtx", _NoOpNvtx())
    model = _tiny_qwen3_vl(load_upstream("megatron.bridge", MODEL), pre_process)

    model(input_ids=INPUT_IDS, packed_seq_params=PackedSeqParams(qkv_format="thd"))

    (call,) = model.language_model.calls
    # Unpatched: every position is 1 ([1, 1, 1, ...]), every packed id the row's 2nd token.
    positions = call["position_ids"].tolist()
    assert positions == [[PACKED_POSITIONS.tolist()]] * 3, (
        f"THD packing collapsed: mrope positions {positions[0][0]} instead of {PACKED_POSITIONS.tolist()}"
    )
    packed_ids = call["input_ids"].tolist()
    assert packed_ids == [PACKED_IDS.tolist()], (
        f"THD packing collapsed: packed input ids {packed_ids} instead of {[PACKED_IDS.tolist()]}"
    )
    assert call["attention_mask"] is None
    if pre_process:
        embedded = call["decoder_input"].flatten().tolist()
        assert embedded == PACKED_IDS.float().tolist(), (
            f"THD packing collapsed: packed embeddings {embedded} instead of {PACKED_IDS.float().tolist()}"
        )


class _Rank:
    def __init__(self, rank: int, size: int) -> None:
        self._rank, self._size = rank, size

    def rank(self) -> int:
        return self._rank

    def size(self) -> int:
        return self._size


# A caller's keep-mask as 0/1: the second sequence is right-padded by 2.
KEEP = [[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]]
# What preprocess_packed_seqs packs for KEEP, per layout (tp 1). With context parallelism of 2 each
# sequence is padded to a multiple of 4 and split into 4 chunks; rank r keeps chunks r and 3 - r.
PACKED_BY_LAYOUT = {
    "cp 1": [11, 12, 13, 14, 15, 16, 21, 22, 23, 24],
    "cp 2, rank 0": [11, 12, 0, 0, 21, 24],
    "cp 2, rank 1": [13, 14, 15, 16, 22, 23],
}
LAYOUTS = {"cp 1": (0, 1), "cp 2, rank 0": (0, 2), "cp 2, rank 1": (1, 2)}


def test_preprocess_packed_seqs_packs_a_0_1_integer_mask_like_a_bool_mask(load_upstream):
    """Every integer dtype a caller's mask comes in (int64 from tokenizers, int32, uint8), with and without
    context parallelism: one test, so that it fails on the unpatched tree as a whole."""
    utils = load_upstream("megatron.bridge", UTILS)
    wrong = []
    for layout, (cp_rank, cp_size) in LAYOUTS.items():
        pg_collection = types.SimpleNamespace(cp=_Rank(cp_rank, cp_size), tp=_Rank(0, 1))
        want = PACKED_BY_LAYOUT[layout]
        for dtype in (torch.int64, torch.int32, torch.uint8, torch.bool):
            try:
                packed, params = utils.preprocess_packed_seqs(
                    INPUT_IDS, torch.tensor(KEEP, dtype=dtype), pre_process=True, pg_collection=pg_collection
                )
            except (RuntimeError, IndexError) as exc:
                # unpatched, cp 1: the fancy index picks 6 elements for a 4-token slot
                wrong.append(f"{dtype} ({layout}) raised {type(exc).__name__}: {exc}")
                continue
            if packed.tolist() != [want]:
                wrong.append(f"{dtype} ({layout}) packed {packed.tolist()[0]} instead of {want}")
            elif layout == "cp 1" and params.cu_seqlens_q.tolist() != [0, 6, 10]:
                wrong.append(f"{dtype} ({layout}) gave cu_seqlens {params.cu_seqlens_q.tolist()}")
    assert not wrong, "preprocess_packed_seqs used a 0/1 integer mask as a fancy index, not as a mask: " + "; ".join(
        wrong
    )
