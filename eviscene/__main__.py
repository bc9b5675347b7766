from eviscene.cli.main import main

main()
