"""The agent's stages, named once: the provider protocol, the `model.called` event and the
provider profiles' per-stage settings all read them from here."""

from __future__ import annotations

from typing import Literal, get_args

Stage = Literal["unified_react", "unified_judgment", "perception"]
STAGES: tuple[str, ...] = get_args(Stage)
# The stages the agent model answers (perception is the VLM's): thinking settings apply to these,
# and only these calls are policy steps (seed 000's policy step ids, the SFT transcript's tools).
ACTIVE_POLICY_STAGES: tuple[str, ...] = ("unified_react", "unified_judgment")
POLICY_STAGES_SQL = "(" + ", ".join(f"'{stage}'" for stage in ACTIVE_POLICY_STAGES) + ")"

# name -> the macro's parameters and body, created on a connection whose views name it.
SQL_MACROS = {
    # is a model call of this stage the policy's (the agent model's), not the perception VLM's
    "policy_stage": f"(stage) AS stage IN {POLICY_STAGES_SQL}",
}
