"""Line charts as PNG files, drawn with numpy and written with zlib.

A PNG opens anywhere, and drawing a few lines, ticks and words takes less
than a plotting library would add: the charts here use a 5x7 bitmap font
(lower-case letters, digits and a little punctuation) and no anti-aliasing.
"""

from __future__ import annotations

import itertools
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

WIDTH, HEIGHT = 900, 540
LEFT, RIGHT, TOP, BOTTOM = 80, 200, 50, 60
COLORS = (
    (51, 102, 204),
    (220, 57, 18),
    (255, 153, 0),
    (16, 150, 24),
    (153, 0, 153),
    (0, 153, 198),
    (102, 102, 102),
    (184, 46, 46),
)
INK, GRID, PAPER = (40, 40, 40), (225, 225, 225), (255, 255, 255)

# 5x7 glyphs: seven rows of five pixels, '#' on
_FONT = """
0 .###. #...# #..## #.#.# ##..# #...# .###.
1 ..#.. .##.. ..#.. ..#.. ..#.. ..#.. .###.
2 .###. #...# ....# ...#. ..#.. .#... #####
3 ####. ....# ....# .###. ....# ....# ####.
4 ...#. ..##. .#.#. #..#. ##### ...#. ...#.
5 ##### #.... ####. ....# ....# #...# .###.
6 .###. #.... #.... ####. #...# #...# .###.
7 ##### ....# ...#. ..#.. .#... .#... .#...
8 .###. #...# #...# .###. #...# #...# .###.
9 .###. #...# #...# .#### ....# ....# .###.
a ..... ..... .###. ....# .#### #...# .####
b #.... #.... ####. #...# #...# #...# ####.
c ..... ..... .###. #.... #.... #...# .###.
d ....# ....# .#### #...# #...# #...# .####
e ..... ..... .###. #...# ##### #.... .###.
f ..##. .#... ####. .#... .#... .#... .#...
g ..... ..... .#### #...# .#### ....# .###.
h #.... #.... ####. #...# #...# #...# #...#
i ..#.. ..... .##.. ..#.. ..#.. ..#.. .###.
j ...#. ..... ..##. ...#. ...#. #..#. .##..
k #.... #.... #..#. #.#.. ##... #.#.. #..#.
l .##.. ..#.. ..#.. ..#.. ..#.. ..#.. .###.
m ..... ..... ##.#. #.#.# #.#.# #.#.# #.#.#
n ..... ..... ####. #...# #...# #...# #...#
o ..... ..... .###. #...# #...# #...# .###.
p ..... ..... ####. #...# ####. #.... #....
q ..... ..... .#### #...# .#### ....# ....#
r ..... ..... #.##. ##..# #.... #.... #....
s ..... ..... .####. #.... .###. ....# ####.
t .#... .#... ####. .#... .#... .#..# ..##.
u ..... ..... #...# #...# #...# #..## .##.#
v ..... ..... #...# #...# #...# .#.#. ..#..
w ..... ..... #...# #...# #.#.# #.#.# .#.#.
x ..... ..... #...# .#.#. ..#.. .#.#. #...#
y ..... ..... #...# #...# .#### ....# .###.
z ..... ..... ##### ...#. ..#.. .#... #####
% ##..# ##..# ...#. ..#.. .#... #..## #..##
- ..... ..... ..... ##### ..... ..... .....
. ..... ..... ..... ..... ..... .##.. .##..
, ..... ..... ..... ..... .##.. ..#.. .#...
: ..... .##.. .##.. ..... .##.. .##.. .....
( ...#. ..#.. .#... .#... .#... ..#.. ...#.
) .#... ..#.. ...#. ...#. ...#. ..#.. .#...
/ ....# ...#. ...#. ..#.. .#... .#... #....
= ..... ..... ##### ..... ##### ..... .....
+ ..... ..#.. ..#.. ##### ..#.. ..#.. .....
_ ..... ..... ..... ..... ..... ..... #####
"""
_GLYPHS = {
    line[0]: np.array([[c == "#" for c in row[:5]] for row in line[2:].split()], dtype=bool)
    for line in _FONT.strip().splitlines()
}
_BLANK = np.zeros((7, 5), dtype=bool)


def _glyph(char: str) -> np.ndarray:
    return _GLYPHS.get(char.lower(), _BLANK)


@dataclass(frozen=True, slots=True)
class Line:
    label: str
    xs: Sequence[float]
    ys: Sequence[float]


