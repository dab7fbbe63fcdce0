"""The YAML of one object (`y`), fetched from the API server when the page opens.

The store keeps parsed objects, not their wire dicts (store/events.py `Entry`), so the page asks
the server for the object with a GET in a worker thread (never on the UI thread: a slow server
must not freeze the keys), and says plainly when it cannot. An object the console could not
parse still has its wire dict in the store: that copy is shown when the GET fails.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from functools import partial
from typing import Any, ClassVar

import yaml
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from kueuetop.sources.kube_http import ApiError
from kueuetop.sources.object_get import fetch_object
from kueuetop.views.safe_text import clean

Key = tuple[str, str]


def yaml_text(raw: Mapping[str, Any] | None) -> Text:
    if raw is None:
        return Text("(object not in the store)")
    data = dict(raw)
    meta = dict(data.get("metadata") or {})
    meta.pop("managedFields", None)  # noise for a person; the API server has it
    data["metadata"] = meta
    try:
        dumped = yaml.safe_dump(data, sort_keys=False, width=120)
    except yaml.YAMLError as e:
        dumped = f"(cannot render YAML: {e})"
    return Text("\n".join(clean(line) for line in dumped.splitlines()))


def fetch_error(e: BaseException, kind: str) -> str:
    """One line saying why an object could not be fetched."""
    if isinstance(e, ApiError):
        if e.status == 404:
            return "not found on the API server (deleted?)"
        if e.status in (401, 403):
            return f"forbidden: needs 'get {kind}'" + (f" ({e.message})" if e.message else "")
        return str(e)
    return f"{type(e).__name__}: {e}"


def fetch_yaml(api: Any, kind: str, key: Key, kueue_version: str) -> tuple[dict[str, Any] | None, str]:
    """(object, "") or (None, why); never raises (runs in a worker)."""
    if api is None:
        return None, "no connection to an API server"
    try:
        return fetch_object(api, kind, key, kueue_version=kueue_version), ""
    except Exception as e:  # unreachable server, bad answer: said on screen, never raised
        return None, fetch_error(e, kind)


class ObjectYamlScreen(Screen[None]):
    """A read-only page with one object's YAML as the API server has it when the page opens."""

    BINDINGS: ClassVar = [Binding("escape,q", "back", "Back")]
    DEFAULT_CSS = """
    ObjectYamlScreen > .page-title { height: 1; background: $panel; padding: 0 1; }
    ObjectYamlScreen > VerticalScroll { padding: 0 1; }
    """

    class Fetched(Message):
        def __init__(self, obj: dict[str, Any] | None, error: str) -> None:
            super().__init__()
            self.obj, self.error = obj, error

    def __init__(self, kind: str, key: Key, *, api: Any, kueue_version: str = "v1beta2",
                 last_seen: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self.kind, self.key = kind, key
        self.api, self.kueue_version = api, kueue_version
        self.last_seen = last_seen  # the store's wire dict of an unparseable object, else None
        self.obj: dict[str, Any] | None = None
        self.error = ""
        self.fetched_at: float | None = None

    def compose(self) -> ComposeResult:
        title = f"{clean(self.kind)} {'/'.join(clean(k) for k in self.key if k)}   esc: back"
        yield Static(Text(title), classes="page-title")
        with VerticalScroll():
            yield Static(Text("fetching from the API server…", style="dim"), id="page-body")

    def on_mount(self) -> None:
        self.action_reload()

    def action_reload(self) -> None:
        self.run_worker(partial(self._fetch, self.api), thread=True, group="yaml", exclusive=True,
                        exit_on_error=False)

    def _fetch(self, api: Any) -> None:  # worker thread
        obj, error = fetch_yaml(api, self.kind, self.key, self.kueue_version)
        self.post_message(self.Fetched(obj, error))

    def on_object_yaml_screen_fetched(self, message: Fetched) -> None:
        self.obj, self.error = message.obj, message.error
        self.fetched_at = time.time() if message.obj is not None else self.fetched_at
        self.query_one("#page-body", Static).update(self.body())

    def body(self) -> Text:
        if self.obj is not None:
            return yaml_text(self.obj)
        t = Text(f"cannot fetch the object: {clean(self.error)}\n", style="bold")
        if self.last_seen is not None:
            t.append("as last seen by the console (it could not parse it):\n", style="dim")
            t.append_text(yaml_text(self.last_seen))
        return t

    def action_back(self) -> None:
        self.app.pop_screen()
