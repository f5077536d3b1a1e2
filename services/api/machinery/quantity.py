"""Kubernetes resource quantities (apimachinery ``resource.Quantity``).

Every resource request, limit, capacity, allocatable and quota in the API is a
Quantity string such as ``500m``, ``1.5Gi`` or ``1e3``.  The scheduler adds
them up, validation compares them and the apiserver echoes them back, so we
need exactly the rules Kubernetes uses:

* parsing accepts ``<sign><digits>[.<digits>]<suffix>`` where the suffix is a
  decimal SI prefix (``n u m "" k M G T P E``), a binary SI prefix
  (``Ki Mi Gi Ti Pi Ei``) or a decimal exponent (``e3``, ``E-2``);
* values are rounded *up* (away from zero) to nano precision, and BinarySI
  values are capped at 2^63-1;
* the canonical string keeps the suffix family the user wrote, uses the
  largest suffix that loses no precision, and falls back from BinarySI to
  DecimalSI when the value is below 1024 or not integral.

The value is held as an exact :class:`decimal.Decimal`; no floats are used.
"""

from __future__ import annotations

import decimal
import functools
from dataclasses import dataclass
from decimal import Decimal
from typing import Final

DECIMAL_SI: Final = "DecimalSI"
BINARY_SI: Final = "BinarySI"
DECIMAL_EXPONENT: Final = "DecimalExponent"
FORMATS: Final = frozenset({DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT})

# Upstream's error texts, verbatim (the regex is only quoted in the message;
# the real scanner below is a port of parseQuantityString).
SPLIT_RE_STRING: Final = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
ERR_FORMAT_WRONG: Final = f"quantities must match the regular expression '{SPLIT_RE_STRING}'"
ERR_NUMERIC: Final = "unable to parse numeric part of quantity"
ERR_SUFFIX: Final = "unable to parse quantity's suffix"

_DEC_SUFFIXES: Final = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_BIN_SUFFIXES: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DEC_BY_EXPONENT: Final = {exp: s for s, exp in _DEC_SUFFIXES.items()}
_BIN_BY_POWER: Final = {exp // 10: s for s, exp in _BIN_SUFFIXES.items()}

_SUFFIX_CHARS: Final = frozenset("eEinumkKMGTP")
_DIGITS: Final = frozenset("0123456789")
_MAX_INT64: Final = 2**63 - 1
_MIN_INT64: Final = -(2**63)
#: The largest amount kubera stores: every quantity is held (and summed) as an int64 count
#: of thousandths, the unit of the scheduler's cpu arithmetic (MilliValue). Upstream caps
#: nothing but BinarySI values; kubera refuses anything beyond this at validation.
MAX_MILLI_VALUE: Final = _MAX_INT64
#: Why such a quantity is refused (validation) or not scheduled (a stored one).
ERR_BEYOND_INT64_MILLI: Final = (
    f"must be at most {MAX_MILLI_VALUE}m (kubera holds quantities as int64 milli-units)"
)
_MAX_INT32: Final = 2**31 - 1
_NANO: Final = -9
# Fast-path precision budget of the int64 representation (maxInt64Factors).
_MAX_INT64_FACTORS: Final = 18
# Above this many decimal digits we refuse to expand a hand-built BinarySI
# value into an int just to look for powers of 1024.
_MAX_BINARY_DIGITS: Final = 4000

# Exact arithmetic: enough precision that multiply/scale/quantize never round
# unless we ask them to.
_EXACT: Final = decimal.Context(
    prec=decimal.MAX_PREC,
    Emax=decimal.MAX_EMAX,
    Emin=decimal.MIN_EMIN,
    rounding=decimal.ROUND_UP,
    traps=[decimal.InvalidOperation, decimal.DivisionByZero, decimal.Overflow],
)
_NANO_QUANTUM: Final = Decimal("1e-9")


class QuantityError(ValueError):
    """A string (or number) is not a valid Kubernetes quantity."""


def _scan(text: str) -> tuple[bool, str, str, str, str]:
    """Split ``text`` into (positive, value, num, denom, suffix) like parseQuantityString.

    ``value`` is the signed numeric prefix, ``num`` the integer digits without
    leading zeros (``"0"`` when none), ``denom`` the fraction digits.
    """
    positive = True
    pos = 0
    end = len(text)
    if pos < end and text[0] in "+-":
        positive = text[0] == "+"
        pos += 1

    # Strip leading zeros; a string that is only sign and zeros is zero.
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""

    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos]
    if pos >= end:
        return positive, text, num, "", ""
    if not num:
        num = "0"

    denom = ""
    if text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
        if pos >= end:
            return positive, text, num, denom, ""
    value = text[:pos]

    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(ERR_FORMAT_WRONG)
    return positive, value, num, denom, text[suffix_start:]


def _parse_go_int(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64): optional sign, ASCII digits, int64 range."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or any(c not in _DIGITS for c in body):
        return None
    digits = body.lstrip("0")
    if len(digits) > 19:  # beyond int64 (and int() refuses past 4300 digits)
        return None
    n = int(digits or "0")
    n = -n if text[0] == "-" else n
    return n if _MIN_INT64 <= n <= _MAX_INT64 else None


