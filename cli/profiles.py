"""`eviscene profiles`: the provider profiles `--profile` can name."""

from __future__ import annotations

import click
import pyarrow as pa
from click.core import ParameterSource

from eviscene.cli.output import echo, emit, format_option
from eviscene.providers.profiles import BUILTIN_PROFILES_TOML, profile_rows


@click.command(short_help="List the provider profiles and whether their keys are set.")
@format_option
@click.option("--template", is_flag=True, help="Print the built-in profiles as an editable TOML file instead.")
def profiles(fmt: str, template: bool) -> None:
    """List the provider profiles: built-ins, and those of the profiles file
    ($EVISCENE_PROFILES, else ~/.config/eviscene/profiles.toml), which override built-ins
    field by field. `key_set` says whether the key's environment variable is set; the key
    itself is never read into a profile.

    \b
    Example:
        eviscene profiles
        eviscene profiles --template > ~/.config/eviscene/profiles.toml
        eviscene eval run --profile qwen-local --benchmark examples/eviscene-demo-v1/runtime_input/cases.jsonl
    """
    if template:
        if click.get_current_context().get_parameter_source("fmt") is ParameterSource.COMMANDLINE:
            raise click.UsageError(f"--template prints TOML; it takes no --format {fmt}")
        echo(BUILTIN_PROFILES_TOML, nl=False)
        return
    emit(pa.Table.from_pylist(profile_rows()), fmt)


COMMANDS = [profiles]
