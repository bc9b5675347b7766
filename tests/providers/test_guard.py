"""The run guard: two runs on one provider quota is a clear error naming the holder; the
lock goes with its holder, however it ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import anyio
import pytest

from eviscene.agent.provider import ImageStore
from eviscene.eval.options import EvalOptions, resolve_options
from eviscene.eval.providers import make_provider, provider_session
from eviscene.providers.guard import ProviderBusyError, RunGuard

QUOTA = dict(provider="openai_compatible", base_url="http://127.0.0.1:8000/v1", api_key_env="OPENAI_API_KEY")


def test_a_second_run_on_the_same_quota_is_refused_until_the_first_releases():
    first = RunGuard.acquire(**QUOTA)
    with pytest.raises(ProviderBusyError) as caught:
        RunGuard.acquire(**QUOTA)
    message = str(caught.value)
    assert f"pid {os.getpid()}" in message and "openai_compatible at http://127.0.0.1:8000/v1 with the key in OPENAI_API_KEY" in message
    assert "EVISCENE_SHARED_QUOTA=1" in message
    other = RunGuard.acquire(**{**QUOTA, "base_url": "http://127.0.0.1:8001/v1"})  # another server: another quota
    first.release()
    RunGuard.acquire(**QUOTA).release()
    other.release()


def test_sharing_on_purpose(monkeypatch):
    first = RunGuard.acquire(**QUOTA)
    monkeypatch.setenv("EVISCENE_SHARED_QUOTA", "1")
    assert not RunGuard.acquire(**QUOTA).held
    first.release()


def _holder(runtime_dir) -> subprocess.Popen:
    code = textwrap.dedent(
        f"""
        import sys, time
        from eviscene.providers.guard import RunGuard
        RunGuard.acquire(provider={QUOTA['provider']!r}, base_url={QUOTA['base_url']!r}, api_key_env={QUOTA['api_key_env']!r})
        print("held", flush=True)
        time.sleep(60)
        """
    )
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env={**os.environ, "EVISCENE_RUNTIME_DIR": str(runtime_dir)})
    assert process.stdout.readline().strip() == "held"
    return process


def test_a_live_holder_in_another_process_is_named_and_a_killed_one_frees_the_quota(tmp_path):
    process = _holder(tmp_path / "runtime")
    try:
        with pytest.raises(ProviderBusyError, match=f"another run \\(pid {process.pid}, since "):
            RunGuard.acquire(**QUOTA)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    RunGuard.acquire(**QUOTA).release()  # the lock file remains; the dead holder's lock does not


def test_make_provider_takes_the_guard_and_the_session_releases_it(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-guard-abcdefghijkl")
    options = resolve_options(
        EvalOptions(benchmark="x", provider="openai_compatible", model="m", base_url=QUOTA["base_url"], api_key_env="OPENAI_API_KEY")
    )
    provider = make_provider(options)
    with pytest.raises(ProviderBusyError):
        make_provider(options)

    async def run_session() -> None:
        async with provider_session(provider, ImageStore(), perceive=None):
            pass

    anyio.run(run_session)
    second = make_provider(options)
    assert second.guards and second.guards[0].held
    del second  # dropped without a session: the guard goes with the object
    make_provider(options).guards[0].release()


@pytest.mark.parametrize("refused_in", ["plan", "resume"])
def test_a_run_refused_after_its_provider_took_the_quota_releases_it_at_once(refused_in, release_dir, tmp_path, monkeypatch):
    """A refusal kept (a notebook keeps the last exception and its frames) kept the provider
    and its guard: the next run in that process was refused as "another run is using" it."""
    import json
    import shutil

    from eviscene.errors import EvisceneError
    from eviscene.eval.run import plan_run, resume_run, start_run
    from eviscene.log import EventLog

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    release = tmp_path / "release"
    shutil.copytree(release_dir, release)
    options = EvalOptions(benchmark=str(release / "runtime_input" / "cases.jsonl"), provider="openai_compatible", model="m",
                          base_url=QUOTA["base_url"], api_key_env=QUOTA["api_key_env"], limit=1, provider_outage_timeout=0.5)
    policy = release / "private" / "source_access_policy.json"
    if refused_in == "plan":  # the policy is read after the provider is made
        policy.write_text(json.dumps({"policy_id": "x", "blocked_domain": ["truthmeter.example"]}), encoding="utf-8")
        with pytest.raises(EvisceneError, match="unknown key") as refused:
            plan_run(options)
    else:  # a resume refused after its plan: the release changed under the run (nothing listens at the URL)
        log = EventLog(tmp_path / "log.duckdb")
        anyio.run(lambda: start_run(log, options, run_id="r"))
        gold = release / "private" / "evaluation_gold.jsonl"
        gold.write_bytes(gold.read_bytes() + b"\n")  # the same rows, other bytes: checked after the plan
        with pytest.raises(EvisceneError, match="resume refused|differs") as refused:
            anyio.run(lambda: resume_run(log, "r", trust_endpoints=True))
    RunGuard.acquire(**QUOTA).release()
    assert refused.value.__traceback__ is not None  # kept, with its frames, to here
