"""The `treino` command line: parse, call one library function, render with Rich."""
