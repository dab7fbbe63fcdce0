"""Terminals the console meets over ssh: 80×24, no mouse, NO_COLOR, 256 colours, true colour.

The colour tests run `kueuetop` on a real pty against the served cluster and read the escape
sequences it writes: Textual downgrades colours to what TERM/COLORTERM announce, and under
NO_COLOR it draws in greys (with kueuetop's mono theme, whose heatmap uses shade glyphs).
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from rich.color import Color, ColorSystem
from textual.pilot import Pilot

from kueuetop.sim.serve import ServedCluster
from kueuetop.tui import keymap as KM
from kueuetop.tui.heatmap import LEVELS, level_colour
from kueuetop.tui.themes import load_themes
from tests.tui.screen_text import screen_text
from tests.tui.test_app import make_app, run, until

from .conftest import Live

MOUSE_ON = b"\x1b[?1000h"


def _footer_words(scope: str) -> list[str]:
    """What the footer must show whole in a view: its own shown actions, then the global ones."""
    out = []
    for a in KM.load_keymap().actions(scope) + KM.load_keymap().actions(KM.GLOBAL):
        if a.show:
            out.append(a.description + ("!" if a.evicts else ""))
    return out


def test_every_view_footer_and_status_bar_fit_80x24(live: Live) -> None:
    app = make_app(live.store, live, demo="refarch")

    async def body(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: "cq-team-" in screen_text(app))
        for v in KM.VIEWS:
            await pilot.press(v.key)
            assert await until(pilot, lambda v=v: app.switcher.current == v.name)
            await pilot.pause(0.2)
            lines = screen_text(app).splitlines()
            assert len(lines) == 24 and all(len(line) <= 80 for line in lines)
            footer, status = lines[-1], lines[-2]
            for word in _footer_words(v.name):
                assert word in footer, (v.name, word, footer)
            assert "Help" in footer and "▏" not in footer  # nothing cut off at the right edge
            assert "DEMO" in status and "kueuetop-sim" in status and "kube:" in status, status
            assert v.title.split()[0] in lines[0], lines[0]  # the view's title line is on screen
        # The detail screen's keys fit too.
        await pilot.press("2", "enter")
        assert await until(pilot, lambda: "Why (explain)" in screen_text(app))
        footer = screen_text(app).splitlines()[-1]
        for word in ("Back", "Hold", "Resume", "Requeue", "Preempt!"):
            assert word in footer, footer

    run(app, body, size=(80, 24))


def test_heatmap_scale_stays_a_scale_in_256_and_16_colours() -> None:
    # Themes are written in hex; on a 256-colour terminal Textual maps each level to the palette.
    # The scale must still read low → high there, not collapse to a couple of colours.
    for name, th in load_themes().themes.items():
        levels = [level_colour(th, i / (LEVELS - 1)) for i in range(LEVELS)]
        eight = [Color.parse(c).downgrade(ColorSystem.EIGHT_BIT).number for c in levels]
        assert len(set(eight)) >= 8, (name, eight)
        assert eight[0] != eight[LEVELS // 2] != eight[-1], (name, eight)
        standard = {Color.parse(c).downgrade(ColorSystem.STANDARD).number for c in levels}
        assert len(standard) >= 3 or th.shaded, (name, standard)


# ------------------------------------------------------------------ on a real pty
def _run_on_pty(kubeconfig: Path, env_changes: dict[str, str | None], args: list[str], cwd: Path) -> tuple[bytes, int]:
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = dict(os.environ)
    for k, v in env_changes.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    proc = subprocess.Popen([sys.executable, "-m", "kueuetop", "--kubeconfig", str(kubeconfig), *args],
                            stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd, start_new_session=True)
    os.close(slave)
    buf = b""
    try:
        deadline = time.monotonic() + 60
        while b"Overview" not in buf and time.monotonic() < deadline and proc.poll() is None:
            if select.select([master], [], [], 0.2)[0]:
                buf += os.read(master, 65536)
        time.sleep(1.0)  # a few more frames (data, colours)
        while select.select([master], [], [], 0.2)[0]:
            buf += os.read(master, 65536)
        os.write(master, b"\x11")  # ctrl+q
        deadline = time.monotonic() + 15
        while proc.poll() is None and time.monotonic() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                try:
                    buf += os.read(master, 65536)
                except OSError:
                    break
        code = proc.wait(5)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
        os.close(master)
    return buf, code


_RGB = re.compile(rb"[34]8;2;(\d+);(\d+);(\d+)")


@pytest.mark.parametrize("mode", ["truecolor", "256", "no-color"])
def test_colour_modes_render(mode: str, served: ServedCluster, tmp_path: Path) -> None:
    env: dict[str, str | None] = {"TERM": "xterm-256color", "COLORTERM": None, "NO_COLOR": None,
                                  "TEXTUAL_COLOR_SYSTEM": None}
    args: list[str] = []
    if mode == "truecolor":
        env["COLORTERM"] = "truecolor"
    elif mode == "256":
        args = ["--no-mouse"]
    else:
        env.update(COLORTERM="truecolor", NO_COLOR="1")
    out, code = _run_on_pty(served.kubeconfig, env, args, tmp_path)
    assert b"Overview" in out and b"Traceback" not in out, out[-2000:]
    assert code == 0, out[-2000:]
    if mode == "truecolor":
        assert _RGB.search(out) and MOUSE_ON in out
    elif mode == "256":
        assert re.search(rb"[34]8;5;\d+", out) and not _RGB.search(out)
        assert MOUSE_ON not in out  # --no-mouse
    else:
        greys = {(r, g, b) for r, g, b in _RGB.findall(out)}
        assert greys and all(r == g == b for r, g, b in greys), sorted(greys)[:5]
