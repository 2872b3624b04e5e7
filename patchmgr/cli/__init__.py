from patchmgr.cli.app import main, run

__all__ = ["main", "run"]
