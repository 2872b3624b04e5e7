"""A distribution's RECORD: read it, and rewrite the rows of the files patchmgr changed."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
from collections.abc import Mapping
from pathlib import Path

from patchmgr.model.errors import StateError


def bytecode_of(source_file: Path) -> list[Path]:
    """Compiled copies of a module that could shadow its new source."""
    if source_file.suffix != ".py":
        return []
    cache = source_file.parent / "__pycache__"
    return sorted(cache.glob(f"{source_file.stem}.*.pyc")) if cache.is_dir() else []


def record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def _record_csv(record: bytes, where: Path | str) -> list[list[str]]:
    """The rows of a RECORD (UTF-8 CSV, PEP 376); a damaged one is one error naming it."""
    try:
        return list(csv.reader(io.StringIO(record.decode("utf-8"), newline="")))
    except (UnicodeDecodeError, csv.Error) as exc:
        why = "it is not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else f"it is not CSV: {exc}"
        raise StateError(
            f"{where} is damaged ({why}); nothing was changed",
            "reinstall the distribution (pip install --force-reinstall --no-deps NAME==VERSION), then run again",
        ) from None


def update_record(
    record: bytes, location: Path, changes: Mapping[str, bytes | None], where: Path | str = "RECORD"
) -> bytes:
    """RECORD with the hash and size of each changed file, new files added, removed ones dropped."""
    rows = _record_csv(record, where)
    by_path = {str((location / row[0]).resolve()) if row else "": index for index, row in enumerate(rows)}
    for absolute, data in changes.items():
        key = str(Path(absolute).resolve())
        relative = str(Path(absolute).resolve().relative_to(location.resolve()))
        if data is None:
            if key in by_path:
                rows[by_path[key]] = []
            continue
        row = [relative, record_hash(data), str(len(data))]
        if key in by_path:
            rows[by_path[key]] = [rows[by_path[key]][0], row[1], row[2]]
        else:
            rows.append(row)
    out = io.StringIO()
    # keep the installer's line endings (pip writes CRLF), so unchanged rows stay byte-identical
    writer = csv.writer(out, lineterminator="\r\n" if b"\r\n" in record else "\n")
    for row in rows:
        if row:
            writer.writerow(row)
    return out.getvalue().encode("utf-8")


def record_rows(record: Path) -> dict[str, list[str]]:
    """The rows of the RECORD file ``record`` by the absolute path of the file each names (none when absent)."""
    if not record.is_file():
        return {}
    location = record.parent.parent
    return {str((location / row[0]).resolve()): row for row in _record_csv(record.read_bytes(), record) if row}
