"""A double as bson-java's JSON writer prints it: `Double.toString` (JDK 19+), `E+` exponents.

Debezium's MongoDB strings carry doubles as `JsonDoubleHelper.toString`: Java's
`Double.toString`, then every positive exponent `E7` rewritten `E+7`.  Since JDK 19 (JDK-4511638)
`Double.toString` is specified exactly: among the decimals that round to the double, the
shortest (at least 2 digits), the closest of those, the even one on a tie; written plainly for
10^-3 <= |x| < 10^7 with at least one fractional digit (`100.0`, `0.001`), else as
`d.dddE<exp>` (`1.0E7`, `9.99E-4`).  Python's `repr` finds the same shortest closest digits, so
only the 1-digit case (`5e-324` is `4.9E-324` in Java) and the layout need work here.

JDK 17 and older print some doubles with more digits than needed (`1e23` as
`9.999999999999999E22`, `2.82879384806159E17` as `2.82879384806159008E17`): a JDK bug this
module does not reproduce (see docs/mongodb-events.md).
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from math import isnan

__all__ = ["java_double"]


def _digits(x: float) -> tuple[str, int]:
    """(digits without leading/trailing zeros, exponent of the first digit) of repr(x), x > 0."""
    text = repr(x)
    exp = 0
    if "e" in text:
        text, e = text.split("e")
        exp = int(e)
    if "." in text:
        whole, frac = text.split(".")
    else:
        whole, frac = text, ""
    digits = (whole + frac).lstrip("0")
    lead = len(whole + frac) - len(digits)  # zeros before the first significant digit
    point = len(whole) + exp  # the decimal point's position after the first raw character
    return digits.rstrip("0") or "0", point - lead - 1


def _two_digits(x: float) -> tuple[str, int]:
    """The 2-digit decimal closest to x (ties to even), trailing zero dropped.

    Scaled from x's own exponent, not the shortest's (`1e-323` is 9.88e-324: `9.9E-324`)."""
    with localcontext() as ctx:
        ctx.prec = 1200
        exact = Decimal(x)
        exp = exact.adjusted()
        scaled = exact.scaleb(1 - exp)
        n = int(scaled.to_integral_value(rounding=ROUND_HALF_EVEN))
    if n >= 100:
        n, exp = n // 10, exp + 1
    return str(n).rstrip("0"), exp


def java_double(x: float) -> str:
    """`JsonDoubleHelper.toString(x)` of bson-java on a JDK 19+ runtime."""
    if isnan(x):
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "Infinity" if x > 0 else "-Infinity"
    if 1e-3 <= abs(x) < 1e7:
        # Both print plain notation here with the same shortest digits (a 1-digit shortest
        # is its own 2-digit closest away from subnormals): Python's repr is Java's string.
        return repr(x)
    if x == 0.0:
        return "-0.0" if str(x)[0] == "-" else "0.0"
    sign = "-" if x < 0 else ""
    x = abs(x)
    digits, exp = _digits(x)
    if len(digits) == 1:
        digits, exp = _two_digits(x)
    if -3 <= exp < 7:
        if exp >= 0:
            whole = digits[: exp + 1].ljust(exp + 1, "0")
            frac = digits[exp + 1:] or "0"
        else:
            whole, frac = "0", "0" * (-exp - 1) + digits
        return f"{sign}{whole}.{frac}"
    frac = digits[1:] or "0"
    return f"{sign}{digits[0]}.{frac}E{'+' if exp > 0 else ''}{exp}"
