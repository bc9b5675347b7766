"""The `eviscene` command: global options, error handling, and the command groups."""

from __future__ import annotations

import difflib
import os
import sys
from importlib import import_module

import click
import duckdb

from eviscene import __version__
from eviscene.cli.interrupts import EXIT_INTERRUPTED, ignore_stop_signals, interruption_message, stop_signals_interrupt
from eviscene.cli.output import echo, mute_stdout, printable
from eviscene.errors import EvisceneError, is_interruption, os_fault
from eviscene.redaction import redact
from eviscene.log import EventLog
from eviscene.rules.commands import DEFAULT_LOG
from eviscene.rules.paths import undecodable_name
from eviscene.tools.pillow_warnings import quiet_decompression_bomb_warning


# Each command's module, imported only when that command runs (or help lists it): `eviscene
# runs` loads no agent, tools, providers or image libraries.
COMMAND_MODULES = {
    "dataset": "dataset", "eval": "eval", "import": "imports", "log": "log", "materialize": "materialize",
    "profiles": "profiles", "report": "report", "runs": "runs", "sql": "query", "view": "view", "views": "query",
    "why": "why",
}


class _Eviscene(click.Group):
    """Loads commands on demand; turns the project's errors and SQL mistakes into one line on
    stderr and exit 2, and Ctrl-C or SIGTERM into one line and exit 130 (`interrupts.py`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(COMMAND_MODULES))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and name in COMMAND_MODULES:
            for command in import_module(f"eviscene.cli.{COMMAND_MODULES[name]}").COMMANDS:
                if command.name not in self.commands:
                    if command.name != "profiles":  # the one command that never touches the log
                        _add_db_option(command)
                    _add_help_option(command)
                    self.add_command(command)
        return self.commands.get(name)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        # click suggests a name from the commands loaded so far, which here is none before one
        # runs: a misspelled command is told the closest of them all, as a group's subcommand is.
        name = args[0]
        if not name.startswith("-") and not ctx.resilient_parsing and self.get_command(ctx, name) is None:
            close = difflib.get_close_matches(name, self.list_commands(ctx), n=1)
            ctx.fail(f"No such command {name!r}." + (f" Did you mean {close[0]!r}?" if close else ""))
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context):
        try:
            with stop_signals_interrupt():
                return super().invoke(ctx)
        except (KeyboardInterrupt, RuntimeError, duckdb.InterruptException, BaseExceptionGroup) as exc:
            if not is_interruption(exc):
                raise
            click.echo(interruption_message(exc), err=True)
            sys.exit(EXIT_INTERRUPTED)
        except (EvisceneError, duckdb.Error) as exc:
            click.echo(f"Error: {printable(redact(one_line(str(exc))))}", err=True)  # it may quote input
            sys.exit(2)
        except OSError as exc:  # disk full, permission denied, a read-only folder: the path and the cause
            _os_fault_exit(exc, on_stdout=False)

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra) -> click.Context:
        try:  # where --help and --version print (click's own handler would exit 1 on a reader gone)
            return super().make_context(info_name, args, parent, **extra)
        except BrokenPipeError as exc:
            _os_fault_exit(exc, on_stdout=True)


# The exit of a command whose reader stopped early (`| head`): a Unix tool's killed by SIGPIPE
# (128 + 13), which `set -o pipefail` scripts know, not 1 (a problem found, as `log verify`'s).
EXIT_BROKEN_PIPE = 141


def _os_fault_exit(exc: OSError, *, on_stdout: bool) -> None:
    """End on a failed write or read: quietly for a reader gone (`| head`), else one line naming
    the path (standard output, `> /dev/full`, when that is what failed) and the cause."""
    if isinstance(exc, BrokenPipeError):
        mute_stdout()
        sys.exit(EXIT_BROKEN_PIPE)
    if on_stdout:
        mute_stdout()  # the exit's own flush must not fail again
    click.echo(f"Error: {printable(redact(str(os_fault(exc, path='standard output' if on_stdout else None))))}", err=True)
    sys.exit(2)


def main() -> None:
    """The `eviscene` program. By the time click exits, the command has done its work or said
    why not; a stop signal in the interpreter's exit that follows (a fifth of a second of
    teardown) could only end the process with 130 and no word, so from there on it is ignored.
    Output still buffered is flushed before that exit, so a failed write is said, not lost."""
    if sys.stdout is None:  # started with `>&-`: a command's answer would go nowhere, unsaid
        if sys.stderr is not None:
            print("Error: standard output is closed; send it somewhere (`> FILE`, `> /dev/null`)", file=sys.stderr)
        sys.exit(2)
    quiet_decompression_bomb_warning()
    try:
        _refuse_undecodable_words()
        try:
            cli()
        finally:
            sys.stdout.flush()
    except OSError as exc:  # outside `invoke`: --help, --version, and the last flush, all stdout's
        _os_fault_exit(exc, on_stdout=True)
    finally:
        ignore_stop_signals()


def _refuse_undecodable_words() -> None:
    """Under a C locale with PYTHONUTF8=0 Python reads arguments and the environment as
    ASCII, so a non-ASCII path arrives as text no library can take (DuckDB, orjson): say so
    before anything starts, not in a traceback halfway through."""
    # the working directory too: the default log and relative paths are read through it
    words = [*sys.argv[1:], *(value for name, value in os.environ.items() if name.startswith("EVISCENE_")), os.getcwd()]
    for word in words:
        problem = undecodable_name(word, way_out="rename it, or name it through a link whose name is UTF-8")
        if problem:
            click.echo(f"Error: {problem}", err=True)
            sys.exit(2)


def one_line(message: str) -> str:
    """DuckDB's messages quote the query with a caret on further lines: keep the message."""
    kept = message.split("\nLINE ", 1)[0]
    return " ".join(part.strip() for part in kept.splitlines() if part.strip())


