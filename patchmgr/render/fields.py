"""A result's own fields as a JSON object, for the values whose JSON document is exactly what they hold."""

from __future__ import annotations

from dataclasses import fields
from pathlib import PurePath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


def fields_json(value: DataclassInstance, *left_out: str) -> dict[str, object]:
    """``{field: its value}`` for each field of ``value`` in their order, less those ``left_out``; a path is
    written as its text, a tuple as a list (an enum of strings is its value already)."""
    return {f.name: _plain(getattr(value, f.name)) for f in fields(value) if f.name not in left_out}


def _plain(value: object) -> object:
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value
