"""Model providers behind the agent's provider interface."""

from eviscene.providers.offline import OfflineProvider

__all__ = ["OfflineProvider"]
