"""Smoke test for patches/mbridge/vlm-forward-kwargs-passthrough.patch.

verl's fused forward calls the vision-language models with extra keyword
arguments meant for the language model (``temperature``, ``visual_pos_masks``
...). Unpatched, their ``forward`` takes no ``**kwargs``: the call fails with
``TypeError: ... got an unexpected keyword argument``. Patched, ``forward``
hands them on to ``self.language_model``.

Each model is built without its ``__init__`` (which would build the vision
tower and the decoder) and configured as a later pipeline stage
(``pre_process=False``), so ``forward`` runs its real code with no vision or
embedding work and then calls the language model, which here records its
arguments.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

NO_SEQUENCE_PARALLEL = SimpleNamespace(sequence_parallel=False)

# model package -> (class, the attributes its forward reads, extra forward arguments)
MODELS = {
    "gemma3": (
        "Gemma3Model",
        dict(
            add_encoder=False, add_decoder=True, encoder_hidden_state=None,
            pre_process=False, post_process=True,
            context_parallel_lm=1, sequence_parallel_lm=False,
        ),
        dict(images=None),
    ),
    "glm4_vl": ("Glm4VLModel", dict(pre_process=False, config=NO_SEQUENCE_PARALLEL), {}),
    "internvl3": ("InternVLModel", dict(pre_process=False, config=NO_SEQUENCE_PARALLEL), {}),
    "qwen2_5_vl": ("Qwen2_5VLModel", dict(pre_process=False, config=NO_SEQUENCE_PARALLEL), {}),
    "qwen3_vl": ("Qwen3VLModel", dict(pre_process=False, config=NO_SEQUENCE_PARALLEL), {}),
}


class RecordingLanguageModel:
    """Stands in for the decoder (a Megatron GPTModel): records how it is called."""

    def __init__(self) -> None:
        self.calls: list[dict] = []
        self.output = torch.zeros(1, 4, 8)

    def __call__(self, *args, **kwargs):
        assert not args, "the VLM calls its language model with keywords only"
        self.calls.append(kwargs)
        return self.output


@pytest.mark.parametrize("package", sorted(MODELS))
def test_forward_passes_extra_kwargs_to_language_model(load_upstream, package):
    class_name, attributes, extra_arguments = MODELS[package]
    module = load_upstream("mbridge", f"mbridge.models.{package}.model")
    model_class = getattr(module, class_name)

    model = object.__new__(model_class)
    torch.nn.Module.__init__(model)
    for name, value in attributes.items():
        setattr(model, name, value)
    language_model = RecordingLanguageModel()
    model.language_model = language_model

    input_ids = torch.tensor([[11, 12, 13, 14]])
    # Unpatched: TypeError: forward() got an unexpected keyword argument 'temperature'.
    output = model(
        input_ids=input_ids,
        position_ids=torch.arange(4).unsqueeze(0),
        attention_mask=None,
        temperature=0.5,
        **extra_arguments,
    )

    assert output is language_model.output
    assert len(language_model.calls) == 1
    assert language_model.calls[0].get("temperature") == 0.5, (
        f"{class_name}.forward did not pass temperature on: {sorted(language_model.calls[0])}"
    )
