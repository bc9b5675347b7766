"""Which provider a run drives, from its flags."""

from __future__ import annotations

from eviscene.agent.provider import Provider
from eviscene.errors import EvisceneError
from eviscene.eval.options import EvalOptions
from eviscene.providers import OfflineProvider

PROVIDERS = ("offline",)


def make_provider(options: EvalOptions) -> Provider:
    name = options.provider_name
    if name == "offline":
        return OfflineProvider(model=options.model)
    raise EvisceneError(f"unknown provider {name!r}; available: {', '.join(PROVIDERS)}")
