"""Quantity parsing, rounding and canonical form must match apimachinery's resource.Quantity."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.api.machinery.quantity import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    ERR_FORMAT_WRONG,
    ERR_NUMERIC,
    ERR_SUFFIX,
    Quantity,
    QuantityError,
    canonicalize,
    parse_quantity,
)

CANONICAL = [
    # (input, canonical, rule)
    ("500m", "500m", "milli stays milli"),
    ("0.5", "500m", "fractions become milli"),
    ("1.5", "1500m", "fractional units become milli"),
    ("1000m", "1", "whole units drop the suffix"),
    ("2", "2", "plain integers stay"),
    (2, "2", "YAML ints are decimal text"),
    (0.5, "500m", "YAML floats use repr"),
    (1e-05, "10e-6", "float repr with exponent parses as DecimalExponent"),
    ("1.5Gi", "1536Mi", "binary uses the largest exact binary suffix"),
    ("0.5Gi", "512Mi", "fractional binary that is integral stays binary"),
    ("0.1Gi", "107374182400m", "non-integral binary falls back to DecimalSI"),
    ("1024", "1024", "plain 1024 is DecimalSI, not 1Ki"),
    ("1Ki", "1Ki", "binary stays binary"),
    ("2048Ki", "2Mi", "binary promotes to the larger suffix"),
    ("1025Ki", "1025Ki", "binary keeps suffix when not divisible"),
    ("1024Mi", "1Gi", "1024Mi is 1Gi"),
    ("5Mi", "5Mi", "binary mebibytes"),
    (".001Ki", "1024m", "binary under 1024 falls back to DecimalSI"),
    (".000000000001Ki", "2n", "tiny binary rounds up to nano and changes format"),
    ("512M", "512M", "decimal mega"),
    ("12000", "12k", "trailing zeros move into the suffix"),
    ("1000M", "1G", "decimal promotes to the larger suffix"),
    ("100.035k", "100035", "fraction of a suffix becomes the smaller suffix"),
    ("1.08", "1080m", "exponent moves down to a multiple of three"),
    ("1e3", "1e3", "DecimalExponent stays exponent"),
    ("1E3", "1e3", "exponent is printed lower-case"),
    ("1.5e3", "1500", "DecimalExponent with exponent 0 has no suffix"),
    ("1.2e3", "1200", "DecimalExponent mantissa keeps all digits"),
    ("1.3E+6", "1300e3", "DecimalExponent exponent is a multiple of three"),
    ("0.5e-2", "5e-3", "negative exponents"),
    ("1e-9", "1e-9", "nano in exponent form"),
    ("0.0000000001", "1n", "sub-nano rounds up to 1n"),
    ("3.001n", "4n", "sub-nano fraction rounds up"),
    ("0.00000012345", "124n", "rounding is to nano precision, upward"),
    ("-1", "-1", "negative integers"),
    ("-0.0000000001", "-1n", "negative values round away from zero"),
    ("-1.5Gi", "-1536Mi", "negative binary"),
    ("+1", "1", "leading plus is dropped"),
    ("007", "7", "leading zeros are dropped"),
    ("1.", "1", "trailing dot is accepted"),
    ("1.G", "1G", "trailing dot before suffix is accepted"),
    (".5", "500m", "leading dot is accepted"),
    ("0", "0", "zero"),
    ("0Mi", "0", "zero never has a suffix"),
    ("-0", "0", "negative zero prints as zero"),
    ("12E", "12E", "exa suffix"),
    ("1000E", "1e21", "DecimalSI beyond E falls back to exponent notation"),
    ("9Ei", "9223372036854775807", "BinarySI is capped at 2^63-1"),
    ("Mi", "0", "upstream quirk: a bare binary suffix parses as zero"),
    (".", "0", "upstream quirk: a lone dot is zero"),
    ("-", "0", "upstream quirk: a lone sign is zero"),
]


@pytest.mark.parametrize(("text", "expected", "rule"), CANONICAL, ids=[c[2] for c in CANONICAL])
def test_canonical_form_follows_kubernetes(
    text: str | int | float, expected: str, rule: str
) -> None:
    q = Quantity.parse(text)
    assert q.canonical() == expected
    assert str(q) == expected
    assert canonicalize(text) == expected


PARSED = [
    # (input, exact value, format, rule)
    ("1Ki", "1024", BINARY_SI, "Ki is 2^10"),
    ("3Ei", str(3 * 2**60), BINARY_SI, "Ei is 2^60"),
    ("0.5Mi", "524288", BINARY_SI, "fractional binary multiplies exactly"),
    ("100.035Ki", "102435.84", BINARY_SI, "binary fraction keeps its digits"),
    ("5n", "0.000000005", DECIMAL_SI, "n is 1e-9"),
    ("2P", "2e15", DECIMAL_SI, "P is 1e15"),
    ("1e3", "1000", DECIMAL_EXPONENT, "e is a decimal exponent"),
    ("1E-3", "0.001", DECIMAL_EXPONENT, "E may be negative"),
    ("0.5e-9", "1e-9", DECIMAL_EXPONENT, "exponent values round up to nano"),
    ("0.000000000001Ki", "2e-9", DECIMAL_SI, "binary below 1 becomes DecimalSI"),
    ("9223372036854775807Ki", str(2**63 - 1), BINARY_SI, "binary cap"),
    ("1000E", "1e21", DECIMAL_SI, "DecimalSI is not capped"),
    ("-1.5", "-1.5", DECIMAL_SI, "negative fraction"),
]


@pytest.mark.parametrize(("text", "value", "fmt", "rule"), PARSED, ids=[c[3] for c in PARSED])
def test_parse_value_and_format(text: str, value: str, fmt: str, rule: str) -> None:
    q = parse_quantity(text)
    assert q.value == Decimal(value)
    assert q.format == fmt


INVALID = [
    # (input, message, rule)
    ("1K", ERR_SUFFIX, "upper-case K is not a suffix"),
    ("1k2", ERR_SUFFIX, "digits after a suffix letter need an e"),
    ("1k2x", ERR_FORMAT_WRONG, "anything after the exponent digits"),
    ("1.2.3", ERR_FORMAT_WRONG, "two decimal points"),
    ("", ERR_FORMAT_WRONG, "empty string"),
    ("abc", ERR_FORMAT_WRONG, "letters"),
    ("1Gb", ERR_FORMAT_WRONG, "unknown trailing letters"),
    ("1.1.M", ERR_FORMAT_WRONG, "dot after fraction"),
    ("1+1.0M", ERR_FORMAT_WRONG, "sign in the middle"),
    ("1+1", ERR_SUFFIX, "sign without e"),
    ("0.1mi", ERR_SUFFIX, "mi is not a suffix"),
    ("0.1am", ERR_FORMAT_WRONG, "a is not a suffix letter"),
    ("aoeu", ERR_FORMAT_WRONG, "garbage"),
    (".5i", ERR_SUFFIX, "bare i"),
    ("1i", ERR_SUFFIX, "bare i after digits"),
    ("-3.01e-", ERR_SUFFIX, "exponent without digits"),
    ("1e", ERR_SUFFIX, "bare e"),
    ("1e4294967297", ERR_SUFFIX, "exponent beyond int32 is rejected, not truncated"),
    (" 1", ERR_FORMAT_WRONG, "leading whitespace"),
    ("1 ", ERR_FORMAT_WRONG, "trailing whitespace"),
    ("Pi", ERR_NUMERIC, "bare Pi takes the big-decimal path, which needs digits"),
    ("e-10", ERR_NUMERIC, "bare sub-nano exponent needs digits"),
    ("nan", ERR_FORMAT_WRONG, "float nan text"),
]


@pytest.mark.parametrize(("text", "message", "rule"), INVALID, ids=[c[2] for c in INVALID])
def test_invalid_quantities_are_rejected_with_upstream_message(
    text: str, message: str, rule: str
) -> None:
    with pytest.raises(QuantityError) as info:
        Quantity.parse(text)
    assert str(info.value) == message


def test_error_message_quotes_the_upstream_regex() -> None:
    assert ERR_FORMAT_WRONG == (
        "quantities must match the regular expression "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )


@pytest.mark.parametrize(
    "bad", [True, None, [1], float("inf")], ids=["bool", "None", "list", "inf"]
)
def test_non_quantity_python_values_are_rejected(bad: object) -> None:
    with pytest.raises(QuantityError):
        Quantity.parse(bad)  # type: ignore[arg-type]


ROUNDING = [
    # (input, int_value, milli_value, rule)
    ("1.5", 2, 1500, "int value rounds up"),
    ("1", 1, 1000, "exact values are unchanged"),
    ("100m", 1, 100, "a fraction of a unit rounds up to one"),
    ("1n", 1, 1, "milli value rounds up"),
    ("1.5Gi", 1610612736, 1610612736000, "binary values"),
    ("-1.5", -2, -1500, "negative values round away from zero"),
    ("-1n", -1, -1, "negative milli rounds away from zero"),
    ("0", 0, 0, "zero"),
]


@pytest.mark.parametrize(("text", "whole", "milli", "rule"), ROUNDING, ids=[c[3] for c in ROUNDING])
def test_integer_accessors_round_up(text: str, whole: int, milli: int, rule: str) -> None:
    q = Quantity.parse(text)
    assert q.int_value() == whole
    assert q.milli_value() == milli


def test_integer_accessors_refuse_int64_overflow() -> None:
    with pytest.raises(OverflowError):
        Quantity.parse("1e30").int_value()
    with pytest.raises(OverflowError):
        Quantity.parse("9223372036854775807").milli_value()
    assert Quantity.parse("9223372036854775807").int_value() == 2**63 - 1


COMPARISONS = [
    ("1Gi", "1024Mi", 0, "binary suffixes compare by value"),
    ("1", "1000m", 0, "units compare by value"),
    ("1e3", "1k", 0, "formats compare by value"),
    ("100m", "50m", 1, "larger is greater"),
    ("10000T", "100Gi", 1, "decimal vs binary"),
    ("-1", "0", -1, "negatives are smaller"),
]


@pytest.mark.parametrize(("a", "b", "cmp", "rule"), COMPARISONS, ids=[c[3] for c in COMPARISONS])
def test_ordering_and_equality_are_by_value(a: str, b: str, cmp: int, rule: str) -> None:
    qa, qb = Quantity.parse(a), Quantity.parse(b)
    assert (qa > qb) == (cmp > 0)
    assert (qa < qb) == (cmp < 0)
    assert (qa == qb) == (cmp == 0)
    assert (qa <= qb) == (cmp <= 0)
    assert (qa >= qb) == (cmp >= 0)
    if cmp == 0:
        assert hash(qa) == hash(qb)


@pytest.mark.parametrize(
    ("text", "zero", "sign"),
    [("0", True, 0), ("0Mi", True, 0), ("-0", True, 0), ("1m", False, 1), ("-1m", False, -1)],
)
def test_is_zero_and_sign(text: str, zero: bool, sign: int) -> None:
    q = Quantity.parse(text)
    assert q.is_zero() is zero
    assert q.sign() == sign


HAND_BUILT = [
    (Quantity(Decimal(1) * 10**24, DECIMAL_SI), "1e24", "DecimalSI above E uses exponent form"),
    (Quantity(Decimal(2**70), BINARY_SI), str(2**70), "BinarySI past Ei falls back to decimal"),
    (Quantity(Decimal(10) ** 70, BINARY_SI), "10e69", "BinarySI past Ei may use exponent form"),
    (Quantity(Decimal(2000), BINARY_SI), "2000", "BinarySI without a binary factor"),
    (Quantity(Decimal(5), BINARY_SI), "5", "BinarySI below 1024 prints as DecimalSI"),
    (Quantity(Decimal("0.5"), BINARY_SI), "500m", "BinarySI fraction prints as DecimalSI"),
]


@pytest.mark.parametrize(("q", "expected", "rule"), HAND_BUILT, ids=[c[2] for c in HAND_BUILT])
def test_canonical_of_constructed_values_round_trips(q: Quantity, expected: str, rule: str) -> None:
    assert q.canonical() == expected
    assert Quantity.parse(expected) == q


@pytest.mark.parametrize(
    ("q", "expected"),
    [(Quantity(Decimal("1e-12"), DECIMAL_SI), "1e-12"), (Quantity(Decimal("1e-10")), "100e-12")],
    ids=["DecimalSI below n uses exponent form", "exponent form keeps multiples of three"],
)
def test_sub_nano_constructed_values_print_in_exponent_form(q: Quantity, expected: str) -> None:
    # Only reachable by construction; parsing such a string rounds it up to 1n.
    assert q.canonical() == expected
    assert Quantity.parse(expected).canonical() == "1e-9"


def test_constructor_validates_format_and_value() -> None:
    with pytest.raises(ValueError):
        Quantity(Decimal(1), "Bytes")
    with pytest.raises(TypeError):
        Quantity(1.5, DECIMAL_SI)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Quantity(Decimal("NaN"), DECIMAL_SI)
    assert Quantity(3, DECIMAL_SI).value == Decimal(3)  # type: ignore[arg-type]


# --- properties ---

_SUFFIXES = ["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]


@st.composite
def quantity_strings(draw: st.DrawFn) -> str:
    sign = draw(st.sampled_from(["", "+", "-"]))
    whole = draw(st.from_regex(r"[0-9]{1,20}", fullmatch=True))
    frac = draw(st.one_of(st.just(""), st.from_regex(r"\.[0-9]{0,12}", fullmatch=True)))
    suffix = draw(
        st.one_of(
            st.sampled_from(_SUFFIXES),
            st.builds(
                lambda e, n: f"{e}{n}",
                st.sampled_from(["e", "E", "e+", "e-", "E-"]),
                st.integers(0, 40),
            ),
        )
    )
    return f"{sign}{whole}{frac}{suffix}"


@given(quantity_strings())
def test_canonical_parses_back_to_the_same_value(text: str) -> None:
    q = Quantity.parse(text)
    canonical = q.canonical()
    again = Quantity.parse(canonical)
    assert again.value == q.value
    assert again.canonical() == canonical


@given(quantity_strings())
def test_parsed_values_have_at_most_nano_precision(text: str) -> None:
    _, digits, exponent = Quantity.parse(text).value.as_tuple()
    assert isinstance(exponent, int)
    trailing_zeros = len(digits) - len("".join(map(str, digits)).rstrip("0"))
    assert exponent + trailing_zeros >= -9 or not any(digits)


@given(st.integers(min_value=-(10**30), max_value=10**30))
def test_ints_parse_to_themselves(n: int) -> None:
    q = Quantity.parse(n)
    assert q.value == n
    assert Quantity.parse(q.canonical()).value == n


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12))
def test_floats_parse_via_repr(x: float) -> None:
    q = Quantity.parse(x)
    exact = Decimal(repr(x))
    assert abs(q.value - exact) <= Decimal("1e-9")
    assert abs(q.value) >= abs(exact)


@pytest.mark.parametrize(
    "text",
    ["1e" + "9" * 5000, "1e-" + "9" * 5000, "1e9223372036854775808", "1E-9223372036854775809"],
)
def test_an_exponent_beyond_int64_is_a_quantity_error_not_a_crash(text: str) -> None:
    with pytest.raises(QuantityError, match="unable to parse quantity's suffix"):
        Quantity.parse(text)


@pytest.mark.parametrize(
    ("text", "fits"),
    [
        ("9223372036854775807m", True),
        ("9223372036854775808m", False),
        ("9223372036854775.807", True),
        ("9223372036854775.8071", False),
        ("-9223372036854775808m", True),
        ("8Pi", True),
        ("8Ei", False),
        ("1e400", False),
        ("0", True),
    ],
)
def test_fits_int64_milli_is_exactly_milli_value_not_overflowing(text: str, fits: bool) -> None:
    q = Quantity.parse(text)
    assert q.fits_int64_milli() is fits
    if fits:
        q.milli_value()
    else:
        with pytest.raises(OverflowError):
            q.milli_value()
