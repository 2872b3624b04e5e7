"""Smoke test for patches/vllm-ascend/packed-broadcast-wait-source-stream.patch.

``packed_broadcast_producer`` packs the caller's tensors with ``torch.cat``
on its own streams. Unpatched, nothing orders those streams after the
caller's stream, so the pack can read weights that the caller's stream has
not finished writing: the workers receive stale bytes.

The module imports only torch. What torch_npu would add is ``torch.npu``
and the "npu" device string, so the module's ``torch`` global is swapped for
a view of real torch that has both: on CPU, ``torch.npu`` is a stream model
that logs every stream operation and which stream ran each aten op on which
storage; on CUDA, ``torch.npu`` is ``torch.cuda`` and the race is real.
"""

from __future__ import annotations

import contextlib
import types
from dataclasses import dataclass, field

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

PACKED_TENSOR = "vllm_ascend.distributed.weight_transfer.packed_tensor"

# The half-fixes this test catches, each a plausible wrong or partial
# version of the patch: tests/halffixes/vllm-ascend/packed-broadcast-wait-source-stream/<name>.patch.
# tests/test_half_fixes.py applies each in its place and requires smoke to fail by assertion with a
# reason containing HALF_FIX_REASONS[name].
HALF_FIXES = {
    "wait-default-stream": (
        "waits for torch.npu.default_stream(), not the caller's current stream: when the trainer writes the "
        "weights on its own stream the pack is unordered, which the second scenario runs"
    ),
    "wait-after-cat": (
        "waits for the caller's stream only after the with-block that ran torch.cat: the log shows the cat "
        "before the wait"
    ),
    "wait-first-buffer-only": (
        "waits once before the loop, on the first buffer's stream only: the bias packed on the second "
        "buffer's stream is unordered"
    ),
    "current-stream-inside-context": (
        "takes current_stream() inside `with torch.npu.stream(...)`, so the packing stream waits for itself"
    ),
}
HALF_FIX_REASONS = {
    "wait-default-stream": "without waiting for the caller's stream trainer",
    "wait-after-cat": "without waiting for the caller's stream default",
    "wait-first-buffer-only": "without waiting for the caller's stream default",
    "current-stream-inside-context": "without waiting for the caller's stream default",
}


class TorchWithNpu(types.ModuleType):
    """Real torch plus what torch_npu registers: ``torch.npu`` and device "npu"."""

    def __init__(self, npu, device: str) -> None:
        super().__init__("torch")
        self.npu = npu
        self._device = device

    def __getattr__(self, name):
        return getattr(torch, name)

    def empty(self, *args, device=None, **kwargs):
        if device is not None and str(device).startswith("npu"):
            device = self._device
        return torch.empty(*args, device=device, **kwargs)


@pytest.fixture
def packed_tensor(load_upstream):
    return load_upstream("vllm_ascend", PACKED_TENSOR)


def take_last_argument(item):
    return item[1]


# ---------------------------------------------------------------- CPU model


@dataclass(repr=False)
class Entry:
    """One line of the log: a stream operation or an aten op run on a stream."""

    kind: str  # "op", "wait_stream", "synchronize", "device_synchronize", "record", "wait_event", "record_stream"
    stream: RecordingStream | None = None
    other: object = None  # the stream waited for, or the event
    op: str = ""
    reads: set[int] = field(default_factory=set)  # storage data pointers
    writes: set[int] = field(default_factory=set)

    def __repr__(self) -> str:
        if self.kind == "op":
            return f"{self.stream.name}: {self.op}"
        if self.kind == "device_synchronize":
            return "torch.npu.synchronize()"
        target = self.stream.name if self.stream is not None else "event"
        other = self.other.name if isinstance(self.other, RecordingStream) else ""
        return f"{target}.{self.kind}({other})"


class RecordingEvent:
    """torch.npu.Event: record, wait, query, synchronize, elapsed_time."""

    def __init__(
        self, npu: RecordingNpu, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ) -> None:
        self._npu = npu

    def record(self, stream=None) -> None:
        self._npu.log.append(Entry("record", stream or self._npu.current_stream(), self))

    def wait(self, stream=None) -> None:
        (stream or self._npu.current_stream()).wait_event(self)

    def synchronize(self) -> None:
        self._npu.log.append(Entry("synchronize", None, self))

    def query(self) -> bool:
        return True

    def elapsed_time(self, end_event) -> float:
        return 0.0


