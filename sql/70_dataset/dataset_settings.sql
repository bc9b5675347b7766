-- view: dataset_settings
-- grain: one row per connection (the options of the dataset export being computed)
-- key: seed
-- The options of a dataset export (seed 002's flags) as one row every dataset view reads:
-- seed, train/validation ratios, short-trajectory token budget, frozen mode, minimum
-- accepted cases, whether every validation case must be accepted, whether a derived export
-- keeps only the best rollout per case (--one-rollout-per-case) and whether
-- training-prohibited sources may contribute (--allow-training-prohibited), and the imports that
-- hold the fixed case split, the eligibility and semantic-reward gate artifacts and the
-- accepted release. `eviscene dataset export` fills the temporary table `export_settings`
-- before it reads the views; elsewhere (eviscene sql) the default row below applies: a
-- derived split with seed 002's defaults, read from eviscene/rules/dataset_split.py through
-- the registered function dataset_default(name) (a test checks the row equals ExportSettings()). This file also
-- defines the macros the dataset views share, which reproduce Python's truthiness where the
-- seed's hashes and comparisons depend on them (Python's strip() is the macro py_strip and
-- Python's str() and json.dumps the functions py_value_text and json_ascii, all from
-- eviscene/rules/python_text.py;
-- py_text calls py_value_text only for non-strings, py_json_string json_ascii only for strings
-- that need escapes),
-- and the schema `export_snapshot`: the decision views (dataset_candidates onwards) read
-- snapshots of the staging views that the exporter takes (so a connection never re-binds
-- the whole staging stack per decision view); the snapshots are empty outside an export.
-- Snapshot tables list their columns (planning a staging view at every connect to copy its
-- schema costs more than the view); a test checks they match their views.
-- `str(value)` of a JSON value: a string is its own text, read by DuckDB (a Python call per row
-- cost most of an export); any other value goes to Python's str().
CREATE OR REPLACE MACRO py_text(j) AS CASE WHEN json_type(j) = 'VARCHAR' THEN j->>'$' ELSE py_value_text(j) END;
-- `json.dumps(s)` (ensure_ascii): printable ASCII without quote or backslash is itself in quotes;
-- any other string goes to Python.
CREATE OR REPLACE MACRO py_json_string(s) AS CASE WHEN regexp_full_match(s, '[ !#-\[\]-~]*') THEN '"' || s || '"' ELSE json_ascii(s) END;
CREATE OR REPLACE MACRO py_truthy(j) AS coalesce(CASE json_type(j)
    WHEN 'BOOLEAN' THEN j::VARCHAR = 'true'
    WHEN 'NULL' THEN false
    WHEN 'VARCHAR' THEN (j->>'$') <> ''
    WHEN 'ARRAY' THEN json_array_length(j) > 0
    WHEN 'OBJECT' THEN len(json_keys(j)) > 0
    ELSE TRY_CAST(j::VARCHAR AS DOUBLE) <> 0
END, false);
-- `value or default` for a JSON field, as text.
CREATE OR REPLACE MACRO py_or_text(j) AS CASE WHEN py_truthy(j) THEN py_text(j) END;
-- `str(mapping.get(key, default))` where a non-object mapping reads as {}.
CREATE OR REPLACE MACRO py_get_text(obj, key, fallback) AS CASE
    WHEN json_type(obj) = 'OBJECT' AND json_exists(obj, '$."' || key || '"') THEN py_text(json_extract(obj, '$."' || key || '"'))
    ELSE fallback
END;
CREATE OR REPLACE MACRO is_json_true(j) AS coalesce(json_type(j) = 'BOOLEAN' AND j::VARCHAR = 'true', false);
CREATE OR REPLACE MACRO ordered_distinct(l) AS list_filter(l, lambda x, i: list_position(l, x) = i);
-- `[str(item) for item in value or []]`, as seed 002 reads a list of reasons or red flags:
-- a list's items, a string's characters, an object's keys (once each, in order); [] else.
CREATE OR REPLACE MACRO json_text_list(j) AS CASE json_type(j)
    WHEN 'ARRAY' THEN list_transform(from_json(j, '["JSON"]'), lambda r: py_text(r))
    WHEN 'VARCHAR' THEN regexp_extract_all(json_extract_string(j, '$'), '(?s).')
    WHEN 'OBJECT' THEN ordered_distinct(json_keys(j))
    ELSE []::VARCHAR[]
END;
CREATE OR REPLACE MACRO fatal_teacher_reasons() AS ['incorrect_result', 'engineering_error', 'legacy_core_ownership'];
-- seed `_assign_split`: the first 8 bytes of sha256(seed:group_id) as a fraction of 2^64.
CREATE OR REPLACE MACRO split_fraction(seed, group_id) AS
    ('0x' || left(sha256(seed || ':' || group_id), 16))::UBIGINT::DOUBLE / 18446744073709551616::DOUBLE;
-- Python's `fraction < bound` (seed `_assign_split`): nothing is below NaN, where DuckDB orders NaN
-- above every number (so a NaN ratio would take every group).
CREATE OR REPLACE MACRO py_below(fraction, bound) AS fraction < bound AND NOT isnan(bound);
CREATE SCHEMA IF NOT EXISTS export_snapshot;
CREATE TEMP TABLE IF NOT EXISTS export_settings AS
SELECT
    dataset_default('seed') AS seed,
    dataset_default('train_ratio')::DOUBLE AS train_ratio,
    dataset_default('validation_ratio')::DOUBLE AS validation_ratio,
    dataset_default('short_max_tokens')::BIGINT AS short_max_tokens,
    false AS frozen,
    NULL::BIGINT AS minimum_accepted_cases,
    true AS require_all_validation_cases,
    false AS one_rollout_per_case,
    false AS allow_training_prohibited,
    NULL::VARCHAR AS case_split_import,
    NULL::VARCHAR AS eligibility_import,
    NULL::VARCHAR AS semantic_import,
    NULL::VARCHAR AS accepted_release_import;
CREATE OR REPLACE VIEW dataset_settings AS
SELECT * FROM export_settings;
