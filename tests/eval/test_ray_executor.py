"""`eval run --executor ray` on a real local Ray cluster (head + three one-CPU nodes, made
with `ray.cluster_utils.Cluster`): the same episodes as a local run, and faults (a worker
process that exits inside a tool, a node removed mid-run, a SIGKILLed driver) cost only the
episodes in flight, which run again as new attempts; every planned episode finishes once."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="pip install '.[ray]' in the checkout")
from ray.cluster_utils import Cluster  # noqa: E402

BENCHMARK = Path(__file__).resolve().parents[2] / "examples" / "eviscene-demo-v1" / "runtime_input" / "cases.jsonl"
EVISCENE = [sys.executable, "-m", "eviscene"]


@pytest.fixture(scope="module")
def cluster():
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    nodes = [cluster.add_node(num_cpus=1) for _ in range(3)]
    cluster.wait_for_nodes()
    cluster.worker_nodes_list = nodes
    yield cluster
    cluster.shutdown()


def eviscene(db: Path, *args: str, env: dict | None = None, **popen) -> subprocess.Popen:
    return subprocess.Popen([*EVISCENE, "--db", str(db), *args], env={**os.environ, **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def run_args(out: Path, *extra: str, cases: int = 3) -> list[str]:
    return ["eval", "run", "--benchmark", str(BENCHMARK), "--limit", str(cases), "--rollouts-per-case", "2",
            "--concurrency", "2", "--no-progress", "--no-materialize", "--output-dir", str(out), *extra]


def finish(process: subprocess.Popen, timeout: float = 900) -> str:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err[-3000:]
    return out


def query(db: Path, sql: str) -> list[tuple]:
    done = subprocess.run([*EVISCENE, "--db", str(db), "sql", "--format", "json", sql], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return [tuple(row.values()) for row in json.loads(done.stdout or "[]")]


def episode_outcomes(db: Path) -> dict[str, tuple]:
    """Per episode: its verdict, its tool calls in order and its total reward."""
    rows = query(db, """
        SELECT e.episode_id, any_value(e.verdict) AS verdict,
               string_agg(t.tool || ' ' || t.arguments::VARCHAR, ' | ' ORDER BY t.call_index) AS calls,
               any_value(s.total)::VARCHAR AS total
        FROM episodes e LEFT JOIN tool_calls t USING (run_id, episode_id)
        LEFT JOIN trajectory_scores s USING (run_id, episode_id)
        GROUP BY e.episode_id ORDER BY e.episode_id""")
    return {row[0]: row[1:] for row in rows}


def assert_each_episode_finished_once(db: Path) -> None:
    scheduled = query(db, "SELECT count(*) FROM events WHERE type = 'episode.scheduled'")[0][0]
    finished = query(db, """SELECT episode_id, count(*) FROM events WHERE type = 'episode.finished'
                            GROUP BY episode_id""")
    assert len(finished) == scheduled and all(n == 1 for _, n in finished), finished
    verify = subprocess.run([*EVISCENE, "--db", str(db), "log", "verify"], capture_output=True, text=True)
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_a_ray_run_gives_the_same_episodes_as_a_local_run(cluster, tmp_path):
    finish(eviscene(tmp_path / "local.duckdb", *run_args(tmp_path / "local")))
    finish(eviscene(tmp_path / "ray.duckdb", *run_args(tmp_path / "ray", "--executor", "ray", "--ray-address",
                                                        cluster.address, "--workers", "2")))
    local, on_ray = episode_outcomes(tmp_path / "local.duckdb"), episode_outcomes(tmp_path / "ray.duckdb")
    assert len(local) == 6 and local == on_ray
    assert_each_episode_finished_once(tmp_path / "ray.duckdb")


def test_a_worker_that_dies_inside_a_tool_loses_only_its_episodes(cluster, tmp_path):
    db = tmp_path / "log.duckdb"
    finish(eviscene(db, *run_args(tmp_path / "out", "--executor", "ray", "--ray-address", cluster.address, "--workers", "2"),
                    env={"EVISCENE_RAY_FAULT": "exit-in-tool:demo-0001"}))
    assert_each_episode_finished_once(db)
    attempts = dict(query(db, """SELECT episode_id, list(DISTINCT attempt ORDER BY attempt)::VARCHAR FROM events
                                 WHERE type = 'episode.started' AND episode_id LIKE 'demo-0001-%' GROUP BY ALL"""))
    # Attempt 1 died in its first tool call (its events stay on the log); attempt 2 finished.
    assert sorted(attempts.values()) == ["[1, 2]", "[1, 2]"]
    finished_attempts = query(db, """SELECT DISTINCT attempt FROM events WHERE type = 'episode.finished'
                                     AND episode_id LIKE 'demo-0001-%'""")
    assert finished_attempts == [(2,)]


def test_a_lone_worker_that_dies_is_waited_for_while_it_restarts(cluster, tmp_path):
    """With one worker, its restart is the run's only way on. A call made while it restarts
    fails at once (`max_task_retries=0`): that was taken for its end, and the run stopped
    with every episode unfinished."""
    db = tmp_path / "log.duckdb"
    finish(eviscene(db, *run_args(tmp_path / "out", "--executor", "ray", "--ray-address", cluster.address, "--workers", "1"),
                    env={"EVISCENE_RAY_FAULT": "exit-in-tool:demo-0001"}))
    assert_each_episode_finished_once(db)
    assert query(db, "SELECT count(*) FROM events WHERE type = 'episode.finished'") == [(6,)]


def _wait_for_finished(db: Path, process: subprocess.Popen, at_least: int, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[1][-3000:]
        if Path(f"{db}.live").exists() or db.exists():
            done = subprocess.run([*EVISCENE, "--db", str(db), "sql", "--format", "csv",
                                   "SELECT count(*) FROM events WHERE type = 'episode.finished'"], capture_output=True, text=True)
            if done.returncode == 0 and int(done.stdout.splitlines()[-1]) >= at_least:
                return
        time.sleep(1)
    raise AssertionError("no episode finished in time")


def test_a_node_removed_mid_run_costs_only_its_episodes(cluster, tmp_path):
    db = tmp_path / "log.duckdb"
    process = eviscene(db, *run_args(tmp_path / "out", "--executor", "ray", "--ray-address", cluster.address, "--workers", "2"))
    _wait_for_finished(db, process, at_least=1)
    # Two actors on three one-CPU nodes: removing two nodes takes at least one actor down;
    # two fresh nodes give the restarted actor somewhere to go.
    for node in cluster.worker_nodes_list[:2]:
        cluster.remove_node(node)
    cluster.worker_nodes_list = cluster.worker_nodes_list[2:] + [cluster.add_node(num_cpus=1) for _ in range(2)]
    finish(process)
    assert_each_episode_finished_once(db)


def test_a_worker_whose_node_is_gone_for_good_leaves_its_episodes_to_the_others(cluster, tmp_path):
    """Two actors and, after the removal, one one-CPU node: a lost actor has nowhere to
    restart. Its episodes waited for it forever while the other worker sat idle."""
    db = tmp_path / "log.duckdb"
    process = eviscene(db, *run_args(tmp_path / "out", "--executor", "ray", "--ray-address", cluster.address, "--workers", "2",
                                     cases=6))
    try:
        _wait_for_finished(db, process, at_least=1)
        for node in cluster.worker_nodes_list[:2]:
            cluster.remove_node(node)
        finish(process, timeout=300)
    finally:
        process.kill()
        cluster.worker_nodes_list = cluster.worker_nodes_list[2:] + [cluster.add_node(num_cpus=1) for _ in range(2)]
    assert_each_episode_finished_once(db)


def test_a_killed_driver_leaves_a_run_that_resume_finishes_on_ray(cluster, tmp_path):
    db = tmp_path / "log.duckdb"
    # 20 episodes: the kill lands mid-run (with 6, a quick run had finished them all by then).
    process = eviscene(db, *run_args(tmp_path / "out", "--executor", "ray", "--ray-address", cluster.address, "--workers", "2",
                                     cases=10))
    _wait_for_finished(db, process, at_least=1)
    process.send_signal(signal.SIGKILL)
    process.wait()
    (run_id,) = query(db, "SELECT DISTINCT run_id FROM events")[0]
    before = query(db, "SELECT count(*) FROM events WHERE type = 'episode.finished'")[0][0]
    assert before < 20
    # The cluster is named only by the log: a resume goes there only when the user says so again.
    refused = eviscene(db, "eval", "resume", run_id, "--no-progress")
    _, err = refused.communicate(timeout=120)
    assert refused.returncode == 2 and "Traceback" not in err, err
    assert f"its recorded --ray-address {cluster.address} would run the episodes on that cluster" in err
    assert query(db, "SELECT count(*) FROM events WHERE type = 'episode.finished'")[0][0] == before
    finish(eviscene(db, "eval", "resume", run_id, "--no-progress", "--executor", "ray", "--ray-address", cluster.address,
                    "--workers", "2"))
    assert_each_episode_finished_once(db)


def test_a_search_service_down_for_every_worker_stops_the_run_on_ray(cluster, tmp_path):
    """A worker's `BackendOutage` reaches the driver as itself, not as a failed worker: the run
    stops as a local run does, every episode unfinished for `eval resume`, none finished on
    searches that never ran."""
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    db = tmp_path / "log.duckdb"
    process = eviscene(db, *run_args(tmp_path / "out", "--executor", "ray", "--ray-address", cluster.address, "--workers", "2",
                                     "--search-backend", "searxng", "--searxng-url", dead, "--allow-private-network",
                                     "--provider-outage-timeout", "1", cases=2))
    _, err = process.communicate(timeout=300)
    assert process.returncode == 1 and "Traceback" not in err, err
    assert (f"stopped, its unfinished episodes kept for later: the search service {dead}/ unreachable for 1 s "
            "(no connection: ConnectError), the outage timeout") in err
    assert query(db, "SELECT count(*) FROM events WHERE type = 'episode.finished'") == [(0,)]
    assert query(db, "SELECT count(*) FROM events WHERE type = 'episode.scheduled'") == [(4,)]
