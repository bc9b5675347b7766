-- view: native_candidates
-- grain: one row per finished episode of a native run
-- key: run_id, episode_id
-- The facts a dataset export needs about each finished native episode: case, image sha256,
-- `content:` source families (from episode_evidence; domain families never join cases),
-- the teacher score (total, exclusion reasons, eligible flag) and sft_eligibility's verdict
-- and reasons but for the training prohibition (dataset_candidates applies it to every
-- source alike, so --allow-training-prohibited lifts it in one place), the run's decision
-- policy version and whether its release prohibits training.
CREATE OR REPLACE VIEW native_candidates AS
WITH families AS (
    SELECT run_id, episode_id, list_sort(list_distinct(list(py_strip(source_family)))) AS families
    FROM episode_evidence
    WHERE starts_with(py_strip(source_family), 'content:')
    GROUP BY ALL
)
SELECT
    e.run_id,
    e.episode_id,
    e.case_id,
    coalesce(e.image_sha256, '') AS image_sha256,
    coalesce(f.families, []) AS source_family_keys,
    s.episode_id IS NOT NULL AS score_present,
    coalesce(s.total, 0.0) AS teacher_score,
    s.training_exclusion_reasons AS raw_reasons,
    to_json(s.training_eligible) AS eligible_flag,
    el.sft_eligible_unless_prohibited AS native_eligible,
    list_filter(el.exclusion_reasons, lambda r: r <> 'training_prohibited') AS native_reasons,
    coalesce(r.decision_policy_version, '') AS decision_policy_version,
    coalesce(r.training_prohibited_flag, false) OR r.release_stage = 'development_subset' AS training_prohibited
FROM episodes e
JOIN run_manifests r USING (run_id)
LEFT JOIN trajectory_scores s USING (run_id, episode_id)
LEFT JOIN sft_eligibility el USING (run_id, episode_id)
LEFT JOIN families f USING (run_id, episode_id)
WHERE e.finished;
