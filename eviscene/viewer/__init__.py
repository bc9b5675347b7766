"""The viewer: `eviscene view` (a live, read-only web UI over the log) and `eviscene report`
(the same pages as one self-contained HTML file)."""
