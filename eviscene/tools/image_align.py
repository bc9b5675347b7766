"""Where does the case image lie on a reference picture? (scale + offset, no rotation)

Multi-scale template matching (OpenCV `TM_CCOEFF_NORMED`) of locally contrast-normalized
grey images (`_lcn`: a band that darkens the photo under it does not change them):
- the query as a crop of the reference, down to `MIN_SCALE` of the reference's size;
- the reference as a crop of the query;
- a plain stretch of one onto the other;
first with whole pictures, and when no whole placement scores `CONVINCING`, with parts
(`QUERY_WINDOWS`: without a top/bottom quarter or a left/right fifth, and the query without
its band or text rows), for caption bands and for two crops of one photo that overlap
without either containing the other. Coarse search runs at about `COARSE_SIDE`² pixels in
10% scale steps; the best `FINALISTS` are refined at `WORK_SIDE` (±4% scale in 1% steps,
then ±1% in 0.25% steps) and the one whose normalized correlation over the covered query
is highest wins (coarse scores of different parts are not comparable: a small template
finds a high peak more easily).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import cv2
import numpy as np

from eviscene.tools.images import PreparedImage, band_free_strip

MIN_SCALE = 0.4  # the query may be a crop showing down to 40% of the reference's width (and vice versa)
MIN_OVERLAP = 0.25  # a placement must cover at least this much of the query
COARSE_SIDE = 80  # coarse search at about 80 x 80 pixels
WORK_SIDE = 256  # refinement (and comparison) at this long side
SCAN_SIDE = 48  # candidate scan at about 48 x 48 pixels
DESCRIPTOR_SIDE = 12  # vectorized thumbnail ranking at 12 x 12 pixels
SCAN_SCALES = 7  # down to 0.9^6 = 53% of the fitting size
LCN_SIGMA = 0.025  # of the long side: well under a caption band's height
FINALISTS = 3
CONVINCING = 0.8  # a coarse whole-picture score this high needs no search over parts


@dataclass(frozen=True)
class Alignment:
    """Reference content px = (sx * x + tx, sy * y + ty) for query content px (x, y)."""

    sx: float
    sy: float
    tx: float
    ty: float
    score: float
    mode: str  # "query_in_reference" | "reference_in_query" | "stretch"
    window: tuple[float, float, float, float] = (0.0, 0.0, 1.0, 1.0)  # query part (x0, y0, x1, y1 fractions) matched


Window = tuple[float, float, float, float]

QUERY_WINDOWS: tuple[Window, ...] = (
    (0.0, 0.0, 1.0, 1.0),
    (0.0, 0.0, 1.0, 0.75),
    (0.0, 0.25, 1.0, 1.0),
    (0.0, 0.0, 0.8, 1.0),
    (0.2, 0.0, 1.0, 1.0),
)
"""Parts of the query tried as templates: the whole picture; without its top or bottom
quarter (a caption band near an edge cannot pull the placement off); without its left or
right fifth (the two pictures may be overlapping crops of one photo, neither inside the
other)."""


# -- alignment -----------------------------------------------------------------------------

def align(ref: PreparedImage, qry: PreparedImage) -> Alignment:
    """The best placement of the query on the reference (see the module docstring)."""
    ref_c, kr = grey_at(ref, COARSE_SIDE, by_area=True)
    qry_full, kq = grey_at(qry, COARSE_SIDE, by_area=True)
    sigma = LCN_SIGMA * max(qry_full.shape)
    stretched = _lcn(cv2.resize(ref_c, (qry_full.shape[1], qry_full.shape[0]), interpolation=cv2.INTER_AREA), sigma)
    qry_n = normalized_at(qry, COARSE_SIDE, by_area=True)
    ref_n = normalized_at(ref, COARSE_SIDE, by_area=True)  # each window is placed on the same normalized pictures
    (rw, rh), (qw, qh) = ref.content_size, qry.content_size

    def place(windows: Sequence[Window], reverse_windows: Sequence[Window]) -> list[Alignment]:
        found = []
        for window in windows:
            part, (left, top) = _window(qry_full, window)
            score, f, (x, y) = _best_placement(ref_c, part, _scales(ref_c, part), ref_n)
            if score > -1:
                # ref_c = f * (qry_c - (left, top)) + loc  ->  ref content = (f * kq * q + loc - f * (left, top)) / kr
                found.append(Alignment(f * kq / kr, f * kq / kr, (x - f * left) / kr, (y - f * top) / kr, score,
                                       "query_in_reference", window))
            score = ncc(_window(stretched, window)[0], _window(qry_n, window)[0])
            found.append(Alignment(rw / qw, rh / qh, 0.0, 0.0, score, "stretch", window))
        for window in reverse_windows:  # parts of the reference, placed on the query
            part, (left, top) = _window(ref_c, window)
            score, g, (x, y) = _best_placement(qry_full, part, _scales(qry_full, part), qry_n)
            if score > -1:
                # qry_c = g * (ref_c - (left, top)) + loc  ->  ref content = ((kq * q - loc) / g + (left, top)) / kr
                found.append(Alignment(kq / (g * kr), kq / (g * kr), (left - x / g) / kr, (top - y / g) / kr, score,
                                       "reference_in_query", window))
        return found

    # Whole pictures first; the parts only when no whole placement is convincing.
    candidates = place(QUERY_WINDOWS[:1], QUERY_WINDOWS[:1])
    if max(c.score for c in candidates) < CONVINCING:
        candidates += place(query_windows(qry)[1:], QUERY_WINDOWS[1:])
    # Coarse scores of different windows and modes are not comparable (a smaller template
    # finds a high peak more easily), so the best few are refined and judged alike: by the
    # correlation they reach over the query at working resolution.
    candidates.sort(key=lambda a: -a.score)
    finalists = [c if c.mode == "stretch" else _refine(ref, qry, c) for c in candidates[:FINALISTS]]
    return max(finalists, key=lambda a: _placement_score(ref, qry, a))


def query_windows(qry: PreparedImage) -> tuple[Window, ...]:
    """QUERY_WINDOWS, plus the tallest strip clear of bands and printed text when the query
    seems to carry them."""
    free = band_free_strip(qry)
    return QUERY_WINDOWS + (((0.0, free[0], 1.0, free[1]),) if free else ())


def thumbnail(image: PreparedImage, side: int = SCAN_SIDE) -> np.ndarray:
    """Grey float32 picture of about side x side pixels, for `scan_score`."""
    return grey_at(image, side, by_area=True)[0]


def descriptors(thumb: np.ndarray, parts: Sequence[Window], side: int = DESCRIPTOR_SIDE) -> np.ndarray:
    """Each part of a thumbnail as a side² unit vector, locally contrast-normalized (a
    band's darkening or a re-toned copy barely moves it), so that a dot product is a
    correlation: (len(parts), side²) float32, for a vectorized first ranking of thumbnails."""
    found = []
    for part in parts:
        small = _lcn(cv2.resize(_window(thumb, part)[0], (side, side), interpolation=cv2.INTER_AREA), 1.0).ravel()
        small = small - small.mean()
        norm = float(np.linalg.norm(small))
        found.append(small / norm if norm > 1e-6 else small)
    return np.array(found, dtype=np.float32)


def scan_score(ref_thumb: np.ndarray, query_thumb: np.ndarray, windows: Sequence[Window] = QUERY_WINDOWS,
               templates: Optional[dict] = None) -> float:
    """A quick version of the alignment search on thumbnails (SCAN_SCALES scales 10% apart,
    each query window, and the whole reference on the query): the best correlation any
    placement reaches. Used to rank candidates for `compare`, never to decide a match.
    `templates`: a dict kept across the calls of one query thumbnail, so that its resized,
    normalized windows are made once per size (corpus thumbnails share a few shapes)."""
    best = -1.0
    ref_n = _lcn(ref_thumb, LCN_SIGMA * max(ref_thumb.shape))  # normalized once for every window
    for window in windows:
        part, _ = _window(query_thumb, window)
        fit = min(ref_thumb.shape[0] / part.shape[0], ref_thumb.shape[1] / part.shape[1])
        best = max(best, _best_placement(ref_thumb, part, [fit * 0.9**i for i in range(SCAN_SCALES)], ref_n,
                                         templates=templates, part_key=window)[0])
    fit = min(query_thumb.shape[0] / ref_thumb.shape[0], query_thumb.shape[1] / ref_thumb.shape[1])
    return max(best, _best_placement(query_thumb, ref_thumb, [fit * 0.9**i for i in range(SCAN_SCALES)])[0])


def _placement_score(ref: PreparedImage, qry: PreparedImage, al: Alignment) -> float:
    """Correlation of the locally normalized pictures over the query pixels the reference
    covers, with `al` applied at working resolution (-1 when it covers under MIN_OVERLAP)."""
    r, kr = grey_at(ref, WORK_SIDE)
    q, kq = grey_at(qry, WORK_SIDE)
    matrix = np.array([[kr * al.sx / kq, 0.0, kr * al.tx], [0.0, kr * al.sy / kq, kr * al.ty]])
    matrix[:, 2] += 0.5 * (np.diag(matrix[:, :2]) - 1.0)
    size = (q.shape[1], q.shape[0])
    sigma = LCN_SIGMA * max(q.shape)
    warped = cv2.warpAffine(r, matrix, size, flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP)
    covered = cv2.warpAffine(np.ones(r.shape, np.uint8), matrix, size, flags=cv2.INTER_NEAREST | cv2.WARP_INVERSE_MAP)
    covered = cv2.erode(covered, np.ones((5, 5), np.uint8), borderType=cv2.BORDER_CONSTANT, borderValue=0).astype(bool)
    if covered.mean() < MIN_OVERLAP:
        return -1.0
    return ncc(_lcn(warped, sigma), normalized_at(qry, WORK_SIDE), covered)


def _window(grey: np.ndarray, window: Window) -> tuple[np.ndarray, tuple[int, int]]:
    """The part of `grey` inside `window`, and its top-left corner (left, top) in pixels."""
    h, w = grey.shape
    left, top = round(window[0] * w), round(window[1] * h)
    right, bottom = max(left + 1, round(window[2] * w)), max(top + 1, round(window[3] * h))
    return grey[top:bottom, left:right], (left, top)


def _refine(ref: PreparedImage, qry: PreparedImage, coarse: Alignment) -> Alignment:
    """Re-run the placement at working resolution in a small window around `coarse`.
    The template is the matched part (`coarse.window`) of the query (query_in_reference)
    or of the reference (reference_in_query); `f` is big px per template px."""
    inside = coarse.mode == "query_in_reference"
    big_g, kb = grey_at(ref if inside else qry, WORK_SIDE)
    small_g, ks = grey_at(qry if inside else ref, WORK_SIDE)
    small_g, (left, top) = _window(small_g, coarse.window)
    if inside:  # ref_work = loc + f * (qry_work - (left, top))
        f0 = coarse.sx * kb / ks
        x0, y0 = coarse.tx * kb + f0 * left, coarse.ty * kb + f0 * top
    else:  # qry_work = loc + f * (ref_work - (left, top))
        f0 = kb / (coarse.sx * ks)
        x0, y0 = kb * (left / ks - coarse.tx) / coarse.sx, kb * (top / ks - coarse.ty) / coarse.sy
    sigma = LCN_SIGMA * max(big_g.shape)
    big_n = normalized_at(ref if inside else qry, WORK_SIDE)
    best = (-2.0, f0, (x0, y0))
    templates: dict[tuple[int, int], Optional[np.ndarray]] = {}  # (width, height) -> normalized template, None when flat
    # Two passes: ±4% in 1% steps within 6 px, then ±1% in 0.25% steps within 2 px.
    for spread, steps, margin in ((0.04, 9, 6), (0.01, 9, 2)):
        f_center, (xc, yc) = best[1], best[2]
        tried: set[tuple[int, int]] = set()
        for step in np.linspace(-spread, spread, steps):
            f = f_center * (1.0 + step)
            tw, th = round(small_g.shape[1] * f), round(small_g.shape[0] * f)
            # Neighbouring steps often round to the same size: within a pass that is the same
            # template over the same area, which cannot beat itself.
            if tw > big_g.shape[1] or th > big_g.shape[0] or min(tw, th) < 8 or (tw, th) in tried:
                continue
            tried.add((tw, th))
            x_from = int(max(0, min(big_g.shape[1] - tw, round(xc) - margin)))
            y_from = int(max(0, min(big_g.shape[0] - th, round(yc) - margin)))
            area = big_n[y_from:min(big_g.shape[0], y_from + th + 2 * margin), x_from:min(big_g.shape[1], x_from + tw + 2 * margin)]
            if (tw, th) not in templates:
                template = cv2.resize(small_g, (tw, th), interpolation=cv2.INTER_AREA)
                templates[tw, th] = None if template.std() < 1e-3 else _lcn(template, sigma)
            if templates[tw, th] is None:
                continue
            value, loc = _match(area, templates[tw, th])
            if value > best[0]:
                best = (value, f, (x_from + loc[0], y_from + loc[1]))
    score, f, (x, y) = best
    if score <= -1.0:  # nothing fitted at this resolution (tiny images): keep the coarse placement
        return coarse
    # The rounded template size sets the true scale on each axis.
    fx = round(small_g.shape[1] * f) / small_g.shape[1]
    fy = round(small_g.shape[0] * f) / small_g.shape[0]
    if inside:
        return Alignment(fx * ks / kb, fy * ks / kb, (x - fx * left) / kb, (y - fy * top) / kb, score, coarse.mode, coarse.window)
    return Alignment(kb / (fx * ks), kb / (fy * ks), (left - x / fx) / ks, (top - y / fy) / ks, score, coarse.mode, coarse.window)


def _scales(big: np.ndarray, small: np.ndarray) -> list[float]:
    fit = min(big.shape[0] / small.shape[0], big.shape[1] / small.shape[1])
    ratio = 0.9  # 10% steps; refinement (±5%) covers the gaps
    count = int(np.floor(np.log(MIN_SCALE) / np.log(ratio))) + 1
    return [fit * ratio**i for i in range(count)]


def _best_placement(big: np.ndarray, small: np.ndarray, scales: list[float], big_n: Optional[np.ndarray] = None, *,
                    templates: Optional[dict] = None, part_key: object = None) -> tuple[float, float, tuple[int, int]]:
    """Best (score, scale, top-left) of `small` resized by each scale inside `big`, matched
    on locally contrast-normalized images (see `_lcn`; `big_n`: `big` already normalized;
    `templates`: normalized templates of `small`, known as `part_key`, kept across calls)."""
    sigma = LCN_SIGMA * max(big.shape)
    if big_n is None:
        big_n = _lcn(big, sigma)
    best: tuple[float, float, tuple[int, int]] = (-2.0, 1.0, (0, 0))
    for f in scales:
        tw, th = int(small.shape[1] * f), int(small.shape[0] * f)
        if min(tw, th) < 8 or tw > big.shape[1] or th > big.shape[0]:
            continue
        key = (part_key, tw, th, sigma)
        template_n = templates.get(key) if templates is not None else None
        if template_n is None:
            template = cv2.resize(small, (tw, th), interpolation=cv2.INTER_AREA)
            template_n = False if template.std() < 1e-3 else _lcn(template, sigma)  # False: a flat template
            if templates is not None:
                templates[key] = template_n
        if template_n is False:
            continue
        value, loc = _match(big_n, template_n)
        if value > best[0]:
            best = (value, tw / small.shape[1], loc)
    return best


def _match(big_n: np.ndarray, template_n: np.ndarray) -> tuple[float, tuple[int, int]]:
    result = cv2.matchTemplate(big_n, template_n, cv2.TM_CCOEFF_NORMED)
    if not np.isfinite(result).all():  # rare (a flat patch): the check costs far less than the copy
        result = np.nan_to_num(result, nan=-1.0, posinf=-1.0, neginf=-1.0)
    _, value, _, loc = cv2.minMaxLoc(result)
    return float(value), (int(loc[0]), int(loc[1]))


def _lcn(grey: np.ndarray, sigma: float) -> np.ndarray:
    """Local contrast normalization: (I - local mean) / (local std + 4 grey levels).
    A caption band that darkens or lightens the photo under it (a local gain/offset)
    leaves this unchanged, so alignment is not pulled off by it."""
    sigma = max(0.8, sigma)
    mean = cv2.GaussianBlur(grey, (0, 0), sigma)
    centered = grey - mean
    spread = np.sqrt(np.maximum(cv2.GaussianBlur(centered * centered, (0, 0), sigma), 0.0))
    return (centered / (spread + 4.0)).astype(np.float32)


def grey_at(image: PreparedImage, side: int, *, by_area: bool = False) -> tuple[np.ndarray, float]:
    """Grey float32 content with long side `side` (or, `by_area`, about side x side pixels,
    so a wide strip keeps detail across), never upscaled; and its px per content px.
    Computed once per image and size (read-only: every caller shares it)."""
    key = ("grey", side, by_area)
    found = image.derived.get(key)
    if found is None:
        grey, k = _grey_at(image, side, by_area)
        grey.setflags(write=False)
        found = image.derived.setdefault(key, (grey, k))
    return found


def normalized_at(image: PreparedImage, side: int, *, by_area: bool = False) -> np.ndarray:
    """`grey_at`'s picture locally contrast-normalized at its own scale (`_lcn`), computed
    once per image and size (read-only)."""
    key = ("normalized", side, by_area)
    found = image.derived.get(key)
    if found is None:
        grey = grey_at(image, side, by_area=by_area)[0]
        found = _lcn(grey, LCN_SIGMA * max(grey.shape))
        found.setflags(write=False)
        found = image.derived.setdefault(key, found)
    return found


def _grey_at(image: PreparedImage, side: int, by_area: bool) -> tuple[np.ndarray, float]:
    rgb = image.rgb
    height, width = rgb.shape[:2]
    factor = min(1.0, side / np.sqrt(height * width) if by_area else side / max(height, width))
    if factor < 1.0:
        rgb = cv2.resize(rgb, (max(1, round(rgb.shape[1] * factor)), max(1, round(rgb.shape[0] * factor))), interpolation=cv2.INTER_AREA)
    grey = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY).astype(np.float32)
    return grey, image.scale * rgb.shape[1] / image.rgb.shape[1]


def ncc(a: np.ndarray, b: np.ndarray, mask: Optional[np.ndarray] = None) -> float:
    if mask is not None:
        a, b = a[mask], b[mask]
    a = a.astype(np.float64).ravel() - a.mean()
    b = b.astype(np.float64).ravel() - b.mean()
    denom = np.sqrt((a * a).sum() * (b * b).sum())
    return float((a * b).sum() / denom) if denom > 1e-9 else 0.0
