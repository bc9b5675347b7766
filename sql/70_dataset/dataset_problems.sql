-- view: dataset_problems
-- grain: one row per reason the export cannot be written
-- key: ordinal, code, subject
-- Every error seed 002 raises across its inputs, in the order it raises them (ordinal, then
-- position), and one of EviScene's own where the seed would meet it: reading the sources one
-- by one in the order given, each source's perception file line by line (an example already
-- read) and then its trace files in name order (an episode already read, which seed 002 would
-- file twice; a score row's training_exclusion_reasons the seed cannot iterate; a semantic-reward
-- artifact that does not match the trace; a teacher score float() refuses: an accepted release's
-- before that check, a trajectory_scores row's after; an eligibility, then a semantic-reward,
-- artifact whose gates is no object);
-- an imported trajectory_sft row that is no SFT record, episode by episode in id order (the
-- seed builds every trajectory once all sources are read);
-- mixed decision_policy_version values; in frozen mode a teacher case missing from the
-- fixed split, fewer accepted cases than the minimum, a validation case of the split
-- without an accepted episode; a fixed split that separates one source-family group (with
-- the cases and families that cross its splits); an
-- exported episode whose fixed split row pads its split with white space (the seed's
-- KeyError); then, action-only episode by episode in trace file order, a case without a
-- fixed split row or one whose row pads its split. The exporter raises the
-- first problem's message (by ordinal, position, subject). Reads the export's snapshots of
-- the staging views.
CREATE OR REPLACE MACRO unwritable_split_message(case_id, split) AS
    'fixed case split row of case ' || case_id || ' names split ' || json_ascii(split)
    || ' (white space around it): seed 002 accepts it stripped but writes it as given, to no train/validation file';
-- Whether seed 002's `artifact.get("gates", {}).get(...)` raises (AttributeError): the key is there
-- and holds no object (null, a list, text, a number).
CREATE OR REPLACE MACRO gates_refused(artifact) AS coalesce(json_type(json_extract(artifact, '$.gates')) <> 'OBJECT', false);
CREATE OR REPLACE MACRO refused_gates_message(path, artifact, gate) AS
    path || ': gates ' || json_extract(artifact, '$.gates')::VARCHAR || ' is not an object: seed 002 cannot read ' || gate || ' from it';
