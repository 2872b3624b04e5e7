"""The typed source identity: its display is the text every command showed, and an older ledger's text reads back."""

from __future__ import annotations

import pytest

from patchmgr.model.source_identity import SourceIdentity, SourceKind

pytestmark = pytest.mark.fast


def test_the_display_is_rendered_from_the_identity():
    assert SourceIdentity.git("https://***@example.org/lib.git").description == "git https://***@example.org/lib.git"
    assert SourceIdentity.git("/srv/lib", cached=True).description == "git /srv/lib (cached)"
    unreachable = SourceIdentity.git("/srv/gone", cached=True, unreachable="no such folder")
    assert unreachable.description == "the cache (source /srv/gone not reachable: no such folder)"
    release = SourceIdentity(SourceKind.RELEASE, "lib 1.0 (PyPI lib-1.0.tar.gz)")
    assert release.description == "release lib 1.0 (PyPI lib-1.0.tar.gz)"


def test_a_url_and_a_path_are_told_apart():
    assert SourceIdentity.git("https://example.org/lib.git").kind is SourceKind.GIT
    assert SourceIdentity.git("git@example.org:org/lib.git").kind is SourceKind.GIT
    assert SourceIdentity.git("/srv/lib").kind is SourceKind.LOCAL


@pytest.mark.parametrize(
    "identity",
    [
        SourceIdentity.git("https://example.org/lib.git"),
        SourceIdentity.git("/srv/lib"),
        SourceIdentity.git("/srv/gone", unreachable="no such folder"),
        SourceIdentity(SourceKind.RELEASE, "lib 1.0 (PyPI lib-1.0-py3-none-any.whl)"),
    ],
)
def test_an_older_ledgers_text_reads_back_as_the_same_source(identity):
    assert SourceIdentity.from_text(identity.description).same_source(identity)


def test_the_cache_serving_a_commit_is_the_same_source_and_an_unreachable_one_is_not():
    fetched = SourceIdentity.git("https://example.org/lib.git")
    assert fetched.same_source(SourceIdentity.git("https://example.org/lib.git", cached=True))
    assert not fetched.same_source(SourceIdentity.git("https://example.org/other.git"))
    assert not SourceIdentity.git("/srv/lib").same_source(SourceIdentity.git("/srv/lib", unreachable="no such folder"))


def test_text_no_patchmgr_wrote_is_refused():
    with pytest.raises(ValueError):
        SourceIdentity.from_text("somewhere")


def test_a_ledger_records_the_place_not_whether_the_cache_served_it():
    fetched = SourceIdentity.git("https://example.org/lib.git")
    assert SourceIdentity.git("https://example.org/lib.git", cached=True).as_recorded() == fetched.as_recorded()
    unreachable = SourceIdentity.git("/srv/gone", unreachable="no such folder")
    assert unreachable.as_recorded() == unreachable
