-- view: dataset_splits
-- grain: one row per accepted episode of the export
-- key: episode_id
-- The split of each accepted episode (with its split_components row); the group payload
-- lists every member episode and every family of every member. Derived mode (seed `_assign_split`): the group id is
-- the first 20 hex of sha256 over the JSON {"episodes": members, "families": every family
-- of every member}, sorted keys, compact, ensure_ascii=True; the split is train below
-- train_ratio of sha256(seed:group_id)'s first 8 bytes ÷ 2^64, validation below
-- train_ratio + validation_ratio, test above (below as Python compares: never below NaN). Frozen mode: the case's fixed split and
-- split_group_id (a component whose cases the fixed split separates is an export error,
-- see dataset_problems).
CREATE OR REPLACE VIEW dataset_splits AS
WITH members AS (
    SELECT
        component_id,
        list(episode_id ORDER BY episode_id) AS member_episode_ids,
        list_sort(list_distinct(flatten(list(source_family_keys)))) AS component_families
    FROM split_components
    GROUP BY component_id
),
groups AS (
    SELECT
        component_id,
        left(sha256(
            '{"episodes":[' || array_to_string(list_transform(member_episode_ids, lambda e: py_json_string(e)), ',')
            || '],"families":[' || array_to_string(list_transform(component_families, lambda f: py_json_string(f)), ',')
            || ']}'
        ), 20) AS derived_group_id
    FROM members
),
fractions AS (
    SELECT g.component_id, g.derived_group_id, split_fraction(s.seed, g.derived_group_id) AS fraction
    FROM groups g CROSS JOIN dataset_settings s
)
SELECT
    c.*,
    CASE WHEN s.frozen THEN c.fixed_split_group_id ELSE f.derived_group_id END AS split_group_id,
    CASE
        WHEN s.frozen THEN c.fixed_split
        WHEN py_below(f.fraction, s.train_ratio) THEN 'train'
        WHEN py_below(f.fraction, s.train_ratio + s.validation_ratio) THEN 'validation'
        ELSE 'test'
    END AS split,
    CASE WHEN NOT s.frozen THEN f.fraction END AS split_fraction
FROM split_components c
JOIN fractions f USING (component_id)
CROSS JOIN dataset_settings s;