class RecordingStream:
    """A stream whose work runs eagerly on CPU; only the ordering calls are logged.

    The semantics of torch.npu.Stream (the same as torch.cuda.Stream): work on
    one stream runs in issue order; ``a.wait_stream(b)`` orders a's later work
    after all work issued to b so far; ``b.synchronize()`` blocks the host
    until b's issued work is done; an event recorded on b and waited for by a
    orders a's later work after b's work issued before the record.
    """

    def __init__(self, npu: RecordingNpu, name: str, priority: int = 0) -> None:
        self._npu = npu
        self.name = name
        self.priority = priority
        self.device = torch.device("cpu")

    def __repr__(self) -> str:
        return f"<stream {self.name}>"

    def wait_stream(self, stream: RecordingStream) -> None:
        self._npu.log.append(Entry("wait_stream", self, stream))

    def wait_event(self, event: RecordingEvent) -> None:
        self._npu.log.append(Entry("wait_event", self, event))

    def record_event(self, event: RecordingEvent | None = None) -> RecordingEvent:
        event = event or RecordingEvent(self._npu)
        event.record(self)
        return event

    def synchronize(self) -> None:
        self._npu.log.append(Entry("synchronize", self))

    def query(self) -> bool:
        return True

    def __enter__(self) -> RecordingStream:  # `with stream:` is `with torch.npu.stream(stream):`
        self._context = self._npu.stream(self)
        return self._context.__enter__()

    def __exit__(self, *exc) -> None:
        self._context.__exit__(*exc)


class RecordingNpu:
    """Stands in for ``torch.npu``, every stream call of it the producer could make.

    Streams: ``Stream``, ``current_stream``, ``default_stream``, ``set_stream``,
    ``stream()`` (a context; ``None`` leaves the stream as it is), ``synchronize``;
    ``Event``; device queries. ``Tensor.record_stream`` is logged by the test. A
    call this model lacks fails the test with a NotImplementedError naming it, not
    an AttributeError that could pass for the bug being caught.
    """

    def __init__(self, caller_on_default: bool = True) -> None:
        self.log: list[Entry] = []
        self.default = RecordingStream(self, "default")
        self.caller_stream = self.default if caller_on_default else RecordingStream(self, "trainer")
        self._current = self.default
        self._created = 0

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        raise NotImplementedError(f"the torch.npu stand-in does not model torch.npu.{name}: add it to RecordingNpu")

    def Stream(self, device=None, priority: int = 0, **kwargs) -> RecordingStream:  # noqa: N802 (torch's name)
        self._created += 1
        return RecordingStream(self, f"side{self._created}", priority)

    def Event(self, *args, **kwargs) -> RecordingEvent:  # noqa: N802
        return RecordingEvent(self, *args, **kwargs)

    def current_stream(self, device=None) -> RecordingStream:
        return self._current

    def default_stream(self, device=None) -> RecordingStream:
        return self.default

    def set_stream(self, stream: RecordingStream) -> None:
        self._current = stream

    @contextlib.contextmanager
    def stream(self, stream: RecordingStream | None):
        if stream is None:
            yield None
            return
        previous, self._current = self._current, stream
        try:
            yield stream
        finally:
            self._current = previous

    def synchronize(self, device=None) -> None:
        self.log.append(Entry("device_synchronize"))

    def current_device(self) -> int:
        return 0

    def device_count(self) -> int:
        return 1

    def is_available(self) -> bool:
        return True

    def set_device(self, device) -> None:
        return None

    def ordered(self, write: int, read: int) -> bool:
        """Whether log entry ``read`` is ordered after log entry ``write``."""
        writer, reader = self.log[write].stream, self.log[read].stream
        if writer is reader:
            return True
        recorded = set()
        for entry in self.log[write + 1 : read]:
            if entry.kind == "device_synchronize":
                return True
            if entry.kind == "synchronize" and (entry.stream is writer or id(entry.other) in recorded):
                return True
            if entry.kind == "wait_stream" and entry.stream is reader and entry.other is writer:
                return True
            if entry.kind == "record" and entry.stream is writer:
                recorded.add(id(entry.other))
            if entry.kind == "wait_event" and entry.stream is reader and id(entry.other) in recorded:
                return True
        return False


class StreamOpRecorder(TorchDispatchMode):
    """Logs each aten op with the stream current when it ran and the storages it used."""

    def __init__(self, npu: RecordingNpu) -> None:
        super().__init__()
        self._npu = npu
        self._alive = []  # keep storages alive so their addresses are never reused

    def _storages(self, tree) -> set[int]:
        pointers = set()
        for value in tree_flatten(tree)[0]:
            if isinstance(value, torch.Tensor) and value.untyped_storage().nbytes():
                self._alive.append(value.untyped_storage())
                pointers.add(value.untyped_storage().data_ptr())
        return pointers

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func.is_view:  # metadata only, no data is read
            return out
        written = set()
        for position, argument in enumerate(func._schema.arguments):
            if argument.alias_info is not None and argument.alias_info.is_write:
                value = args[position] if position < len(args) else kwargs.get(argument.name)
                written |= self._storages(value)
        reads = self._storages((args, kwargs))
        written |= self._storages(out) - reads  # freshly allocated outputs
        stream = self._npu.current_stream()
        self._npu.log.append(Entry("op", stream, op=str(func), reads=reads, writes=written))
        return out


