"""A second, independent release generator: to REPORT the offline agent's accuracy on
pictures, captions and pages it was not built beside (never to tune a threshold).

It writes the bundled release's format (manifest.json, runtime_input/cases.jsonl and
images, private/ gold, protocols and source-access policy, corpus/pages.jsonl and
images) from its own scene painter, places, sites, caption layouts and languages, in its
own seed space. The same seed and case count rewrite the same files byte for byte (for
the same Pillow, numpy and OpenCV).

    python scripts/make_independent_release.py --out /tmp/indep --cases 30 --seed 1

Each case tells one story:
- authentic: the claim names the place and date of the picture's first publication;
- out_of_context: the claim moves the picture to another place, to a date years after
  its first publication, or both;
- manipulated: the picture was edited (an object spliced in or removed, a colour
  changed, a region copied over another, a sign's words replaced) before the claim was
  printed on it; the corpus holds the unedited original;
- unverifiable: the picture appears nowhere in the corpus; pages about the claimed event
  show other pictures of the same kind of scene.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import io
import json
import math
import shutil
import sys
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

import cv2
import numpy as np
from PIL import Image, ImageDraw, ImageFont

LABELS = ("authentic", "out_of_context", "manipulated", "unverifiable")
SEED_SPACE = 0x51DE_0000  # added to --seed: never a seed the bundled release's generator uses

# -- places, events, sites ---------------------------------------------------------------------

PLACES = [
    ("Lisbon", "Portugal", "pt"), ("Porto", "Portugal", "pt"), ("Recife", "Brazil", "pt"), ("Curitiba", "Brazil", "pt"),
    ("Sevilla", "Spain", "es"), ("Bilbao", "Spain", "es"), ("Cordoba", "Argentina", "es"), ("Medellin", "Colombia", "es"),
    ("Lyon", "France", "fr"), ("Marseille", "France", "fr"), ("Dakar", "Senegal", "fr"), ("Montreal", "Canada", "fr"),
    ("Leipzig", "Germany", "de"), ("Graz", "Austria", "de"), ("Basel", "Switzerland", "de"), ("Bremen", "Germany", "de"),
    ("Durban", "South Africa", "en"), ("Leeds", "United Kingdom", "en"), ("Perth", "Australia", "en"), ("Cork", "Ireland", "en"),
    ("Tulsa", "United States", "en"), ("Nairobi", "Kenya", "en"), ("Manila", "Philippines", "en"), ("Auckland", "New Zealand", "en"),
]

# scene kind -> (event words per language, English headline pattern)
EVENTS = {
    "river_bridge": ({"en": "River bursts its banks under the old bridge", "es": "El río se desborda bajo el puente",
                      "fr": "La rivière déborde sous le vieux pont", "de": "Fluss tritt unter der alten Brücke über die Ufer",
                      "pt": "Rio transborda sob a ponte velha"}, "flood"),
    "desert_convoy": ({"en": "Aid convoy crosses the dunes", "es": "Convoy de ayuda cruza las dunas",
                       "fr": "Un convoi humanitaire traverse les dunes", "de": "Hilfskonvoi durchquert die Dünen",
                       "pt": "Comboio de ajuda atravessa as dunas"}, "convoy"),
    "rail_yard": ({"en": "Freight train derails at the rail yard", "es": "Tren de carga descarrila en la estación",
                   "fr": "Un train de marchandises déraille en gare", "de": "Güterzug entgleist am Rangierbahnhof",
                   "pt": "Trem de carga descarrila no pátio"}, "derailment"),
    "forest_fire": ({"en": "Forest fire reaches the ridge", "es": "El incendio forestal alcanza la cresta",
                     "fr": "Le feu de forêt atteint la crête", "de": "Waldbrand erreicht den Bergkamm",
                     "pt": "Incêndio florestal chega ao cume"}, "fire"),
    "harbour_storm": ({"en": "Storm waves batter the harbour wall", "es": "Olas de tormenta golpean el muelle",
                       "fr": "Les vagues de la tempête frappent la digue", "de": "Sturmwellen schlagen gegen die Hafenmauer",
                       "pt": "Ondas da tempestade atingem o cais"}, "storm"),
    "square_rally": ({"en": "Thousands rally in the main square", "es": "Miles se manifiestan en la plaza mayor",
                      "fr": "Des milliers de manifestants sur la place", "de": "Tausende demonstrieren auf dem Marktplatz",
                      "pt": "Milhares protestam na praça principal"}, "rally"),
}

NEWS_SITES = [("Harbour Courier", "harbour-courier.test"), ("The Plains Gazette", "plains-gazette.test"),
              ("Meridian Wire", "meridian-wire.test"), ("Daily Lantern", "daily-lantern.test"),
              ("Nordkurier Online", "nordkurier-online.test"), ("Jornal do Vale", "jornal-do-vale.test")]
SOCIAL_SITES = [("Chirper", "chirper.test"), ("Photoboard", "photoboard.test"), ("Forum Ouvert", "forum-ouvert.test")]
FACT_CHECK = ("CheckPoint Verify", "checkpoint-verify.test")
AUTHORS = ["A. Mensah", "L. Ferreira", "K. Nowak", "S. Haddad", "M. Lindqvist", "T. Okoro", "R. Duarte", "E. Varga"]

CAPTION_TEMPLATES = {  # {event}, {place}, {date}
    "en": ["{event} in {place}, {date}", "{place}: {event} ({date})", "BREAKING {date} - {event}, {place}"],
    "es": ["{event} en {place}, {date}", "{place}: {event} - {date}"],
    "fr": ["{event} à {place}, le {date}", "{place} : {event} ({date})"],
    "de": ["{event} in {place}, {date}", "{place}: {event} am {date}"],
    "pt": ["{event} em {place}, {date}", "{place}: {event} - {date}"],
}
MONTHS_EN = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"]


def written_date(day: date, language: str, rng: np.random.Generator) -> str:
    """A date as a poster in that language would type it."""
    if language == "en":
        return [f"{day.day} {MONTHS_EN[day.month - 1]} {day.year}", f"{MONTHS_EN[day.month - 1]} {day.day}, {day.year}",
                day.isoformat()][int(rng.integers(0, 3))]
    separator = "." if language == "de" else "/"
    return f"{day.day:02d}{separator}{day.month:02d}{separator}{day.year}"


# -- the scene painter -----------------------------------------------------------------------------

def _noise(rng: np.random.Generator, h: int, w: int, cells: int, octaves: int = 4) -> np.ndarray:
    out = np.zeros((h, w), np.float32)
    amplitude, total = 1.0, 0.0
    for octave in range(octaves):
        n = cells * 2**octave
        grid = rng.standard_normal((n + 1, max(2, round(n * w / h)) + 1)).astype(np.float32)
        out += amplitude * cv2.resize(grid, (w, h), interpolation=cv2.INTER_CUBIC)
        total += amplitude
        amplitude *= 0.5
    return np.clip(out / total / 1.2, -1, 1)


def _rgb(rng: np.random.Generator, low: int = 0, high: int = 256) -> tuple[int, int, int]:
    return tuple(int(v) for v in rng.integers(low, high, 3))


def paint(kind: str, rng: np.random.Generator) -> Image.Image:
    """A photo-like picture of the scene kind: textured land, sky and water, hard-edged
    structures, soft smoke and foliage, grain."""
    w = int(rng.choice([720, 800, 640, 600]))
    h = int(w * rng.choice([0.5625, 0.667, 0.75]))
    horizon = int(h * rng.uniform(0.35, 0.55))
    t = np.linspace(0, 1, h, dtype=np.float32)[:, None, None]
    dusk = rng.random() < 0.3
    sky_a = np.array([40, 50, 90] if dusk else [90, 140, 210], np.float32) + rng.uniform(-25, 25, 3)
    sky_b = np.array([230, 140, 90] if dusk else [200, 215, 230], np.float32) + rng.uniform(-20, 20, 3)
    arr = np.broadcast_to(sky_a * (1 - t) + sky_b * t, (h, w, 3)).copy()
    arr += 22 * _noise(rng, h, w, 3)[..., None]
    land = {"desert_convoy": [200, 165, 110], "forest_fire": [60, 90, 45], "river_bridge": [85, 110, 70],
            "rail_yard": [110, 100, 90], "harbour_storm": [70, 85, 100], "square_rally": [150, 140, 130]}[kind]
    ground_tex = _noise(rng, h, w, int(rng.integers(10, 30)), 5)[..., None]
    arr[horizon:] = np.array(land, np.float32) + rng.uniform(-20, 20, 3) + 50 * ground_tex[horizon:]
    image = Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(image)
    if kind == "river_bridge":
        water_top = horizon + int(0.15 * h)
        draw.rectangle((0, water_top, w, h), fill=(70, 80, 70))
        x0, span = int(rng.uniform(-0.1, 0.2) * w), int(rng.uniform(0.6, 0.9) * w)
        deck = water_top - int(0.08 * h)
        draw.rectangle((x0, deck, x0 + span, deck + 12), fill=_rgb(rng, 80, 160))
        for i in range(4):
            ax = x0 + i * span // 4
            draw.arc((ax, deck, ax + span // 4, deck + int(0.2 * h)), 180, 360, fill=(60, 55, 50), width=6)
            draw.rectangle((ax - 5, deck, ax + 5, h), fill=(95, 85, 75))
    elif kind == "desert_convoy":
        road = horizon + int(0.25 * h)
        draw.polygon([(0, road + 30), (w, road - 10), (w, road + 15), (0, road + 60)], fill=(90, 85, 80))
        for i in range(int(rng.integers(3, 7))):
            x = int(w * (0.1 + 0.14 * i)) + int(rng.integers(-10, 10))
            y = road + 25 - int(i * 40 / 7)
            colour = _rgb(rng, 150, 255)
            draw.rectangle((x, y - 34, x + 58, y), fill=colour, outline=(30, 30, 30))
            draw.rectangle((x + 58, y - 22, x + 76, y), fill=_rgb(rng, 60, 200))
            for wx in (x + 10, x + 45, x + 66):
                draw.ellipse((wx - 6, y - 6, wx + 6, y + 6), fill=(20, 20, 20))
    elif kind == "rail_yard":
        for i in range(5):
            y = horizon + int((0.1 + 0.17 * i) * h * 0.5)
            draw.line((0, y, w, y + int(rng.integers(-8, 8))), fill=(60, 50, 45), width=3)
            for x in range(0, w, 18):
                draw.line((x, y - 3, x + 4, y + 5), fill=(90, 70, 50), width=2)
        for i in range(int(rng.integers(3, 7))):
            x, y = int(i * w / 6), horizon + int(0.12 * h)
            tilt = int(rng.integers(-18, 18)) if rng.random() < 0.4 else 0
            draw.polygon([(x, y), (x + w // 7, y + tilt), (x + w // 7, y + tilt - 40), (x, y - 40)], fill=_rgb(rng, 40, 200), outline=(10, 10, 10))
    elif kind == "forest_fire":
        for _ in range(int(rng.integers(30, 70))):
            x, base = int(rng.integers(0, w)), horizon + int(rng.integers(-10, int(0.3 * h)))
            tall = int(rng.integers(20, 70))
            draw.polygon([(x, base - tall), (x - tall // 4, base), (x + tall // 4, base)], fill=_rgb(rng, 15, 70))
    elif kind == "harbour_storm":
        draw.rectangle((0, horizon, w, h), fill=(50, 70, 85))
        wall = horizon + int(0.3 * h)
        draw.rectangle((0, wall, int(rng.uniform(0.5, 0.9) * w), wall + 25), fill=(120, 115, 105))
        for _ in range(8):
            x = int(rng.integers(0, w))
            draw.rectangle((x, horizon - int(rng.integers(20, 90)), x + 8, horizon), fill=(200, 60, 40) if rng.random() < 0.5 else (230, 230, 225))
    else:  # square_rally
        for i in range(6):
            bx = int(i * w / 6)
            draw.rectangle((bx, horizon - int(rng.integers(60, 160)), bx + w // 6 - 4, horizon + 10), fill=_rgb(rng, 120, 230))
            for wy in range(horizon - 140, horizon, 22):
                for wx in range(bx + 8, bx + w // 6 - 16, 20):
                    draw.rectangle((wx, wy, wx + 8, wy + 12), fill=(40, 40, 55))
        for _ in range(int(rng.integers(80, 200))):
            x, y = int(rng.integers(0, w)), int(rng.integers(horizon + 10, h))
            r = max(3, int(2 + 8 * (y - horizon) / (h - horizon)))
            draw.ellipse((x - r, y - 3 * r, x + r, y - r), fill=_rgb(rng, 20, 120))
            draw.rectangle((x - r, y - r, x + r, y + r), fill=_rgb(rng))
    arr = np.asarray(image, np.float32).copy()
    for _ in range(int(rng.integers(1, 5))):  # smoke, spray, foliage: soft blobs
        blob = np.zeros((h, w), np.float32)
        cv2.ellipse(blob, (int(rng.integers(0, w)), int(rng.uniform(0.1, 0.7) * h)), (int(rng.uniform(0.05, 0.2) * w), int(rng.uniform(0.05, 0.15) * h)),
                    float(rng.uniform(0, 180)), 0, 360, 1.0, -1)
        blob = cv2.GaussianBlur(blob, (0, 0), float(rng.uniform(6, 20))) * (0.5 + 0.5 * _noise(rng, h, w, 10, 3)) * 0.8
        colour = {"forest_fire": [240, 120, 40], "harbour_storm": [235, 240, 245]}.get(kind, list(_rgb(rng, 60, 220)))
        arr = arr * (1 - blob[..., None]) + np.array(colour, np.float32) * blob[..., None]
    arr += rng.normal(0, 2.5, arr.shape)
    return Image.fromarray(np.clip(cv2.GaussianBlur(np.clip(arr, 0, 255), (0, 0), 0.6), 0, 255).astype(np.uint8))


# -- edits (manipulated cases) --------------------------------------------------------------------

def edit(picture: Image.Image, rng: np.random.Generator) -> tuple[Image.Image, str]:
    """The picture with one local edit, and what was done."""
    arr = np.asarray(picture).copy()
    h, w = arr.shape[:2]
    area = float(rng.uniform(0.02, 0.12))
    rx, ry = math.sqrt(area * w * h / math.pi) * 1.2, math.sqrt(area * w * h / math.pi) / 1.2
    cx, cy = int(rng.uniform(rx, w - rx)), int(rng.uniform(max(ry, 0.3 * h), h - ry))
    mask = np.zeros((h, w), np.uint8)
    cv2.ellipse(mask, (cx, cy), (int(rx), int(ry)), float(rng.uniform(0, 180)), 0, 360, 1, -1)
    kind = str(rng.choice(["splice", "remove", "recolour", "copy", "sign"]))
    if kind == "splice":  # a foreign textured object (a vehicle, a fire, an animal)
        texture = np.clip(np.array(_rgb(rng, 40, 255), np.float32) + 60 * _noise(rng, h, w, 20, 3)[..., None], 0, 255)
        arr[mask.astype(bool)] = texture[mask.astype(bool)].astype(np.uint8)
        what = "an object was pasted in"
    elif kind == "remove":
        arr = cv2.inpaint(arr, cv2.dilate(mask, np.ones((9, 9), np.uint8)), 7, cv2.INPAINT_NS)
        what = "part of the scene was painted out"
    elif kind == "recolour":
        hsv = cv2.cvtColor(arr, cv2.COLOR_RGB2HSV)
        hsv[..., 0] = (hsv[..., 0].astype(int) + int(rng.integers(50, 130))) % 180
        hsv[..., 1] = np.clip(hsv[..., 1].astype(int) + 120, 0, 255)
        changed = cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB)
        arr[mask.astype(bool)] = changed[mask.astype(bool)]
        what = "the colour of a region was changed"
    elif kind == "copy":
        bw, bh = int(2 * rx), int(2 * ry)
        sx, sy = int(rng.integers(0, w - bw)), int(rng.integers(0, h - bh))
        dx = (sx + bw + int(rng.integers(0, max(1, w - 2 * bw)))) % max(1, w - bw)
        dy = int(rng.integers(0, h - bh))
        arr[dy:dy + bh, dx:dx + bw] = np.asarray(picture)[sy:sy + bh, sx:sx + bw]
        what = "a region was copied over another"
    else:
        image = Image.fromarray(arr)
        draw = ImageDraw.Draw(image)
        bw, bh = int(0.35 * w), int(0.09 * h)
        x, y = int(rng.integers(0, w - bw)), int(rng.integers(int(0.2 * h), h - bh))
        draw.rectangle((x, y, x + bw, y + bh), fill=(240, 230, 40), outline=(0, 0, 0), width=3)
        draw.text((x + 8, y + bh // 5), str(rng.choice(["EVACUATE NOW", "ROAD CLOSED", "NO RETURN"])), fill=(0, 0, 0), font=font(rng, bh * 3 // 5))
        arr = np.asarray(image)
        what = "a sign with words was added"
    return Image.fromarray(arr), what


# -- printing the claim ------------------------------------------------------------------------------

def font_files() -> list[str]:
    return sorted(glob.glob("/usr/share/fonts/**/*.ttf", recursive=True))


def font(rng: np.random.Generator, size: int) -> ImageFont.ImageFont:
    files = [f for f in font_files() if "Mono" not in f and "ExtraLight" not in f]
    if not files or rng.random() < 0.2:
        return ImageFont.load_default(size=size)
    return ImageFont.truetype(files[int(rng.integers(0, len(files)))], size)


def _wrapped(text: str, typeface: ImageFont.ImageFont, width: int) -> list[str]:
    lines, current = [], ""
    measure = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    for word in text.split():
        trial = f"{current} {word}".strip()
        if measure.textlength(trial, font=typeface) <= width or not current:
            current = trial
        else:
            lines.append(current)
            current = word
    return lines + [current] if current else lines


def print_claim(picture: Image.Image, claim: str, rng: np.random.Generator) -> Image.Image:
    """The claim printed on the picture in one of several layouts seen on social media."""
    w, h = picture.size
    size = int(rng.integers(22, 30))
    typeface = font(rng, size)
    layout = str(rng.choice(["below", "above", "beside", "band", "post"]))
    if layout in ("below", "above"):
        lines = _wrapped(claim, typeface, w - 30)
        depth = (len(lines) + 1) * int(size * 1.3)
        background = (255, 255, 255) if rng.random() < 0.5 else _rgb(rng, 0, 60)
        ink = (0, 0, 0) if sum(background) > 380 else (255, 255, 255)
        out = Image.new("RGB", (w, h + depth), background)
        out.paste(picture, (0, depth if layout == "above" else 0))
        top = (0 if layout == "above" else h) + int(size * 0.6)
        anchor = out
    elif layout == "beside":
        side = int(w * 0.38)
        lines = _wrapped(claim, typeface, side - 24)
        background = _rgb(rng, 0, 80)
        ink = (255, 255, 255)
        out = Image.new("RGB", (w + side, h), background)
        out.paste(picture, (0, 0))
        draw = ImageDraw.Draw(out)
        for i, line in enumerate(lines):
            draw.text((w + 12, h // 4 + i * int(size * 1.3)), line, fill=ink, font=typeface)
        return out
    elif layout == "band":
        lines = _wrapped(claim, typeface, w - 30)
        depth = (len(lines) + 1) * int(size * 1.3)
        out = picture.copy()
        top_y = int(rng.uniform(0.05, 0.95) * h - depth) if rng.random() < 0.5 else h - depth - 8
        top_y = max(0, top_y)
        layer = Image.new("RGBA", out.size, (0, 0, 0, 0))
        ImageDraw.Draw(layer).rectangle((0, top_y, w, top_y + depth), fill=(0, 0, 0, int(rng.integers(150, 220))))
        out = Image.alpha_composite(out.convert("RGBA"), layer).convert("RGB")
        top, ink = top_y + int(size * 0.5), (255, 255, 255)
        anchor = out
    else:  # a post screenshot: header with an account name, the claim, the picture, actions
        lines = _wrapped(claim, typeface, w - 30)
        header = 60 + (len(lines)) * int(size * 1.3)
        dark = rng.random() < 0.5
        page = (21, 24, 28) if dark else (255, 255, 255)
        ink = (230, 230, 230) if dark else (15, 20, 25)
        out = Image.new("RGB", (w + 40, h + header + 56), page)
        out.paste(picture, (20, header))
        draw = ImageDraw.Draw(out)
        draw.ellipse((20, 12, 56, 48), fill=_rgb(rng))
        small = font(rng, 16)
        draw.text((66, 20), str(rng.choice(["@watcher_77", "Info Direct", "Nachrichten24", "@olhar.br"])), fill=ink, font=small)
        for i in range(3):
            draw.rectangle((30 + 90 * i, h + header + 18, 48 + 90 * i, h + header + 36), outline=ink, width=2)
        top, anchor = 56, out
    draw = ImageDraw.Draw(anchor)
    for i, line in enumerate(lines):
        draw.text((14, top + i * int(size * 1.3)), line, fill=ink, font=typeface)
    return anchor


def as_published(picture: Image.Image, rng: np.random.Generator, *, credit: str | None) -> Image.Image:
    """How a site shows a picture: resized, sometimes cropped a little or with a credit strip."""
    w, h = picture.size
    if rng.random() < 0.4:
        left, top = int(rng.uniform(0, 0.08) * w), int(rng.uniform(0, 0.08) * h)
        picture = picture.crop((left, top, w - int(rng.uniform(0, 0.08) * w), h - int(rng.uniform(0, 0.08) * h)))
    factor = float(rng.uniform(0.6, 1.1))
    picture = picture.resize((round(picture.width * factor), round(picture.height * factor)), Image.Resampling.LANCZOS)
    if credit and rng.random() < 0.5:
        strip = Image.new("RGB", (picture.width, picture.height + 26), (245, 245, 240))
        strip.paste(picture, (0, 0))
        ImageDraw.Draw(strip).text((8, picture.height + 5), credit, fill=(70, 70, 70), font=font(rng, 14))
        picture = strip
    return picture


def jpeg_bytes(image: Image.Image, quality: int) -> bytes:
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, "JPEG", quality=quality, optimize=False)
    return buffer.getvalue()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# -- pages and cases ---------------------------------------------------------------------------------

@dataclass
class Page:
    url: str
    site_name: str
    title: str
    published: str
    author: str | None
    text: str
    images: list[tuple[bytes, str, tuple[int, int]]] = field(default_factory=list)  # jpeg, alt, size


@dataclass
class Case:
    label: str
    jpeg: bytes
    pages: dict[str, Page]  # role -> page
    facts: list[tuple[str, list[str]]]
    bridges: list[str]  # roles whose page holds the unedited picture


def _slug(text: str) -> str:
    return "-".join("".join(c if c.isalnum() else " " for c in text.lower()).split())[:60]


def article(site: tuple[str, str], day: date, place: tuple[str, str, str], kind: str, rng: np.random.Generator,
            picture: Image.Image | None, *, serial: int) -> Page:
    """A news report about an event of this kind at this place on this day."""
    city, country, _ = place
    headline = f"{EVENTS[kind][0]['en']} in {city}"
    body = (f"{city.upper()}, {country}, {day.day} {MONTHS_EN[day.month - 1]} {day.year} - {EVENTS[kind][0]['en']} "
            f"in {city} on {day.strftime('%A')}, local officials said. Residents described the scene to reporters "
            f"as crews worked through the day.\n\nThe {EVENTS[kind][1]} drew attention across {country}. "
            f"Authorities in {city} said more information would follow.")
    page = Page(f"https://{site[1]}/{day.year}/{day.month:02d}/{_slug(headline)}-{serial}", site[0], headline,
                day.isoformat(), str(rng.choice(AUTHORS)), body)
    if picture is not None:
        shown = as_published(picture, rng, credit=f"Photo: {rng.choice(AUTHORS)} / {site[0]}")
        page.images.append((jpeg_bytes(shown, int(rng.integers(78, 93))), f"{EVENTS[kind][1]} in {city}", shown.size))
    return page


def repost(day: date, picture: Image.Image, rng: np.random.Generator, text: str, serial: int) -> Page:
    site = SOCIAL_SITES[int(rng.integers(0, len(SOCIAL_SITES)))]
    shown = as_published(picture, rng, credit=None)
    page = Page(f"https://{site[1]}/p/{serial:07d}", site[0], text[:80], day.isoformat(), None, text)
    page.images.append((jpeg_bytes(shown, int(rng.integers(55, 85))), "", shown.size))
    return page


def build_case(index: int, label: str, seed: int) -> Case:
    rng = np.random.default_rng([SEED_SPACE + seed, index])
    kind = str(rng.choice(list(EVENTS)))
    place = PLACES[int(rng.integers(0, len(PLACES)))]
    first = date(2014, 1, 1) + timedelta(days=int(rng.integers(0, 3000)))
    picture = paint(kind, rng)
    site = NEWS_SITES[int(rng.integers(0, len(NEWS_SITES)))]
    pages: dict[str, Page] = {}
    facts: list[tuple[str, list[str]]] = []
    claim_place, claim_day, shown = place, first + timedelta(days=int(rng.integers(0, 2))), picture
    if label != "unverifiable":
        pages["origin"] = article(site, first, place, kind, rng, picture, serial=index)
        facts.append((f"{site[0]} first published the photograph on {first.isoformat()} with a report from {place[0]}, {place[1]}.", ["origin"]))
        if rng.random() < 0.6:
            later = first + timedelta(days=int(rng.integers(1, 30)))
            pages["copy"] = repost(later, picture, rng, f"Incredible pictures from {place[0]} this week", serial=index * 7 + 1)
    if label == "out_of_context":
        variant = int(rng.integers(0, 3))
        if variant in (0, 2):
            claim_place = next(p for p in PLACES[int(rng.integers(0, len(PLACES))):] + PLACES if p[0] != place[0])
        if variant in (1, 2):
            claim_day = first + timedelta(days=int(rng.integers(400, 2500)))
        facts.append((f"The claim moves the picture to {claim_place[0]} on {claim_day.isoformat()}.", ["origin"]))
    elif label == "manipulated":
        shown, what = edit(picture, rng)
        facts.append((f"The case image differs from the original: {what}.", ["origin"]))
        fact_page = Page(f"https://{FACT_CHECK[1]}/{_slug('edited photo ' + place[0])}-{index}", FACT_CHECK[0],
                         f"Edited photo of {place[0]} circulates", (claim_day + timedelta(days=3)).isoformat(), None,
                         f"The picture was altered: {what}. The original appeared on {site[0]}.")
        pages["fact_check"] = fact_page
    elif label == "unverifiable":
        for n in range(2):  # coverage of the claimed event, with other pictures of the same kind of scene
            other = NEWS_SITES[int(rng.integers(0, len(NEWS_SITES)))]
            pages[f"context-{n + 1}"] = article(other, first + timedelta(days=n), place, kind, rng, paint(kind, rng), serial=index * 7 + 3 + n)
        facts.append(("No earlier copy of the picture can be found.", []))
    language = claim_place[2] if rng.random() < 0.7 else "en"
    claim = str(rng.choice(CAPTION_TEMPLATES[language])).format(
        event=EVENTS[kind][0][language], place=claim_place[0], date=written_date(claim_day, language, rng))
    case_picture = shown
    if rng.random() < 0.5:  # the poster resized or cropped it first
        case_picture = as_published(case_picture, rng, credit=None)
    printed = print_claim(case_picture, claim, rng)
    return Case(label, jpeg_bytes(printed, int(rng.integers(60, 92))), pages, facts,
                [role for role in ("origin", "copy") if role in pages])


def distractors(seed: int, count: int) -> list[Page]:
    rng = np.random.default_rng([SEED_SPACE + seed, 99_999])
    pages = []
    for n in range(count):
        kind = str(rng.choice(list(EVENTS)))
        day = date(2014, 1, 1) + timedelta(days=int(rng.integers(0, 3500)))
        place = PLACES[int(rng.integers(0, len(PLACES)))]
        pages.append(article(NEWS_SITES[int(rng.integers(0, len(NEWS_SITES)))], day, place, kind, rng, paint(kind, rng), serial=90_000 + n))
    return pages


# -- writing -------------------------------------------------------------------------------------------

def dump_json(data: object) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def dump_jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def write_release(out: Path, cases: int, seed: int) -> str:
    release_id = f"eviscene-independent-s{seed}-n{cases}"
    if out.exists():
        manifest = out / "manifest.json"
        ours = manifest.is_file() and json.loads(manifest.read_text("utf-8")).get("release_id", "").startswith("eviscene-independent-")
        if any(out.iterdir()) and not ours:
            raise SystemExit(f"Error: refusing to overwrite {out}: it is not empty and holds no independent release")
        shutil.rmtree(out)
    for sub in ("runtime_input/images", "private", "corpus/images"):
        (out / sub).mkdir(parents=True)
    order = np.random.default_rng([SEED_SPACE + seed, 7]).permutation(cases)
    labels = [LABELS[int(i) % len(LABELS)] for i in order]
    built = [build_case(i, label, seed) for i, label in enumerate(labels)]
    all_pages = [page for case in built for page in case.pages.values()] + distractors(seed, max(4, cases // 3))
    all_pages.sort(key=lambda page: sha256_text(page.url))
    page_ids = {page.url: f"q{n + 1:04d}" for n, page in enumerate(all_pages)}
    case_rows, gold_rows = [], []
    for n, case in enumerate(built):
        case_id = f"ind-{n + 1:04d}"
        relative = f"runtime_input/images/{case_id}.jpg"
        (out / relative).write_bytes(case.jpeg)
        case_rows.append({"case_id": case_id, "image_path": relative, "image_sha256": sha256_bytes(case.jpeg)})
        ids = {role: f"{case_id}-S{k + 1}" for k, role in enumerate(r for r in case.pages if r != "fact_check")}
        gold_rows.append({"case_id": case_id, "label": case.label, "reference_chain": {
            "sources": [{"source_id": ids[role], "url": case.pages[role].url, "content_sha256": sha256_text(case.pages[role].text),
                         "role": role.split("-")[0]} for role in ids],
            "facts": [{"fact_id": f"{case_id}-F{k + 1}", "statement": statement, "source_ids": [ids[r] for r in roles]}
                      for k, (statement, roles) in enumerate(case.facts)],
            "bridges": [{"bridge_id": f"{case_id}-B{k + 1}", "source_id": ids[role],
                         "reference_image_sha256": sha256_bytes(case.pages[role].images[0][0])} for k, role in enumerate(case.bridges)],
            "benchmark_origin": [{"url": p.url, "content_sha256": sha256_text(p.text)} for r, p in case.pages.items() if r == "fact_check"],
        }})
    page_rows = []
    for page in all_pages:
        page_id = page_ids[page.url]
        images = []
        for k, (data, alt, size) in enumerate(page.images):
            relative = f"images/{page_id}-{k + 1}.jpg"
            (out / "corpus" / relative).write_bytes(data)
            images.append({"path": relative, "sha256": sha256_bytes(data), "alt": alt, "width": size[0], "height": size[1]})
        page_rows.append({"page_id": page_id, "url": page.url, "domain": page.url.split("/")[2], "site_name": page.site_name,
                          "title": page.title, "published": page.published, "author": page.author, "text": page.text,
                          "content_sha256": sha256_text(page.text), "images": images})
    (out / "runtime_input/cases.jsonl").write_text(dump_jsonl(case_rows), "utf-8")
    (out / "private/evaluation_gold.jsonl").write_text(dump_jsonl(gold_rows), "utf-8")
    (out / "corpus/pages.jsonl").write_text(dump_jsonl(page_rows), "utf-8")
    (out / "private/source_access_policy.json").write_text(dump_json({
        "policy_id": f"{release_id}-origin-v1", "blocked_domains": [FACT_CHECK[1]], "blocked_url_prefixes": [],
        "blocked_content_sha256": [], "cache_partition": f"{release_id}/evaluation"}), "utf-8")
    (out / "private/classification_protocol.json").write_text(dump_json({
        "protocol_version": "ifv-classification-protocol-v1", "label_set": list(LABELS),
        "metrics": ["accuracy", "per_class_recall", "confusion_matrix"]}), "utf-8")
    (out / "private/process_reference_protocol.json").write_text(dump_json({
        "process_reference_protocol_version": "ifv-process-reference-v1"}), "utf-8")
    (out / "manifest.json").write_text(dump_json({
        "schema_version": "ifv-runtime-release-v0.3", "release_id": release_id, "release_stage": "development_subset",
        "runtime_contract_version": "ifv-runtime-contract-v0.3", "input_mode": "image_only",
        "decision_policy_version": "unified-react-v1", "label_set": list(LABELS),
        "artifacts": {"evaluation_gold": "private/evaluation_gold.jsonl", "classification_protocol": "private/classification_protocol.json",
                      "process_reference_protocol": "private/process_reference_protocol.json",
                      "source_access_policy": "private/source_access_policy.json", "corpus": "corpus"}}), "utf-8")
    return release_id


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     epilog="example: python scripts/make_independent_release.py --out /tmp/indep --cases 30 --seed 1")
    parser.add_argument("--out", required=True, type=Path, help="directory to write (emptied if it holds an earlier independent release)")
    parser.add_argument("--cases", type=int, default=30, help="number of cases (labels in equal shares)")
    parser.add_argument("--seed", type=int, default=1, help="seed within this generator's own seed space")
    args = parser.parse_args(argv)
    if args.cases < 1:
        print("Error: --cases must be at least 1", file=sys.stderr)
        return 2
    release_id = write_release(args.out, args.cases, args.seed)
    print(f"wrote {release_id}: {args.cases} cases to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
