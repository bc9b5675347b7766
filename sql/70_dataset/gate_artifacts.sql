-- view: gate_artifacts
-- grain: one row per gate artifact of the export, by gate and episode
-- key: gate, episode_id
-- The structured SFT-eligibility artifacts (*.sft_eligibility.json: from --eligibility-dir
-- or the accepted release's eligibility/) and the semantic-reward diagnostics
-- (*.semantic_reward.json from --semantic-reward-dir) the export's gates read, by the
-- episode each names.
CREATE OR REPLACE VIEW gate_artifacts AS
SELECT d.kind AS gate, d.episode_id, d.path, d.document AS artifact
FROM imported_documents d
JOIN dataset_settings s
  ON (d.kind = 'sft_eligibility' AND d.import_id = coalesce(s.eligibility_import, s.accepted_release_import))
  OR (d.kind = 'semantic_reward' AND d.import_id = s.semantic_import);
