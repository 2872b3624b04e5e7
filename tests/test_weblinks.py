"""The web pages of an upstream's commits and pull requests, from the git URLs manifests use."""

from __future__ import annotations

import pytest

from patchmgr.model.weblinks import Forge, first_web_repo, web_repo

SHA = "85323c5cc8884448956ffc0d1d9ea06760854ee2"


@pytest.mark.fast
@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/NVIDIA-NeMo/Megatron-Bridge.git",
        "https://github.com/NVIDIA-NeMo/Megatron-Bridge",
        "https://github.com/NVIDIA-NeMo/Megatron-Bridge/",
        "git@github.com:NVIDIA-NeMo/Megatron-Bridge.git",
        "ssh://git@github.com/NVIDIA-NeMo/Megatron-Bridge.git",
        "https://token@github.com/NVIDIA-NeMo/Megatron-Bridge.git",  # the credential never reaches a link
    ],
)
def test_github_forms_give_its_commit_and_pull_pages(url):
    web = web_repo(url)
    assert web is not None and web.forge is Forge.GITHUB
    assert web.commit(SHA) == f"https://github.com/NVIDIA-NeMo/Megatron-Bridge/commit/{SHA}"
    assert web.pull(3314) == "https://github.com/NVIDIA-NeMo/Megatron-Bridge/pull/3314"


@pytest.mark.fast
def test_gitcode_pull_requests_are_merge_requests():
    web = web_repo("https://gitcode.com/Ascend/MindSpeed.git")
    assert web is not None and web.forge is Forge.GITCODE
    assert web.commit(SHA) == f"https://gitcode.com/Ascend/MindSpeed/commit/{SHA}"
    assert web.pull(3509) == "https://gitcode.com/Ascend/MindSpeed/merge_requests/3509"


@pytest.mark.fast
@pytest.mark.parametrize(
    "url",
    [
        "https://example.invalid/lib.git",
        "/srv/mirrors/lib.git",
        "file:///srv/lib.git",
        "https://github.com/a/b/c",
        "https://github.com/a/.git",
        "https://github.com.evil.example/a/b",
        "http://github.com/a/b",
        'https://github.com/a/b"onclick=x',
    ],
)
def test_other_hosts_and_odd_forms_give_no_links(url):
    assert web_repo(url) is None


@pytest.mark.fast
def test_the_first_url_with_pages_wins_and_a_commit_must_be_hex():
    web = first_web_repo(("/srv/mirror", "https://gitcode.com/Ascend/MindSpeed.git", "https://github.com/A/M.git"))
    assert web is not None and web.url == "https://gitcode.com/Ascend/MindSpeed"
    assert web.commit("main") is None and web.commit("abc1234") is not None
    assert first_web_repo(()) is None
