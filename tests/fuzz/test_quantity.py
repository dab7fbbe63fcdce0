"""Kubernetes quantities (kueuetop.kueue.quantity): any string or JSON value parses to the exact
amount or raises QuantityError naming the bad input; well-formed ones parse to what they say."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import example, given
from hypothesis import strategies as st

from kueuetop.kueue.errors import QuantityError
from kueuetop.kueue.quantity import INT64_MAX, parse_quantity, parse_resource_value

from .strategies import FUZZ, HUGE, JUNK, NASTY_STRINGS, WORD, mutated_text

_SUFFIX = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60, "n": Fraction(1, 10**9),
           "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": 1, "k": 10**3, "M": 10**6, "G": 10**9,
           "T": 10**12, "P": 10**15, "E": 10**18}
_SEEDS = ["1", "100m", "0.5", "2Gi", "1e3", "1E-2", "+3", "-4k", ".5", "5.", "40Gi", "1000000000Ti", "250u"]


_SUFFIXES = sorted(_SUFFIX)


@st.composite
def well_formed(draw: st.DrawFn) -> tuple[str, Fraction]:
    """A quantity as apimachinery writes it, and its exact value computed independently."""
    whole, frac, w = draw(st.integers(0, 10**25)), draw(st.integers(0, 10**12 - 1)), draw(WORD)
    sign = ("", "+", "-")[w % 3]
    zeros = "0" * ((w >> 2) % 3)
    width = (w >> 4) % 14 - 1  # -1: no decimal point; 0: "5." (a point, no decimals)
    frac %= 10 ** max(width, 0)
    digits = zeros + str(whole) + ("" if width < 0 else "." + (str(frac).zfill(width) if width else ""))
    value = whole + (Fraction(frac, 10**width) if width > 0 else 0)
    if (w >> 8) % 2:
        suffix = _SUFFIXES[(w >> 9) % len(_SUFFIXES)]
        value *= _SUFFIX[suffix]
    else:
        exp = (w >> 14) % 61 - 30
        suffix = "eE"[(w >> 20) % 2] + ("+" if exp >= 0 and (w >> 21) % 2 else "") + str(exp)
        value *= Fraction(10) ** exp
    return sign + digits + suffix, -value if sign == "-" else value


JUNK_INPUTS = st.one_of(mutated_text(_SEEDS, max_mutations=2), NASTY_STRINGS, JUNK, HUGE, st.text(max_size=20))
INPUTS = st.one_of(well_formed(), JUNK_INPUTS.map(lambda v: (v, None)))


@FUZZ
@given(INPUTS, st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]))
@example(("1.", Fraction(1)), "cpu")
@example(("1e31", None), "cpu")
@example(("9" * 5000, None), "memory")  # once a ValueError from int(): too many digits for Python
@example(("1e" + "0" * 5000 + "3", None), "memory")  # the same in the exponent
@example(("\u0663", None), "cpu")  # an Arabic-Indic 3: not an ASCII digit, so not a quantity
@example((float("nan"), None), "cpu")
def test_any_input_parses_exactly_or_says_what_is_wrong(case: tuple[object, Fraction | None], resource: str) -> None:
    value, expected = case
    try:
        q = parse_quantity(value)
    except QuantityError as exc:
        assert expected is None, f"{value!r} is well formed: {exc}"
        assert str(exc).startswith("not a quantity: "), str(exc)
        return
    assert isinstance(q, Fraction)
    if expected is not None:
        assert q == expected
    v = parse_resource_value(resource, value)
    assert -INT64_MAX - 1 <= v <= INT64_MAX  # saturates as apimachinery's Value() does
