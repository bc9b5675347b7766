"""The bundled release through the embedded offline agent, end to end."""

import json


def test_every_planned_episode_finished_once_and_the_chain_verifies(offline_run):
    log, summary = offline_run
    assert summary.planned == summary.ran == 56 and summary.sealed
    counts = log.sql(
        "SELECT count(*) AS episodes, count(*) FILTER (WHERE finished) AS finished, max(attempts) AS attempts FROM episodes"
    ).to_pylist()[0]
    assert counts == {"episodes": 56, "finished": 56, "attempts": 1}
    assert log.verify().ok


def test_each_episode_tells_its_story_in_order(offline_run):
    log, _ = offline_run
    episode = log.sql("SELECT run_id, episode_id FROM episodes ORDER BY episode_id LIMIT 1").to_pylist()[0]
    types = [e.type for e in log.events(episode["run_id"], episode["episode_id"])]
    assert types[0] == "episode.scheduled" and types[1] == "episode.started" and types[2] == "perception.reported"
    assert types[-3:] == ["gate.decided", "judgment.made", "episode.finished"]
    assert types.count("tool.called") == types.count("tool.returned") >= 1
    steps = [e.step for e in log.events(episode["run_id"], episode["episode_id"]) if e.step is not None]
    assert steps == list(range(len(steps)))


def test_accuracy_is_well_above_the_majority_baseline(offline_run):
    log, _ = offline_run
    row = log.sql(
        """
        SELECT avg((e.termination = 'completed' AND e.verdict = g.label)::INT) AS accuracy,
               (SELECT max(n) FROM (SELECT count(*) AS n FROM gold_labels GROUP BY label)) / count(DISTINCT e.case_id) AS majority
        FROM episodes e JOIN gold_labels g USING (run_id, case_id)
        """
    ).to_pylist()[0]
    assert row["accuracy"] >= row["majority"] + 0.3, row


def test_gold_never_reaches_the_model(offline_run, canary, model_facing_texts):
    log, _ = offline_run
    texts = model_facing_texts(log)
    assert texts and not any(canary in text for text in texts)
    # The canary is in the log (gold was attached for scoring), just never in model context.
    assert log.sql("SELECT count(*) AS n FROM blobs WHERE contains(decode(content), ?)", [canary]).to_pylist() == [{"n": 1}]


def test_blocked_sources_never_reach_the_model_and_every_block_is_logged(offline_run, release, model_facing_texts):
    log, _ = offline_run
    policy = json.loads((release / "private" / "source_access_policy.json").read_text())
    pages = [json.loads(line) for line in (release / "corpus" / "pages.jsonl").read_text().splitlines() if line.strip()]
    blocked = [
        p for p in pages
        if p["domain"] in policy["blocked_domains"]
        or any(p["url"].startswith(prefix) for prefix in policy["blocked_url_prefixes"])
        or p["content_sha256"] in policy["blocked_content_sha256"]
    ]
    assert blocked
    texts = model_facing_texts(log)
    for page in blocked:
        body = page["text"][:200]
        assert not any(body in text for text in texts), page["url"]
    seen = log.sql(
        "SELECT DISTINCT s->>'url' AS url FROM events, unnest(from_json(payload->'sources', '[\"JSON\"]')) AS t(s) "
        "WHERE type = 'tool.returned'"
    )["url"].to_pylist()
    assert not {p["url"] for p in blocked} & set(seen)
    blocks = log.sql(
        "SELECT count(*) AS n FROM events WHERE type = 'gate.decided' AND payload->>'gate' = 'source_access_policy' "
        "AND NOT (payload->>'passed')::BOOLEAN"
    ).to_pylist()[0]["n"]
    assert blocks > 0
    assert not any(policy["policy_id"] in text for text in texts)


def test_rollouts_of_a_case_share_a_group_and_differ_in_seed(offline_run):
    log, _ = offline_run
    groups = log.sql(
        "SELECT case_id, count(DISTINCT prompt_group_id) AS groups, count(DISTINCT sampling_seed) AS seeds, "
        "list(episode_id ORDER BY rollout_index) AS episodes FROM episodes GROUP BY case_id"
    ).to_pylist()
    assert all(g["groups"] == 1 and g["seeds"] == 2 for g in groups)
    assert all(g["episodes"][1].endswith("--r001") for g in groups)


