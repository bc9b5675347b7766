"""The kinds of changed region `compare` lists that are no evidence of an edit, defined once
for the comparison (its `edited` flag) and the offline agent (which cites regions as
evidence): a caption band's trace (`caption_rows`) and a thin strip along a frame's edge
(`frame_edge`)."""

NOT_EDITS = ("caption_rows", "frame_edge")
