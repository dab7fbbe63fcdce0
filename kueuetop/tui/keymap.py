"""One registry of console actions, as data; keymaps are data too.

Every action has a stable id (the Textual `Binding.id`, and the name users remap in
`config.toml` `[keys]`), a description for the footer and `?` help, default keys, a scope
(`global` or one view), and the two safety facts the screens need without knowing the action:
`dangerous` (it changes the cluster: hidden in read-only mode, always confirmed) and `needs`
(the RBAC permission it takes, so a forbidden action is greyed out with the reason).
Keys follow k9s: `:` command mode, `/` filter, capital letters sort, `space` marks, ctrl keys for
actions that evict running work, `?` help, `esc` back, `enter` drill down.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from textual.binding import Binding
from textual.keys import Keys, _character_to_key

from kueuetop.kueue.actions import DANGEROUS
from kueuetop.tui._paths import config_dir

GLOBAL = "global"
KUEUE = "kueue.x-k8s.io"


@dataclass(frozen=True, slots=True)
class Need:
    """The permission an action needs, as a SelfSubjectAccessReview asks for it."""
    verb: str
    resource: str
    group: str = KUEUE

    def __str__(self) -> str:
        return f"{self.verb} {self.resource}.{self.group}" if self.group else f"{self.verb} {self.resource}"


@dataclass(frozen=True, slots=True)
class Action:
    id: str  # binding id, e.g. "workload.hold"
    description: str
    keys: tuple[str, ...]  # Textual key names, first one shown in the footer
    scope: str = GLOBAL  # GLOBAL or a view name from VIEWS
    action: str = ""  # Textual action string; default: id with '.'/'-' → '_'
    dangerous: bool = False  # changes the cluster: hidden in read-only mode, confirmed before sending
    evicts: bool = False  # may stop running work (plan.DANGEROUS): ctrl key, stronger confirmation
    needs: Need | None = None
    show: bool = True  # in the footer (all actions are in `?` help); the footer must fit 80 columns,
    # so it shows the view's own actions plus Help and Quit, and keys every view shares only in help

    @property
    def textual_action(self) -> str:
        return self.action or re.sub(r"[.\-]", "_", self.id)


@dataclass(frozen=True, slots=True)
class View:
    name: str
    title: str
    aliases: tuple[str, ...]
    key: str  # digit to jump straight there


VIEWS: tuple[View, ...] = (
    View("overview", "Overview", ("overview", "ov", "home"), "1"),
    View("workloads", "Workloads", ("workloads", "workload", "wl", "wls"), "2"),
    View("clusterqueues", "ClusterQueues", ("clusterqueues", "clusterqueue", "cq", "cqs"), "3"),
    View("localqueues", "LocalQueues", ("localqueues", "localqueue", "lq", "lqs"), "4"),
    View("cohorts", "Cohorts", ("cohorts", "cohort", "co"), "5"),
    View("flavors", "ResourceFlavors", ("resourceflavors", "resourceflavor", "flavors", "rf"), "6"),
    View("nodes", "Nodes", ("nodes", "node", "no"), "7"),
    View("gpus", "GPUs", ("gpus", "gpu", "heatmap"), "8"),
    View("events", "Events", ("events", "event", "ev"), "9"),
)
VIEW_NAMES = frozenset(v.name for v in VIEWS)

# Command mode (`:`) words that are not views; `:q` as in k9s / vi.
# `:whatif [CHANGE]` opens the what-if panel (with a change: runs it at once).
COMMANDS: Mapping[str, str] = {"q": "quit", "quit": "quit", "q!": "quit", "help": "help", "?": "help",
                               "whatif": "whatif", "what-if": "whatif"}


def _wl(verb: str, desc: str, keys: tuple[str, ...], plan_name: str) -> Action:
    return Action(f"workload.{verb}", desc, keys, "workloads", action=f"workload_action('{plan_name}')",
                  dangerous=True, evicts=plan_name in DANGEROUS, needs=Need("patch", "workloads"))


def _queue(kind: str, resource: str, verb: str, desc: str, keys: tuple[str, ...], plan_name: str) -> Action:
    return Action(f"{kind}.{verb}", desc, keys, f"{kind}s", action=f"queue_action('{plan_name}')",
                  dangerous=True, evicts=plan_name in DANGEROUS, needs=Need("patch", resource))


ACTIONS: tuple[Action, ...] = (
    # global navigation
    Action("quit", "Quit", ("ctrl+q",)),
    Action("help", "Help", ("question_mark",)),
    Action("command", "Command", ("colon",), show=False),
    Action("filter", "Filter", ("slash",), show=False),
    Action("back", "Back", ("escape",), show=False),
    Action("drill", "Open", ("enter",), show=False),
    Action("refresh", "Refresh", ("ctrl+r",), show=False),
    Action("palette", "Palette", ("ctrl+p",), show=False),
    Action("mark", "Mark", ("space",), show=False),
    Action("mark.range", "Mark range", ("ctrl+space",), show=False),
    Action("mark.clear", "Clear marks", ("ctrl+backslash",), show=False),
    Action("sort.name", "Sort by name", ("N",), show=False),
    Action("sort.age", "Sort by age", ("A",), show=False),
    Action("sort.status", "Sort by status", ("S",), show=False),
    Action("sort.namespace", "Sort by namespace", ("P",), show=False),
    Action("sort.column", "Sort by selected column", ("O",), show=False),
    Action("wide", "Wide columns", ("ctrl+w",), show=False),
    Action("yaml", "YAML", ("y",), show=False),
    Action("describe", "Describe", ("d",), show=False),
    # The what-if panel: ETAs before and after a quota, hold or node-pool change.
    Action("forecast.whatif", "What-if", ("w",), show=False),
    *(Action(f"view.{v.name}", v.title, (v.key,), action=f"switch_view('{v.name}')", show=False) for v in VIEWS),
    # workloads
    Action("workload.explain", "Why", ("x",), "workloads"),
    Action("sort.position", "Sort by queue position", ("Q",), "workloads", show=False),
    Action("sort.priority", "Sort by priority", ("R",), "workloads", show=False),
    Action("sort.eta", "Sort by forecast start (ETA)", ("E",), "workloads", show=False),
    _wl("hold", "Hold", ("h",), "hold"),
    _wl("resume", "Resume", ("u",), "resume"),
    _wl("requeue", "Requeue", ("r",), "requeue"),
    _wl("preempt", "Preempt", ("ctrl+k",), "preempt"),
    _wl("preempt-hold", "Preempt+hold", ("ctrl+x",), "preempt-and-hold"),
    # queues
    _queue("clusterqueue", "clusterqueues", "stop", "Stop", ("s",), "stop"),
    _queue("clusterqueue", "clusterqueues", "drain", "Drain", ("ctrl+d",), "drain"),
    _queue("clusterqueue", "clusterqueues", "resume", "Resume", ("u",), "resume-queue"),
    _queue("localqueue", "localqueues", "stop", "Stop", ("s",), "stop"),
    _queue("localqueue", "localqueues", "drain", "Drain", ("ctrl+d",), "drain"),
    _queue("localqueue", "localqueues", "resume", "Resume", ("u",), "resume-queue"),
    Action("pane.toggle", "Quota/history", ("c",), "clusterqueues"),
    # GPU heatmap
    Action("heatmap.metric", "Metric", ("m",), "gpus"),
    Action("heatmap.aggregate", "Mean/max", ("a",), "gpus"),
    Action("heatmap.idle", "Idle only", ("i",), "gpus"),
    Action("heatmap.queue", "Chart next queue", ("c",), "gpus"),
)

BY_ID: Mapping[str, Action] = {a.id: a for a in ACTIONS}
SCOPES = frozenset({GLOBAL} | VIEW_NAMES)

_MODIFIERS = ("ctrl", "shift", "alt")
# Names users write (k9s spellings included) → Textual key names.
_ALIASES = {"esc": "escape", "return": "enter", "del": "delete", "pgup": "pageup", "pgdn": "pagedown",
            "bksp": "backspace", "spc": "space"}
_NAMED = frozenset(k.value.split("+")[-1] for k in Keys) | {"space", "enter", "tab", "escape", "backspace", "delete",
                                             "insert", "home", "end", "pageup", "pagedown", "up", "down",
                                             "left", "right", *(f"f{i}" for i in range(1, 25))}


@dataclass(slots=True)
class Keymap:
    """The effective keys: defaults with the user's valid remaps applied."""
    keys: dict[str, tuple[str, ...]]  # action id → keys
    problems: list[str] = field(default_factory=list)

    def action(self, action_id: str) -> Action:
        return replace(BY_ID[action_id], keys=self.keys[action_id])

    def actions(self, scope: str | None = None, *, read_only: bool = False) -> list[Action]:
        """Actions of a scope (None: all), with effective keys; read-only drops dangerous ones."""
        out = []
        for a in ACTIONS:
            if scope is not None and a.scope != scope:
                continue
            if read_only and a.dangerous:
                continue
            out.append(replace(a, keys=self.keys[a.id]))
        return out

    def bindings(self, scope: str, *, read_only: bool = False) -> list[Binding]:
        """Textual bindings with ids, for a screen's BINDINGS (global ones go on the App)."""
        return [to_binding(a) for a in self.actions(scope, read_only=read_only)]

    def textual_keymap(self) -> dict[str, str]:
        """For `App.set_keymap`: every remapped binding id → comma-joined keys."""
        return {a.id: ",".join(self.keys[a.id]) for a in ACTIONS if self.keys[a.id] != a.keys}


