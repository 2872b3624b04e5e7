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
    assert call["position_ids"].tolist() == [[PACKED_POSITIONS.tolist()]] * 3
    assert call["input_ids"].tolist() == [PACKED_IDS.tolist()]
    assert call["attention_mask"] is None
    if pre_process:
        assert call["decoder_input"].flatten().tolist() == PACKED_IDS.float().tolist()


def test_preprocess_packed_seqs_accepts_a_0_1_integer_mask(load_upstream):
    utils = load_upstream("megatron.bridge", UTILS)
    pg_collection = types.SimpleNamespace(cp=_SingleRankGroup(), tp=_SingleRankGroup())
    # A caller's keep-mask as 0/1 integers: the second sequence is right-padded by 2.
    attention_mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]], dtype=torch.int32)

    # Unpatched: fancy indexing picks 6 elements for a 4-token slot and raises.
    packed, params = utils.preprocess_packed_seqs(
        INPUT_IDS, attention_mask, pre_process=True, pg_collection=pg_collection
    )

    assert packed.tolist() == [[11, 12, 13, 14, 15, 16, 21, 22, 23, 24]]
    assert params.cu_seqlens_q.tolist() == [0, 6, 10]
