"""render.fields: a value's own fields as a JSON object (paths as text, tuples as lists, enums as they are)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import pytest

from patchmgr.render.fields import fields_json


class Kind(StrEnum):
    ONE = "one"


@dataclass(frozen=True)
class Value:
    root: Path
    kind: Kind
    paths: tuple[Path, ...]
    names: list[str]
    count: int = 0


@pytest.mark.fast
def test_fields_in_their_order_less_those_left_out_as_json_writes_them():
    value = Value(Path("/p"), Kind.ONE, (Path("a/b"),), ["x"], 3)
    assert list(fields_json(value)) == ["root", "kind", "paths", "names", "count"]
    doc = fields_json(value, "root")
    assert doc == {"kind": "one", "paths": ["a/b"], "names": ["x"], "count": 3}
    assert json.loads(json.dumps(doc)) == doc
