-- view: source_policies
-- grain: one row per run with an active source-access policy
-- key: run_id
-- The policy the run's tools enforced, attached to the log for auditing only (it never
-- reaches model context): blocked domains, URL prefixes (normalized) and content hashes,
-- and the policy file itself (`policy_file`), which source_policy_block() matches exactly
-- as the tools do.
CREATE OR REPLACE VIEW source_policies AS
WITH artifact AS (
    SELECT run_id, arg_max(payload->>'blob_sha256', seq) AS blob_sha256
    FROM events
    WHERE type = 'artifact.imported' AND payload->>'kind' = 'source_access_policy'
    GROUP BY run_id
),
policy AS (
    SELECT artifact.run_id, decode(blobs.content)::JSON AS body
    FROM artifact JOIN blobs ON blobs.sha256 = artifact.blob_sha256
)
SELECT
    run_id,
    body->>'policy_id' AS policy_id,
    list_transform(from_json(coalesce(body->'blocked_domains', '[]'), '["VARCHAR"]'), lambda d: normalize_host(d)) AS blocked_domains,
    list_transform(from_json(coalesce(body->'blocked_url_prefixes', '[]'), '["VARCHAR"]'), lambda p: normalize_url(p)) AS blocked_url_prefixes,
    list_transform(from_json(coalesce(body->'blocked_content_sha256', '[]'), '["VARCHAR"]'), lambda h: lower(h)) AS blocked_content_sha256,
    body AS policy_file
FROM policy;
