"""The rows of a release corpus (`corpus/pages.jsonl`): pages, the images they show, and an
image on a page as search results and image references resolve to it. The corpus and its
indexes both read them, so they live below both."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Protocol, Sequence

from pydantic import BaseModel, ConfigDict, Field, field_validator

from eviscene.rules.urls import url_host

IMAGE_FRAGMENT = "#image="
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class PageImage(BaseModel):
    """One image as a page lists it."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    path: str = Field(description="Path relative to the corpus directory.")
    sha256: str
    alt: str = ""
    width: Optional[int] = None
    height: Optional[int] = None

    @field_validator("alt", mode="before")
    @classmethod
    def _none_alt(cls, value: object) -> object:
        return "" if value is None else value


class Page(BaseModel):
    """One row of pages.jsonl."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    page_id: str
    url: str
    domain: str
    site_name: Optional[str] = None
    title: str = ""
    published: Optional[str] = None
    author: Optional[str] = None
    text: str
    content_sha256: str
    images: tuple[PageImage, ...] = ()

    @field_validator("published")
    @classmethod
    def _date(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and not _DATE.match(value):
            raise ValueError(f"published must be YYYY-MM-DD or null, got {value!r}")
        return value

    @field_validator("title", mode="before")
    @classmethod
    def _none_title(cls, value: object) -> object:
        return "" if value is None else value

    @property
    def host(self) -> str:
        return url_host(self.url)

    def image_url(self, image: PageImage) -> str:
        return f"{self.url}{IMAGE_FRAGMENT}{image.path}"


@dataclass(frozen=True)
class CorpusImage:
    """An image on a page: what search results and image references resolve to."""

    page: Page
    image: PageImage
    file: Path
    row: str = ""  # `pages.jsonl:LINE`, the page's row, for errors about the picture

    @property
    def url(self) -> str:
        return self.page.image_url(self.image)


class CorpusEntries(Protocol):
    """What the search and image indexes are built from: a `Corpus`'s pages and images."""

    @property
    def pages(self) -> Sequence[Page]: ...

    @property
    def images(self) -> Sequence[CorpusImage]: ...
