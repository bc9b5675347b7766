from eviscene.cli.main import cli

cli()
