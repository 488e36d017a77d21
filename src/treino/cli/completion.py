"""`treino completion bash|zsh|fish`: the shell completion script, printed (Typer's, for the `treino` command).

    eval "$(treino completion bash)"                        # this shell; add it to ~/.bashrc to keep it
    treino completion zsh > ~/.zfunc/_treino                # a directory on zsh's $fpath
    treino completion fish > ~/.config/fish/completions/treino.fish

`treino --install-completion` writes the current shell's script to its usual place instead.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

COMPLETE_VAR = "_TREINO_COMPLETE"  # Click's protocol: the variable the script sets when it asks `treino` for words


class Shell(StrEnum):
    BASH = "bash"
    ZSH = "zsh"
    FISH = "fish"


def completion(shell: Annotated[Shell, typer.Argument(help="bash, zsh or fish.")]) -> None:
    """Print the shell completion script for bash, zsh or fish (e.g. eval "$(treino completion bash)")."""
    from typer._completion_shared import get_completion_script

    typer.echo(get_completion_script(prog_name="treino", complete_var=COMPLETE_VAR, shell=shell.value))
