"""The ground floor: every rule more than one layer uses, written once.

A module here imports only the standard library and third-party packages, never another
part of EviScene (a test parses every import, function-level ones included), so any layer
may import it. A rule SQL needs is registered as a DuckDB function or macro from here (see
`eviscene.views.register_functions`), never re-implemented in a view.

- `canonical`: the JSON serializations (exports, hashes, the seed's hashed forms, prompt text)
- `timestamps`: event clock and ISO-8601 forms
- `jsonl`: the strict JSONL reader (errors name file and line) and its text as SQL reads it
- `jsonl_parts`: the same reader over a large file, a part per CPU
- `urls`: URL normalization; `source_policy`: the source-access policy's matcher and the
  tool-cache partition it implies
- `traces`: trace file names; `verdicts`: when an answer is correct; `stages`: agent stages
- `tool_families`: the tool families and the tools of each; `dataset_split`: seed 002's split defaults
- `python_text`: Python's `str()` and `json.dumps` of JSON values, for the dataset views, and
  Python's white space (`strip()`, a blank line) as SQL macros
- `lazy_exports`: a package's public names, imported on first use
- `paths`: a path an input names stays inside its root, symlinks included
- `letters`: what a letter is in free text, for the search index's terms and the offline agent's claims
"""
