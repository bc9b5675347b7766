"""Embedded, offline tools of the agent: OCR, BM25 search, perceptual image search and
comparison over the release corpus, all behind the source-access policy."""

from eviscene.tools.image_compare import ChangedRegion, Comparison, compare
from eviscene.tools.corpus import IMAGE_FRAGMENT, Corpus, CorpusImage, Page, PageImage
from eviscene.tools.image_index import ImageIndex, ImageMatch
from eviscene.tools.images import PreparedImage, find_content_box, phash_hex, prepare
from eviscene.tools.ocr import OcrLine, OcrResult, aread_text, read_text
from eviscene.tools.policy import SourceAccessPolicy
from eviscene.tools.results import ToolOutcome, ToolStatus
from eviscene.tools.search import BM25, SearchIndex, tokenize
from eviscene.tools.specs import ALL_TOOLS, TOOL_FAMILIES, tool_spec, validate_arguments
from eviscene.tools.toolbox import EpisodeTools, Toolbox
from eviscene.tools.urls import normalize_host, normalize_url, url_host

__all__ = [
    "ALL_TOOLS", "BM25", "ChangedRegion", "Comparison", "Corpus", "CorpusImage", "EpisodeTools",
    "IMAGE_FRAGMENT", "ImageIndex", "ImageMatch", "OcrLine", "OcrResult", "Page", "PageImage",
    "PreparedImage", "SearchIndex", "SourceAccessPolicy", "TOOL_FAMILIES", "ToolOutcome", "ToolStatus",
    "Toolbox", "aread_text", "compare", "find_content_box", "normalize_host", "normalize_url", "phash_hex",
    "prepare", "read_text", "tokenize", "tool_spec", "url_host", "validate_arguments",
]
