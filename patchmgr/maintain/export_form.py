"""The patch file ``export`` writes for a commit, in the form the file had (``model.mail.in_file_form``)."""

from __future__ import annotations

from pathlib import Path

from patchmgr.io.git import GitRepo
from patchmgr.maintain.edit_record import EditRecord
from patchmgr.model.mail import in_file_form


def file_form(repo: GitRepo, record: EditRecord, commit: str, patch_id: str, path: Path, mail: bytes) -> bytes:
    """``mail`` (format-patch of ``commit``) as the file at ``path`` has it: a plain DEP-3 diff stays one.

    Its fields are rewritten only when the commit's message is no longer the one the checkout made for the
    patch (the commit in the checkout's record): someone reworded it, and the message then says what it is.
    """
    if not path.is_file():
        return mail
    made = next((p.commit for p in record.patches if p.id == patch_id), None)
    message = _message(repo, commit)
    reworded = message if made and made != commit and _message(repo, made) not in (None, message) else None
    return in_file_form(path.read_bytes(), mail, reworded)


def _message(repo: GitRepo, commit: str) -> str | None:
    if not repo.has_commit(commit):
        return None
    return repo.run("show", "-s", "--format=%B", commit, strip=False)
