-- view: imported_documents
-- grain: one row per imported JSON file (trace, manifest, gate artifact) the export reads
-- key: import_id, kind, relative_path
-- The parsed content of each whole-file JSON artifact of the export's imports, from its
-- blob, with the path it was imported from and its sha256 (a trace's sha256 is what gate
-- artifacts and accepted releases pin).
CREATE OR REPLACE VIEW imported_documents AS
SELECT
    f.import_id,
    f.kind,
    f.relative_path,
    f.path,
    f.sha256,
    f.episode_id,
    decode(b.content)::JSON AS document
FROM imported_files f
JOIN (SELECT DISTINCT import_id FROM dataset_inputs) i USING (import_id)
JOIN blobs b ON b.sha256 = f.blob_sha256
WHERE NOT f.is_jsonl AND f.kind <> 'run_file';
