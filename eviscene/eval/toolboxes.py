"""A run's tools from its options and release: the corpus tools or the web backends, under
the source-access policy, built alike by the driver and by every Ray worker."""

from __future__ import annotations

from pathlib import Path

from eviscene.errors import EvisceneError
from eviscene.eval.options import EvalOptions
from eviscene.release import Release, sha256_file
from eviscene.rules.circuit_breaker import CircuitBreaker
from eviscene.rules.source_policy import SourceAccessPolicy
from eviscene.tools import Corpus, CorpusToolbox, Toolbox
from eviscene.tools.cache import CachedToolbox, ToolCache
from eviscene.tools.web import PageFetcher, SearxngClient, WebToolbox
from eviscene.tools.web.network import NetworkGuard


def policy_path(options: EvalOptions, release: Release) -> Path | None:
    """The source-access policy file the flags name, else the release's."""
    path = options.source_access_policy or release.artifacts.source_access_policy
    return Path(path) if path else None


def worker_toolbox(options: EvalOptions, release: Release, policy: SourceAccessPolicy | None,
                   cache: ToolCache | None) -> Toolbox:
    """A Ray worker's tools: the same backend as the driver's, under the policy the driver
    read when the run started (the file may have changed since), over the tool cache the
    driver read from the log."""
    toolbox, _ = make_toolbox(options, release, policy)
    return CachedToolbox(toolbox, cache, policy) if cache is not None else toolbox


def backend_breakers(toolbox: Toolbox) -> list[CircuitBreaker]:
    """The circuit breakers of the backends the tools reach over the network (the search
    service's), for the run's observer to hear their outages."""
    search = toolbox.search if isinstance(toolbox, WebToolbox) else None
    return [search.breaker] if search is not None else []


def make_toolbox(options: EvalOptions, release: Release, policy: SourceAccessPolicy | None) -> tuple[Toolbox, dict]:
    """The corpus tools (default) or the web backends (`--search-backend searxng`), and the
    manifest block naming them (its `backend_id` keys the tool cache)."""
    families = {f"enable_{family}": enabled for family, enabled in options.enabled_tool_families().items()}
    if options.search_backend == "searxng":
        if not options.searxng_url:
            raise EvisceneError("--search-backend searxng needs --searxng-url (e.g. http://127.0.0.1:8888)")
        try:
            search = SearxngClient(options.searxng_url, timeout=options.web_timeout, max_bytes=options.web_max_bytes,
                                   outage_timeout=options.provider_outage_timeout)
        except ValueError as exc:
            raise EvisceneError(f"--searxng-url: {exc}") from None
        fetcher = None
        network = NetworkGuard(allow_private_network=options.allow_private_network)
        if options.web_visit is not False:
            fetcher = PageFetcher(policy or SourceAccessPolicy(), timeout=options.web_timeout, network=network,
                                  max_bytes=options.web_max_bytes, max_redirects=options.web_max_redirects)
        web = WebToolbox(policy, search=search, fetcher=fetcher, network=network, **families)
        return web, web.manifest()
    if options.web_visit:
        raise EvisceneError("--web-visit needs --search-backend searxng (the corpus tools visit corpus pages)")
    if release.artifacts.corpus is None:
        raise EvisceneError(
            f"release {release.release_id} has no corpus for the embedded tools: add one ({release.manifest_path}'s "
            "artifacts.corpus, a folder of pages.jsonl and images), or search the web with --search-backend searxng"
        )
    corpus = Corpus.load(release.artifacts.corpus)
    toolbox = CorpusToolbox(corpus, policy, **families)
    backend_id = f"corpus:{sha256_file(corpus.source)}"
    return toolbox, {"kind": "corpus", "search_backend": "corpus", "web_visit": False,
                     "enabled_tools": list(toolbox.enabled_tools), "backend_id": backend_id}
