"""`eviscene eval run` and `eviscene eval resume`: drive the agent over a release."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, get_args

import anyio
import click
from click.core import ParameterSource
from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)
from rich.text import Text

from eviscene.errors import EvisceneError, LogLockedError, OutputFolderTakenError, ReleaseError
from eviscene.eval.options import EvalOptions
from eviscene.eval.preflight import check_output_dir
from eviscene.eval.run import RunInterrupted, RunSummary, resume_command, resume_run, start_run
from eviscene.eval.report import accuracy_lines, error_cause_lines
from eviscene.release.loader import named_cases_file
from eviscene.exports.run_dir import RUN_DIRECTORY_NAMES, materialize_run
from eviscene.exports.staging import check_output_folder
from eviscene.rules.commands import command_line, output_dir_words
from eviscene.cli.interrupts import Interrupted, interrupted_writing, on_interrupt_say
from eviscene.cli.log import file_viewer_numbers
from eviscene.cli.numbers import INT64, Finite, count
from eviscene.cli.output import printable, say
from eviscene.log import EventLog
from eviscene.store.layout import check_not_the_log, check_run_id

_stderr = Console(stderr=True)


def _default(field: str) -> Any:
    """An `eval run` flag's default: its EvalOptions field's, stated there once."""
    return EvalOptions.model_fields[field].default


def _choice(field: str) -> click.Choice:
    """The values of an EvalOptions field typed as a Literal."""
    return click.Choice(get_args(EvalOptions.model_fields[field].annotation))


@click.group(name="eval", short_help="Run the agent over a release into the log; resume a run.")
def eval_group() -> None:
    """Run the verification agent over a benchmark release into the log."""


class _EpisodeRate(ProgressColumn):
    """Episodes finished a second over the time the elapsed column shows (its clock, frozen
    when the last episode finishes, as that column's is): the rate and the time always agree."""

    def render(self, task: Task) -> Text:
        elapsed = task.finished_time if task.finished else task.elapsed
        return Text(f"{task.completed / elapsed if elapsed else 0:.2f}/s")


class _ProgressBar:
    """Episodes done/errored, rate and ETA on stderr; its clock starts with the episodes
    (`planned`), not with the release's loading before them."""

    def __init__(self, show: bool, clock: Callable[[], float] = time.monotonic) -> None:
        self.show = show
        self.errored = 0
        self.run_id: str | None = None
        self.progress = Progress(
            TextColumn("[bold]episodes"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[errored]} errored ·"),
            _EpisodeRate(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TextColumn("[yellow]{task.fields[waiting]}"),
            console=_stderr,
            get_time=clock,
        )
        self.task = self.progress.add_task("episodes", total=None, start=False, errored=0, waiting="")

    def planned(self, run_id: str, episodes: int) -> None:
        self.run_id = run_id
        self.progress.update(self.task, total=episodes)
        self.progress.start_task(self.task)
        if self.show and episodes:  # shown once there is a run to follow (not before an error in its setup, nor `0/0`)
            self.progress.start()

    def finished(self, spec, finished) -> None:
        self.errored += finished.counts_as_error
        self.progress.update(self.task, advance=1, errored=self.errored)

    def warning(self, message: str) -> None:
        """A run-start warning (`RunPlan.warnings`), one line on stderr."""
        click.echo(f"Warning: {message}", err=True)

    def provider_waiting(self, message: str | None) -> None:
        """A model endpoint or the search service is down ("waiting for http://…: connection refused,
        retrying in Ns"), or back (None)."""
        self.progress.update(self.task, waiting=message or "")

    def stop(self) -> None:
        """Close the bar if it was drawn (rich ends even a bar never drawn with a blank line
        on a stderr that is not a terminal: before an `Error:` it reads as noise)."""
        if self.progress.live.is_started:
            self.progress.stop()


def _report(log: EventLog, summary: RunSummary) -> None:
    """What this invocation finished, what is left and the run's status, as the log has them."""
    counts = [f"{k} {v}" for k, v in sorted(summary.terminations.items())]
    if summary.unfinished:
        counts.append(f"{summary.unfinished} unfinished")
    ended = ", ".join(counts) or "nothing left to run"
    say(f"run {summary.run_id}: {summary.ran} of {summary.planned} episodes ran ({ended}); status {summary.status}")
    if summary.status == "incomplete" and not summary.unfinished:  # only a missing shard leaves nothing to run
        say("  its other shards are not in this log: `eviscene log merge` their logs into one to make the run whole")
    try:
        lines = [*accuracy_lines(log, summary.run_id), *error_cause_lines(log, summary.run_id)]
    except LogLockedError as exc:  # the run's end is recorded: a busy archive costs only these lines
        lines = []
        summary.notes.append(f"no accuracy or error causes shown: {exc}")
    for line in lines:
        say(line)
    for note in summary.notes:  # a model server's or the filesystem's words among them
        click.echo(printable(note), err=True)


def _exit_status(summary: RunSummary) -> None:
    """Exit 1 when any episode of the run counts as an error (the seed's num_errors), or the
    run stopped with episodes unfinished."""
    if summary.run_errors or summary.stopped:
        sys.exit(1)


def _cases_file(_ctx: click.Context, _param: click.Parameter, benchmark: str | None) -> str | None:
    """--benchmark names a release's cases file, or the release by its folder (`named_cases_file`)."""
    if benchmark is None:
        return None
    try:
        return str(named_cases_file(benchmark))
    except ReleaseError as exc:
        raise click.BadParameter(str(exc)) from None


@eval_group.command(short_help="Run the agent over a release, every step into the log.")
@click.option("--benchmark", required=True, type=click.Path(exists=True), callback=_cases_file,
              help="<release>/runtime_input/cases.jsonl (or the release's folder, its runtime_input folder or its manifest.json).")
@click.option("--profile", default=None, help="Teacher/student provider profile.")
@click.option("--provider", default=None, help="Model provider (default: offline, the embedded policy).")
@click.option("--model", default=None, help="Model name for the agent.")
@click.option("--vlm-provider", default=None, help="VLM provider for --image-access-mode separate_vlm.")
@click.option("--vlm-model", default=None, help="VLM model for --image-access-mode separate_vlm.")
@click.option("--image-access-mode", type=click.Choice(["direct_multimodal", "separate_vlm"]), default=_default("image_access_mode"), show_default=True,
              help="direct_multimodal: the agent's model sees the picture; separate_vlm: a second model (--vlm-*) describes it "
                   "to a text-only agent.")
@click.option("--llm-wire-api", type=click.Choice(["interactions", "responses", "chat_completions"]), default=None,
              help="The API the agent's model is called through (default: the profile's, else the provider's first).")
@click.option("--vlm-wire-api", type=click.Choice(["interactions", "responses", "chat_completions"]), default=None,
              help="The API the VLM is called through with --image-access-mode separate_vlm.")
@click.option("--base-url", default=None, help="Provider endpoint, e.g. http://127.0.0.1:8000/v1 (vLLM, SGLang, Ollama).")
@click.option("--api-key-env", default=None, help="NAME of the environment variable holding the API key (never the key).")
@click.option("--vlm-base-url", default=None, help="VLM endpoint for --image-access-mode separate_vlm.")
@click.option("--vlm-api-key-env", default=None, help="NAME of the environment variable holding the VLM's API key.")
@click.option("--provider-outage-timeout", type=Finite(min=0, min_open=True), default=_default("provider_outage_timeout"), show_default=True,
              help="Seconds calls wait for a model endpoint, or the SearXNG service, that stopped answering (3 "
                   "connection failures in a row) before the run stops cleanly for `eval resume`, e.g. "
                   "--provider-outage-timeout 60.")
@click.option("--context-window", type=count(256), default=None,
              help="The model's context window in tokens, e.g. --context-window 8192 (default: the profile's, else "
                   "learned from the server's first rejection); older observations are shortened to fit.")
@click.option("--tool-results", type=click.Choice(["tool", "user"]), default=None,
              help="The role tool results go to the model in (chat_completions; default: the profile's, else tool): "
                   "user for chat templates that drop tool messages, e.g. llama-cpp-python's chatml-function-calling.")
@click.option("--concurrency", type=count(1), default=_default("concurrency"), show_default=True, help="Episodes in flight at once.")
@click.option("--rollouts-per-case", type=count(1), default=_default("rollouts_per_case"), show_default=True, help="Independent episodes per case (RL: 4).")
@click.option("--base-sampling-seed", type=INT64, default=_default("base_sampling_seed"), show_default=True,
              help="Each episode's sampling seed derives from it, its case and its rollout index (the same run again samples the same).")
@click.option("--timeout", type=Finite(min=0, min_open=True), default=_default("timeout"), show_default=True, help="Per-episode timeout in seconds.")
@click.option("--limit", type=count(), default=None, help="Run only the first N selected cases (of this shard, with --shard-count).")
@click.option("--case-id", "case_ids", multiple=True, help="Run only this case (repeat for an ordered set).")
@click.option("--shard-count", type=count(), default=_default("shard_count"), show_default=True, envvar="SLURM_ARRAY_TASK_COUNT",
              help="Split the cases into N shards (default: SLURM_ARRAY_TASK_COUNT); merge the shards' logs with `log merge`.")
@click.option("--shard-index", type=count(), default=_default("shard_index"), show_default=True, envvar="SLURM_ARRAY_TASK_ID",
              help="Run shard I of --shard-count, from 0 (default: SLURM_ARRAY_TASK_ID), e.g. --shard-count 4 --shard-index 2.")
@click.option("--training-prohibited", is_flag=True, help="Mark every episode ineligible for training.")
@click.option("--source-access-policy", type=click.Path(exists=True, dir_okay=False), default=None, help="Policy JSON (default: the release's).")
@click.option("--disable-web-search", is_flag=True, help="Ablation: remove text_search.")
@click.option("--disable-image-retrieval", is_flag=True, help="Ablation: remove text_image_search and reverse_image_search.")
@click.option("--disable-evidence-inspection", is_flag=True, help="Ablation: remove visit and compare_with_reference.")
@click.option("--search-backend", type=_choice("search_backend"), default=_default("search_backend"), show_default=True,
              help="Backend of text_search/text_image_search: the release corpus, or a self-hosted SearXNG (JSON API).")
@click.option("--searxng-url", default=None, help="SearXNG base URL for --search-backend searxng, e.g. http://127.0.0.1:8888.")
@click.option("--web-visit/--no-web-visit", default=None,
              help="visit fetches real pages over HTTP (default: on with --search-backend searxng).")
@click.option("--web-timeout", type=Finite(min=0, min_open=True), default=_default("web_timeout"), show_default=True, help="Seconds allowed for one web search or page visit.")
@click.option("--web-max-bytes", type=count(1), default=_default("web_max_bytes"), show_default=True, help="Largest page body visit reads.")
@click.option("--allow-private-network", is_flag=True,
              help="Let visit and search results reach loopback, private and link-local addresses (refused by default), "
                   "e.g. a test server: --allow-private-network.")
@click.option("--web-max-redirects", type=count(0), default=_default("web_max_redirects"), show_default=True, help="Most redirects visit follows (each re-checked against the policy).")
@click.option("--tool-cache/--no-tool-cache", "tool_cache_enabled", default=None,
              help="Reuse earlier tool results from the log (default: TOOL_CACHE_ENABLED, off).")
@click.option("--tool-cache-ttl", "tool_cache_ttl_seconds", type=Finite(min=0), default=None,
              help="Seconds a cached tool result stays valid (default: TOOL_CACHE_TTL_SECONDS, 3600).")
@click.option("--executor", type=_choice("executor"), default=_default("executor"), show_default=True,
              help="Run episodes in this process, or on Ray actors (pip install '.[ray]' in the checkout); this process still writes the log.")
@click.option("--ray-address", default=None, help="Ray cluster to join with --executor ray (e.g. auto); none starts a local one.")
@click.option("--workers", type=count(), default=None, help="Ray worker actors, each running --concurrency episodes (default: one per CPU).")
@click.option("--agent-decision-policy-version", type=_choice("agent_decision_policy_version"), default=_default("agent_decision_policy_version"),
              show_default=True, help="Agent orchestration policy, recorded in the manifest.")
@click.option("--output-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Run directory to materialize at the end; its name is the run id, as the seed names runs "
                   "(e.g. runs/my-experiment makes run my-experiment; default: a generated id, runs/<run_id>).")
@click.option("--run-id", default=None, help="Name the run (overrides the --output-dir name), e.g. --run-id ablation-no-web.")
@click.option("--materialize/--no-materialize", default=True, show_default=True, help="Write the run directory at the end.")
@click.option("--progress/--no-progress", default=True, show_default=True, help="Show the progress bar on stderr.")
@click.pass_obj
def run(
    log: EventLog, progress: bool, case_ids: tuple[str, ...], output_dir: Path | None, materialize: bool,
    run_id: str | None, **flags
) -> None:
    """Run the agent over a release, every step into the log; exit 1 if any episode errored
    (an error, or a timeout or exhausted budget that ended with an error, as the seed counts).

    \b
    Example:
        eviscene eval run --benchmark examples/eviscene-demo-v1/runtime_input/cases.jsonl \\
            --rollouts-per-case 4 --concurrency 4 --output-dir runs/demo-r4
    """
    _check_slurm_shard(flags["shard_index"], flags["shard_count"])
    options = EvalOptions(case_ids=list(case_ids) or None, **flags)
    name = _run_name(run_id, output_dir)  # first: a path with no folder name (`.`, `runs/new/..`) is said as such, written or not
    if materialize and output_dir is not None:
        check_not_the_log("--output-dir", output_dir, log.path, output_folder="new")
    check_output_dir(output_dir if materialize else None)
    # recorded for the hints that name a resume; a generated id's default folder is not known yet
    given_dir = (output_dir or (Path("runs") / name if name else None)) if materialize else None
    summary = _drive(log, lambda observer: start_run(log, options, observer=observer, run_id=name, output_dir=given_dir),
                     progress, output_dir if materialize else None)
    if materialize:
        _materialize(log, summary, output_dir or Path("runs") / summary.run_id)
    _exit_status(summary)


def _check_slurm_shard(index: int, count: int) -> None:
    """A shard index read from SLURM_ARRAY_TASK_ID that is no shard: an array numbered from 1
    (`--array=1-4`), most likely. Said in SLURM's words: the user passed no --shard-index."""
    if click.get_current_context().get_parameter_source("shard_index") is ParameterSource.ENVIRONMENT and not 0 <= index < count:
        raise EvisceneError(
            f"SLURM_ARRAY_TASK_ID={index} is no shard of {count} (shards are numbered 0 to {count - 1}): "
            f"submit the array as --array=0-{count - 1}, or pass --shard-index"
        )


def _run_name(run_id: str | None, output_dir: Path | None) -> str | None:
    """The name the user gave the run: --run-id, else --output-dir's last component as given
    (`Path(output_dir).name`, as the seed names runs: a link's own name, not its target's); none
    for a generated id. A bad name is refused naming the option given."""
    if run_id is not None:  # `--run-id ""` is refused, not read as none given
        option, name = "--run-id", run_id
    elif output_dir is not None:
        if output_dir.name in ("", ".."):  # `.`, `..`, `runs/..`, `/`: the path ends in no folder's own name
            raise EvisceneError(f"--output-dir {output_dir} ends in no folder's name, which names the run: name the folder, "
                                "e.g. --output-dir runs/my-run (--run-id names the run otherwise)")
        option, name = "--output-dir", output_dir.name
    else:
        return None
    try:
        return check_run_id(name)
    except ValueError as exc:
        named_by = " (the run is named after the folder; --run-id names it otherwise)" if option == "--output-dir" else ""
        raise EvisceneError(f"{option}: {exc}{named_by}") from None


def _materialize(log: EventLog, summary: RunSummary, out_dir: Path, *, replace: bool = False) -> None:
    """The run directory of a run that ran to its end; a stopped run's is left for `eval
    resume` to write (its unfinished episodes would be stand-in error rows). `replace`: the
    run's own earlier directory there is kept until the new one is whole. The run's lock is
    gone by now, so another command of the run (an `eval resume` of it) may put the run's
    directory there meanwhile: that one is replaced too, never a folder holding anything else."""
    if summary.stopped:
        resume = f"`{resume_command(log, summary.run_id, '--output-dir', out_dir)}`"
        click.echo(f"no run directory written while episodes are unfinished; {resume} writes it", err=True)
        return
    try:
        _write_run_directory(log, summary, out_dir, replace=replace)
    except OutputFolderTakenError:
        if not _is_run_directory_of(out_dir, summary.run_id):
            raise
        # written again from the log as it is now: the other command may have finished episodes this one's write missed
        _write_run_directory(log, summary, out_dir, replace=True)


def _write_run_directory(log: EventLog, summary: RunSummary, out_dir: Path, *, replace: bool) -> None:
    if replace:
        _check_holds_only_run_files(out_dir, summary.run_id)  # one that gained a file of someone's meanwhile
    earlier = out_dir.stat() if replace and out_dir.exists() else None
    finish = f"`{command_line('materialize', summary.run_id, '--out', out_dir, log=log.path)}`"  # it writes only a new or empty folder
    try:
        if replace:  # its flags (a masked --searxng-url, --trust-endpoints) are read from the log before the directory
            finish = f"`{log.resume_line(summary.run_id, '--output-dir', out_dir)}`"  # what is left if that read is refused
            finish = f"`{resume_command(log, summary.run_id, '--output-dir', out_dir)}`"
        with on_interrupt_say(lambda: interrupted_writing(out_dir, finish, replacing=earlier)):
            # a --shard-count shard's directory holds the cases it ran, as the seed's shard does (its
            # manifest `incomplete`); no episode is unfinished here (a stopped run's returned above)
            written = materialize_run(log, summary.run_id, out_dir, replace=replace, unfinished_as_errors=True)
            say(f"run directory: {out_dir} ({sum(written.values())} rows and traces)")
    except LogLockedError as exc:  # the run's end is recorded: what is left is to write its directory
        click.echo(printable(f"no run directory written ({exc}); {finish} writes it"), err=True)


@eval_group.command(short_help="Finish a run's unfinished episodes.")
@click.argument("run_id")
@click.option("--benchmark", type=click.Path(exists=True), default=None, callback=_cases_file,
              help="The run's release where it moved: <release>/runtime_input/cases.jsonl (same release id, same cases sha256).")
@click.option("--retry-errors", is_flag=True, help="Also re-run the episodes that ended in error, as new attempts.")
@click.option("--output-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Run directory to materialize at the end (default: runs/<run_id>): one this run wrote before is "
                   "replaced, any other must be new or empty (checked before the first episode).")
@click.option("--materialize/--no-materialize", default=True, show_default=True, help="Write the run directory at the end.")
@click.option("--progress/--no-progress", default=True, show_default=True, help="Show the progress bar on stderr.")
@click.option("--concurrency", type=count(1), default=None, help="Episodes in flight at once (default: as the run did).")
@click.option("--executor", type=_choice("executor"), default=None, help="Where the remaining episodes run (default: as the run did).")
@click.option("--ray-address", default=None, help="Ray cluster to join with --executor ray.")
@click.option("--workers", type=count(), default=None, help="Ray worker actors with --executor ray.")
@click.option("--trust-endpoints", is_flag=True,
              help="Use what only the run's recorded flags name: where --base-url/--api-key-env send a key, "
                   "--ray-address, --allow-private-network (for a run you started with them).")
@click.option("--searxng-url", default=None,
              help="The run's --searxng-url in full, where it held credentials (the log keeps them masked).")
@click.pass_obj
def resume(
    log: EventLog, run_id: str, benchmark: str | None, retry_errors: bool, output_dir: Path | None, materialize: bool,
    progress: bool, trust_endpoints: bool, searxng_url: str | None, **executor,
) -> None:
    """Finish the episodes of RUN_ID that never finished (never repeats a finished one), then
    materialize the run directory; the status covers every episode of the run.

    \b
    Example:
        eviscene eval resume my-experiment --retry-errors --output-dir runs/my-experiment-resumed
        eviscene eval resume my-experiment --executor ray --ray-address auto
        eviscene eval resume my-experiment --concurrency 16
        eviscene eval resume my-web-run --searxng-url 'https://reader:PASSWORD@search.example'
    """
    overrides = {k: v for k, v in executor.items() if v is not None}
    out_dir = output_dir or Path("runs") / run_id
    replaces = materialize and _is_run_directory_of(out_dir, run_id)  # written again from the log
    if materialize:
        check_not_the_log("--output-dir", out_dir, log.path, output_folder="replaced" if replaces else "new")
    if replaces:
        _check_holds_only_run_files(out_dir, run_id)
        check_output_folder(out_dir, "--output-dir")  # before the run, not once it has ended
    check_output_dir(out_dir if materialize and not replaces else None)
    summary = _drive(
        log,
        lambda observer: resume_run(log, run_id, observer=observer, benchmark=benchmark, retry_errors=retry_errors,
                                      executor=overrides, trust_endpoints=trust_endpoints, searxng_url=searxng_url),
        progress,
        out_dir if materialize else None,
    )
    if materialize:  # one another resume of the run wrote meanwhile is replaced too (`_materialize`)
        _materialize(log, summary, out_dir, replace=replaces)
    _exit_status(summary)


def _is_run_directory_of(folder: Path, run_id: str) -> bool:
    """Only a directory materialized for this very run is ever replaced (and only while it
    holds nothing else: `_check_holds_only_run_files`)."""
    try:
        return json.loads((folder / "run_manifest.json").read_text(encoding="utf-8")).get("run_id") == run_id
    except (OSError, ValueError, AttributeError):
        return False


def _check_holds_only_run_files(folder: Path, run_id: str) -> None:
    """Refuse to replace a run directory holding what a run directory does not
    (RUN_DIRECTORY_NAMES, trace files in traces/): it is replaced whole, and a file someone
    put there would go with it. Asked before the first episode and again just before the
    replacement (a long resume leaves time to add one)."""
    try:
        with os.scandir(folder) as entries:
            others = sorted(entry.name for entry in entries if entry.name not in RUN_DIRECTORY_NAMES)
        traces = folder / "traces"
        if traces.is_dir() and not traces.is_symlink():
            with os.scandir(traces) as entries:
                others += sorted(f"traces/{entry.name}" for entry in entries
                                 if not (entry.name.endswith(".json") and entry.is_file(follow_symlinks=False)))
    except FileNotFoundError:
        return  # gone meanwhile: nothing to lose
    if others:
        raise EvisceneError(
            f"--output-dir {folder} is run {run_id}'s earlier directory, and it also holds what a run directory does not "
            f"({', '.join(others[:3])}{', …' if len(others) > 3 else ''}): writing it again would delete that; "
            "move it out, or name another --output-dir"
        )


def _drive(log: EventLog, start, progress: bool, out_dir: Path | None) -> RunSummary:
    """Run `start`; a stop names the `eval resume` that finishes the run (writing its run
    directory to `out_dir`, where one is wanted)."""
    bar = _ProgressBar(progress)
    with on_interrupt_say(lambda: _interrupted_run(log, bar.run_id, out_dir)):
        try:
            summary = anyio.run(start, bar)
        except RunInterrupted as stop:  # every answered call was committed before it was raised
            raise Interrupted(_interrupted_run(log, stop.summary.run_id, out_dir)) from None
        finally:
            bar.stop()
        if summary.stopped:
            click.echo(f"run {summary.run_id} stopped, its unfinished episodes kept for later: {printable(summary.stopped)}", err=True)
            click.echo(f"{summary.resume_when}: {resume_command(log, summary.run_id, *output_dir_words(out_dir, summary.run_id))}",
                       err=True)
        if summary.sealed:
            file_viewer_numbers(log, [summary.run_id])
        _report(log, summary)
    return summary


def _interrupted_run(log: EventLog, run_id: str | None, out_dir: Path | None) -> str:
    """`eval resume` finishes a run the log holds, however far it got; one stopped before its
    first commit left nothing (`start_run` frees its name)."""
    if run_id is None or not log.sql("SELECT count(*) AS n FROM events WHERE run_id = ?", [run_id])["n"][0].as_py():
        return "interrupted before the run recorded anything"
    return f"interrupted; `{resume_command(log, run_id, *output_dir_words(out_dir, run_id))}` finishes it"


COMMANDS = [eval_group]
