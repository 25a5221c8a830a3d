"""The one exception tree. Only ``cli.main`` turns these into exit codes."""

from __future__ import annotations

from typing import ClassVar


class BuildtoolError(Exception):
    """Base of every error buildtool reports on purpose."""

    exit_code: ClassVar[int] = 2


class UsageError(BuildtoolError):
    """The command line asks for something that cannot be done."""


class InputError(BuildtoolError):
    """A file given to buildtool is not what it must be (wheel, folder, report)."""


class RecipeError(BuildtoolError):
    """A recipe is malformed; the message names the file and the key path."""

    def __init__(self, source: str, key: str, problem: str) -> None:
        self.source = source
        self.key = key
        self.problem = problem
        where = f"{source}: {key}" if key else source
        super().__init__(f"{where}: {problem}")


class PlanError(RecipeError):
    """A well-formed recipe describes a split that would break at run time."""


class ChecksFailed(BuildtoolError):
    """Checks ran and found errors (stale generated files, linkage findings). Without a
    message when the command's own report already said what failed: nothing more is logged."""

    exit_code = 1


class ToolFailed(BuildtoolError):
    """An external tool (cmake, ninja, pip, auditwheel) exited with an error."""

    exit_code = 1

    def __init__(
        self,
        command: list[str],
        returncode: int,
        output_tail: str = "",
        output: str = "",
        *,
        output_shown: bool = False,
    ) -> None:
        self.command = command
        self.returncode = returncode
        self.output_tail = output_tail
        # the whole output, for a caller that reads what went wrong from it
        self.output = output or output_tail
        self.output_shown = output_shown
        shown = " ".join(command)
        message = f"command failed with exit code {returncode}: {shown}"
        if output_shown:  # streamed as it ran: a compile error is printed once
            message += " (its output is above)"
        elif output_tail:
            message += f"\n--- last lines of its output ---\n{output_tail}"
        super().__init__(message)

    def as_command(self, command: list[str]) -> ToolFailed:
        """The same failure, named by the command a user would type to get it (an internal
        runner's command line, such as a build backend's hook, is no use to rerun)."""
        return ToolFailed(
            command,
            self.returncode,
            self.output_tail,
            self.output,
            output_shown=self.output_shown,
        )


class Interrupted(BuildtoolError):
    """The user interrupted a run; outputs were left as they were."""

    exit_code = 130


class Terminated(Interrupted):
    """SIGTERM ended the run (a CI runner cancelling the job); outputs were left as they were."""

    exit_code = 143


class TerminationRequested(KeyboardInterrupt):
    """Raised by the SIGTERM handler ``cli.main`` installs: a KeyboardInterrupt, so every
    cleanup that runs on Ctrl-C (child process groups ended, staging folders removed, temporary
    files deleted) runs on SIGTERM too; ``main`` turns it into ``Terminated``."""