CREATE OR REPLACE VIEW dataset_problems AS
WITH s AS (SELECT * FROM dataset_settings),
candidates AS (SELECT * FROM rollout_selection),
action_only AS (SELECT * FROM export_snapshot.action_only_episodes),
perception AS (SELECT * FROM export_snapshot.dataset_perception),
splits AS (SELECT * FROM export_snapshot.fixed_case_splits),
-- where the seed reads each trace: its source, then its file in name order (sorted glob: the
-- files of one traces/ folder)
trace_reads AS (
    SELECT source_id, episode_id, semantic_mismatch,
           [source_position, 1, row_number() OVER (PARTITION BY source_id ORDER BY source_trace)] AS position
    FROM candidates
),
-- each trace's position with what the seed reads of it
trace_facts AS (
    SELECT t.position, c.*
    FROM trace_reads t
    JOIN export_snapshot.candidate_episodes c USING (source_id, episode_id)
),
-- EviScene's own refusal, raised where seed 002 would read the second trace (an accepted
-- release's action-only traces, its one source, come after its candidates)
duplicate_episodes AS (
    SELECT episode_id, position
    FROM (
        SELECT episode_id, position FROM trace_reads
        UNION ALL
        SELECT episode_id, NULL FROM action_only
    )
    QUALIFY row_number() OVER (PARTITION BY episode_id ORDER BY position NULLS LAST) = 2
),
-- the seed raises at an example's second reading
duplicate_perception AS (
    SELECT episode_id, source_position, line_number
    FROM perception
    QUALIFY row_number() OVER (PARTITION BY episode_id ORDER BY source_position, line_number) = 2
),
versions AS (
    SELECT list_sort(list_distinct(list(decision_policy_version))) AS versions FROM candidates
),
missing_split AS (
    SELECT list_sort(list_distinct(list(c.case_id))) AS cases
    FROM candidates c
    LEFT JOIN splits f USING (case_id)
    WHERE f.case_id IS NULL
),
accepted_cases AS (
    SELECT count(DISTINCT case_id) FILTER (WHERE selected) AS n,
           -- cases none of whose rollouts is accepted, one of them held back by the prohibition alone
           count(DISTINCT case_id) FILTER (WHERE training_exclusion_reasons = ['training_prohibited']
                                             AND case_id NOT IN (SELECT case_id FROM candidates WHERE selected)) AS prohibited
    FROM candidates
),
missing_validation AS (
    SELECT list_sort(list_distinct(list(f.case_id))) AS cases
    FROM splits f
    WHERE f.split = 'validation'
      AND f.case_id IN (SELECT case_id FROM candidates)
      AND f.case_id NOT IN (SELECT case_id FROM candidates WHERE selected)
),
-- a family whose cases sit in two splits or more: what separates its component (a family
-- held within one split only joins the component, and naming it would mislead)
crossing_families AS (
    SELECT c.component_id, c.family, list(DISTINCT c.case_id) AS cases
    FROM (SELECT component_id, case_id, unnest(source_family_keys) AS family FROM split_components) c
    JOIN splits f USING (case_id)
    GROUP BY c.component_id, c.family
    HAVING count(DISTINCT f.split) > 1
),
separated AS (
    SELECT
        c.component_id,
        list_sort(list_distinct(list(f.split))) AS splits,
        (SELECT list_sort(list_distinct(flatten(list(x.cases)))) FROM crossing_families x WHERE x.component_id = c.component_id) AS cases,
        (SELECT list_sort(list(x.family)) FROM crossing_families x WHERE x.component_id = c.component_id) AS families
    FROM split_components c
    JOIN splits f USING (case_id)
    GROUP BY c.component_id
    HAVING count(DISTINCT f.split) > 1
),
-- seed 002 checks a fixed split row's split stripped, then writes it as given: a padded
-- ' train' names no file, and the seed fails with a KeyError writing its episode
accepted_unwritable_split AS (
    SELECT c.episode_id, c.case_id, f.split
    FROM candidates c
    JOIN splits f USING (case_id)
    WHERE c.accepted AND f.split NOT IN ('train', 'validation')
),
-- the seed's last pass: the action-only episodes with a perception example, in trace file order
action_only_perception AS (
    SELECT a.episode_id, a.case_id, a.in_fixed_split, f.split, row_number() OVER (ORDER BY a.source_trace) AS trace_number
    FROM action_only a
    LEFT JOIN splits f USING (case_id)
    WHERE a.episode_id IN (SELECT episode_id FROM perception)
)
SELECT 1 AS ordinal, position, 'duplicate_episode' AS code, episode_id AS subject,
       'duplicate episode across source runs: ' || episode_id AS message
FROM duplicate_episodes
UNION ALL
SELECT 1, [source_position, 0, line_number], 'duplicate_perception_episode', episode_id,
       'duplicate perception episode across source runs: ' || episode_id
