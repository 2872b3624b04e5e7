"""A warm cache standing in for an unreachable --source says so, in the text and in the JSON."""

from __future__ import annotations

from support.scenes import lines_with, setup


def test_a_warm_cache_standing_in_for_a_mistyped_source_says_so(cli, project, upstream, tmp_path):
    pin = upstream.head()
    setup(project, upstream, {"fix": upstream.make_patch(pin, {"src/mod.py": lines_with({20: "fixed 20"})}, "Fix")})
    warm = cli("status", "--target", "t", "--json", "--source", f"lib={upstream.path}")
    assert warm.code == 0 and warm.json["upstreams"][0]["source"] == f"git {upstream.path}"
    nowhere = tmp_path / "nonexistent" / "path"
    result = cli("status", "--target", "t", "--source", f"lib={nowhere}")
    assert result.code == 0, result.out + result.err
    said = f"from the cache (source {nowhere} not reachable: no such folder)"
    assert said in result.out and "(cached)" not in result.out
    doc = cli("status", "--target", "t", "--json", "--source", f"lib={nowhere}").json
    assert doc["upstreams"][0]["source"] == said[len("from ") :]
    (tmp_path / "plain").mkdir()
    plain = cli("status", "--target", "t", "--json", "--source", f"lib={tmp_path / 'plain'}").json
    assert plain["upstreams"][0]["source"].endswith("not reachable: not a git repository)")
    # a reachable source that the cache serves stays what it was
    again = cli("status", "--target", "t", "--json", "--source", f"lib={upstream.path}").json
    assert again["upstreams"][0]["source"] == f"git {upstream.path} (cached)"
