-- view: export_roots
-- grain: one row per imported source that an export names at another path than its import's
-- key: import_id
-- An import is named by its files' bytes, so the same files read again from another folder
-- (a run directory moved or copied) are the import the log holds already, recorded at the
-- path it was first read from. Seed 002 names a source's files by the path it was given: the
-- exporter puts the path it was given for each imported source in the temporary table
-- `export_root_input`, and this view pairs it with the path the import recorded, so that
-- import_sources and imported_files name the files where the export read them. Empty
-- outside an export.
CREATE TEMP TABLE IF NOT EXISTS export_root_input (import_id VARCHAR, root VARCHAR);
CREATE OR REPLACE VIEW export_roots AS
SELECT i.import_id, i.root, e.payload->>'path' AS recorded_root
FROM export_root_input i
JOIN events e ON e.run_id = i.import_id
WHERE e.type = 'artifact.imported' AND (e.payload->'metadata'->>'import_id') = e.run_id
  AND i.root <> (e.payload->>'path');
