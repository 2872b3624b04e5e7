from patchmgr.cli import run

run()
