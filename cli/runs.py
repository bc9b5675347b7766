"""`eviscene runs` and `eviscene runs compare`: the runs in the log, and how two differ."""

from __future__ import annotations

import sys

import click
from click.core import ParameterSource

from eviscene.cli.output import echo, emit_result, emit_rows, format_option, json_printable
from eviscene.log import EventLog
from eviscene.rules.canonical import finite_json


@click.group(invoke_without_command=True)
@format_option
@click.pass_context
def runs(ctx: click.Context, fmt: str) -> None:
    """List the runs in the log, newest first, with their progress.

    \b
    Example:
        eviscene runs --format json
    """
    if ctx.invoked_subcommand is not None:
        if ctx.get_parameter_source("fmt") is ParameterSource.COMMANDLINE:  # it would be ignored
            raise click.UsageError(f"the output format goes after `{ctx.invoked_subcommand}` (`eviscene runs {ctx.invoked_subcommand} … --format {fmt}`)")
        return  # the subcommand checks for its log itself, after its own --db
    ctx.obj.require()
    with ctx.obj.query("SELECT * FROM runs ORDER BY started_at DESC NULLS LAST, run_id", as_rows=True, inline_views=True) as result:
        emit_result(result, fmt)


@runs.command(short_help="Paired accuracy difference of two runs, with a 95% CI.")
@click.argument("run_a")
@click.argument("run_b")
@click.option("--cases", "show_cases", is_flag=True,
              help="Also list the cases whose correctness differs. One document either way: table prints the comparison, "
                   "a blank line, then the cases; json one object {\"comparison\": {…}, \"cases\": […]}; csv and jsonl "
                   "(one table each) the case rows alone.")
@format_option
@click.pass_obj
def compare(log: EventLog, run_a: str, run_b: str, show_cases: bool, fmt: str) -> None:
    """Paired accuracy difference B − A on the cases both runs share, with a 95% bootstrap
    confidence interval (rollout 0 of each case).

    \b
    Example:
        eviscene runs compare 20261130_141502_offline_offline-react-v1 20261130_152210_openai_compatible_qwen3-vl
        eviscene runs compare A B --cases --format csv > differing_cases.csv
    """
    from eviscene.analysis.compare import compare_runs  # loaded only by `runs compare`

    result = compare_runs(log, run_a, run_b)
    comparison = {
        "run_a": run_a, "run_b": run_b, "shared_cases": len(result.cases),
        "accuracy_a": round(result.accuracy_a, 4), "accuracy_b": round(result.accuracy_b, 4),
        "difference": round(result.difference, 4), "ci95_low": round(result.ci_low, 4),
        "ci95_high": round(result.ci_high, 4), "only_a_right": result.only_a_right, "only_b_right": result.only_b_right,
    }
    changed = [case for case in result.cases if case["correct_a"] != case["correct_b"]]
    if show_cases and fmt == "json":
        echo(json_printable(finite_json({"comparison": comparison, "cases": changed}, ensure_ascii=False, indent=2)))
        return
    if not show_cases or fmt == "table":  # csv and jsonl hold one table: with --cases, the cases asked for
        emit_rows(list(comparison), [tuple(comparison.values())], fmt)
    if show_cases:
        if fmt == "table":
            sys.stdout.write("\n")
        # the columns even when no case differs (compare_runs refuses runs that share no case)
        emit_rows(list(result.cases[0]), [tuple(case.values()) for case in changed], fmt)


COMMANDS = [runs]
