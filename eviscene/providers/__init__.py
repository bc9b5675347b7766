"""Model providers behind the agent's provider interface: the embedded offline policy and
the wire providers (OpenAI-compatible Chat Completions, OpenAI Responses, Gemini)."""

from eviscene.providers.chat_completions import ChatCompletionsProvider
from eviscene.providers.gemini import GeminiProvider
from eviscene.providers.guard import ProviderBusyError, RunGuard
from eviscene.providers.http import Endpoint, RetryPolicy
from eviscene.providers.offline import OfflineProvider
from eviscene.providers.profiles import Profile, ProviderSettings, load_profiles, resolve_settings
from eviscene.providers.responses import ResponsesProvider
from eviscene.providers.vlm import VlmPerception, describe_image
from eviscene.providers.wire import WireProvider

__all__ = [
    "ChatCompletionsProvider",
    "Endpoint",
    "GeminiProvider",
    "OfflineProvider",
    "Profile",
    "ProviderBusyError",
    "ProviderSettings",
    "ResponsesProvider",
    "RetryPolicy",
    "RunGuard",
    "VlmPerception",
    "WireProvider",
    "describe_image",
    "load_profiles",
    "resolve_settings",
]