def test_packing_stream_waits_for_caller_stream_before_cat(packed_tensor, monkeypatch):
    """The trainer writes the weights on the default stream, or on a stream of its own (converting weights
    on a side stream): either way the pack must be ordered after those writes. One test for both, so that it
    fails on the unpatched tree as a whole."""
    for caller_on_default in (True, False):
        check_pack_is_ordered_after_the_callers_writes(packed_tensor, monkeypatch, caller_on_default)


def check_pack_is_ordered_after_the_callers_writes(packed_tensor, monkeypatch, caller_on_default):
    npu = RecordingNpu(caller_on_default)
    scenario = "caller on the default stream" if caller_on_default else "caller on its own stream"
    monkeypatch.setattr(packed_tensor, "torch", TorchWithNpu(npu, "cpu"))
    monkeypatch.setattr(
        torch.Tensor,
        "record_stream",
        lambda tensor, stream: npu.log.append(Entry("record_stream", stream)),
        raising=False,
    )
    weights = [
        ("layer.weight", torch.zeros(4, 3)),  # 48 bytes: fills the first buffer
        ("layer.bias", torch.zeros(5, dtype=torch.bfloat16)),  # goes to the second
    ]
    received = []

    class Group:
        def broadcast(self, tensor, src):
            received.append(tensor.clone())

    caller = npu.caller_stream
    with StreamOpRecorder(npu), npu.stream(caller):
        for value, (_, weight) in enumerate(weights, start=1):
            weight.fill_(value)  # the trainer's last write, on the caller's stream
        packed_tensor.packed_broadcast_producer(
            iter(weights), Group(), src=0, post_iter_func=take_last_argument, buffer_size_bytes=16, num_buffers=2
        )

    assert [t.numel() for t in received] == [48, 10], scenario
    for (name, weight), packed in zip(weights, received):
        assert torch.equal(packed, weight.contiguous().view(torch.uint8).view(-1)), (name, scenario)

    log = npu.log
    for name, weight in weights:
        storage = weight.untyped_storage().data_ptr()
        fill = max(i for i, e in enumerate(log) if e.kind == "op" and storage in e.writes)
        assert log[fill].stream is caller
        cats = [i for i, e in enumerate(log) if e.kind == "op" and e.op.startswith("aten.cat") and storage in e.reads]
        assert len(cats) == 1, f"{name} was not packed by exactly one torch.cat: {log}"
        cat = cats[0]
        packing = log[cat].stream
        assert packing is not caller, "the pack is expected to run on the producer's own stream"
        ordering = [e for e in log[fill + 1 : cat] if e.kind != "op"]
        assert npu.ordered(fill, cat), (
            f"{name} was packed on {packing.name} without waiting for the caller's stream {caller.name} "
            f"({scenario}), which wrote it in {log[fill].op}; stream operations in between: {ordering}"
        )


# ---------------------------------------------------------------- CUDA race

# torch.cuda._sleep spins the current stream for this many GPU clock cycles
# (about 50 ms at H200 clocks), so the caller's writes are still queued when
# the producer packs: an unordered pack reads the old bytes every time.
SLEEP_CYCLES = 100_000_000
TRIALS = 5


def test_pack_sees_the_callers_writes_on_cuda(packed_tensor, smoke_device, monkeypatch):
    if smoke_device != "cuda":
        pytest.skip(f"needs smoke device 'cuda', not {smoke_device!r}")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    monkeypatch.setattr(packed_tensor, "torch", TorchWithNpu(torch.cuda, "cuda"))
    weights = [
        ("layer.weight", torch.empty(1024, 1024, device="cuda")),
        ("layer.bias", torch.empty(4096, device="cuda", dtype=torch.bfloat16)),
    ]
    received = []

    class Group:
        def broadcast(self, tensor, src):
            torch.cuda.synchronize()
            received.append(tensor.clone())

    def send():
        received.clear()
        packed_tensor.packed_broadcast_producer(iter(weights), Group(), src=0, post_iter_func=take_last_argument)
        torch.cuda.synchronize()
        return torch.cat(received)

    # Warm up: load the kernels and fill the allocator before timing matters.
    torch.cuda._sleep(1000)
    send()

    stale = []
    for trial in range(1, TRIALS + 1):
        for _, weight in weights:
            weight.fill_(-1.0)
        torch.cuda.synchronize()
        torch.cuda._sleep(SLEEP_CYCLES)  # delays the caller's stream ...
        for _, weight in weights:
            weight.fill_(float(trial))  # ... so these writes are still pending
        sent = send()
        expected = torch.cat([torch.full_like(w, float(trial)).view(torch.uint8).view(-1) for _, w in weights])
        if not torch.equal(sent, expected):
            stale.append(trial)

    assert not stale, (
        f"the packed buffer broadcast in trials {stale} of {TRIALS} held stale weights: "
        "the packing stream did not wait for the caller's stream"
    )
