"""Glyph sets: unicode (the default) and `--ascii` for `LANG=C` ssh sessions and poor fonts.

Every drawing module takes a `Glyphs` instead of hard-coding characters, so `--ascii` is one switch
and a test can assert that no block or box character leaks into ASCII output.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Glyphs:
    name: str
    half_block: str | None  # "▀": fg = upper pixel, bg = lower pixel; None → one pixel per character
    shades: str  # intensity ramp, low → high; used when colour can't carry the value
    stale: str  # no current value (stale series, N/A sentinel, missing GPU): never drawn as 0 %
    idle: str  # allocated to a pod but (nearly) unused
    bar_used: str  # quota admitted usage within nominal
    bar_reserved: str  # quota reserved but not (yet) admitted, within nominal
    bar_borrowed: str  # anything beyond nominal: borrowed from the cohort
    bar_free: str  # unused nominal quota
    bar_headroom: str  # could still be borrowed (up to borrowingLimit)
    tick_lend: str  # nominal − lendingLimit: the part that is never lent out
    tick_borrow: str  # nominal + borrowingLimit: the most this queue may hold
    ellipsis: str
    spark: str = "▁▂▃▄▅▆▇█"  # sparkline levels, low → high

    @property
    def unicode(self) -> bool:
        return self.half_block is not None


UNICODE = Glyphs(
    name="unicode",
    half_block="▀",
    shades="·░▒▓█",
    stale="?",
    idle="!",
    bar_used="█",
    bar_reserved="▓",
    bar_borrowed="▒",
    bar_free="·",
    bar_headroom=" ",
    tick_lend="┆",
    tick_borrow="┃",
    ellipsis="…",
)

ASCII = Glyphs(
    name="ascii",
    half_block=None,
    shades=".:-=+*#%@",
    stale="?",
    idle="!",
    bar_used="#",
    bar_reserved="=",
    bar_borrowed="+",
    bar_free=".",
    bar_headroom=" ",
    tick_lend="|",
    tick_borrow="]",
    ellipsis="~",
    spark="_.-~=+*#",
)


def glyphs(ascii_only: bool = False) -> Glyphs:
    return ASCII if ascii_only else UNICODE
