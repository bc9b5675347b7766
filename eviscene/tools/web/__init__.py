"""Web tool backends for real use: SearXNG search and HTTP page fetching behind the same
tool interface as the corpus tools. Configured (`--search-backend searxng`), never required."""

from eviscene.tools.web.fetch import FetchedPage, FetchFailed, FetchRefused, PageFetcher, extract
from eviscene.tools.web.search import SearchResult, SearxngClient, SearxngError
from eviscene.tools.web.toolbox import WebEpisodeTools, WebToolbox

__all__ = [
    "FetchFailed", "FetchRefused", "FetchedPage", "PageFetcher", "SearchResult", "SearxngClient", "SearxngError",
    "WebEpisodeTools", "WebToolbox", "extract",
]
