-- view: dataset_inputs
-- grain: one row per import the export reads, per role
-- key: import_id, role
-- The imports behind the export: its imported sources of episodes (`source`), the fixed
-- case split (`case_split`), the eligibility and semantic-reward gate artifacts
-- (`eligibility`, `semantic_reward`) and the accepted release (`accepted_release`, which
-- owns its eligibility directory). Only these imports' files are parsed.
CREATE OR REPLACE VIEW dataset_inputs AS
SELECT source_id AS import_id, 'source' AS role FROM dataset_sources WHERE source_kind <> 'run'
UNION ALL
SELECT case_split_import, 'case_split' FROM dataset_settings WHERE case_split_import IS NOT NULL
UNION ALL
SELECT eligibility_import, 'eligibility' FROM dataset_settings WHERE eligibility_import IS NOT NULL
UNION ALL
SELECT semantic_import, 'semantic_reward' FROM dataset_settings WHERE semantic_import IS NOT NULL
UNION ALL
SELECT accepted_release_import, 'accepted_release' FROM dataset_settings WHERE accepted_release_import IS NOT NULL;
