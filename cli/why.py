"""`eviscene why EPISODE`: why an episode was kept or dropped."""

from __future__ import annotations

from dataclasses import asdict

import click

from eviscene.analysis.why import episodes_line, explain_episode
from eviscene.cli.output import echo, json_printable, say
from eviscene.exports.dataset_why import describe
from eviscene.log import EventLog
from eviscene.rules.canonical import finite_json


@click.command(short_help="Show an episode's timeline and why it was kept or dropped.")
@click.argument("episode_id")
@click.option("--run", "run_id", default=None, help="The run, when the episode id is in several.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: the story as lines; json: the whole story as one JSON object.")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.pass_obj
def why(log: EventLog, episode_id: str, run_id: str | None, fmt: str, as_json: bool) -> None:
    """Show an episode's timeline (steps, tool calls, blocks), its audit failures, scores,
    rollout group, each reason it is or is not training-eligible, and what the newest
    dataset export decided for it (selected or not, its group, joining families, split).

    An episode id carries its prompt group, which derives from the code's commit: look it up
    with `sql`. A case id is refused with that case's episode ids (a 1-rollout run's episode id
    is its case id: shown, with the case's episodes in other runs named).

    \b
    Example:
        eviscene why "$(eviscene sql "SELECT episode_id FROM episodes WHERE run_id = 'demo' AND case_id = 'demo-0004' AND rollout_index = 0" --csv | tail -n 1)" --run demo
        eviscene why demo-0004
    """
    story = explain_episode(log, episode_id, run_id)
    if as_json or fmt == "json":
        echo(json_printable(finite_json(asdict(story), ensure_ascii=False, indent=2, default=str)))
        return
    e = story.episode
    say(f"episode {e['episode_id']}  (run {story.run_id}, case {e['case_id']}, rollout {e['rollout_index']}, group {e['prompt_group_id']})")
    if story.case_episodes_elsewhere:
        say(f"case {e['episode_id']} also has episodes in other runs: "
            f"{episodes_line(story.case_episodes_elsewhere, story.more_case_episodes_elsewhere)}")
    if story.imported_from:
        source = story.imported_from
        say(f"imported run directory {source['path']} (its run_id {source['source_run_id']}); trace {e['trace_path']}")
        say(f"outcome: {e['termination'] or 'not finished'}; {_verdict(e)}; correct {e['result_correct']}"
            + (f"; error: {e['error']}" if e.get("error") else ""))
    else:
        say(f"outcome: {e['termination'] or 'not finished'}; {_verdict(e)}; attempts {e['attempts']}")
    say("")
    if story.imported_from:  # the log holds the directory's files, not the episode's events
        say(f"timeline: not in the log; its trace {e['trace_path']} holds the steps")
    else:
        say("timeline:")
    for item in story.timeline:
        say(f"  a{item['attempt']} #{item['step']:<3} {item['type']:<20} {item['summary']}")
    if story.metrics:
        m = story.metrics
        say("")
        gold = f" (gold {m['gold_label']})" if m["gold_label"] is not None else ""  # an imported run's: the log holds no gold
        say(f"score: correct={m['result_correct']}{gold}; recall of evidence {_share(m['evidence_recovery_recall'])}, "
            f"facts {_share(m['fact_recovery_recall'])}, bridges {_share(m['chain_recovery_recall'])}; "
            f"basis precision {_share(m['basis_reference_precision'])}")
    if story.score and story.score["total"] is not None:
        parts = ", ".join(f"{k} {v:.3f}" for k, v in story.score["components"].items())
        say(f"reward {story.score['total']:.3f}, the weighted sum (`reward_weights`, penalties subtracted) of: {parts}")
    if story.audit:
        say("")
        say(f"audit: hard {'pass' if story.audit['hard_trace_audit_pass'] else 'FAIL'}, strict {'pass' if story.audit['strict_trace_audit_pass'] else 'FAIL'}")
        for failure in story.failures:
            say(f"  {failure['severity']:<6} {failure['code']}: {failure['detail']}")
    if story.eligibility:
        el = story.eligibility
        say("")
        rl = "not recorded" if el["rl_reward_eligible"] is None else el["rl_reward_eligible"]  # an imported directory's rows hold none
        say(f"SFT eligible: {el['sft_training_eligible']}; RL reward eligible: {rl}")
        for reason in el["exclusion_reasons"]:
            say(f"  - {reason}")
    if story.dataset is not None:
        say("")
        for line in describe(story.dataset):
            say(line)
    if story.group:
        say("")
        say("rollout group:")
        for member in story.group:
            mark = "*" if member["episode_id"] == e["episode_id"] else " "
            say(f" {mark} {member['episode_id']}: reward {member['reward']:.3f}, GRPO {member['grpo_advantage']:+.3f}, RLOO {member['rloo_advantage']:+.3f}")


def _verdict(episode: dict) -> str:
    return "no verdict" if episode["verdict"] is None else f"verdict {episode['verdict']} ({episode['confidence']})"


def _share(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


COMMANDS = [why]
