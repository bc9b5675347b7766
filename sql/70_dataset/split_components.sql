-- view: split_components
-- grain: one row per accepted episode of the export
-- key: episode_id
-- Connected components of accepted episodes that share a `content:` source family (seed
-- 002's union-find), by a recursive CTE that propagates the smallest episode id through
-- episode-family edges (USING KEY keeps one current label per episode). Each episode
-- carries its rollout_selection row, its component's id (the smallest member, the seed's
-- union-find root), members and every family of every member (the split group payload).
CREATE OR REPLACE VIEW split_components AS
WITH RECURSIVE accepted AS (
    SELECT * FROM rollout_selection WHERE accepted
),
memberships AS (
    SELECT episode_id, unnest(source_family_keys) AS family FROM accepted
),
anchors AS (
    SELECT family, min(episode_id) AS anchor FROM memberships GROUP BY family
),
edges AS (
    SELECT m.episode_id AS source, a.anchor AS target FROM memberships m JOIN anchors a USING (family) WHERE m.episode_id <> a.anchor
    UNION
    SELECT a.anchor, m.episode_id FROM memberships m JOIN anchors a USING (family) WHERE m.episode_id <> a.anchor
),
labels(episode_id, component_id) USING KEY (episode_id) AS (
    SELECT episode_id, episode_id FROM accepted
    UNION
    SELECT e.target, min(l.component_id)
    FROM labels l
    JOIN edges e ON e.source = l.episode_id
    JOIN recurring.labels current ON current.episode_id = e.target
    GROUP BY e.target
    HAVING min(l.component_id) < min(current.component_id)
),
components AS (
    SELECT
        l.component_id,
        list(l.episode_id ORDER BY l.episode_id) AS member_episode_ids,
        list(DISTINCT a.case_id ORDER BY a.case_id) AS member_case_ids,
        list_sort(list_distinct(flatten(list(a.source_family_keys)))) AS component_families
    FROM labels l JOIN accepted a USING (episode_id)
    GROUP BY l.component_id
)
SELECT a.*, l.component_id, c.member_episode_ids, c.member_case_ids, c.component_families
FROM labels l
JOIN accepted a USING (episode_id)
JOIN components c USING (component_id);
