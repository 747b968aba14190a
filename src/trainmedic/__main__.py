from trainmedic.cli.main import entry

entry()
