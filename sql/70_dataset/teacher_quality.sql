-- view: teacher_quality
-- grain: one row per candidate episode of the export
-- key: source_id, episode_id
-- Seed `_deterministic_teacher_quality`, defined once as the macro teacher_quality(...)
-- that dataset_candidates applies: without a score the hard gate fails with
-- missing_training_quality_score; otherwise the score's exclusion reasons split into fatal
-- ones (incorrect_result, engineering_error, legacy_core_ownership; or
-- teacher_quality_gate_failed when the score says ineligible without a reason), which fail
-- the hard gate, and red flags, which only rank rollouts. An accepted release's selected
-- row carries its own gate result and reasons. (Inside a macro `x->'k'` on a parameter
-- would parse as a lambda, hence json_extract.)
CREATE OR REPLACE MACRO teacher_reasons(raw_reasons) AS list_filter(coalesce(raw_reasons, []), lambda r: py_strip(r) <> '');
CREATE OR REPLACE MACRO teacher_fatal(raw_reasons, eligible_flag) AS ordered_distinct(
    list_filter(teacher_reasons(raw_reasons), lambda r: list_contains(fatal_teacher_reasons(), r))
    || CASE WHEN coalesce(eligible_flag::VARCHAR = 'false', false) AND len(teacher_reasons(raw_reasons)) = 0
            THEN ['teacher_quality_gate_failed'] ELSE [] END
);
CREATE OR REPLACE MACRO teacher_quality(release_row, score_present, raw_reasons, eligible_flag) AS CASE
    WHEN release_row IS NOT NULL THEN {
        'hard_gate_pass': true,
        'fatal_reasons': json_text_list(json_extract(release_row, '$.deterministic_fatal_reasons')),
        'red_flags': json_text_list(json_extract(release_row, '$.deterministic_red_flags'))
    }
    WHEN NOT score_present THEN {'hard_gate_pass': false, 'fatal_reasons': ['missing_training_quality_score'], 'red_flags': []::VARCHAR[]}
    ELSE {
        'hard_gate_pass': len(teacher_fatal(raw_reasons, eligible_flag)) = 0,
        'fatal_reasons': teacher_fatal(raw_reasons, eligible_flag),
        'red_flags': list_filter(teacher_reasons(raw_reasons), lambda r: NOT list_contains(fatal_teacher_reasons(), r))
    }
END;
CREATE OR REPLACE VIEW teacher_quality AS
SELECT source_id, episode_id, quality.hard_gate_pass, quality.fatal_reasons, quality.red_flags
FROM (
    SELECT source_id, episode_id, teacher_quality(release_row, score_present, raw_reasons, eligible_flag) AS quality
    FROM export_snapshot.candidate_episodes
);