def test_why_tells_an_episodes_story(offline_run):
    from click.testing import CliRunner

    from eviscene.cli.main import cli

    log, _ = offline_run
    episode = log.sql("SELECT episode_id FROM episodes ORDER BY episode_id LIMIT 1").to_pylist()[0]["episode_id"]
    result = CliRunner().invoke(cli, ["--db", str(log.path), "why", episode])
    assert result.exit_code == 0, result.output
    for part in ("timeline:", "perception.reported", "judgment.made", "audit: hard", "SFT eligible: False", "training_prohibited", "rollout group:"):
        assert part in result.output
    missing = CliRunner().invoke(cli, ["--db", str(log.path), "why", "no-such-episode"])
    assert missing.exit_code == 2 and "no episode 'no-such-episode'" in missing.output


def test_why_given_a_case_id_names_the_cases_episodes(offline_run):
    from click.testing import CliRunner

    from eviscene.cli.main import cli

    log, summary = offline_run
    case = log.sql("SELECT case_id FROM episodes ORDER BY case_id LIMIT 1").to_pylist()[0]["case_id"]
    episodes = log.sql("SELECT episode_id FROM episodes WHERE case_id = ? ORDER BY episode_id", [case])["episode_id"].to_pylist()
    result = CliRunner().invoke(cli, ["--db", str(log.path), "why", case])
    assert result.exit_code == 2
    named = ", ".join(f"{episode} (run {summary.run_id})" for episode in episodes)
    assert result.stderr == f"Error: no episode {case!r} in {log.path}; case {case}'s episodes: {named}\n"


def test_why_with_a_run_not_in_the_log_names_the_run(offline_run):
    from click.testing import CliRunner

    from eviscene.cli.main import cli

    log, _ = offline_run
    episode = log.sql("SELECT episode_id FROM episodes ORDER BY episode_id LIMIT 1").to_pylist()[0]["episode_id"]
    result = CliRunner().invoke(cli, ["--db", str(log.path), "why", episode, "--run", "no-such-run"])
    assert (result.exit_code, result.stderr) == (2, f"Error: no run 'no-such-run' in {log.path}; `eviscene --db {log.path} runs` lists the runs\n")


def test_a_run_compared_with_itself_differs_by_nothing(offline_run):
    from eviscene.analysis.compare import compare_runs

    log, summary = offline_run
    result = compare_runs(log, summary.run_id, summary.run_id)
    assert len(result.cases) == 28
    assert result.difference == result.ci_low == result.ci_high == 0.0
    assert result.accuracy_a == result.accuracy_b


def test_why_of_a_one_rollout_episode_names_its_cases_rollouts_in_other_runs(release, tmp_path):
    """A 1-rollout run's episode id is its case id, so `why CASE` shows that episode: the
    case's rollouts in a run of two are what the user may have meant, and are named."""
    import anyio
    from click.testing import CliRunner

    from eviscene.cli.main import cli
    from eviscene.eval.run import start_run
    from eviscene.eval.options import EvalOptions
    from eviscene.log import EventLog

    log = EventLog(tmp_path / "two-runs.duckdb")
    cases = str(release / "runtime_input" / "cases.jsonl")
    case = json.loads((release / "runtime_input" / "cases.jsonl").read_text().splitlines()[0])["case_id"]
    anyio.run(lambda: start_run(log, EvalOptions(benchmark=cases, case_ids=[case]), run_id="single"))
    anyio.run(lambda: start_run(log, EvalOptions(benchmark=cases, case_ids=[case], rollouts_per_case=2), run_id="pair"))
    pair = log.sql("SELECT episode_id FROM episodes WHERE run_id = 'pair' ORDER BY rollout_index")["episode_id"].to_pylist()
    assert len(pair) == 2 and case not in pair

    shown = CliRunner().invoke(cli, ["--db", str(log.path), "why", case])
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert lines[0].startswith(f"episode {case}  (run single, case {case}, rollout 0")
    assert lines[1] == f"case {case} also has episodes in other runs: {pair[0]} (run pair), {pair[1]} (run pair)"
    story = json.loads(CliRunner().invoke(cli, ["--db", str(log.path), "why", case, "--json"]).stdout)
    assert (story["case_episodes_elsewhere"], story["more_case_episodes_elsewhere"]) == (
        [{"run_id": "pair", "episode_id": pair[0]}, {"run_id": "pair", "episode_id": pair[1]}], False)
    chosen = CliRunner().invoke(cli, ["--db", str(log.path), "why", case, "--run", "single"])
    assert chosen.exit_code == 0 and "also has episodes" not in chosen.stdout
