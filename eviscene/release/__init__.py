"""Benchmark releases: load and check a release, select its cases, expand rollouts.

The private gold lives in `eviscene.release.gold` and is deliberately not re-exported
here: only scoring code imports it, by that name.
"""

from eviscene.release.case_image import CaseImage, CaseImageChanged, read_case_image
from eviscene.release.jsonl import read_jsonl, read_jsonl_numbered
from eviscene.release.loader import (
    ACCEPTED_SCHEMA_VERSIONS,
    RUNTIME_RELEASE_SCHEMA_VERSION,
    SCORING_PACKAGE_SCHEMA_VERSION,
    Case,
    Release,
    ReleaseArtifacts,
    file_descriptor,
    load_cases,
    load_release,
    sha256_file,
    verify_case_images,
)
from eviscene.release.selection import (
    RolloutSpec,
    positive_int,
    prompt_group_id,
    rollout_specs,
    sampling_seed,
    select_cases,
)

__all__ = [
    "ACCEPTED_SCHEMA_VERSIONS",
    "RUNTIME_RELEASE_SCHEMA_VERSION",
    "SCORING_PACKAGE_SCHEMA_VERSION",
    "Case",
    "CaseImage",
    "CaseImageChanged",
    "Release",
    "ReleaseArtifacts",
    "RolloutSpec",
    "file_descriptor",
    "load_cases",
    "load_release",
    "positive_int",
    "prompt_group_id",
    "read_case_image",
    "read_jsonl",
    "read_jsonl_numbered",
    "rollout_specs",
    "sampling_seed",
    "select_cases",
    "sha256_file",
    "verify_case_images",
]