FROM duplicate_perception
UNION ALL
-- within one trace (after the duplicate, at the trace's own position): the seed iterates its
-- score row's training_exclusion_reasons (step 0), reads a release row's teacher_score (1),
-- checks the semantic artifact (2), reads a score row's total (3), then, writing the episode's
-- metadata, the eligibility artifact's gates (4) and the semantic artifact's (5)
SELECT 1, position || [0], 'refused_exclusion_reasons', episode_id,
       reasons_origin || ': training_exclusion_reasons ' || refused_reasons::VARCHAR || ' is '
       || CASE WHEN json_type(refused_reasons) = 'BOOLEAN' THEN 'a boolean' ELSE 'a number' END
       || ', not a list of reasons: seed 002 cannot iterate it'
FROM trace_facts
WHERE refused_reasons IS NOT NULL
UNION ALL
SELECT 1, position || [CASE WHEN release_row IS NOT NULL THEN 1 ELSE 3 END], 'refused_teacher_score', episode_id,
       score_origin || ': ' || CASE WHEN release_row IS NOT NULL THEN 'teacher_score ' ELSE 'total ' END
       || refused_score::VARCHAR || CASE
           -- float() reads "nan", which DuckDB then holds as NULL: refused here, with what it is
           WHEN py_float_is_nan(refused_score->>'$')
               THEN ' is NaN: seed 002''s float() reads it, but a NaN score ranks nowhere among a case''s rollouts; EviScene refuses it'
           ELSE ' is not a number: seed 002''s float() refuses it'
       END
FROM trace_facts
WHERE refused_score IS NOT NULL
UNION ALL
SELECT 1, position || [2], 'semantic_artifact_mismatch', episode_id,
       'semantic diagnostic artifact does not match trace: ' || episode_id
FROM trace_reads
WHERE semantic_mismatch
UNION ALL
SELECT 1, position || [4], 'refused_gate_artifact', episode_id,
       refused_gates_message(eligibility_path, eligibility_artifact, 'sft_eligibility_pass')
FROM trace_facts
WHERE gates_refused(eligibility_artifact)
UNION ALL
SELECT 1, position || [5], 'refused_gate_artifact', episode_id,
       refused_gates_message(semantic_path, semantic_artifact, 'semantic_audit_pass')
FROM trace_facts
WHERE gates_refused(semantic_artifact)
UNION ALL
SELECT 2, NULL, 'malformed_trajectory_sft_row', t.episode_id, t.malformed
FROM export_snapshot.dataset_trajectories t
JOIN candidates c USING (source_id, episode_id)
WHERE t.malformed IS NOT NULL
UNION ALL
SELECT 3, NULL, 'mixed_decision_policy_versions', '', 'SFT dataset cannot mix decision_policy_version values: ' || array_to_string(versions, ', ')
FROM versions WHERE len(versions) > 1
UNION ALL
SELECT 4, NULL, 'fixed_split_lacks_teacher_cases', '', 'fixed case split lacks teacher cases: ' || array_to_string(cases[1:10], ', ')
FROM missing_split, s WHERE s.frozen AND len(cases) > 0
UNION ALL
SELECT 5, NULL, 'too_few_accepted_cases', '', 'frozen SFT export accepted too few cases: ' || a.n || ' < ' || s.minimum_accepted_cases
       -- the seed's words, then why when its release prohibits training (EviScene's flag lifts it)
       || CASE WHEN a.prohibited > 0 THEN ' (' || a.prohibited || ' more case(s) excluded only as training_prohibited: '
               || '--allow-training-prohibited lifts that, recorded in the manifest)' ELSE '' END
FROM accepted_cases a, s WHERE s.frozen AND s.minimum_accepted_cases IS NOT NULL AND a.n < s.minimum_accepted_cases
UNION ALL
SELECT 6, NULL, 'missing_validation_cases', '', 'frozen SFT export lacks accepted validation cases: ' || array_to_string(cases[1:10], ', ')
FROM missing_validation, s WHERE s.frozen AND s.require_all_validation_cases AND len(cases) > 0
UNION ALL
SELECT 7, NULL, 'fixed_split_separates_group', component_id,
       'fixed case split separates one source-family group: ' || array_to_string(splits, ', ')
       || ' (cases ' || array_to_string(cases, ', ') || ' share ' || array_to_string(families, ', ') || ')'
FROM separated
UNION ALL
SELECT 8, NULL, 'fixed_split_unwritable_split', episode_id, unwritable_split_message(case_id, split)
FROM accepted_unwritable_split
UNION ALL
SELECT 9, [trace_number], 'action_only_case_without_split', episode_id,
       CASE WHEN s.case_split_import IS NULL THEN 'action-only perception export requires a frozen case split'
            ELSE 'fixed case split lacks action-only perception case: ' || case_id END
FROM action_only_perception, s
WHERE NOT in_fixed_split
UNION ALL
SELECT 9, [trace_number], 'fixed_split_unwritable_split', episode_id, unwritable_split_message(case_id, split)
FROM action_only_perception
WHERE in_fixed_split AND split NOT IN ('train', 'validation');
