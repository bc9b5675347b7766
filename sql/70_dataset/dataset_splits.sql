-- view: dataset_splits
-- grain: one row per accepted episode of the export
-- key: episode_id
-- The split of each accepted episode (with its split_components row). Derived mode (seed `_assign_split`): the group id is
-- the first 20 hex of sha256 over the JSON {"episodes": members, "families": every family
-- of every member}, sorted keys, compact, ensure_ascii=True; the split is train below
-- train_ratio of sha256(seed:group_id)'s first 8 bytes ÷ 2^64, validation below
-- train_ratio + validation_ratio, test above. Frozen mode: the case's fixed split and
-- split_group_id (a component whose cases the fixed split separates is an export error,
-- see dataset_problems).
CREATE OR REPLACE VIEW dataset_splits AS
WITH derived AS (
    SELECT
        c.*,
        left(sha256(
            '{"episodes":[' || array_to_string(list_transform(c.member_episode_ids, lambda e: json_ascii(e)), ',')
            || '],"families":[' || array_to_string(list_transform(c.component_families, lambda f: json_ascii(f)), ',')
            || ']}'
        ), 20) AS derived_group_id
    FROM split_components c
)
SELECT
    d.* EXCLUDE (derived_group_id),
    CASE WHEN s.frozen THEN d.fixed_split_group_id ELSE d.derived_group_id END AS split_group_id,
    CASE
        WHEN s.frozen THEN d.fixed_split
        WHEN split_fraction(s.seed, d.derived_group_id) < s.train_ratio THEN 'train'
        WHEN split_fraction(s.seed, d.derived_group_id) < s.train_ratio + s.validation_ratio THEN 'validation'
        ELSE 'test'
    END AS split,
    CASE WHEN NOT s.frozen THEN split_fraction(s.seed, d.derived_group_id) END AS split_fraction
FROM derived d
CROSS JOIN dataset_settings s;