# One type for --db before and after the command: a folder is a `log export-parquet` export to
# read (EventLog refuses it to writers, naming it), so neither place may refuse it up front.
DB_PATH = click.Path()


@click.group(cls=_Eviscene, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    envvar="EVISCENE_DB",
    default=DEFAULT_LOG,
    show_default=True,
    type=DB_PATH,
    help="The event log (also EVISCENE_DB), or a folder of `log export-parquet` to read.",
)
@click.version_option(__version__, prog_name="eviscene")
@click.pass_context
def cli(ctx: click.Context, db: str) -> None:
    """Run image fact-verification agents into an append-only DuckDB event log, then
    score, audit and export datasets with SQL views over it.

    \b
    Example:
        eviscene eval run --benchmark examples/eviscene-demo-v1/runtime_input/cases.jsonl
        eviscene runs
        eviscene sql "SELECT type, count(*) AS n FROM events GROUP BY type ORDER BY n DESC"

    \b
    Exit status: 0 done; 1 a problem found (an episode that errored, a log
    that does not verify); 2 a mistake in the command or its input, said in one
    line; 130 interrupted (Ctrl-C, SIGTERM); 141 the reader of the output
    stopped early (`| head`).
    """
    ctx.obj = EventLog(_given_log(db))


# Commands that read a log (or, as `log seal` and `eval resume`, tidy or go on with one) and never start one: on a path holding
# no log they fail (a mistyped --db never answers from an empty log, nor creates one). Writers
# (eval run, import, log merge) create it; `sql`, `views --columns`, `runs` (whose `compare`
# takes its own --db) and `dataset export` (which imports path inputs first) check for themselves; `view` may start before the first run writes,
# shows runs as they appear, and says that there is no log yet.
READERS = {"runs compare", "why", "log verify", "log seal", "log export-parquet", "materialize", "report", "eval resume"}


def _given_log(db: str) -> str:
    """--db as given: an empty one names no log (it is no way to say the default)."""
    if not db.strip():
        raise click.BadParameter("an empty path names no log", param_hint="'--db'")
    return db


def _use_log(ctx: click.Context, _param: click.Parameter, db: str | None) -> None:
    if db is not None:
        ctx.obj = EventLog(_given_log(db))
    names, context = [], ctx
    while context.parent is not None:
        names.append(context.info_name)
        context = context.parent
    if " ".join(reversed(names)) in READERS:
        ctx.obj.require()


def _add_db_option(command: click.Command) -> None:
    """`--db` after the subcommand too (`eviscene sql --db X "…"`), as the README says."""
    command.params.append(click.Option(
        ["--db"], type=DB_PATH, default=None, expose_value=False, callback=_use_log,
        help="The event log (overrides --db before the command).",
    ))
    for sub in getattr(command, "commands", {}).values():
        _add_db_option(sub)


def _add_help_option(command: click.Command) -> None:
    """-h/--help written as every command's output is (`echo`), so a full standard output is
    said naming it: click's own help option wrote it bare, and its OSError reached `invoke`,
    which cannot know whose path it was (`cannot write ?`). Taking both names leaves click
    none to add its own under."""
    command.params.append(click.Option(["-h", "--help"], is_flag=True, expose_value=False, is_eager=True, callback=_show_help,
                                       help="Show this message and exit."))
    for sub in getattr(command, "commands", {}).values():
        _add_help_option(sub)


def _show_help(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        echo(ctx.get_help())
        ctx.exit()
