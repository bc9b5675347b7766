"""The agent's stages, named once: the provider protocol, the `model.called` event and the
provider profiles' per-stage settings all read them from here."""

from __future__ import annotations

from typing import Literal, get_args

Stage = Literal["unified_react", "unified_judgment", "perception"]
STAGES: tuple[str, ...] = get_args(Stage)
# The stages the agent model answers (perception is the VLM's): thinking settings apply to these.
ACTIVE_POLICY_STAGES: tuple[str, ...] = ("unified_react", "unified_judgment")
