"""Quantities as apimachinery's Quantity.String() prints them, for validation messages.

Kueue's webhooks report a bad quota as `field.Invalid(path, value.String(), ...)`, so the value
in the message is the canonical form, not what the client sent ("1.5" → "1500m", 2048 → "2048",
"2Ki" stays "2Ki"). The format follows the input's suffix kind, as resource.Quantity keeps it:
binary SI (Ki…Ei), decimal exponent (e3) or decimal SI (everything else).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

from kueuetop.kueue.quantity import parse_quantity

_DECIMAL_SUFFIX = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_EXPONENT = re.compile(r"[eE][+-]?\d+")
_BINARY_SUFFIX = ((60, "Ei"), (50, "Pi"), (40, "Ti"), (30, "Gi"), (20, "Mi"), (10, "Ki"))


def _suffix_kind(value: Any) -> str:
    if isinstance(value, str):
        text = value.strip()
        if text[-2:] in {s for _, s in _BINARY_SUFFIX}:
            return "binary"
        if _EXPONENT.fullmatch(text.lstrip("+-").lstrip("0123456789.")):
            return "exponent"  # "1e3"; a bare "E" is the exa suffix
    return "decimal"


def _decimal(amount: Fraction, exponent_form: bool) -> str:
    # Round up to nano units (the smallest scale Quantity keeps), then take the largest
    # exponent, a multiple of 3, that leaves an integer mantissa.
    nanos = math.ceil(amount * 10**9)
    exp = -9
    while nanos != 0 and nanos % 1000 == 0 and exp < 18:
        nanos //= 1000
        exp += 3
    if nanos == 0:
        return "0"
    if exponent_form:
        return f"{nanos}e{exp}" if exp else str(nanos)
    return f"{nanos}{_DECIMAL_SUFFIX[exp]}"


def canonical(value: Any) -> str:
    """`value` (a quantity string or JSON number) as Quantity.String() prints it."""
    amount = parse_quantity(value)
    kind = _suffix_kind(value)
    if kind == "binary" and amount.denominator == 1 and abs(amount) >= 1024:
        n = int(amount)
        for shift, suffix in _BINARY_SUFFIX:
            if n % (1 << shift) == 0:
                return f"{n >> shift}{suffix}"
    return _decimal(amount, kind == "exponent")