class Canvas:
    def __init__(self, width: int, height: int) -> None:
        self.pixels = np.full((height, width, 3), PAPER, dtype=np.uint8)

    def line(
        self, x0: float, y0: float, x1: float, y1: float, color: tuple[int, ...], width: int = 1
    ) -> None:
        steps = int(max(abs(x1 - x0), abs(y1 - y0)) * 2) + 1
        xs = np.rint(np.linspace(x0, x1, steps)).astype(int)
        ys = np.rint(np.linspace(y0, y1, steps)).astype(int)
        h, w, _ = self.pixels.shape
        for dx in range(width):
            for dy in range(width):
                keep = (xs + dx < w) & (ys + dy < h) & (xs + dx >= 0) & (ys + dy >= 0)
                self.pixels[ys[keep] + dy, xs[keep] + dx] = color

    def text(
        self, x: int, y: int, text: str, color: tuple[int, ...] = INK, *, right: bool = False
    ) -> None:
        """Text whose top left (top right if `right`) is at (x, y)."""
        if right:
            x -= 6 * len(text)
        h, w, _ = self.pixels.shape
        for i, char in enumerate(text):
            ys, xs = np.nonzero(_glyph(char))
            xs, ys = xs + x + 6 * i, ys + y
            keep = (xs >= 0) & (xs < w) & (ys >= 0) & (ys < h)
            self.pixels[ys[keep], xs[keep]] = color

    def write(self, path: Path) -> None:
        height, width, _ = self.pixels.shape
        raw = b"".join(b"\x00" + self.pixels[row].tobytes() for row in range(height))

        def chunk(kind: bytes, data: bytes) -> bytes:
            body = kind + data
            return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

        header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
        path.write_bytes(
            b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(raw, 9))
            + chunk(b"IEND", b"")
        )


def _ticks(low: float, high: float, count: int = 6) -> list[float]:
    span = max(high - low, 1e-9)
    raw = span / count
    magnitude = 10 ** np.floor(np.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = np.ceil(low / step) * step
    return [float(v) for v in np.arange(first, high + step / 2, step)]


def line_chart(path: Path, title: str, x_label: str, y_label: str, lines: Sequence[Line]) -> None:
    """Every line on one chart, with a legend on the right."""
    canvas = Canvas(WIDTH, HEIGHT)
    xs = [x for line in lines for x in line.xs] or [0.0, 1.0]
    ys = [y for line in lines for y in line.ys] or [0.0, 1.0]
    x_low, x_high = min(xs), max(xs)
    y_low, y_high = 0.0, max(ys) * 1.05 or 1.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def at(x: float, y: float) -> tuple[float, float]:
        fx = (x - x_low) / ((x_high - x_low) or 1.0)
        fy = (y - y_low) / ((y_high - y_low) or 1.0)
        return LEFT + fx * plot_w, TOP + plot_h - fy * plot_h

    for y in _ticks(y_low, y_high):
        _, py = at(x_low, y)
        canvas.line(LEFT, py, LEFT + plot_w, py, GRID)
        canvas.text(LEFT - 6, int(py) - 3, f"{y:g}", right=True)
    for x in _ticks(x_low, x_high):
        px, _ = at(x, y_low)
        canvas.line(px, TOP, px, TOP + plot_h, GRID)
        canvas.text(int(px) - 3 * len(f"{x:g}"), TOP + plot_h + 8, f"{x:g}")
    canvas.line(LEFT, TOP, LEFT, TOP + plot_h, INK)
    canvas.line(LEFT, TOP + plot_h, LEFT + plot_w, TOP + plot_h, INK)
    canvas.text(LEFT, 18, title)
    canvas.text(LEFT + plot_w // 2 - 3 * len(x_label), HEIGHT - 24, x_label)
    canvas.text(8, TOP - 18, y_label)
    for i, line in enumerate(lines):
        color = COLORS[i % len(COLORS)]
        points = [at(x, y) for x, y in zip(line.xs, line.ys, strict=True)]
        for (x0, y0), (x1, y1) in itertools.pairwise(points):
            canvas.line(x0, y0, x1, y1, color, width=2)
        legend_y = TOP + 16 * i
        canvas.line(LEFT + plot_w + 16, legend_y + 3, LEFT + plot_w + 36, legend_y + 3, color, 2)
        canvas.text(LEFT + plot_w + 42, legend_y, line.label)
    canvas.write(path)
