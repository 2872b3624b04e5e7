"""What the test modules share: real git upstreams and projects, scenes, command drivers, snapshots and
the fixtures registered from tests/conftest.py (``pytest_plugins``). No test module imports another."""
