"""What a printed claim asserts: its dates, its named places/events and its topic words,
read from OCR text with rules that know nothing about any particular release."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from datetime import date

from eviscene.rules.letters import LETTER

MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
            ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
            ("october", "oct"), ("november", "nov"), ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = "(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DATE_PATTERNS = [
    # OCR may drop the spaces around a month name ("8 November2023"), so they are optional.
    (re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s*{_MONTH},?\s*(\d{{4}})\b", re.I), ("d", "m", "y")),
    (re.compile(rf"\b{_MONTH}\s*(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I), ("m", "d", "y")),
    (re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b"), ("y", "m", "d")),
    (re.compile(r"\b(\d{1,2})[./](\d{1,2})[./](\d{4})\b"), ("d", "m", "y")),
]
_STOP = set(
    """a an the and or of in on at to for from with by as is are was were be been this that these those it its
    here there now through across about against toward towards today yesterday tonight after before during near over under into onto out up down off not no
    new just more most very breaking news photo photos picture video live update watch see look shows showing
    shown says said viral post share shared amid via who what when where why how all our your their his her
    we you they he she i me my us them
    reply replies repost reposts retweet retweets like likes share shares comment comments follow following
    views more""".split()
)
_HANDLE = re.compile(r"[@#]\w+")
# A word (letters, inner apostrophes and hyphens), a punctuation mark that ends a name or a sentence, or a spaced dash.
_TOKEN = re.compile(rf"{LETTER}(?:{LETTER}|['’-])+|[.!?:;|,\n]|\s[-–—]\s")


@dataclass
class Claim:
    text: str
    dates: list[date] = field(default_factory=list)
    names: list[str] = field(default_factory=list)  # capitalized phrases: places, events, organisations
    topic: list[str] = field(default_factory=list)  # other content words

    @property
    def date(self) -> date | None:
        return self.dates[0] if self.dates else None

    def query(self, *, with_date: bool) -> str:
        """Keywords for a search; empty when the claim names nothing searchable."""
        parts = self.names[:3] + self.topic[:4]
        if parts and with_date and self.date:
            parts.append(f"{self.date.day} {_month_name(self.date.month)} {self.date.year}")
        return " ".join(parts)


def _month_name(month: int) -> str:
    return date(2000, month, 1).strftime("%B")


def parse_dates(text: str) -> list[date]:
    found: list[tuple[int, date]] = []
    for pattern, order in _DATE_PATTERNS:
        for match in pattern.finditer(text):
            parts = dict(zip(order, match.groups()))
            month = parts["m"]
            month_number = MONTHS.get(month.lower().rstrip("."), 0) if not month.isdigit() else int(month)
            try:
                found.append((match.start(), date(int(parts["y"]), month_number, int(parts["d"]))))
            except ValueError:
                continue
    return [d for _, d in sorted(found)]


def parse_claim(ocr_text: str) -> Claim:
    text = " ".join(_HANDLE.sub(" ", ocr_text).split())
    # Printed lines kept apart: a badge or watermark on its own line ("EXCLUSIVE", "MMM")
    # must not join the name that ends the caption's line.
    without_dates = "\n".join(" ".join(line.split()) for line in _HANDLE.sub(" ", ocr_text).splitlines())
    for pattern, _ in _DATE_PATTERNS:
        without_dates = pattern.sub(" ", without_dates)
    names: list[str] = []
    topic: list[str] = []
    phrase: list[tuple[str, bool]] = []  # (token, starts a sentence)

    def close_phrase() -> None:
        # A lone capitalized word opening a sentence is just capitalized, not a name.
        if len(phrase) == 1 and phrase[0][1]:
            topic.append(phrase[0][0].lower())
        elif phrase:
            names.append(" ".join(token for token, _ in phrase))
        phrase.clear()

    sentence_start = True
    line_opens_sentence, line_has_content = True, False
    # A dash between spaces starts a new headline segment ("2019 - Forest fire ..."), as a
    # full stop does; a lone word before a colon is a dateline ("Tulsa: ..."), a name.
    for match in _TOKEN.finditer(without_dates):
        token = match.group()
        if token in ",\n":  # a comma or a line's end ends a name, not the sentence ("Valparaiso, Chile")
            close_phrase()
            if token == "\n":
                # A badge's line ("LIVE", "BREAKING NEWS") is no sentence: the caption's first word still opens one.
                if not line_has_content:
                    sentence_start = line_opens_sentence
                line_opens_sentence, line_has_content = sentence_start, False
            continue
        if token.strip() in ".!?:;|-–—":
            close_phrase()
            sentence_start = True
            continue
        line_has_content = line_has_content or token.lower() not in _STOP
        if sentence_start and token[0].isupper() and without_dates[match.end():].lstrip().startswith(":") and token.lower() not in _STOP:
            phrase.append((token, False))  # a dateline names a place
            sentence_start = False
            continue
        lower = token.lower()
        if token[0].isupper() and lower not in _STOP and lower not in MONTHS:
            phrase.append((token.title() if token.isupper() and len(token) > 4 else token, sentence_start))
        else:
            close_phrase()
            if lower not in _STOP and lower not in MONTHS and len(lower) > 2:
                topic.append(lower)
        sentence_start = False
    close_phrase()
    return Claim(text=text, dates=parse_dates(text), names=list(dict.fromkeys(names)), topic=list(dict.fromkeys(topic)))


def _unaccented(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def fold(text: str) -> str:
    """Lowercase without accents: claims are often typed plain (Valparaiso), pages not (Valparaíso)."""
    return _unaccented(text).lower()


def mentions(text: str, phrase: str) -> bool:
    return re.search(r"\b" + re.escape(fold(phrase)) + r"\b", fold(text)) is not None


def mentions_as_a_name(text: str, phrase: str) -> bool:
    """Whether `text` writes `phrase` capitalized somewhere (Porto Alegre, PORTO ALEGRE), as a
    name is, not only as a common word (`wildfires` for a caption's capitalized Wildfire)."""
    found = re.finditer(r"\b" + re.escape(_unaccented(phrase)) + r"\b", _unaccented(text), re.IGNORECASE)
    return any(match.group()[0].isupper() for match in found)


def scripts(text: str) -> set[str]:
    """The writing systems of a text's letters (LATIN, CYRILLIC, GREEK, CJK, ...), as Unicode names them."""
    return {unicodedata.name(c, "").partition(" ")[0] for c in text if c.isalpha()}