def key_label(key: str) -> str:
    """A key as the footer writes it: `ctrl+w` → `^w`."""
    return "^" + key[len("ctrl+"):] if key.startswith("ctrl+") else key


def to_binding(a: Action) -> Binding:
    desc = a.description + ("!" if a.evicts else "")  # "!": evicts running work; short for 80 columns
    tip = f"needs {a.needs}" if a.needs else ""
    return Binding(",".join(a.keys), a.textual_action, desc, show=a.show, id=a.id, tooltip=tip)


def check(action_id: str, *, read_only: bool, denied: Mapping[str, str] | None = None) -> bool | None:
    """For `check_action`: False hides (read-only), None greys out (RBAC denied), True enables."""
    a = BY_ID.get(action_id)
    if a is None:
        return True
    if read_only and a.dangerous:
        return False
    if a.needs is not None and denied and str(a.needs) in denied:
        return None
    return True


def disabled_reason(action_id: str, denied: Mapping[str, str]) -> str | None:
    """Why an action is greyed out: `denied` maps str(Need) → the API server's reason."""
    a = BY_ID.get(action_id)
    if a is None or a.needs is None or str(a.needs) not in denied:
        return None
    return f"{a.description}: needs '{a.needs}' — {denied[str(a.needs)]}"


def normalize_key(text: str) -> str:
    """`ctrl-d`, `Ctrl+D`, `?`, `esc`, `shift+n` → Textual key names; ValueError if not a key."""
    if not isinstance(text, str):
        raise ValueError(f"a key must be a string, got {text!r}")
    if not text.strip():
        raise ValueError("empty key")
    raw = text.strip()
    if len(raw) == 1:  # a literal character, case kept: capital letters are the sort keys
        return _character_to_key(raw)
    parts = re.split(r"[+-](?=.)", raw)
    *mods, base = parts
    mods = [m.lower() for m in mods]
    for m in mods:
        if m not in _MODIFIERS:
            raise ValueError(f"unknown modifier {m!r} in {text!r} (use ctrl, shift or alt)")
    if len(base) == 1:
        base_name = _character_to_key(base.lower() if mods else base)
    else:
        base_name = _ALIASES.get(base.lower(), base.lower())
        if base_name not in _NAMED and base_name not in _CHAR_NAMES:
            raise ValueError(f"unknown key {base!r} in {text!r}")
    if "shift" in mods and len(base_name) == 1 and base_name.isalpha():
        # Terminals send shift+n as "N"; that is the key Textual sees.
        mods.remove("shift")
        base_name = base_name.upper()
    order = [m for m in _MODIFIERS if m in mods]
    return "+".join([*order, base_name])


