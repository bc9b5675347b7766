"""Checks made before a run's first episode: everything a run is scored by (gold, protocols,
as it read them when it started; on resume, the same files as the run started with) and
everything it writes to (the run directory) is checked up front, so a broken input costs no
episode and leaves no unfinished run behind."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from eviscene.agent.provider import Provider
from eviscene.errors import EvisceneError, ReleaseError, SelectionError, os_fault
from eviscene.eval.gold_import import SCORING_KINDS, ScoringFile
from eviscene.eval.options import EvalOptions, resolve_options, running_code_commit
from eviscene.exports.staging import check_new_or_empty
from eviscene.providers.offline import OfflineProvider
from eviscene.providers.offline.investigation import VERDICTS
from eviscene.redaction import MASK, redact, register_url_secrets
from eviscene.release import Case, Release
from eviscene.release.case_image import CheckedImageStream, read_picture
from eviscene.release.gold import load_gold, require_gold_for
from eviscene.release.loader import named
from eviscene.release.selection import RolloutSpec
from eviscene.rules.jsonl import RepeatedKeyError, load_json_document, repeated_key_message
from eviscene.rules.traces import safe_trace_filename


def check_selection(
    release_cases: Sequence[Case], selected: Sequence[Case], benchmark: str, shard_count: int = 1, limit: int | None = None
) -> None:
    """An empty selection runs nothing and would record an empty run: refused, naming the
    cases file when it holds no case at all (no flag is to blame then). A shard of a run of
    more shards than cases is the exception (its cases, then, are none of the others'): it
    records its run with no episode, so that merging every shard makes the run whole."""
    if not release_cases:
        raise SelectionError(f"{benchmark} holds no cases: nothing to run")
    if not selected and (shard_count == 1 or limit == 0):
        raise SelectionError(
            "the selection is empty (check --case-id, --limit and --shard-index): nothing to run"
        )


NAME_MAX = 255  # bytes in one file name (ext4, XFS, btrfs, APFS, NTFS in UTF-16 units)


def check_trace_file_names(specs: Sequence[RolloutSpec]) -> None:
    """Each episode's trace file (`traces/<safe episode id>.json`, the seed's name) is its own
    and can be made: ids that differ only in characters a file name cannot hold (`x/1`, `x_1`)
    and ids too long for a file name are refused before the first episode, not found when the
    run directory is written."""
    first: dict[str, RolloutSpec] = {}
    for spec in specs:
        name = safe_trace_filename(spec.episode_id)
        if len(name.encode()) > NAME_MAX:
            raise SelectionError(
                f"case {spec.case_id[:80]!r}{'...' if len(spec.case_id) > 80 else ''}: its trace file name would be "
                f"{len(name.encode())} bytes, over the {NAME_MAX} a file name may hold: shorten its id, or leave it out with --case-id"
            )
        other = first.setdefault(name, spec)
        if other is not spec:
            raise SelectionError(
                f"cases {other.case_id!r} and {spec.case_id!r} would share the trace file traces/{name} "
                "(their ids differ only in characters a file name cannot hold): rename one, or leave one out with --case-id"
            )


def check_case_pictures(cases: Sequence[Case]) -> None:
    """Each case's picture is one Pillow decodes, within the decoding limit: found now, before
    any episode, not as an engineering error in each of the case's rollouts, nor (its data
    damaged past its header) read as a blank picture that an episode gives a verdict on. Decoded
    as an episode decodes it, a few at once (Pillow decodes without the GIL: ~0.3 s a 12 MP PNG)."""
    with ThreadPoolExecutor(max_workers=min(_DECODERS, os.cpu_count() or 1)) as pool:
        problems = [problem for problem in pool.map(_picture_problem, cases) if problem]
    if problems:
        more = f"; and {len(problems) - 10} more" if len(problems) > 10 else ""
        raise ReleaseError(f"{len(problems)} case picture(s) cannot be read: {'; '.join(problems[:10])}{more}")


_DECODERS = 4  # pictures decoded at once: a very large one holds ~0.5 GB while it is


def _picture_problem(case: Case) -> str | None:
    from eviscene.tools.images import ImageTooLarge, UndecodableImage, open_image

    try:
        open_image(CheckedImageStream(read_picture(case.image_file), case.image_path, case.image_sha256))
    except ImageTooLarge as exc:
        return f"{named(case)}: {case.image_path} is {exc.detail}: downscale it"
    except UndecodableImage as exc:
        return f"{named(case)}: {case.image_path} is {exc.detail}"
    return None


def check_scoring_inputs(release: Release, cases: Sequence[Case], files: dict[str, ScoringFile]) -> None:
    """Gold and protocols, as the run read them, load as its end will load them: a label
    outside the label set or a cut-off line is `FILE:LINE: …` now, and every selected case
    has gold."""
    gold = load_gold(release, files["evaluation_gold"].content)
    require_gold_for(gold, [case.case_id for case in cases], files["evaluation_gold"].path)
    for kind in ("classification_protocol", "process_reference_protocol"):
        if kind in files:
            _check_json_object(files[kind])


def _check_json_object(file: ScoringFile) -> None:
    path = file.path
    try:
        data = load_json_document(file.content)
    except UnicodeDecodeError as exc:
        raise ReleaseError(f"{path}: not UTF-8 ({exc.reason})") from None
    except RepeatedKeyError as exc:
        raise ReleaseError(repeated_key_message(path, exc)) from None
    except json.JSONDecodeError as exc:
        raise ReleaseError(f"{path}:{exc.lineno}: malformed JSON: {exc.msg}") from None
    except RecursionError:
        raise ReleaseError(f"{path}: malformed JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise ReleaseError(f"{path}: expected a JSON object, got {type(data).__name__}")


def check_output_dir(out_dir: Path | None) -> None:
    """The run directory written at the end must be new or empty, and its folder writable
    (probed by creating and removing a folder where it will be created)."""
    if out_dir is None:
        return
    check_new_or_empty(out_dir)
    existing = next(p for p in (out_dir.absolute(), *out_dir.absolute().parents) if p.exists())
    probe = existing / f".eviscene-probe-{uuid.uuid4().hex[:12]}"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError as exc:
        raise os_fault(exc, path=out_dir, verb="write") from None


def check_no_redacted_urls(options: EvalOptions, run_id: str) -> None:
    """A run started with a key inside a URL stored that URL redacted: resuming it would
    send the mask as the credential. A model's key belongs in --api-key-env; the search
    service's URL is given again in full (`restate_searxng_url`)."""
    for flag, url in (("--base-url", options.base_url), ("--vlm-base-url", options.vlm_base_url)):
        if url and MASK in url:
            raise EvisceneError(
                f"run {run_id} was started with a credential inside {flag}, which is never stored; it cannot be "
                "resumed: pass keys through --api-key-env instead"
            )
    if options.searxng_url and MASK in options.searxng_url:
        raise EvisceneError(
            f"run {run_id} was started with a credential inside --searxng-url, which is never stored: resume it with "
            f"--searxng-url and the URL in full ({options.searxng_url}, the credentials in place of {MASK})"
        )


