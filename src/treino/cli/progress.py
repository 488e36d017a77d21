"""Progress for the commands that take seconds (`plan train --method trace`, `recommend --html`, `bench`): a Rich
bar on stderr, one step at a time, named by what the command is doing. Off when stderr is not a terminal or with
--json, so pipes and scripts read only the result.

The library reports its steps through a callback, `on_step(name)`, called as each step starts; it prints nothing.
The bar shows the title and each step in the CLI's language (treino.i18n): a step with values is a `Msg`
(`on_step(Msg("step {n}/{total}", ...))`), and tests/test_i18n.py reads every literal given to `steps` and `on_step`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from rich.console import Console

from treino.i18n import current, tr

OnStep = Callable[[str], None]


def no_steps(_step: str) -> None:
    """The callback when nobody is watching."""


@contextlib.contextmanager
def steps(title: str, total: int, enabled: bool = True, console: Console | None = None) -> Iterator[OnStep]:
    """A callback that shows `title: step` and a bar of `total` steps on stderr (on `console`, for tests)."""
    console = console or Console(stderr=True)
    if not (enabled and console.is_terminal):
        yield no_steps
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, TimeElapsedColumn(), console=console, transient=True) as progress:
        shown = tr(title)
        task = progress.add_task(shown, total=total)
        started = 0

        def on_step(step: str) -> None:
            nonlocal started
            if started:
                progress.advance(task)  # the step before this one is done
            started += 1
            progress.update(task, description=f"{shown}: {current().msg(step)}", refresh=True)

        yield on_step
        progress.update(task, completed=total)
