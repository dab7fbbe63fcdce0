"""A parser for the Prometheus text exposition format 0.0.4 (and the basics of OpenMetrics).

Strict about what a sample is, forgiving about everything around it: a line that is not a valid
sample, comment or blank line is skipped and counted in `ParseStats`, never raised, so no metric
an exporter serves can crash the console. Label values are returned exactly as escaped in the
text (`\\\\`, `\\"`, `\\n` decoded; other bytes, control characters included, kept as data: the
UI strips them before drawing).

Deliberate choices:
* Unknown escapes in label values (`\\t`) are kept verbatim, as Prometheus does.
* Values follow Go's ParseFloat: `NaN`, `+Inf`, `-Inf`, `Inf`, exponents, no `_` separators.
  A finite literal too large for a float64 becomes ±Inf instead of being rejected.
* Timestamps are integer milliseconds (0.0.4); with `openmetrics=True` they are float seconds.
* OpenMetrics exemplars (`… # {trace_id="…"} 1`) are dropped; `# EOF` ends the input.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

__all__ = ["ParseStats", "Sample", "family_of", "parse_exposition", "parse_value"]


class Sample(NamedTuple):
    name: str
    labels: dict[str, str]
    value: float
    timestamp_ms: int | None = None


@dataclass
class ParseStats:
    """What a parse saw besides samples: metadata, and the lines it had to skip."""

    lines: int = 0
    samples: int = 0
    skipped: int = 0
    types: dict[str, str] = field(default_factory=dict)
    helps: dict[str, str] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    # (line number, reason) of the first few skipped lines, for a log line.
    errors: list[tuple[int, str]] = field(default_factory=list)
    max_errors: int = 20

    def _skip(self, lineno: int, reason: str) -> None:
        self.skipped += 1
        if len(self.errors) < self.max_errors:
            self.errors.append((lineno, reason))


_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_QUOTED = r'"(?:[^"\\\n]|\\.)*"'
# name, optional label block (quoted strings may hold '}' and ','), then the rest of the line.
_SAMPLE_RE = re.compile(
    rf"(?P<name>{_NAME})?(?:[ \t]*\{{(?P<labels>(?:[^\"}}\n]|{_QUOTED})*)\}})?(?P<rest>.*)\Z"
)
_LABEL_RE = re.compile(
    rf"[ \t]*(?:(?P<n>[a-zA-Z_][a-zA-Z0-9_]*)|(?P<qn>{_QUOTED}))[ \t]*=[ \t]*(?P<v>{_QUOTED})[ \t]*(?:,|\Z)"
)
_CACHE_MAX = 100_000  # distinct label blocks remembered per parse
# The common shape, checked first because it is much cheaper: name{labels} value…
_FAST_RE = re.compile(rf"({_NAME})\{{([^}}\n]*)\}}([ \t].*)\Z")
# A label block that is only a quoted name (Prometheus 3 UTF-8 metric names: {"my.metric"}).
_QUOTED_NAME_RE = re.compile(rf"[ \t]*(?P<qn>{_QUOTED})[ \t]*(?:,|\Z)")
_FLOAT_RE = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|0[xX][0-9a-fA-F.]+(?:[pP][+-]?\d+)?)\Z", re.ASCII)
_SPECIAL = {"nan": math.nan, "+nan": math.nan, "-nan": math.nan, "inf": math.inf, "+inf": math.inf,
            "-inf": -math.inf, "infinity": math.inf, "+infinity": math.inf, "-infinity": -math.inf}
_INT_RE = re.compile(r"[+-]?\d+\Z", re.ASCII)
_INT64_LIMIT = 2**63

_SUFFIXES = {
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "gaugehistogram": ("_bucket", "_gsum", "_gcount"),
    "summary": ("_sum", "_count", "_created"),
    "counter": ("_total", "_created"),
    "info": ("_info",),
}


def _unescape(raw: str) -> str:
    """Decode `\\\\`, `\\"` and `\\n`; keep any other backslash sequence as written."""
    if "\\" not in raw:
        return raw
    out: list[str] = []
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        if c == "\\" and i + 1 < n:
            nxt = raw[i + 1]
            if nxt == "n":
                out.append("\n")
            elif nxt in '\\"':
                out.append(nxt)
            else:
                out.append(c + nxt)
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _unescape_help(raw: str) -> str:
    # HELP escapes only backslash and newline.
    if "\\" not in raw:
        return raw
    return re.sub(r"\\([\\n])", lambda m: "\n" if m.group(1) == "n" else "\\", raw)


def parse_value(text: str) -> float | None:
    """Go-style float parsing; None when `text` is not a number."""
    if text.isascii() and "_" not in text:
        try:
            return float(text)  # Python and Go agree on ASCII decimals, inf/infinity/nan
        except ValueError:
            pass
    special = _SPECIAL.get(text.lower())
    if special is not None:
        return special
    if not _FLOAT_RE.match(text):
        return None
    try:
        if text.lstrip("+-")[:2].lower() == "0x":
            return float.fromhex(text)
        return float(text)
    except (ValueError, OverflowError):
        return None


def _parse_labels(block: str) -> dict[str, str] | str:
    """Labels of a `{…}` block, or a reason string when the block is malformed."""
    labels: dict[str, str] = {}
    pos, end = 0, len(block)
    while pos < end:
        if block[pos:].strip() == "":
            break
        m = _LABEL_RE.match(block, pos)
        if m is None:
            return f"bad label at offset {pos}"
        name = m.group("n") or _unescape(m.group("qn")[1:-1])
        if name in labels:
            return f"duplicate label {name!r}"
        labels[name] = _unescape(m.group("v")[1:-1])
        pos = m.end()
    return labels


def family_of(name: str, types: dict[str, str]) -> str:
    """The metric family a sample name belongs to (`x_bucket` → `x` when x is a histogram)."""
    if name in types:
        return name
    for typ, suffixes in (("histogram", _SUFFIXES["histogram"]), ("summary", _SUFFIXES["summary"]),
                          ("counter", _SUFFIXES["counter"]), ("gaugehistogram", _SUFFIXES["gaugehistogram"]),
                          ("info", _SUFFIXES["info"])):
        for suffix in suffixes:
            if name.endswith(suffix):
                base = name[: -len(suffix)]
                if types.get(base) == typ:
                    return base
    return name


def _split_sample(line: str, cache: dict[str, dict[str, str]]) -> tuple[str | None, str | None, str] | None:
    """(name, label block, rest of line); None when the line has no sample shape."""
    m = _FAST_RE.match(line)
    if m is not None:
        block = m.group(2)
        # The block ends at the first '}': right unless a quoted value holds one, which the
        # label parse then rejects, and the full expression below takes over.
        if block in cache:
            return m.group(1), block, m.group(3)
        parsed = _parse_labels(block)
        if not isinstance(parsed, str):
            if len(cache) < _CACHE_MAX:
                cache[block] = parsed
            return m.group(1), block, m.group(3)
    m = _SAMPLE_RE.match(line)
    if m is None:
        return None
    return m.group("name"), m.group("labels"), m.group("rest")


def _parse_sample(line: str, openmetrics: bool, cache: dict[str, dict[str, str]]) -> Sample | str:
    parts_ = _split_sample(line, cache)
    if parts_ is None:
        return "not a sample"
    name, block, rest = parts_
    labels: dict[str, str]
    if block is None:
        if name is None:
            return "no metric name"
        labels = {}
    else:
        key = block if name is not None else "\0" + block  # quoted-name blocks carry __name__
        if key in cache:
            labels = dict(cache[key])
        else:
            if name is None:
                # {"utf8.name", label="v"}: the first item is the quoted metric name.
                q = _QUOTED_NAME_RE.match(block)
                if q is None:
                    return "no metric name"
                parsed = _parse_labels(block[q.end():])
                if isinstance(parsed, str):
                    return parsed
                parsed["__name__"] = _unescape(q.group("qn")[1:-1])
            else:
                parsed = _parse_labels(block)
                if isinstance(parsed, str):
                    return parsed
            if len(cache) < _CACHE_MAX:
                cache[key] = parsed
            labels = dict(parsed)
        if name is None:
            name = labels.pop("__name__", None)
            if not name:
                return "no metric name"
    if not rest or rest[0] not in " \t":
        return "missing value"
    if openmetrics or "#" in rest:
        hash_at = rest.find(" # ")
        if hash_at >= 0:
            rest = rest[:hash_at]  # exemplar
    parts = rest.split()
    if not parts or len(parts) > 2:
        return "expected value [timestamp]"
    value = parse_value(parts[0])
    if value is None:
        return f"bad value {parts[0][:40]!r}"
    ts: int | None = None
    if len(parts) == 2:
        t = parts[1]
        # An int64 of milliseconds, as Prometheus keeps it (strconv.ParseInt refuses more).
        if openmetrics:
            secs = parse_value(t)
            if secs is None or not abs(secs * 1000) < _INT64_LIMIT:  # NaN and ±Inf fail too
                return f"bad timestamp {t[:40]!r}"
            ts = round(secs * 1000)
        elif _INT_RE.match(t) and len(t) <= 20 and abs(int(t)) < _INT64_LIMIT:  # int() refuses 4,300+ digits
            ts = int(t)
        else:
            return f"bad timestamp {t[:40]!r}"
    return Sample(name, labels, value, ts)


def _parse_comment(line: str, stats: ParseStats) -> bool:
    """Record HELP/TYPE/UNIT; return True at `# EOF`."""
    body = line[1:].lstrip(" \t")
    keyword, _, rest = body.partition(" ")
    if keyword == "EOF" and not rest.strip():
        return True
    if keyword not in ("HELP", "TYPE", "UNIT"):
        return False  # plain comment
    name, _, text = rest.lstrip(" \t").partition(" ")
    if not name:
        return False
    if keyword == "HELP":
        stats.helps[name] = _unescape_help(text)
    elif keyword == "TYPE":
        stats.types[name] = text.strip().lower()
    else:
        stats.units[name] = text.strip()
    return False


def parse_exposition(text: str, stats: ParseStats | None = None, *,
                     openmetrics: bool = False) -> Iterator[Sample]:
    """Yield the samples of an exposition; malformed lines go to `stats` instead of raising."""
    st = stats if stats is not None else ParseStats()
    cache: dict[str, dict[str, str]] = {}
    for lineno, raw in enumerate(text.split("\n"), start=1):
        line = raw[:-1] if raw.endswith("\r") else raw
        if not line or line.isspace():
            continue
        st.lines += 1
        stripped = line.lstrip(" \t")
        if stripped.startswith("#"):
            if _parse_comment(stripped, st):
                return
            continue
        result = _parse_sample(stripped, openmetrics, cache)
        if isinstance(result, str):
            st._skip(lineno, result)
            continue
        st.samples += 1
        yield result