def restate_searxng_url(options: EvalOptions, url: str, run_id: str) -> EvalOptions:
    """`eval resume --searxng-url URL`: the run's search service given again in full, with the
    credentials its log masks. Only the run's own service: the URL masked must be the recorded one."""
    if MASK in url:
        raise EvisceneError(f"--searxng-url: put the URL's credentials in place of {MASK}")
    register_url_secrets(url)
    if redact(url).rstrip("/") != (options.searxng_url or "").rstrip("/"):
        raise EvisceneError(f"--searxng-url {redact(url)} is not the search service run {run_id} used "
                            f"({options.searxng_url or 'none: it ran the corpus tools'})")
    return options.model_copy(update={"searxng_url": url})


# The flags that say where a key goes; a run's manifest records them as given.
ENDPOINT_FLAGS = ("base_url", "api_key_env", "vlm_base_url", "vlm_api_key_env")


def check_recorded_endpoints(options: EvalOptions, run_id: str, *, restated: Collection[str] = ()) -> None:
    """A resume takes its servers from the log, which may come from anyone (`log merge`, a copied
    log): a run whose recorded --base-url / --api-key-env (agent or VLM) would send a key
    anywhere but where the provider's defaults or the user's own profile send that key, whose
    recorded --ray-address (not `restated` by this resume) names a cluster, whose results this
    process unpickles, or whose tools may reach private addresses (cloud metadata, whose answer
    the model's server would read) is refused, naming them, until the user vouches for it."""
    if options.allow_private_network:
        raise EvisceneError(
            f"run {run_id}: its recorded --allow-private-network would let its tools reach this machine's and "
            "network's private addresses (cloud metadata among them), and a log from elsewhere can ask for that; "
            "if you started this run, resume it with --trust-endpoints"
        )
    if options.executor == "ray" and options.ray_address not in (None, "auto") and "ray_address" not in restated:
        raise EvisceneError(
            f"run {run_id}: its recorded --ray-address {options.ray_address} would run the episodes on that cluster, "
            "whose answers this process unpickles, and a log from elsewhere can name any; give --ray-address again, "
            "or if you started this run, resume it with --trust-endpoints"
        )
    recorded = resolve_options(options)
    senders = [(role, s) for role, s in (("agent", recorded.agent), ("VLM", recorded.vision)) if s and s.api_key_env]
    if not senders:
        return
    try:  # the run without its endpoint flags: where the user's own configuration sends each key
        yours = resolve_options(options.model_copy(update=dict.fromkeys(ENDPOINT_FLAGS)))
        own = {"agent": yours.agent, "VLM": yours.vision}
    except EvisceneError:  # e.g. a provider needing a --base-url that no profile of the user's gives
        own = {}
    for role, settings in senders:
        mine = own.get(role)
        if mine is not None and (settings.base_url, settings.api_key_env) == (mine.base_url, mine.api_key_env):
            continue
        flags = "--base-url/--api-key-env" if role == "agent" else "--vlm-base-url/--vlm-api-key-env"
        raise EvisceneError(
            f"run {run_id}: its recorded {flags} would send the {role}'s key (${settings.api_key_env}) to "
            f"{settings.base_url}; a resume sends a key only where the provider's defaults or your profile send it, "
            "since a log from elsewhere can name any server; if you started this run, resume it with --trust-endpoints"
        )


