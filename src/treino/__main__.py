from treino.cli.app import main

main()
