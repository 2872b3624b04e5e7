"""One file's diff applied on top of the files before it, as ``git apply`` applies it: its hunks placed
(``place``), or its binary data checked and applied, the mode it gives the file, and the refusals git makes (a
path beyond a link, a link patched as a regular file, a binary patch for other bytes)."""

from __future__ import annotations

from collections.abc import Callable

from patchmgr.engine.place import PlacementFailure, apply_hunks, encode, file_lines
from patchmgr.engine.results import Conflict, HunkPlacement, ModedBytes, TreeReader
from patchmgr.model.diff import SYMLINK_MODE, DeltaError, FileDiff, apply_delta, blob_id


def is_folder(reader: TreeReader, staged: dict[str, bytes | None], path: str) -> bool:
    """Whether ``path`` is a folder: a file staged under it, or the reader says so (see ``TreeReader``)."""
    prefix = path + "/"
    if any(name.startswith(prefix) and data is not None for name, data in staged.items()):
        return True
    probe = getattr(reader, "is_folder", None)
    return bool(probe(path)) if probe is not None else False


def apply_file(
    diff: FileDiff, reader: TreeReader, staged: dict[str, bytes | None], max_fuzz: int = 0
) -> list[HunkPlacement]:
    """Apply one file's diff on top of ``staged`` (earlier files of the same patch): its hunks, or its binary
    data, and the mode it gives the file (``ModedBytes``), each as git apply does."""

    def current(path: str) -> bytes | None:
        return staged[path] if path in staged else reader.read(path)

    for path in (diff.old_path, diff.new_path):
        if path is not None:
            _refuse_links(path, current)
    # diff.path is the new side for an add or a rename, the one side for a change (see FileDiff.kind)
    if diff.kind in ("add", "rename") and is_folder(reader, staged, diff.path):
        raise PlacementFailure(
            Conflict(diff.path, 0, "", "the patch creates it as a file, but it is a folder upstream", 1)
        )
    if diff.old_path is None:  # an added file
        existing = current(diff.path)
        if existing is not None:
            raise PlacementFailure(Conflict(diff.path, 0, "", "the patch creates it, but it already exists", 1))
        placements: list[HunkPlacement] = []
        if diff.binary is not None:
            created = binary_result(diff, None, reader)
        else:
            lines, placements = apply_hunks(diff.path, [], diff.hunks, 0)
            created = encode("".join(lines))
        staged[diff.path] = _moded(created or b"", diff.new_mode, None)
        return placements
    old = current(diff.old_path)
    if old is None:
        raise PlacementFailure(Conflict(diff.old_path, 0, "", "the file is gone from the upstream", 1), missing=True)
    _check_type(diff, old)
    if diff.kind == "rename" and current(diff.path) is not None:
        raise PlacementFailure(Conflict(diff.path, 0, "", "the rename's target already exists", 1))
    new: bytes | None
    if diff.binary is not None:
        new, placements = binary_result(diff, old, reader), []
    else:
        lines, placements = apply_hunks(diff.old_path, file_lines(old), diff.hunks, max_fuzz)
        new = encode("".join(lines)) if diff.new_path is not None or lines else None
    if diff.new_path is None:  # a deleted file
        if new is not None:
            raise PlacementFailure(Conflict(diff.old_path, 0, "", "the file to delete has other content upstream", 1))
        staged[diff.old_path] = None
        return placements
    if diff.kind == "rename":
        staged[diff.old_path] = None
    staged[diff.new_path] = _moded(new or b"", diff.new_mode, old)
    return placements


def _moded(data: bytes, mode: str | None, old: bytes | None) -> bytes:
    """``data`` with the mode the patch gives it, or else the one the old file had where that was not a regular
    file's (a link stays a link); plain bytes where neither says one."""
    kept = mode or getattr(old, "mode", None) or (SYMLINK_MODE if getattr(old, "is_symlink", False) else None)
    return ModedBytes(data, kept) if kept else data