def _interpret(suffix: str) -> tuple[int, int, str]:
    """Map a suffix to (base, exponent, format), like suffixHandler.interpret."""
    if suffix in _DEC_SUFFIXES:
        return 10, _DEC_SUFFIXES[suffix], DECIMAL_SI
    if suffix in _BIN_SUFFIXES:
        return 2, _BIN_SUFFIXES[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        exponent = _parse_go_int(suffix[1:])
        # The exponent becomes an int32 scale that is later negated, so only
        # [-MaxInt32, MaxInt32] is representable; anything else is rejected.
        if exponent is not None and -_MAX_INT32 <= exponent <= _MAX_INT32:
            return 10, exponent, DECIMAL_EXPONENT
    raise QuantityError(ERR_SUFFIX)


def _takes_fast_path(fmt: str, exponent: int, num: str, denom: str) -> bool:
    """Whether upstream's int64 fast path handles this input.

    It only matters for inputs without digits (``"Mi"``, ``"."``): the fast
    path reads them as zero, the big-decimal path rejects them as non-numeric.
    """
    mantissa = 1
    if fmt in (DECIMAL_EXPONENT, DECIMAL_SI):
        scale = exponent
        precision = _MAX_INT64_FACTORS - (len(num) + len(denom))
    elif exponent >= 0 and not denom:
        scale = 0
        mantissa = 1 << exponent
        precision = 15 - len(num) - (exponent * 3 // 10) - 1
    else:
        return False
    if precision < 0 or scale - len(denom) < _NANO:
        return False
    return int(num + denom) * mantissa <= _MAX_INT64


def _parse_text(text: str) -> Quantity:
    if not text:
        raise QuantityError(ERR_FORMAT_WRONG)
    if text == "0":
        return Quantity(Decimal(0), DECIMAL_SI)

    positive, value, num, denom, suffix = _scan(text)
    base, exponent, fmt = _interpret(suffix)

    has_digit = any(c in _DIGITS for c in value)
    if not has_digit and not _takes_fast_path(fmt, exponent, num, denom):
        raise QuantityError(ERR_NUMERIC)

    # Exact magnitude: digits of the numeric part, then the suffix applied.
    int_part, _, frac_part = value.lstrip("+-").partition(".")
    digits = (int_part + frac_part) or "0"
    amount = Decimal(f"{digits}E-{len(frac_part)}")
    if base == 10:
        amount = amount.scaleb(exponent, context=_EXACT)
    else:
        amount = _EXACT.multiply(amount, Decimal(1 << exponent))

    # Round non-zero values up to the smallest representable amount (1n):
    # asking for a little of a resource must never yield none of it.
    if amount and amount.as_tuple().exponent < _NANO:  # type: ignore[operator]
        amount = amount.quantize(_NANO_QUANTUM, rounding=decimal.ROUND_UP, context=_EXACT)

    if fmt == BINARY_SI:
        if amount > _MAX_INT64:
            amount = Decimal(_MAX_INT64)
        if 0 < amount < 1:
            fmt = DECIMAL_SI
    if not positive and amount:
        amount = amount.copy_negate()  # exact; unary minus would round to 28 digits
    return Quantity(amount, fmt)


def _strip_trailing_zeros(v: Decimal) -> tuple[int, str, int]:
    """(sign, coefficient digits without trailing zeros, base-10 exponent) of non-zero v."""
    sign, digit_tuple, exp = v.as_tuple()
    assert isinstance(exp, int)
    coefficient = "".join(map(str, digit_tuple)).lstrip("0")
    stripped = coefficient.rstrip("0")
    return sign, stripped, exp + (len(coefficient) - len(stripped))


def _format_decimal(v: Decimal, fmt: str) -> str:
    """Mantissa with an exponent that is a multiple of 3 (AsCanonicalBytes) plus suffix."""
    sign, coefficient, exp = _strip_trailing_zeros(v)
    shift = exp % 3  # move the exponent down to the next multiple of three
    coefficient += "0" * shift
    exp -= shift
    if fmt == DECIMAL_SI and exp in _DEC_BY_EXPONENT:
        suffix = _DEC_BY_EXPONENT[exp]
    else:
        # DecimalExponent, or DecimalSI beyond E / below n: exponent notation,
        # which parses back to the same value.
        suffix = "" if exp == 0 else f"e{exp}"
    return ("-" if sign else "") + coefficient + suffix


def _format_binary(v: Decimal) -> str | None:
    """Base-1024 form of an integral value, or None when no binary suffix fits."""
    if v.adjusted() > _MAX_BINARY_DIGITS:
        return None
    n = int(v)
    magnitude = abs(n)
    power = 0
    while magnitude >= 1024 and magnitude % 1024 == 0:
        magnitude //= 1024
        power += 1
    if power not in _BIN_BY_POWER and power != 0:
        return None
    return ("-" if n < 0 else "") + str(magnitude) + _BIN_BY_POWER.get(power, "")


@dataclass(frozen=True, eq=False)
class Quantity:
    """An exact resource amount plus the suffix family it is printed in.

    Equality, hashing and ordering compare values only: ``1Gi == 1024Mi`` and
    ``1 == 1000m``.
    """

    value: Decimal
    format: str = DECIMAL_SI

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ValueError(f"unknown quantity format {self.format!r}")
        value = self.value
        if isinstance(value, int) and not isinstance(value, bool):
            value = Decimal(value)
        if not isinstance(value, Decimal):
            raise TypeError(f"quantity value must be a Decimal, got {type(value).__name__}")
        if not value.is_finite():
            raise ValueError(f"quantity value must be finite, got {value}")
        object.__setattr__(self, "value", value)

    @classmethod
    def parse(cls, s: str | int | float | Quantity) -> Quantity:
        """Parse a quantity string; ints and floats (as YAML yields them) are accepted too."""
        if isinstance(s, Quantity):
            return s
        if isinstance(s, bool):
            raise QuantityError(f"a quantity must be a string or a number, not {s!r}")
        if isinstance(s, int):
            try:
                text = str(s)
            except ValueError as exc:  # beyond Python's int-to-str digit limit
                raise QuantityError(ERR_NUMERIC) from exc
        elif isinstance(s, float):
            text = repr(s)
        elif isinstance(s, str):
            text = s
        else:
            raise QuantityError(f"a quantity must be a string or a number, not {type(s).__name__}")
        return _parse_text_cached(text)

    def canonical(self) -> str:
        """The canonical string (CanonicalizeBytes)."""
        v = self.value
        if v.is_zero():
            return "0"
        fmt = self.format
        if fmt == BINARY_SI:
            if -1024 < v < 1024 or v != v.to_integral_value(context=_EXACT):
                fmt = DECIMAL_SI
            else:
                binary = _format_binary(v)
                if binary is not None:
                    return binary
                fmt = DECIMAL_SI  # past Ei: fall back to an exact decimal form
        return _format_decimal(v, fmt)

    def __str__(self) -> str:
        return self.canonical()

    def _scaled(self, exponent: int) -> int:
        """value * 10**exponent rounded away from zero, as an int64."""
        scaled = self.value.scaleb(exponent, context=_EXACT)
        rounded = scaled.to_integral_value(rounding=decimal.ROUND_UP, context=_EXACT)
        if not rounded.is_zero() and rounded.adjusted() > 18:
            raise OverflowError(f"quantity {self} does not fit in an int64 at scale 10^{-exponent}")
        n = int(rounded)
        if not _MIN_INT64 <= n <= _MAX_INT64:
            raise OverflowError(f"quantity {self} does not fit in an int64 at scale 10^{-exponent}")
        return n

    def int_value(self) -> int:
        """The value rounded up (away from zero) to an integer, like Value().

        (Named ``int_value`` because ``value`` is the exact Decimal field.)
        """
        return self._scaled(0)

    def milli_value(self) -> int:
        """The value in thousandths, rounded up (away from zero), like MilliValue()."""
        return self._scaled(3)

    def fits_int64_milli(self) -> bool:
        """Whether milli_value() can represent this quantity (|value| <= MAX_MILLI_VALUE m)."""
        v = self.value
        if v.is_zero():
            return True
        if v.adjusted() > 18:  # at least 10^19 thousandths, beyond int64 whatever the sign
            return False
        return _MIN_INT64 <= self._scaled_unchecked(3) <= _MAX_INT64

    def _scaled_unchecked(self, exponent: int) -> int:
        scaled = self.value.scaleb(exponent, context=_EXACT)
        return int(scaled.to_integral_value(rounding=decimal.ROUND_UP, context=_EXACT))

    def is_zero(self) -> bool:
        return self.value.is_zero()

    def sign(self) -> int:
        """-1, 0 or 1."""
        if self.value.is_zero():
            return 0
        return -1 if self.value.is_signed() else 1

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __lt__(self, other: Quantity) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.value < other.value

    def __le__(self, other: Quantity) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.value <= other.value

    def __gt__(self, other: Quantity) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.value > other.value

    def __ge__(self, other: Quantity) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.value >= other.value


@functools.lru_cache(maxsize=4096)
def _parse_text_cached(text: str) -> Quantity:
    """Quantities repeat ("100m", "64Mi" on thousands of pods) and Quantity is immutable."""
    return _parse_text(text)


@functools.lru_cache(maxsize=4096)
def _canonical_text(text: str) -> str:
    return _parse_text_cached(text).canonical()


def parse_quantity(s: str | int | float | Quantity) -> Quantity:
    """Parse ``s`` into a :class:`Quantity` (raises :class:`QuantityError`)."""
    return Quantity.parse(s)


def canonicalize(s: str | int | float | Quantity) -> str:
    """The canonical string form of ``s``, e.g. ``"0.5"`` -> ``"500m"``."""
    if isinstance(s, str):
        return _canonical_text(s)
    return Quantity.parse(s).canonical()
