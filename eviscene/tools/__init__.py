"""Embedded, offline tools of the agent: OCR, BM25 search, perceptual image search and
comparison over the release corpus, all behind the source-access policy.

Names are imported on first use, so importing one module of this package does not load
OpenCV, Pillow and the OCR engine. URL normalization and the source-access policy's matcher
are rules other layers share: `eviscene.rules.urls`, `eviscene.rules.source_policy`.
"""

from eviscene.rules.lazy_exports import lazy_exports

_EXPORTS = {
    "ALL_TOOLS": "eviscene.tools.specs",
    "BM25": "eviscene.tools.search",
    "ChangedRegion": "eviscene.tools.image_compare",
    "Comparison": "eviscene.tools.image_compare",
    "Corpus": "eviscene.tools.corpus",
    "CorpusImage": "eviscene.tools.pages",
    "CorpusToolbox": "eviscene.tools.toolbox",
    "EpisodeTools": "eviscene.tools.toolbox",
    "IMAGE_FRAGMENT": "eviscene.tools.pages",
    "ImageIndex": "eviscene.tools.image_index",
    "ImageMatch": "eviscene.tools.image_index",
    "OcrLine": "eviscene.tools.ocr",
    "OcrResult": "eviscene.tools.ocr",
    "Page": "eviscene.tools.pages",
    "PageImage": "eviscene.tools.pages",
    "PreparedImage": "eviscene.tools.images",
    "SearchIndex": "eviscene.tools.search",
    "TOOL_FAMILIES": "eviscene.tools.specs",
    "ToolOutcome": "eviscene.tools.results",
    "ToolStatus": "eviscene.tools.results",
    "Toolbox": "eviscene.tools.interface",
    "aread_text": "eviscene.tools.ocr",
    "compare": "eviscene.tools.image_compare",
    "find_content_box": "eviscene.tools.images",
    "phash_hex": "eviscene.tools.images",
    "prepare": "eviscene.tools.images",
    "read_text": "eviscene.tools.ocr",
    "tokenize": "eviscene.tools.search",
    "tool_spec": "eviscene.tools.specs",
    "validate_arguments": "eviscene.tools.specs",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
