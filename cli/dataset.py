"""`eviscene dataset export`: the split-safe SFT dataset of seed 002, from the log."""

from __future__ import annotations

from pathlib import Path

import click

from eviscene.cli.interrupts import interrupted_writing, on_interrupt_say
from eviscene.cli.numbers import Finite, count, int64
from eviscene.cli.output import printable, say
from eviscene.exports.dataset import ExportOptions, export_dataset
from eviscene.exports.dataset_files import FORMATS
from eviscene.exports.run_dir import shards_not_merged
from eviscene.log import EventLog
from eviscene.rules.commands import command_line
from eviscene.rules.dataset_split import SHORT_TRAJECTORY_MAX_TOKENS, SPLIT_SEED, TRAIN_RATIO, VALIDATION_RATIO
from eviscene.store.layout import check_not_the_log, run_folder
from eviscene.store.locks import lock_holder

_DIR = click.Path(file_okay=False, path_type=Path)


@click.group()
def dataset() -> None:
    """Split-safe SFT datasets from the log.

    \b
    Example:
        eviscene dataset export --run 20261130_141502_offline_offline-react-v1 --out datasets/v1
    """


@dataset.command("export", short_help="Export eligible rollouts as split-safe SFT rows.")
@click.option("--run", "runs", multiple=True, help="A run in the log (native run id, or an imported run directory's run id or import id); repeatable.")
@click.option("--run-dir", "run_dirs", multiple=True, type=click.Path(exists=True, file_okay=False, path_type=Path), help="A seed-style run directory, imported first; repeatable.")
@click.option("--accepted-release", type=click.Path(exists=True, file_okay=False, path_type=Path), help="An accepted teacher release (v2-v4); implies frozen mode.")
@click.option("--out", "--output-dir", "out_dir", required=True, type=_DIR, help="New or empty output directory.")
@click.option("--case-split", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Fixed case split JSONL (frozen mode).")
@click.option("--eligibility-dir", type=click.Path(exists=True, file_okay=False, path_type=Path), help="*.sft_eligibility.json artifacts (frozen mode).")
@click.option("--semantic-reward-dir", type=click.Path(exists=True, file_okay=False, path_type=Path), help="*.semantic_reward.json artifacts (frozen mode).")
@click.option("--minimum-accepted-cases", type=int64(0), default=None, help="Frozen mode: fail below this many accepted cases (default 40).")
@click.option("--allow-missing-validation-cases", is_flag=True, help="Frozen mode: do not fail when a validation case has no accepted episode.")
@click.option("--one-rollout-per-case", is_flag=True, help="Derived mode: keep only the best eligible rollout of each case (frozen mode always does), not every eligible rollout. Example: --run RUN --out datasets/best --one-rollout-per-case")
@click.option("--allow-training-prohibited", is_flag=True, help="Export episodes of training-prohibited sources too (a development_subset release, a run with --training-prohibited); recorded in the manifest. Example: --run RUN --out datasets/demo --allow-training-prohibited")
@click.option("--train-ratio", type=Finite(min=0, min_open=True, max=1, max_open=True), default=TRAIN_RATIO, show_default=True,
              help="Derived mode: the share of split groups in train (each group's place is its seeded hash).")
@click.option("--validation-ratio", type=Finite(min=0, max=1, max_open=True), default=VALIDATION_RATIO, show_default=True,
              help="Derived mode: the share of split groups in validation; the rest is test.")
@click.option("--seed", default=SPLIT_SEED, show_default=True, help="Split seed: sha256(seed:group_id).")
@click.option("--short-max-tokens", type=int64(1), default=SHORT_TRAJECTORY_MAX_TOKENS, show_default=True, help="Longer accepted trajectories (UTF-8 bytes / 3) go to long_holdout.jsonl.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="jsonl", show_default=True, help="parquet also writes a .parquet beside each .jsonl.")
@click.option("--export-concurrency", type=count(1), default=1, show_default=True,
              help="Files serialized and written at once (seed 002); the bytes do not depend on it. Example: --export-concurrency 4")
@click.pass_obj
def export(log: EventLog, runs, run_dirs, accepted_release, out_dir, case_split, eligibility_dir, semantic_reward_dir,
           minimum_accepted_cases, allow_missing_validation_cases, one_rollout_per_case, allow_training_prohibited,
           train_ratio, validation_ratio, seed, short_max_tokens, fmt, export_concurrency) -> None:
    """Export eligible rollouts as TRL-ready SFT rows, split by connected source-family
    groups (seed 002): every eligible rollout in derived mode (--one-rollout-per-case: the
    best per case), the best rollout per case in frozen mode; a case never sits in two
    splits. Writes train/validation/test.jsonl, perception.*.jsonl, long_holdout.jsonl,
    episode metadata, accepted/excluded episodes and manifest.json; byte-identical on rerun.
    Path inputs are imported into the log first.

    \b
    Example:
        eviscene dataset export --run 20261130_141502_offline_offline-react-v1 --out datasets/v1
        eviscene dataset export --accepted-release releases/teacher-v4 --case-split splits/frozen.jsonl --out datasets/frozen
    """
    check_not_the_log("--out", out_dir, log.path, output_folder="new")
    if not run_dirs and accepted_release is None:
        log.require()  # nothing to import first: the export only reads, so a missing log is an error
    options = ExportOptions(
        out_dir=out_dir, runs=list(runs), run_dirs=list(run_dirs), accepted_release=accepted_release, case_split=case_split,
        eligibility_dir=eligibility_dir, semantic_reward_dir=semantic_reward_dir, minimum_accepted_cases=minimum_accepted_cases,
        require_all_validation_cases=not allow_missing_validation_cases, one_rollout_per_case=one_rollout_per_case,
        allow_training_prohibited=allow_training_prohibited, train_ratio=train_ratio,
        validation_ratio=validation_ratio, seed=seed, short_max_tokens=short_max_tokens, fmt=fmt,
        export_concurrency=export_concurrency,
    )
    with on_interrupt_say(lambda: interrupted_writing(out_dir, "the same command")):
        manifest, written = export_dataset(log, options)
        for name, rows in written.items():
            say(f"{rows:>8}  {out_dir / name}")
        say(
            f"{manifest['accepted_episode_count']} accepted of {manifest['candidate_episode_count']} candidates "
            f"({manifest['accepted_case_count']} cases, {manifest['group_count']} groups, {manifest['split_mode']} split); "
            f"manifest: {out_dir / 'manifest.json'}"
        )
        _explain_exclusions(manifest)
        _note_unfinished(log, list(runs))  # inside: an interrupt here says the folder was written whole


def _note_unfinished(log: EventLog, runs: list[str]) -> None:
    """A run not yet finished, or whose shards are not all merged here, exports the episodes
    it finished: say what it leaves out."""
    stopped = log.sql(
        "SELECT run_id, episodes_planned - episodes_finished AS unfinished FROM runs "
        "WHERE list_contains(?, run_id) AND status = 'running_or_interrupted' AND episodes_planned > episodes_finished "
        "ORDER BY run_id", [runs]).to_pylist()  # killed after its last episode: it owes only its end, nothing left out
    for run in stopped:
        writer = lock_holder(run_folder(log.path, run["run_id"]) / "writer.lock")
        then = (f"it is still being written by {writer}" if writer is not None
                else f"`{log.resume_line(run['run_id'])}` finishes them")
        click.echo(printable(f"note: run {run['run_id']} has {run['unfinished']} unfinished episode(s), not in this export; {then}"),
                   err=True)
    for run_id in sorted(set(runs)):
        if missing := shards_not_merged(log, run_id):
            click.echo(printable(f"note: run {run_id} is incomplete: {missing}: this export holds none of the missing shards' "
                                 f"episodes; `{command_line('log', 'merge', log=log.path)}` their logs into this one"), err=True)


def _explain_exclusions(manifest: dict) -> None:
    """One line per decisive exclusion reason with its count, and how to lift a training
    prohibition when that is what left the dataset empty."""
    reasons = sorted(manifest["excluded_reason_counts"].items(), key=lambda item: (-item[1], item[0]))
    if not reasons:
        return
    say(f"excluded {manifest['excluded_episode_count']} candidates, by decisive reason (excluded_episode_metadata.jsonl):")
    for reason, episodes in reasons:
        say(f"{episodes:>8}  {reason}")
    if manifest["accepted_episode_count"] == 0 and "training_prohibited" in manifest["excluded_reason_counts"]:
        say(
            "no episode was accepted: the source release prohibits training (a development_subset, or a run made with "
            "--training-prohibited); to export anyway, rerun with --allow-training-prohibited and a new --out (recorded in the manifest)"
        )


COMMANDS = [dataset]