def _check_type(diff: FileDiff, old: bytes) -> None:
    """git apply refuses a change whose old mode is a link's where the file is not one, or the other way round
    (its "wrong type"); another mode of the same type it only warns about, and the patch's mode wins."""
    if diff.old_mode is None or diff.old_path is None:
        return
    is_link = bool(getattr(old, "is_symlink", False))
    if (diff.old_mode == SYMLINK_MODE) != is_link:
        what = ("a symbolic link", "a regular file") if is_link else ("a regular file", "a symbolic link")
        raise PlacementFailure(
            Conflict(
                diff.old_path,
                0,
                "",
                f"it is {what[0]} upstream, and the patch changes {what[1]} (mode {diff.old_mode}): "
                "git apply refuses it too (wrong type)",
                1,
            ),
            unsafe=True,
        )


def binary_result(diff: FileDiff, old: bytes | None, reader: TreeReader) -> bytes | None:
    """The bytes a binary patch makes of ``old`` (None: it deletes the file), checked as git apply checks them:
    both blob ids in full, the old bytes those of the old id, the result those of the new id; refused where git
    refuses it, with git's own words."""
    change, name = diff.binary, diff.old_path or diff.new_path or ""
    if change is None:
        raise ValueError("binary_result of a text diff")

    def refused(reason: str) -> PlacementFailure:
        return PlacementFailure(Conflict(name, 0, "", f"git apply refuses it too: {reason}", 1))

    if not change.full_index:
        raise refused(f"cannot apply binary patch to '{name}' without full index line")
    like = diff.old_blob or diff.new_blob or ""
    if old is not None:
        found = blob_id(old, like)
        if found != diff.old_blob:
            raise refused(f"the patch applies to '{name}' ({found}), which does not match the current contents.")
    if diff.new_blob is None:
        return None
    if change.forward is None:
        # git diff without --binary: the result only from the blob the index line names, where the source has it
        known = reader.read_blob(diff.new_blob)
        if known is None:
            raise refused(f"missing binary patch data for '{name}'")
        return bytes(known)
    if change.forward.method == "literal":
        result = change.forward.data
    else:
        try:
            result = apply_delta(old or b"", change.forward.data)
        except (DeltaError, IndexError):
            raise refused(f"binary patch does not apply to '{name}'") from None
    made = blob_id(result, like)
    if made != diff.new_blob:
        raise refused(f"binary patch to '{name}' creates incorrect result (expecting {diff.new_blob}, got {made})")
    return result


def _refuse_links(path: str, current: Callable[[str], bytes | None]) -> None:
    """Refuse a path that is a submodule upstream, or lies under one, under a link or under a file.

    git stores a link as a blob, so ``<link>/file`` simply reads as absent and a
    patch creating it would look clean; written out, it would land wherever the
    link points, possibly outside the tree (git apply refuses it: "beyond a
    symbolic link"). Refused outright, the patch can never be applied, whatever
    fallback is asked for. A link itself is patched as git patches it: its
    target is its text, and it stays a link (``_check_type``).
    """
    parts = path.split("/")
    for depth in range(1, len(parts)):
        parent = "/".join(parts[:depth])
        data = current(parent)
        if getattr(data, "is_submodule", False):
            raise PlacementFailure(
                Conflict(
                    path, 0, "", f"{parent} is a submodule upstream: patchmgr does not patch inside submodules", 1
                ),
                unsafe=True,
            )
        if data is not None:
            what = "a symbolic link" if getattr(data, "is_symlink", False) else "a file"
            raise PlacementFailure(
                Conflict(
                    path, 0, "", f"{parent} is {what} upstream, not a folder: patchmgr never writes through it", 1
                ),
                unsafe=True,
            )
    data = current(path)
    if getattr(data, "is_submodule", False):
        raise PlacementFailure(
            Conflict(path, 0, "", "it is a submodule upstream: patchmgr patches only files and links", 1), unsafe=True
        )
