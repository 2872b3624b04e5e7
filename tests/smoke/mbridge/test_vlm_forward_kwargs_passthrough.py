"""Smoke test for patches/mbridge/vlm-forward-kwargs-passthrough.patch.

verl's fused forward calls the vision-language models with extra keyword
arguments meant for the language model (e.g. ``temperature``, which verl's
patched language-model forward takes). Unpatched, the VLMs' ``forward`` takes
no ``**kwargs``: the call fails with ``TypeError: ... got an unexpected
keyword argument 'temperature'``. Patched, ``forward`` hands every extra
keyword on to ``self.language_model``, unchanged. The extras cannot be ones
the VLM already passes itself: Qwen3-VL's forward builds ``visual_pos_masks``
and ``deepstack_visual_embeds`` and passes them explicitly, so a caller that
sent those too would get "got multiple values for keyword argument" with or
without the patch.

Each model is built without its ``__init__`` (which would build the vision
tower and the decoder) and configured as a later pipeline stage
(``pre_process=False``), so ``forward`` runs its real code with no vision or
embedding work and then calls the language model. The stand-in language model
accepts exactly the keywords of the real one's ``forward`` (GPTModel,
Gemma3GPTModel or Qwen3VLGPTModel, read from the real classes) plus the extras
this test sends, as verl's patched forward would, and records each call.

HALF_FIXES names the plausible wrong or partial fixes this module must catch;
each is a patch file under tests/halffixes/mbridge/
vlm-forward-kwargs-passthrough/<name>.patch that applies clean at the pin
instead of the real patch.
"""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import pytest
import torch

HALF_FIXES = {
    "explicit-temperature": (
        "forward(..., temperature=None) passed on as temperature=temperature instead of **kwargs: "
        "any other extra keyword still raises 'unexpected keyword argument', and without one the "
        "language model is sent temperature=None, a keyword GPTModel.forward does not take."
    ),
    "kwargs-to-vision-model": (
        "forward takes **kwargs but hands them to self.vision_model(...), not to the language model: "
        "temperature never reaches the language model (and on a later pipeline stage nothing is called)."
    ),
    "default-temperature": (
        "**kwargs passed on, plus temperature=kwargs.pop('temperature', 1.0) 'for verl': a call without "
        "extras sends the language model a keyword its forward does not accept."
    ),
}
HALF_FIX_REASONS = {
    "explicit-temperature": "unexpected keyword argument",
    "kwargs-to-vision-model": "did not pass its extra keywords on to the language model",
    "default-temperature": "unexpected keyword argument 'temperature'",
}

NO_SEQUENCE_PARALLEL = SimpleNamespace(sequence_parallel=False)

# model package -> (class, the attributes its forward reads, extra forward arguments,
#                   (module, class) of its language model)
GPT_MODEL = ("megatron.core.models.gpt.gpt_model", "GPTModel")
MODELS = {
    "gemma3": (
        "Gemma3Model",
        dict(
            add_encoder=False,
            add_decoder=True,
            encoder_hidden_state=None,
            pre_process=False,
            post_process=True,
            context_parallel_lm=1,
            sequence_parallel_lm=False,
        ),
        dict(images=None),
        ("mbridge.models.gemma3.gpt_model", "Gemma3GPTModel"),
    ),
    "glm4_vl": ("Glm4VLModel", dict(pre_process=False, config=NO_SEQUENCE_PARALLEL), {}, GPT_MODEL),
    "internvl3": ("InternVLModel", dict(pre_process=False, config=NO_SEQUENCE_PARALLEL), {}, GPT_MODEL),
    "qwen2_5_vl": ("Qwen2_5VLModel", dict(pre_process=False, config=NO_SEQUENCE_PARALLEL), {}, GPT_MODEL),
    "qwen3_vl": (
        "Qwen3VLModel",
        dict(pre_process=False, config=NO_SEQUENCE_PARALLEL),
        {},
        ("mbridge.models.qwen3_vl.gpt_model", "Qwen3VLGPTModel"),
    ),
}


class RecordingLanguageModel:
    """Stands in for the decoder: takes the keywords its real forward takes, plus ``extras``."""

    def __init__(self, real_forward, extras=()) -> None:
        parameters = list(inspect.signature(real_forward).parameters.values())[1:]  # drop self
        self.takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)
        self.accepts = {p.name for p in parameters} | set(extras)
        self.name = real_forward.__qualname__
        self.calls: list[dict] = []
        self.output = torch.zeros(1, 4, 8)

    def __call__(self, *args, **kwargs):
        assert not args, "the VLM calls its language model with keywords only"
        unknown = sorted(set(kwargs) - self.accepts)
        if unknown and not self.takes_any:
            raise TypeError(f"{self.name}() got an unexpected keyword argument {unknown[0]!r}")
        self.calls.append(kwargs)
        return self.output


def _build(load_upstream, package, extras):
    class_name, attributes, _, (lm_module, lm_class) = MODELS[package]
    module = load_upstream("mbridge", f"mbridge.models.{package}.model")
    model = object.__new__(getattr(module, class_name))
    torch.nn.Module.__init__(model)
    for name, value in attributes.items():
        setattr(model, name, value)
    real_forward = getattr(
        load_upstream("mbridge", lm_module)
        if lm_module.startswith("mbridge")
        else __import__(lm_module, fromlist=[lm_class]),
        lm_class,
    ).forward
    model.language_model = RecordingLanguageModel(real_forward, extras)
    return model


def _forward(model, package, **extra):
    class_name = MODELS[package][0]
    try:
        return model(
            input_ids=torch.tensor([[11, 12, 13, 14]]),
            position_ids=torch.arange(4).unsqueeze(0),
            attention_mask=None,
            **MODELS[package][2],
            **extra,
        )
    except TypeError as error:
        pytest.fail(f"{class_name}.forward({', '.join(extra) or 'no extra keywords'}): {error}")


@pytest.mark.parametrize("package", sorted(MODELS))
def test_forward_passes_extra_kwargs_to_language_model(load_upstream, package):
    class_name = MODELS[package][0]
    probe = object()
    extras = {"temperature": 0.5, "patchmgr_probe": probe}  # a known extra and an arbitrary one

    # Unpatched: TypeError: forward() got an unexpected keyword argument 'temperature'.
    model = _build(load_upstream, package, extras)
    output = _forward(model, package, **extras)
    assert output is model.language_model.output
    assert len(model.language_model.calls) == 1
    sent = model.language_model.calls[0]
    assert sent.get("temperature") == 0.5 and sent.get("patchmgr_probe") is probe, (
        f"{class_name}.forward did not pass its extra keywords on to the language model: {sorted(sent)}"
    )

    # The same call without extras: the language model gets exactly the other keywords,
    # none invented by the fix.
    plain = _build(load_upstream, package, ())
    _forward(plain, package)
    assert len(plain.language_model.calls) == 1
    assert sorted(plain.language_model.calls[0]) == sorted(set(sent) - set(extras)), (
        f"{class_name}.forward sends different keywords when the caller adds none"
    )
