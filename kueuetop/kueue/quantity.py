"""Kubernetes resource quantities, exact.

Parsing follows k8s.io/apimachinery/pkg/api/resource: `<sign><digits>[.<digits>]<suffix>` where
the suffix is binary SI (Ki…Ei), decimal SI (n, u, m, "", k, M, G, T, P, E) or a decimal exponent
(e3, E-2). Values are held as Fractions, so "0.1" + "0.2" is exactly "0.3".

Kueue compares quota in int64 "resource values": milli-units for cpu and whole units (rounded
up) for everything else (pkg/resources: ResourceValue → MilliValue for cpu, Value otherwise).
`resource_value` reproduces that, and every quota computation in kueuetop uses those integers.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from types import MappingProxyType

from kueuetop.kueue.errors import QuantityError

_BINARY = MappingProxyType({"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60})
_DECIMAL = MappingProxyType({
    "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": Fraction(1),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
    "P": Fraction(10**15), "E": Fraction(10**18),
})
# ASCII digits only, as apimachinery's parseQuantityString ('0' <= c <= '9'): "٣" is not 3.
_RE = re.compile(r"^([+-]?)(\d+(?:\.\d*)?|\.\d+)(.*)$", re.ASCII)
_EXP = re.compile(r"^[eE]([+-]?\d+)$", re.ASCII)
# Python refuses to convert longer digit strings to int (sys.get_int_max_str_digits); no real
# quantity comes near it.
_MAX_DIGITS = 4000
# apimachinery's Value()/MilliValue() saturate at int64 rather than fail: a quota such as the
# seeds' "1000000000Ti" (meaning "unlimited") is valid and compares as the largest int64.
INT64_MAX = 2**63 - 1

CPU = "cpu"


def parse_quantity(value: object) -> Fraction:
    """Parse a quantity string (or a JSON number) into an exact Fraction."""
    if isinstance(value, bool):
        raise QuantityError(f"not a quantity: {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"not a quantity: {value!r}")
        return Fraction(str(value))
    if not isinstance(value, str):
        raise QuantityError(f"not a quantity: {value!r}")
    text = value.strip()
    m = _RE.match(text)
    if not m:
        raise QuantityError(f"not a quantity: {value!r}")
    sign, number, suffix = m.groups()
    if len(number) > _MAX_DIGITS:
        raise QuantityError(f"not a quantity: {value[:20]!r}… ({len(number)} digits, at most {_MAX_DIGITS})")
    amount = Fraction(number)
    if suffix in _BINARY:
        amount *= _BINARY[suffix]
    elif suffix in _DECIMAL:
        amount *= _DECIMAL[suffix]
    else:
        e = _EXP.match(suffix)
        if not e:
            raise QuantityError(f"not a quantity: {value!r} (unknown suffix {suffix!r})")
        digits = e.group(1).lstrip("+-").lstrip("0") or "0"  # int() refuses thousands of digits
        if len(digits) > 2 or int(digits) > 30:
            raise QuantityError(f"not a quantity: {value[:40]!r} (exponent out of range)")
        amount *= Fraction(10) ** (-int(digits) if e.group(1).startswith("-") else int(digits))
    return -amount if sign == "-" else amount


def resource_value(resource: str, quantity: Fraction) -> int:
    """The integer Kueue uses for quota arithmetic: milli-cpu, else whole units rounded up."""
    v = math.ceil(quantity * 1000) if resource == CPU else math.ceil(quantity)
    return max(-INT64_MAX - 1, min(INT64_MAX, v))


def parse_resource_value(resource: str, value: object) -> int:
    # A caller parsing many objects keeps the answers in its ParseCache (kueue/parse_cache.py).
    return resource_value(resource, parse_quantity(value))


_MEMORY_LIKE = ("memory", "ephemeral-storage", "storage", "hugepages-")


def format_resource_value(resource: str, value: int | None) -> str:
    """Render a Kueue resource value the way a person reads quantities ("1500m", "36Gi", "8")."""
    if value is None:
        return "∞"
    if resource == CPU:
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    if value and resource.startswith(_MEMORY_LIKE):
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            unit = _BINARY[suffix]
            if abs(value) >= unit and value % unit == 0:
                return f"{value // unit}{suffix}"
        for suffix in ("E", "P", "T", "G", "M", "k"):
            unit = int(_DECIMAL[suffix])
            if abs(value) >= unit and value % unit == 0:
                return f"{value // unit}{suffix}"
    return str(value)


def format_quantity_for_api(resource: str, value: int) -> str:
    """Serialize a Kueue resource value back into a canonical API quantity string."""
    if resource == CPU:
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    return format_resource_value(resource, value) if resource.startswith(_MEMORY_LIKE) else str(value)
