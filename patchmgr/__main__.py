from patchmgr.cli.app import run

run()
