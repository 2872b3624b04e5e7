from patchmgr.cli.entry import run

run()
