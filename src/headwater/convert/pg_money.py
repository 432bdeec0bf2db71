"""PostgreSQL ``money`` text → Debezium's representations (``decimal.handling.mode``).

``cash_out`` formats with the server's ``lc_monetary``.  Under the C / POSIX locales (and
``C.UTF-8``, ``en_US``) that is ``$1,234.56`` and ``-$1,234.56``: a currency symbol, ``,``
grouping, ``.`` before exactly two fraction digits.  Current Debezium (``AbstractColumnValue
.asMoney``) rewrites a leading ``-`` as parentheses, drops the first character (the symbol) and
the commas, and reads the rest as a ``BigDecimal``; then ``PostgresValueConverter.convertMoney``:

========  ===================  ==============================================================
mode      schema               value
========  ===================  ==============================================================
precise   BYTES Connect        the decimal at scale ``money.fraction.digits`` (default 2,
          ``Decimal``          half-up), schema parameter ``scale`` only (``Decimal.builder``,
          (``scale`` only)     no ``connect.decimal.precision``)
double    FLOAT64              ``BigDecimal.doubleValue()``
string    STRING               ``BigDecimal.toPlainString()``: ``-1234.56``, ``0.00``
========  ===================  ==============================================================

Headwater reads the same text more tolerantly: any currency symbol before or after the number,
a leading ``-`` or parentheses for negatives, ``,`` grouping and ``.`` decimals; a ``,`` followed
by other than three digits as the last separator, or after a ``.`` grouping, is a decimal comma
(``1.234,56 €``).  A session with ``lc_monetary=C`` is the reliable setting.
"""

from __future__ import annotations

import re
from decimal import Decimal

__all__ = ["money_decimal_text", "parse_money"]

# C / en_US output: "$1,234.56", "-$1,234.56", "-$0.01"
_C_LOCALE = re.compile(r"(-?)\$((?:\d{1,3})(?:,\d{3})*)(?:\.(\d+))?")


def money_decimal_text(text: str) -> str:
    """The plain decimal text of a money value: ``-$1,234.56`` → ``-1234.56``."""
    m = _C_LOCALE.fullmatch(text)
    if m is not None:
        sign, whole, frac = m.groups()
        whole = whole.replace(",", "")
        return f"{sign}{whole}.{frac}" if frac is not None else f"{sign}{whole}"
    return _generic(text)


def _generic(text: str) -> str:
    negative = "-" in text or (text.strip().startswith("(") and text.strip().endswith(")"))
    first = next((i for i, c in enumerate(text) if c.isdigit()), -1)
    if first < 0:
        raise ValueError(f"invalid money {text!r}")
    last = max(i for i, c in enumerate(text) if c.isdigit())
    core = text[first : last + 1]
    groups = re.split(r"[^\d]", core)
    seps = re.findall(r"[^\d]+", core)
    if any(s not in {",", ".", " ", "\u00a0", "\u202f", "'"} for s in seps):
        raise ValueError(f"invalid money {text!r}")
    decimal_sep = None
    if seps:
        last_sep = seps[-1]
        if last_sep in {".", ","}:
            earlier = set(seps[:-1])
            if last_sep in earlier:
                decimal_sep = None  # the same mark repeated: grouping
            elif earlier or len(groups[-1]) != 3 or last_sep == ".":
                decimal_sep = last_sep
    if decimal_sep is not None:
        whole = "".join(groups[:-1])
        frac = groups[-1]
        digits = f"{whole or '0'}.{frac}"
    else:
        digits = "".join(groups)
    return f"-{digits}" if negative else digits


def parse_money(text: str) -> Decimal:
    """A money value's text as a ``Decimal`` keeping its printed scale."""
    return Decimal(money_decimal_text(text))