# Textual names for punctuation ("question_mark", "colon", …), accepted when spelled out.
_CHAR_NAMES = frozenset(_character_to_key(chr(c)) for c in range(33, 127))


def load_keymap(remaps: Mapping[str, object] | None = None) -> Keymap:
    """Defaults plus remaps (id → key or list of keys). Bad entries: a message, default kept."""
    km = Keymap({a.id: a.keys for a in ACTIONS})
    remapped: set[str] = set()
    for aid, value in (remaps or {}).items():
        if aid not in BY_ID:
            shown = aid if aid.isprintable() else repr(aid)  # whatever the file holds: quoted unless plain
            km.problems.append(f"[keys] {shown}: unknown action id (see `?` help for ids)")
            continue
        raw = [value] if isinstance(value, str) else value
        if not isinstance(raw, list) or not raw:
            km.problems.append(f"[keys] {aid}: expected a key or a list of keys, got {value!r}")
            continue
        try:
            keys = tuple(dict.fromkeys(normalize_key(k) for k in raw))  # type: ignore[arg-type]
        except ValueError as e:
            km.problems.append(f"[keys] {aid}: {e}; keeping {', '.join(BY_ID[aid].keys)}")
            continue
        km.keys[aid] = keys
        remapped.add(aid)
    # Undo remaps that clash, until none do: defaults never clash (a test holds them to that).
    while True:
        clash = _first_clash(km.keys, remapped)
        if clash is None:
            return km
        key, aid, other = clash
        where = _scope_words(BY_ID[aid].scope, BY_ID[other].scope)
        km.problems.append(f"[keys] {aid}: key {key!r} is already bound to {other!r} ({where}); "
                           f"keeping {', '.join(BY_ID[aid].keys)}")
        km.keys[aid] = BY_ID[aid].keys
        remapped.discard(aid)


