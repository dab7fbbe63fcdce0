"""Themes as files: shipped TOML plus user TOML, validated into `KueuetopTheme`.

A theme is a Textual `Theme` (the UI palette) plus what Textual has no slot for: the heatmap
colour scale, the allocated-but-idle marker and the workload state colours. A bad user file
never crashes the console: it is skipped with a message (file, field, problem) and the default
is used instead. `NO_COLOR` selects `mono`, whose heatmap carries values with shade glyphs.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from textual.color import Color, ColorParseError
from textual.theme import Theme

from kueuetop.tui._paths import config_dir

DEFAULT = "dark"
MONO = "mono"
UI_FIELDS = ("primary", "secondary", "accent", "foreground", "background", "surface", "panel",
             "warning", "error", "success")
STATES = ("pending", "admitted", "evicted", "inactive", "finished", "stale")
_TOP_KEYS = {"name", "description", "dark", "extends", "ui", "heatmap", "states"}
_HEATMAP_KEYS = {"scale", "idle", "shaded"}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


@dataclass(frozen=True, slots=True)
class KueuetopTheme:
    name: str
    textual: Theme
    heatmap_scale: tuple[str, ...]  # "#RRGGBB", 0 % → 100 %
    idle: str
    states: Mapping[str, str]
    shaded: bool = False  # draw heatmap intensity with glyphs (no-colour terminals)
    description: str = ""
    source: str = ""  # file it came from, for `kueuetop` to say which theme is in use

    @property
    def dark(self) -> bool:
        return self.textual.dark


@dataclass(slots=True)
class ThemeSet:
    themes: dict[str, KueuetopTheme] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # one line each: "FILE: FIELD: PROBLEM"

    def get(self, name: str | None, *, no_color: bool = False) -> tuple[KueuetopTheme, list[str]]:
        """The theme to use, and messages explaining any fallback. Never raises."""
        notes: list[str] = []
        if no_color:
            name = MONO  # no-color.org: a set, non-empty NO_COLOR means no colour, whatever was chosen
        wanted = name or DEFAULT
        if wanted in self.themes:
            return self.themes[wanted], notes
        notes.append(f"theme {wanted!r} not found (have: {', '.join(sorted(self.themes)) or 'none'}); "
                     f"using {DEFAULT!r}")
        return self.themes.get(DEFAULT) or _EMERGENCY, notes


class ThemeError(ValueError):
    def __init__(self, source: str, fieldname: str, problem: str) -> None:
        # A field name is whatever the file holds: shown quoted when it is not plain text.
        shown = fieldname if fieldname.isprintable() else repr(fieldname)
        super().__init__(f"{source}: {shown}: {problem}")


def no_color(env: Mapping[str, str] | None = None) -> bool:
    env = os.environ if env is None else env
    return bool(env.get("NO_COLOR"))


def shipped_dir() -> Traversable | None:
    """Shipped themes: `kueuetop/themes` inside an installed wheel, else `themes/` of a checkout."""
    candidates: list[Traversable] = [resources.files("kueuetop") / "themes"]
    candidates.append(Path(__file__).resolve().parents[2] / "themes")
    for c in candidates:
        if c.is_dir() and any(p.name.endswith(".toml") for p in c.iterdir()):
            return c
    return None


def user_dir(env: Mapping[str, str] | None = None) -> Path:
    return config_dir(env) / "themes"


def load_themes(user: Path | None = None, shipped: Traversable | None = None,
                env: Mapping[str, str] | None = None) -> ThemeSet:
    """Shipped themes, then user themes over them (same name → the user's wins)."""
    out = ThemeSet()
    base = shipped if shipped is not None else shipped_dir()
    if base is None:
        out.problems.append("shipped themes not found; using the built-in default")
        out.themes[DEFAULT] = _EMERGENCY
    else:
        _load_dir(base, out, label="shipped")
    udir = user if user is not None else user_dir(env)
    if udir.is_dir():
        _load_dir(udir, out, label=str(udir))
    if DEFAULT not in out.themes:
        out.themes[DEFAULT] = _EMERGENCY
    return out


def _load_dir(d: Traversable, out: ThemeSet, label: str) -> None:
    try:
        files = sorted((p for p in d.iterdir() if p.name.endswith(".toml")), key=lambda p: p.name)
    except OSError as e:
        out.problems.append(f"{label}: cannot list themes: {e}")
        return
    raw: dict[str, tuple[str, dict[str, Any]]] = {}
    for f in files:
        src = str(f)
        try:
            data = tomllib.loads(f.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as e:
            out.problems.append(f"{src}: (file): cannot read: {e}")
            continue
        except (tomllib.TOMLDecodeError, ValueError, RecursionError) as e:
            # tomllib raises ValueError for an integer of thousands of digits (int() refuses it)
            # and RecursionError for arrays nested thousands deep: bad files all the same.
            out.problems.append(f"{src}: (file): not valid TOML: {e}")
            continue
        name = data.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            out.problems.append(f"{src}: name: required; letters, digits, '-' and '_' (got {name!r})")
            continue
        raw[name] = (src, data)
    # Two passes so `extends` can name a theme of the same directory regardless of file order.
    for name, (src, data) in raw.items():
        try:
            out.themes[name] = parse_theme(data, src, out.themes, raw)
        except ThemeError as e:
            out.problems.append(str(e))


def parse_theme(data: Mapping[str, Any], source: str = "<theme>",
                known: Mapping[str, KueuetopTheme] | None = None,
                siblings: Mapping[str, tuple[str, dict[str, Any]]] | None = None) -> KueuetopTheme:
    """Validate one theme document; raise `ThemeError` naming the first bad field."""
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise ThemeError(source, sorted(unknown)[0], f"unknown field (allowed: {', '.join(sorted(_TOP_KEYS))})")
    parent = data.get("extends")
    if parent is not None:
        data = _merge(_resolve_parent(parent, source, known or {}, siblings or {}), data)
    name = data.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ThemeError(source, "name", f"required; letters, digits, '-' and '_' (got {name!r})")
    dark = data.get("dark", True)
    if not isinstance(dark, bool):
        raise ThemeError(source, "dark", f"must be true or false (got {dark!r})")
    desc = data.get("description", "")
    if not isinstance(desc, str):
        raise ThemeError(source, "description", "must be a string")

    ui = _table(data, "ui", source)
    bad = set(ui) - set(UI_FIELDS)
    if bad:
        raise ThemeError(source, f"ui.{sorted(bad)[0]}", f"unknown field (allowed: {', '.join(UI_FIELDS)})")
    palette = {k: _colour(ui.get(k), f"ui.{k}", source) for k in UI_FIELDS}

    hm = _table(data, "heatmap", source)
    bad = set(hm) - _HEATMAP_KEYS
    if bad:
        raise ThemeError(source, f"heatmap.{sorted(bad)[0]}", "unknown field (allowed: idle, scale, shaded)")
    scale = hm.get("scale")
    if not isinstance(scale, list) or len(scale) < 2:
        raise ThemeError(source, "heatmap.scale", "needs a list of at least 2 colours, 0 % → 100 %")
    colours = tuple(_colour(c, f"heatmap.scale[{i}]", source) for i, c in enumerate(scale))
    idle = _colour(hm.get("idle"), "heatmap.idle", source)
    shaded = hm.get("shaded", False)
    if not isinstance(shaded, bool):
        raise ThemeError(source, "heatmap.shaded", f"must be true or false (got {shaded!r})")

    st = _table(data, "states", source)
    bad = set(st) - set(STATES)
    if bad:
        raise ThemeError(source, f"states.{sorted(bad)[0]}", f"unknown state (allowed: {', '.join(STATES)})")
    states = {k: _colour(st.get(k), f"states.{k}", source) for k in STATES}

    textual = Theme(name=name, dark=dark, **palette, variables=_variables(states, colours, idle))
    return KueuetopTheme(name=name, textual=textual, heatmap_scale=colours, idle=idle, states=states,
                         shaded=shaded, description=desc, source=source)


def _resolve_parent(parent: object, source: str, known: Mapping[str, KueuetopTheme],
                    siblings: Mapping[str, tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    if not isinstance(parent, str):
        raise ThemeError(source, "extends", "must be a theme name")
    if parent in siblings and siblings[parent][0] != source:
        pdata = siblings[parent][1]
        if pdata.get("extends") is not None:
            raise ThemeError(source, "extends", f"{parent!r} itself extends another theme; one level only")
        return dict(pdata)
    if parent in known:
        return to_document(known[parent])
    raise ThemeError(source, "extends", f"unknown theme {parent!r}")


def to_document(t: KueuetopTheme) -> dict[str, Any]:
    """The TOML-shaped document of a loaded theme (what `extends` starts from)."""
    tt = t.textual
    return {
        "name": t.name, "description": t.description, "dark": tt.dark,
        "ui": {k: getattr(tt, k) for k in UI_FIELDS},
        "heatmap": {"scale": list(t.heatmap_scale), "idle": t.idle, "shaded": t.shaded},
        "states": dict(t.states),
    }


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        if k == "extends":
            continue
        out[k] = _merge(base[k], v) if isinstance(v, Mapping) and isinstance(base.get(k), Mapping) else v
    return out


def _table(data: Mapping[str, Any], key: str, source: str) -> Mapping[str, Any]:
    v = data.get(key)
    if not isinstance(v, Mapping):
        raise ThemeError(source, key, f"required table [{key}] is missing")
    return v


def _colour(value: object, fieldname: str, source: str) -> str:
    if value is None:
        raise ThemeError(source, fieldname, "required colour is missing")
    if not isinstance(value, str):
        raise ThemeError(source, fieldname, f"must be a colour string (got {value!r})")
    try:
        return Color.parse(value).hex
    except ColorParseError as e:
        raise ThemeError(source, fieldname, f"not a colour: {value!r} ({e})") from None


def _variables(states: Mapping[str, str], scale: tuple[str, ...], idle: str) -> dict[str, str]:
    # TCSS can then say `color: $state-pending;` under any kueuetop theme.
    v = {f"state-{k}": c for k, c in states.items()}
    v.update({"heat-low": scale[0], "heat-high": scale[-1], "heat-idle": idle})
    return v


def variable_defaults() -> dict[str, str]:
    """For `App.get_theme_variable_defaults`: so TCSS using our variables parses under any theme."""
    return dict(_EMERGENCY.textual.variables)


# Used only when no shipped theme can be found (a broken install): the console still starts.
_EMERGENCY = parse_theme({
    "name": DEFAULT, "description": "built-in fallback", "dark": True,
    "ui": {"primary": "#4EA1FF", "secondary": "#8C9EFF", "accent": "#FFB454", "foreground": "#D8DEE9",
           "background": "#15181E", "surface": "#1D2129", "panel": "#262B35", "warning": "#FFB454",
           "error": "#FF6B6B", "success": "#5FD787"},
    "heatmap": {"scale": ["#440154", "#31688E", "#35B779", "#FDE725"], "idle": "#FF5FAF"},
    "states": {"pending": "#FFB454", "admitted": "#5FD787", "evicted": "#FF6B6B", "inactive": "#8C8C8C",
               "finished": "#5C6370", "stale": "#6C6C6C"},
}, "<built-in>")