def check_scoring_files_unchanged(run_id: str, pinned: dict[str, dict], files: dict[str, ScoringFile]) -> None:
    """A resume is scored and audited by the files its run started with: other gold would
    rescore the finished episodes, another policy would audit them by rules their tools never
    enforced. `pinned`: the run's descriptors by kind (`path`, `sha256`)."""
    for kind in SCORING_KINDS:
        was, now = pinned.get(kind), files.get(kind)
        if was is None and now is None:
            continue
        if now is None:
            raise EvisceneError(f"run {run_id} has the {kind} {was['path']} (sha256 {was['sha256']}); the release now "
                                "has none; resume refused")
        if was is None:
            raise EvisceneError(f"{now.path}: run {run_id} has no {kind}; resume refused")
        if now.sha256 != was["sha256"]:
            raise EvisceneError(f"{now.path} differs from the {kind} of run {run_id} (sha256 {was['sha256']}; "
                                f"now {now.sha256}); resume refused")


def check_offline_labels(provider: Provider, release: Release) -> None:
    """The embedded agent decides among the bundled releases' labels: over a release whose label
    set lacks one, its verdicts would be outside the set (each judgment refused) or, mapped to
    another label, wrong and argued for by a rationale that says otherwise."""
    missing = [label for label in VERDICTS if label not in release.label_set]
    if isinstance(provider, OfflineProvider) and missing:
        raise EvisceneError(
            f"the embedded offline agent decides among {', '.join(VERDICTS)}; release {release.release_id}'s label set "
            f"({', '.join(release.label_set)}) lacks {', '.join(missing)}: run it with a model (--provider, --profile)"
        )


def check_same_code(run_id: str, started_by: str) -> None:
    """A run is one policy: its remaining episodes run by other code would go under its commit's
    name (run_manifest.json, each rollout group's `policy_revision`), a group mixing two
    policies unseen. Where either commit is unknown (an installed copy, no git), nothing can be said."""
    current = running_code_commit()
    if started_by and current and current != started_by:
        raise EvisceneError(
            f"run {run_id} was started by EviScene at commit {started_by[:12]}, and this is {current[:12]}: its remaining "
            "episodes would run other code under the first commit's name; resume with that commit checked out, or start a new run"
        )