def clashes(keys: Mapping[str, tuple[str, ...]]) -> list[tuple[str, str, str]]:
    """(key, id, other id) for every key bound twice where both could fire: same scope, or one
    of them global (a global key is live in every view)."""
    out = []
    for i, a in enumerate(ACTIONS):
        for b in ACTIONS[i + 1:]:
            if a.scope != b.scope and GLOBAL not in (a.scope, b.scope):
                continue
            for k in set(keys[a.id]) & set(keys[b.id]):
                out.append((k, b.id, a.id))
    return out


def _scope_words(a: str, b: str) -> str:
    if a == b:
        return f"same scope: {a}"
    return f"{b if a == GLOBAL else a} view, where global keys also work"


def _first_clash(keys: Mapping[str, tuple[str, ...]], remapped: set[str]) -> tuple[str, str, str] | None:
    for key, aid, other in clashes(keys):
        if aid in remapped:
            return key, aid, other
        if other in remapped:
            return key, other, aid
    return None


def load_keymap_file(path: Path | None = None) -> Keymap:
    """`[keys]` of `$XDG_CONFIG_HOME/kueuetop/config.toml`; a missing file is not a problem."""
    path = path or config_dir() / "config.toml"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return load_keymap()
    # ValueError: TOMLDecodeError, UnicodeDecodeError, and tomllib's own for an integer of
    # thousands of digits (int() refuses it); RecursionError: arrays nested thousands deep.
    except (OSError, ValueError, RecursionError) as e:
        km = load_keymap()
        km.problems.append(f"{path}: cannot read keys ({e}); using default keys")
        return km
    keys = data.get("keys", {})
    if not isinstance(keys, Mapping):
        km = load_keymap()
        km.problems.append(f"{path}: [keys] must be a table; using default keys")
        return km
    km = load_keymap(keys)
    km.problems[:] = [f"{path}: {p}" for p in km.problems]
    return km


@dataclass(frozen=True, slots=True)
class Command:
    kind: str  # "view" | "quit" | "help" | "whatif"
    target: str = ""  # view name
    arg: str = ""  # rest of the line: a namespace, a /filter, a label selector


_ALIAS_TO_VIEW: Mapping[str, str] = {alias: v.name for v in VIEWS for alias in v.aliases}


def resolve_command(line: str) -> Command | None:
    """`:wl team-a`, `:cq`, `:q` → a Command; None when the word is unknown."""
    text = line.strip().lstrip(":").strip()
    if not text:
        return None
    word, _, rest = text.partition(" ")
    word = word.lower()
    if word in COMMANDS:
        return Command(COMMANDS[word], arg=rest.strip())
    if word in _ALIAS_TO_VIEW:
        return Command("view", _ALIAS_TO_VIEW[word], rest.strip())
    return None


def command_words() -> list[str]:
    """Every word command mode accepts, for completion."""
    return sorted({*COMMANDS, *_ALIAS_TO_VIEW})


def help_rows(km: Keymap, scope: str, *, read_only: bool = False) -> Iterable[tuple[str, str, str]]:
    """(keys, description, id) for `?`: the view's actions first, then global ones."""
    for s in (scope, GLOBAL) if scope != GLOBAL else (GLOBAL,):
        for a in km.actions(s, read_only=read_only):
            yield ", ".join(a.keys), a.description, a.id
