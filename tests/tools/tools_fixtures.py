"""Helpers for the tools tests: a corpus writer and the fixture web of `news_corpus`."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Optional

from tools_images import caption_banner, crop_fraction, jpeg, paste_object, resize_to, scene


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CorpusBuilder:
    """Writes pages.jsonl and images under `root`; `page()` returns the row it wrote."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "images").mkdir(parents=True, exist_ok=True)
        self.rows: list[dict[str, Any]] = []

    def image(self, name: str, picture, alt: str = "", quality: int = 90) -> dict[str, Any]:
        path = self.root / "images" / name
        picture.convert("RGB").save(path, "JPEG", quality=quality)
        data = path.read_bytes()
        return {"path": f"images/{name}", "sha256": hashlib.sha256(data).hexdigest(), "alt": alt,
                "width": picture.width, "height": picture.height}

    def page(self, url: str, title: str, text: str, *, images: Optional[list[dict]] = None,
             published: Optional[str] = "2020-01-01", domain: Optional[str] = None, **extra: Any) -> dict[str, Any]:
        row = {
            "page_id": f"p{len(self.rows) + 1}",
            "url": url,
            "domain": domain or url.split("/")[2].removeprefix("www."),
            "site_name": extra.pop("site_name", None),
            "title": title,
            "published": published,
            "author": extra.pop("author", None),
            "text": text,
            "content_sha256": sha256_text(text),
            "images": images or [],
            **extra,
        }
        self.rows.append(row)
        return row

    def write(self) -> Path:
        with (self.root / "pages.jsonl").open("w", encoding="utf-8") as handle:
            for row in self.rows:
                handle.write(json.dumps(row) + "\n")
        return self.root


FACTCHECK_TOKEN = "zqxfactchecktoken"
SUBDOMAIN_TOKEN = "zqxsubdomaintoken"
PREFIX_TOKEN = "zqxprefixtoken"
HASH_TOKEN = "zqxhashtoken"


def build_news_corpus(tmp_path: Path) -> dict[str, Any]:
    """A small web: an origin photo, a re-use of it, unrelated pages, an edited-photo case,
    and four pages the policy must hide (domain, subdomain, URL prefix, content hash)."""
    builder = CorpusBuilder(tmp_path / "corpus")
    harbor, market, stadium = scene(1), scene(2), scene(3)
    harbor_img = builder.image("harbor.jpg", harbor, alt="Warehouse fire at the harbor, smoke over the docks")
    harbor_small = builder.image("harbor_small.jpg", resize_to(harbor, 0.6), alt="Smoke over the docks", quality=75)
    market_img = builder.image("market.jpg", market, alt="Farmers market on the main square")
    stadium_img = builder.image("stadium.jpg", stadium, alt="Fans outside the stadium before the final")
    origin = builder.page(
        "https://archive.example.org/photos/harbor-fire-2015", "Harbor warehouse fire, June 2015",
        "A warehouse fire at the harbor sent smoke over the docks on 2 June 2015. Firefighters worked through the night.",
        images=[harbor_img], published="2015-06-02", site_name="Example Photo Archive", author="J. Doe")
    reuse = builder.page(
        "https://www.news.example.com/2021/protest-smoke", "Smoke rises over the city during protest",
        "Smoke rose over the city as the protest grew, a viral post claimed. "
        "The original photo: https://archive.example.org/photos/harbor-fire-2015.",
        images=[harbor_small], published="2021-03-14", site_name="Example News")
    unrelated = builder.page(
        "https://market.example.net/weekly", "Weekly farmers market returns",
        "The weekly farmers market returns to the main square with fresh produce.",
        images=[market_img], published="2019-08-10")
    agency = builder.page(
        "https://agency.example/photo/final-fans", "Fans gather before the cup final",
        "Fans gathered outside the stadium before the cup final on 20 May 2018.",
        images=[stadium_img], published="2018-05-20")
    factcheck = builder.page(
        "https://factcheck.example.net/claims/harbor-fire-misattributed", "Fact check: protest smoke photo is from 2015",
        f"The photo shows a 2015 harbor warehouse fire, not a protest. {FACTCHECK_TOKEN} smoke protest harbor.",
        images=[builder.image("fc_harbor.jpg", harbor, alt="Fact check: harbor fire smoke photo")], published="2021-03-16")
    subdomain = builder.page(
        "https://blog.factcheck.example.net/posts/smoke", "Smoke photo debunked",
        f"Debunked: smoke over the docks photo is from a harbor fire. {SUBDOMAIN_TOKEN}", published="2021-03-17")
    prefix = builder.page(
        "https://www.news.example.com/fact-check/smoke-photo", "Our fact check of the smoke photo",
        f"We traced the smoke photo to a harbor fire. {PREFIX_TOKEN}", published="2021-03-18",
        images=[builder.image("prefix_harbor.jpg", resize_to(harbor, 0.8), alt="Smoke photo traced")])
    hashed = builder.page(
        "https://mirror.example.info/copy", "Mirror of a fact check",
        f"Mirror: the smoke photo shows a harbor fire from 2015. {HASH_TOKEN}", published="2021-03-20")
    root = builder.write()
    policy = {
        "policy_id": "test-policy",
        "blocked_domains": ["factcheck.example.net"],
        "blocked_url_prefixes": ["https://news.example.com/fact-check/"],
        "blocked_content_sha256": [hashed["content_sha256"]],
        "cache_partition": "test",
    }
    case_dir = tmp_path / "case"
    case_dir.mkdir()
    case_reuse = case_dir / "reuse.jpg"
    jpeg(caption_banner(crop_fraction(resize_to(harbor, 0.7), 0.08, 0.05, 0.04, 0.1), "Smoke over the city during the protest"), 70).save(case_reuse, quality=92)
    case_edited = case_dir / "edited.jpg"
    jpeg(paste_object(stadium, (0.42, 0.55, 0.56, 0.75)), 80).save(case_edited, quality=92)
    case_unknown = case_dir / "unknown.jpg"
    scene(9).save(case_unknown, quality=90)
    return {
        "root": root,
        "policy": policy,
        "pages": {"origin": origin, "reuse": reuse, "unrelated": unrelated, "agency": agency,
                  "factcheck": factcheck, "subdomain": subdomain, "prefix": prefix, "hashed": hashed},
        "cases": {"reuse": case_reuse, "edited": case_edited, "unknown": case_unknown},
    }
