/* headwater.connectors.postgres._copykernels: the column-wise snapshot's kernels, COPY text in,
 * event JSON bytes out (see snapshot_columnar.py, which calls them).
 *
 * A chunk of ``COPY ... TO STDOUT`` text (whole lines) is scanned once into field boundaries
 * (`scan`); every value of a column whose kind has a kernel is then rendered straight from
 * those bytes to the JSON text Debezium's event holds, and each row's key and value are
 * assembled from the table's constant pieces (rendered once per table by the format itself)
 * and those values (`assemble`).  A value a kernel does not handle (a BC date, a numeric
 * beyond 18 digits, a boolean that is not t/f...) is reported by `check` and rendered by the
 * column's Python converter instead, so a kernel only ever has to be exact on the forms it
 * accepts.  What each kind renders, and which column gets which kind: columnar_kinds.py.
 *
 * The renderers reproduce, byte for byte, what the row-wise path writes: the converter in
 * types/ and convert/decimal.py, then orjson (`json_default` for bytes).  A renderer returns
 * -1 for "not handled here".  C, not numba: loading numba and llvmlite cost the capture
 * process ~130 MB of resident memory and a second of CPU (issue 27's 150 MB).
 *
 * Every index handed in is checked against its buffer before use, and every write against the
 * output's capacity (a value's rendering is at most GROWTH bytes per source byte plus SLACK):
 * a caller's mistake is a ValueError, never a write out of bounds.  The loops run without the
 * GIL for chunks from NOGIL_BYTES on (the buffer exports keep the arrays from being resized).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_cext.h"

/* Column kinds: columnar_kinds.py (tests/unit/test_copy_kernels.py checks they agree). */
enum {
    FALLBACK = 0, INT = 1, BOOL = 2, STRING = 3, DECIMAL = 4, VSD = 5, DECIMAL_STRING = 6,
    DATE = 7, TIME_MICROS = 8, TIME_MILLIS = 9, TIMESTAMP_MICROS = 10, TIMESTAMP_MILLIS = 11,
    ZONED_TIMESTAMP = 12, BYTEA = 13,
};
enum { BYTEA_BASE64 = 0, BYTEA_BASE64_URL = 1, BYTEA_HEX = 2 };

/* A value's rendering is at most GROWTH bytes per source byte plus SLACK (a string of control
   characters: 6 bytes each as \u00XX). */
#define GROWTH 6
#define SLACK 64
#define NO_DATE INT64_MIN
#define DAY_MICROS INT64_C(86400000000)

typedef const uint8_t *src_t;

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char B64_URL[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
static const char HEX[] = "0123456789abcdef";
static const char VSD_SCALE[] = "{\"scale\":";
static const char VSD_VALUE[] = ",\"value\":\"";

/* Python's floor division (the kernels' arithmetic was written against it). */
static int64_t
floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static Py_ssize_t
put(uint8_t *out, Py_ssize_t p, const char *text, Py_ssize_t n)
{
    memcpy(out + p, text, (size_t)n);
    return p + n;
}

static int
is_null(src_t buf, Py_ssize_t s, Py_ssize_t e)
{
    return e - s == 2 && buf[s] == '\\' && buf[s + 1] == 'N';
}

static int
digits(src_t buf, Py_ssize_t s, Py_ssize_t e)
{
    if (s >= e)
        return 0;
    for (Py_ssize_t i = s; i < e; i++)
        if (buf[i] < '0' || buf[i] > '9')
            return 0;
    return 1;
}

/* The value of at most 18 decimal digits (callers check they are digits). */
static int64_t
number(src_t buf, Py_ssize_t s, Py_ssize_t e)
{
    int64_t v = 0;
    for (Py_ssize_t i = s; i < e; i++)
        v = v * 10 + (buf[i] - '0');
    return v;
}

static Py_ssize_t
write_int(int64_t v, uint8_t *out, Py_ssize_t p)
{
    /* v > INT64_MIN always: the kernels' values stay below 10^18 in magnitude */
    char digits_[20];
    int n = 0;
    uint64_t u;
    if (v < 0) {
        out[p++] = '-';
        u = (uint64_t)(-v);
    } else {
        u = (uint64_t)v;
    }
    do {
        digits_[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u > 0);
    while (n > 0)
        out[p++] = (uint8_t)digits_[--n];
    return p;
}

/* Base64 with '=' padding of data[:n] (as Java's encoders and Python's b64encode). */
static Py_ssize_t
b64(const uint8_t *data, Py_ssize_t n, const char *alphabet, uint8_t *out, Py_ssize_t p)
{
    Py_ssize_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = ((uint32_t)data[i] << 16) | ((uint32_t)data[i + 1] << 8) | data[i + 2];
        out[p] = (uint8_t)alphabet[(v >> 18) & 63];
        out[p + 1] = (uint8_t)alphabet[(v >> 12) & 63];
        out[p + 2] = (uint8_t)alphabet[(v >> 6) & 63];
        out[p + 3] = (uint8_t)alphabet[v & 63];
        p += 4;
    }
    Py_ssize_t rest = n - i;
    if (rest > 0) {
        uint32_t v = (uint32_t)data[i] << 16;
        if (rest == 2)
            v |= (uint32_t)data[i + 1] << 8;
        out[p] = (uint8_t)alphabet[(v >> 18) & 63];
        out[p + 1] = (uint8_t)alphabet[(v >> 12) & 63];
        out[p + 2] = rest == 2 ? (uint8_t)alphabet[(v >> 6) & 63] : '=';
        out[p + 3] = '=';
        p += 4;
    }
    return p;
}

/* Base64 of Java BigInteger.toByteArray() of v: minimal big-endian two's complement. */
static Py_ssize_t
unscaled_b64(int64_t v, uint8_t *out, Py_ssize_t p)
{
    uint64_t magnitude = (uint64_t)(v >= 0 ? v : ~v);
    int bits = 0;
    while (magnitude > 0) {
        magnitude >>= 1;
        bits++;
    }
    int n = bits / 8 + 1; /* at most 8: |v| < 10^18 < 2^60 */
    uint8_t raw[8];
    for (int k = 0; k < n; k++)
        raw[n - 1 - k] = (uint8_t)(((uint64_t)v >> (8 * k)) & 0xFF);
    return b64(raw, n, B64, out, p);
}

/* [-]digits[.digits] of 1 to 18 digits filling [s, e): 1 with *neg, *i (after the sign) and
   *dot (-1 if none) set, or 0. */
static int
plain_decimal(src_t buf, Py_ssize_t s, Py_ssize_t e, int *neg, Py_ssize_t *i, Py_ssize_t *dot)
{
    int count = 0;
    *neg = s < e && buf[s] == '-';
    *i = *neg ? s + 1 : s;
    *dot = -1;
    for (Py_ssize_t k = *i; k < e; k++) {
        uint8_t c = buf[k];
        if (c == '.') {
            if (*dot >= 0)
                return 0;
            *dot = k;
        } else if (c >= '0' && c <= '9') {
            if (++count > 18)
                return 0;
        } else {
            return 0;
        }
    }
    return count > 0 && *dot != *i && *dot != e - 1;
}

/* The digits of [s, e) but the one at `skip`, as a number (at most 18 of them). */
static int64_t
digits_value(src_t buf, Py_ssize_t s, Py_ssize_t e, Py_ssize_t skip)
{
    int64_t v = 0;
    for (Py_ssize_t k = s; k < e; k++)
        if (k != skip)
            v = v * 10 + (buf[k] - '0');
    return v;
}

static Py_ssize_t
decimal(src_t buf, Py_ssize_t s, Py_ssize_t e, int64_t scale, uint8_t *out, Py_ssize_t p)
{
    int neg;
    Py_ssize_t i, dot;
    if (!plain_decimal(buf, s, e, &neg, &i, &dot) || (dot >= 0 ? e - dot - 1 : 0) != scale)
        return -1;
    int64_t v = digits_value(buf, i, e, dot);
    out[p] = '"';
    p = unscaled_b64(neg ? -v : v, out, p + 1);
    out[p] = '"';
    return p + 1;
}

static Py_ssize_t
vsd(src_t buf, Py_ssize_t s, Py_ssize_t e, uint8_t *out, Py_ssize_t p)
{
    int neg;
    Py_ssize_t i, dot, last = e, scale = 0;
    if (!plain_decimal(buf, s, e, &neg, &i, &dot))
        return -1;
    if (dot >= 0) {
        while (last > dot + 1 && buf[last - 1] == '0')
            last--;
        scale = last - dot - 1;
        if (scale == 0)
            last = dot;
    }
    int64_t v = digits_value(buf, i, last, dot);
    p = put(out, p, VSD_SCALE, sizeof VSD_SCALE - 1);
    p = write_int(scale, out, p);
    p = put(out, p, VSD_VALUE, sizeof VSD_VALUE - 1);
    p = unscaled_b64(neg ? -v : v, out, p);
    out[p] = '"';
    out[p + 1] = '}';
    return p + 2;
}

/* BigDecimal.toString() where it is the text itself: plain notation (adjusted exponent >= -6)
   and not a negative zero; scientific notation goes to the converter. */
static Py_ssize_t
decimal_string(src_t buf, Py_ssize_t s, Py_ssize_t e, int64_t scale, uint8_t *out,
               Py_ssize_t p)
{
    int neg;
    Py_ssize_t i, dot, first = -1, coefficient;
    if (!plain_decimal(buf, s, e, &neg, &i, &dot))
        return -1;
    Py_ssize_t fraction = dot >= 0 ? e - dot - 1 : 0;
    if (scale >= 0 && fraction != scale)
        return -1;
    for (Py_ssize_t k = i; k < e; k++) {
        if (k != dot && buf[k] != '0') {
            first = k;
            break;
        }
    }
    if (first < 0) {
        if (neg)
            return -1;
        coefficient = 1;
    } else {
        coefficient = e - first - (dot > first ? 1 : 0);
    }
    if (coefficient - 1 - fraction < -6)
        return -1;
    out[p++] = '"';
    memcpy(out + p, buf + s, (size_t)(e - s));
    p += e - s;
    out[p] = '"';
    return p + 1;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
static int64_t
days_from_civil(int64_t year, int64_t month, int64_t day)
{
    int64_t y = month <= 2 ? year - 1 : year;
    int64_t era = floordiv(y >= 0 ? y : y - 399, 400);
    int64_t yoe = y - era * 400;
    int64_t mp = month > 2 ? month - 3 : month + 9;
    int64_t doy = (153 * mp + 2) / 5 + day - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int
valid_date(int64_t year, int64_t month, int64_t day)
{
    if (year < 1 || month < 1 || month > 12 || day < 1)
        return 0;
    if (month == 2) {
        int leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
        return day <= (leap ? 29 : 28);
    }
    if (month == 4 || month == 6 || month == 9 || month == 11)
        return day <= 30;
    return day <= 31;
}

/* Days of YYYY-MM-DD at s (10 bytes there, callers check), or NO_DATE when it is not a valid
   four-digit-year date. */
static int64_t
date_days(src_t buf, Py_ssize_t s)
{
    if (buf[s + 4] != '-' || buf[s + 7] != '-' || !digits(buf, s, s + 4)
            || !digits(buf, s + 5, s + 7) || !digits(buf, s + 8, s + 10))
        return NO_DATE;
    int64_t year = number(buf, s, s + 4);
    int64_t month = number(buf, s + 5, s + 7);
    int64_t day = number(buf, s + 8, s + 10);
    if (!valid_date(year, month, day))
        return NO_DATE;
    return days_from_civil(year, month, day);
}

/* Microseconds of HH:MM:SS[.f{1,6}] filling [s, e), or -1. */
static int64_t
time_micros(src_t buf, Py_ssize_t s, Py_ssize_t e)
{
    Py_ssize_t n = e - s;
    if (n < 8 || buf[s + 2] != ':' || buf[s + 5] != ':')
        return -1;
    if (!(digits(buf, s, s + 2) && digits(buf, s + 3, s + 5) && digits(buf, s + 6, s + 8)))
        return -1;
    int64_t hour = number(buf, s, s + 2);
    int64_t minute = number(buf, s + 3, s + 5);
    int64_t second = number(buf, s + 6, s + 8);
    if (minute > 59 || second > 59 || hour > 24)
        return -1;
    int64_t micros = 0;
    if (n > 8) {
        if (buf[s + 8] != '.' || n > 15 || n == 9 || !digits(buf, s + 9, e))
            return -1;
        micros = number(buf, s + 9, e);
        for (Py_ssize_t k = 0; k < 15 - n; k++)
            micros *= 10;
    }
    int64_t total = ((hour * 60 + minute) * 60 + second) * 1000000 + micros;
    if (hour == 24 && total != DAY_MICROS)
        return -1;
    return total;
}

/* Microseconds since the epoch of YYYY-MM-DD HH:MM:SS[.f] filling [s, e): 1 with *micros
   set, or 0. */
static int
timestamp_micros(src_t buf, Py_ssize_t s, Py_ssize_t e, int64_t *micros)
{
    if (e - s < 19 || buf[s + 10] != ' ')
        return 0;
    int64_t days = date_days(buf, s);
    if (days == NO_DATE)
        return 0;
    int64_t tod = time_micros(buf, s + 11, e);
    if (tod < 0 || tod >= DAY_MICROS)
        return 0;
    *micros = days * DAY_MICROS + tod;
    return 1;
}

/* types.zoned_timestamp_converter's fast path: UTC text (+00) moved into ISO form, the
   fraction padded to `width` digits (0 to 6: temporal_precision). */
static Py_ssize_t
zoned(src_t buf, Py_ssize_t s, Py_ssize_t e, int64_t width, uint8_t *out, Py_ssize_t p)
{
    Py_ssize_t n = e - s, full = 23 + (Py_ssize_t)width;
    if (width < 0 || width > 6)
        return -1;
    if (n < 22 || n > full || buf[s + 4] != '-' || buf[e - 3] != '+' || buf[e - 2] != '0'
            || buf[e - 1] != '0')
        return -1;
    if (width == 0 && n != 22) /* convert_iso copies whatever precedes +00; keep to plain */
        return -1;
    out[p++] = '"';
    memcpy(out + p, buf + s, 10);
    out[p + 10] = 'T';
    p += 11;
    if (width == 0 || n == full) {
        for (Py_ssize_t k = s + 11; k < e - 3; k++)
            out[p++] = buf[k];
    } else {
        for (Py_ssize_t k = s + 11; k < s + 19; k++)
            out[p++] = buf[k];
        out[p++] = '.';
        Py_ssize_t have = n > 22 ? e - 3 - (s + 20) : 0;
        for (Py_ssize_t k = 0; k < width; k++)
            out[p++] = k < have ? buf[s + 20 + k] : '0';
    }
    out[p] = 'Z';
    out[p + 1] = '"';
    return p + 2;
}

static int
hex_nibble(uint8_t c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* bytea hex output (COPY doubles its backslash: \\x0102ff) in binary.handling.mode. */
static Py_ssize_t
bytea(src_t buf, Py_ssize_t s, Py_ssize_t e, int64_t mode, uint8_t *out, Py_ssize_t p)
{
    if (e - s < 3 || buf[s] != '\\' || buf[s + 1] != '\\' || buf[s + 2] != 'x'
            || (e - s - 3) % 2)
        return -1;
    Py_ssize_t n = (e - s - 3) / 2;
    src_t hex = buf + s + 3;
    for (Py_ssize_t k = 0; k < 2 * n; k++)
        if (hex_nibble(hex[k]) < 0)
            return -1;
    out[p++] = '"';
    if (mode == BYTEA_HEX) {
        for (Py_ssize_t k = 0; k < 2 * n; k++) /* lower case, as the converter writes */
            out[p++] = (uint8_t)HEX[hex_nibble(hex[k])];
    } else {
        const char *alphabet = mode == BYTEA_BASE64_URL ? B64_URL : B64;
        uint8_t raw[3];
        for (Py_ssize_t k = 0; k < n; k += 3) {
            Py_ssize_t m = n - k < 3 ? n - k : 3;
            for (Py_ssize_t j = 0; j < m; j++)
                raw[j] = (uint8_t)(hex_nibble(hex[2 * (k + j)]) * 16
                                   + hex_nibble(hex[2 * (k + j) + 1]));
            p = b64(raw, m, alphabet, out, p);
        }
    }
    out[p] = '"';
    return p + 1;
}

/* One byte of a str as orjson escapes it (UTF-8 continuation bytes pass through). */
static Py_ssize_t
json_char(uint8_t c, uint8_t *out, Py_ssize_t p)
{
    if (c == '"' || c == '\\') {
        out[p] = '\\';
        out[p + 1] = c;
        return p + 2;
    }
    if (c >= 0x20) {
        out[p] = c;
        return p + 1;
    }
    out[p] = '\\';
    switch (c) {
    case 8: out[p + 1] = 'b'; break;
    case 9: out[p + 1] = 't'; break;
    case 10: out[p + 1] = 'n'; break;
    case 12: out[p + 1] = 'f'; break;
    case 13: out[p + 1] = 'r'; break;
    default:
        out[p + 1] = 'u';
        out[p + 2] = '0';
        out[p + 3] = '0';
        out[p + 4] = (uint8_t)HEX[c >> 4];
        out[p + 5] = (uint8_t)HEX[c & 15];
        return p + 6;
    }
    return p + 2;
}

/* COPY text escapes undone (snapshot.parse_copy_line), then a JSON string. */
static Py_ssize_t
string(src_t buf, Py_ssize_t s, Py_ssize_t e, uint8_t *out, Py_ssize_t p)
{
    out[p++] = '"';
    Py_ssize_t k = s;
    while (k < e) {
        uint8_t c = buf[k];
        if (c == '\\') {
            if (k + 1 >= e)
                return -1;
            uint8_t d = buf[k + 1];
            k += 2;
            switch (d) {
            case 'b': c = 8; break;
            case 'f': c = 12; break;
            case 'n': c = 10; break;
            case 'r': c = 13; break;
            case 't': c = 9; break;
            case 'v': c = 11; break;
            default:
                if (d >= 0x80) /* an escaped multi-byte character: let Python decode it */
                    return -1;
                c = d;
            }
        } else {
            k++;
        }
        p = json_char(c, out, p);
    }
    out[p] = '"';
    return p + 1;
}

/* The JSON of the non-null value buf[s:e] of a column of `kind` written at out[p:] (room for
   GROWTH * (e - s) + SLACK bytes there): the position after it, or -1 when the value is not
   one this kernel handles. */
static Py_ssize_t
render(int64_t kind, int64_t param, src_t buf, Py_ssize_t s, Py_ssize_t e, uint8_t *out,
       Py_ssize_t p)
{
    int64_t v;
    switch (kind) {
    case INT:
        if (!digits(buf, e - s > 1 && buf[s] == '-' ? s + 1 : s, e))
            return -1;
        memcpy(out + p, buf + s, (size_t)(e - s));
        return p + (e - s);
    case STRING:
        return string(buf, s, e, out, p);
    case DECIMAL:
        return decimal(buf, s, e, param, out, p);
    case ZONED_TIMESTAMP:
        return zoned(buf, s, e, param, out, p);
    case BOOL:
        if (e - s != 1)
            return -1;
        if (buf[s] == 't')
            return put(out, p, "true", 4);
        if (buf[s] == 'f')
            return put(out, p, "false", 5);
        return -1;
    case VSD:
        return vsd(buf, s, e, out, p);
    case DECIMAL_STRING:
        return decimal_string(buf, s, e, param, out, p);
    case DATE:
        if (e - s != 10)
            return -1;
        v = date_days(buf, s);
        return v == NO_DATE ? -1 : write_int(v, out, p);
    case TIME_MICROS:
    case TIME_MILLIS:
        v = time_micros(buf, s, e);
        if (v < 0)
            return -1;
        return write_int(kind == TIME_MICROS ? v : v / 1000, out, p);
    case TIMESTAMP_MICROS:
    case TIMESTAMP_MILLIS:
        if (!timestamp_micros(buf, s, e, &v))
            return -1;
        return write_int(kind == TIMESTAMP_MICROS ? v : floordiv(v, 1000), out, p);
    case BYTEA:
        return bytea(buf, s, e, param, out, p);
    default:
        return -1;
    }
}

/* ---- arguments: buffers of the expected item size, their indices checked ---- */

#define MAX_VIEWS 20

typedef struct {
    Py_buffer views[MAX_VIEWS];
    int count;
} Views;

static void
release(Views *vs)
{
    while (vs->count > 0)
        PyBuffer_Release(&vs->views[--vs->count]);
}

/* The buffer of `obj` (C-contiguous; int64 items when `wide`, else bytes), its item count in
   *n; NULL with an exception set when it is not one. */
static void *
acquire(Views *vs, PyObject *obj, int wide, int writable, const char *name, Py_ssize_t *n)
{
    Py_buffer *view = &vs->views[vs->count];
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0)
        return NULL;
    vs->count++;
    const char *format = view->format == NULL ? "B" : view->format;
    if (strchr("@=<", format[0]) != NULL && format[0] != '\0')
        format++;
    int ok = wide ? view->itemsize == 8 && (strcmp(format, "l") == 0 || strcmp(format, "q") == 0)
                  : view->itemsize == 1 && strchr("Bb?c", format[0]) != NULL && format[1] == '\0';
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s: %s expected (item size %zd, format %s)", name,
                     wide ? "int64 items" : "bytes", view->itemsize, view->format);
        return NULL;
    }
    *n = view->len / view->itemsize;
    return view->buf;
}

/* [rows, width] int64 field boundaries: the shape's width in *width. */
static int64_t *
acquire_bounds(Views *vs, PyObject *obj, int writable, const char *name, Py_ssize_t *rows,
               Py_ssize_t *width)
{
    Py_ssize_t n;
    int64_t *data = acquire(vs, obj, 1, writable, name, &n);
    if (data == NULL)
        return NULL;
    Py_buffer *view = &vs->views[vs->count - 1];
    if (view->ndim != 2) {
        PyErr_Format(PyExc_ValueError, "%s: a two-dimensional array expected", name);
        return NULL;
    }
    *rows = view->shape[0];
    *width = view->shape[1];
    return data;
}

static int
index_error(const char *what)
{
    PyErr_Format(PyExc_ValueError, "%s", what);
    return -1;
}

/* The field boundaries the columns read: fields[j] within the width, every [s, e) of the first
   `rows` rows within the buffer. */
static int
check_bounds(const int64_t *fields, Py_ssize_t ncols, const int64_t *starts,
             const int64_t *ends, Py_ssize_t rows, Py_ssize_t width, Py_ssize_t n)
{
    for (Py_ssize_t j = 0; j < ncols; j++)
        if (fields[j] < 0 || fields[j] >= width)
            return index_error("a field index beyond the boundaries' width");
    for (Py_ssize_t r = 0; r < rows; r++) {
        for (Py_ssize_t j = 0; j < ncols; j++) {
            int64_t s = starts[r * width + fields[j]], e = ends[r * width + fields[j]];
            if (s < 0 || s > e || e > n)
                return index_error("field boundaries outside the COPY text");
        }
    }
    return 0;
}

/* ---- scan ---- */

static Py_ssize_t
scan_lines(src_t buf, Py_ssize_t n, Py_ssize_t nfields, int64_t *starts, int64_t *ends,
           Py_ssize_t width, Py_ssize_t rows_max)
{
    Py_ssize_t row = 0, field = 0, start = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint8_t c = buf[i];
        if (c != '\t' && c != '\n')
            continue;
        if (field >= nfields || row >= rows_max)
            return -(row + 1);
        starts[row * width + field] = start;
        ends[row * width + field] = i;
        field++;
        start = i + 1;
        if (c == '\n') {
            if (field != nfields)
                return -(row + 1);
            row++;
            field = 0;
        }
    }
    return row;
}

static PyObject *
scan(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Views vs = {.count = 0};
    Py_ssize_t n, rows_max, width, rows;
    (void)module;
    if (!has_args(nargs, 4, "scan(buf, nfields, starts, ends)"))
        return NULL;
    Py_ssize_t nfields = PyLong_AsSsize_t(args[1]);
    if (nfields == -1 && PyErr_Occurred())
        return NULL;
    src_t buf = acquire(&vs, args[0], 0, 0, "buf", &n);
    int64_t *starts = buf == NULL ? NULL
        : acquire_bounds(&vs, args[2], 1, "starts", &rows_max, &width);
    Py_ssize_t rows_e, width_e;
    int64_t *ends = starts == NULL ? NULL
        : acquire_bounds(&vs, args[3], 1, "ends", &rows_e, &width_e);
    if (ends == NULL)
        goto fail;
    if (rows_e != rows_max || width_e != width || nfields < 0 || nfields > width) {
        PyErr_SetString(PyExc_ValueError, "scan: starts and ends must have one shape, at "
                        "least nfields wide");
        goto fail;
    }
    RUN_NOGIL_IF_LARGE(n, rows = scan_lines(buf, n, nfields, starts, ends, width, rows_max));
    release(&vs);
    return PyLong_FromSsize_t(rows);
fail:
    release(&vs);
    return NULL;
}

/* ---- check ---- */

static void
check_values(const int64_t *kinds, const int64_t *params, const int64_t *fields,
             Py_ssize_t ncols, src_t buf, const int64_t *starts, const int64_t *ends,
             Py_ssize_t width, Py_ssize_t rows, uint8_t *slow, uint8_t *scratch)
{
    for (Py_ssize_t r = 0; r < rows; r++) {
        for (Py_ssize_t j = 0; j < ncols; j++) {
            Py_ssize_t s = starts[r * width + fields[j]], e = ends[r * width + fields[j]];
            slow[r * ncols + j] = !is_null(buf, s, e)
                && (kinds[j] == FALLBACK || render(kinds[j], params[j], buf, s, e, scratch, 0) < 0);
        }
    }
}

static PyObject *
check(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Views vs = {.count = 0};
    Py_ssize_t ncols, n_params, n_fields, n, rows_max, width, rows_e, width_e, n_slow;
    Py_ssize_t longest = 0;
    uint8_t *scratch = NULL;
    (void)module;
    if (!has_args(nargs, 8, "check(kinds, params, fields, buf, starts, ends, rows, slow)"))
        return NULL;
    Py_ssize_t rows = PyLong_AsSsize_t(args[6]);
    if (rows == -1 && PyErr_Occurred())
        return NULL;
    const int64_t *kinds = acquire(&vs, args[0], 1, 0, "kinds", &ncols);
    const int64_t *params = kinds == NULL ? NULL : acquire(&vs, args[1], 1, 0, "params", &n_params);
    const int64_t *fields = params == NULL ? NULL
        : acquire(&vs, args[2], 1, 0, "fields", &n_fields);
    src_t buf = fields == NULL ? NULL : acquire(&vs, args[3], 0, 0, "buf", &n);
    const int64_t *starts = buf == NULL ? NULL
        : acquire_bounds(&vs, args[4], 0, "starts", &rows_max, &width);
    const int64_t *ends = starts == NULL ? NULL
        : acquire_bounds(&vs, args[5], 0, "ends", &rows_e, &width_e);
    uint8_t *slow = ends == NULL ? NULL : acquire(&vs, args[7], 0, 1, "slow", &n_slow);
    if (slow == NULL)
        goto fail;
    if (n_params != ncols || n_fields != ncols || rows_e != rows_max || width_e != width
            || rows < 0 || rows > rows_max || n_slow != rows * ncols) {
        PyErr_SetString(PyExc_ValueError, "check: kinds, params and fields must have one "
                        "length, starts and ends one shape of at least `rows` rows, slow "
                        "[rows, columns]");
        goto fail;
    }
    if (check_bounds(fields, ncols, starts, ends, rows, width, n) < 0)
        goto fail;
    for (Py_ssize_t r = 0; r < rows; r++) {
        for (Py_ssize_t j = 0; j < ncols; j++) {
            Py_ssize_t len = ends[r * width + fields[j]] - starts[r * width + fields[j]];
            if (len > longest)
                longest = len;
        }
    }
    scratch = PyMem_Malloc((size_t)(GROWTH * longest + SLACK));
    if (scratch == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    RUN_NOGIL_IF_LARGE(n, check_values(kinds, params, fields, ncols, buf, starts, ends, width,
                                       rows, slow, scratch));
    PyMem_Free(scratch);
    release(&vs);
    Py_RETURN_NONE;
fail:
    release(&vs);
    return NULL;
}

/* ---- assemble ---- */

typedef struct {
    const int64_t *kinds, *params, *fields;
    Py_ssize_t ncols;
    src_t buf;
    const int64_t *starts, *ends;
    Py_ssize_t width, rows;
    const uint8_t *slow;
    src_t over;
    const int64_t *over_off;
    Py_ssize_t n_over;  /* values in over: over_off has n_over + 1 items */
    src_t pieces;
    const int64_t *piece_off;
    const int64_t *key_cols;
    Py_ssize_t nkeys;
    src_t key_pieces;
    const int64_t *key_piece_off;
    uint8_t *values;
    Py_ssize_t values_cap;
    int64_t *value_off;
    uint8_t *keys;
    Py_ssize_t keys_cap;
    int64_t *key_off;
    Py_ssize_t *vs, *ve;  /* per column: where its value of the current row is in values */
} Assembly;

/* NULL when done, else what went wrong. */
static const char *
assemble_rows(const Assembly *a)
{
    Py_ssize_t p = 0, q = 0, o = 0;
    for (Py_ssize_t r = 0; r < a->rows; r++) {
        a->value_off[r] = p;
        a->key_off[r] = q;
        for (Py_ssize_t j = 0; j <= a->ncols; j++) {
            Py_ssize_t ps = a->piece_off[j], pe = a->piece_off[j + 1];
            if (pe - ps > a->values_cap - p)
                return "the values' buffer is too small";
            memcpy(a->values + p, a->pieces + ps, (size_t)(pe - ps));
            p += pe - ps;
            if (j == a->ncols)
                break;
            a->vs[j] = p;
            Py_ssize_t f = a->fields[j];
            Py_ssize_t s = a->starts[r * a->width + f], e = a->ends[r * a->width + f];
            if (a->slow[r * a->ncols + j]) {
                if (o >= a->n_over)
                    return "fewer converted values than slow ones";
                Py_ssize_t os = a->over_off[o], oe = a->over_off[o + 1];
                if (oe - os > a->values_cap - p)
                    return "the values' buffer is too small";
                memcpy(a->values + p, a->over + os, (size_t)(oe - os));
                p += oe - os;
                o++;
            } else if (is_null(a->buf, s, e)) {
                if (4 > a->values_cap - p)
                    return "the values' buffer is too small";
                p = put(a->values, p, "null", 4);
            } else {
                if (GROWTH * (e - s) + SLACK > a->values_cap - p)
                    return "the values' buffer is too small";
                p = render(a->kinds[j], a->params[j], a->buf, s, e, a->values, p);
                if (p < 0)
                    return "a value `check` did not mark slow is not one its kernel handles";
            }
            a->ve[j] = p;
        }
        if (a->nkeys) {
            for (Py_ssize_t k = 0; k <= a->nkeys; k++) {
                Py_ssize_t ps = a->key_piece_off[k], pe = a->key_piece_off[k + 1];
                Py_ssize_t vs = k < a->nkeys ? a->vs[a->key_cols[k]] : 0;
                Py_ssize_t ve = k < a->nkeys ? a->ve[a->key_cols[k]] : 0;
                if ((pe - ps) + (ve - vs) > a->keys_cap - q)
                    return "the keys' buffer is too small";
                memcpy(a->keys + q, a->key_pieces + ps, (size_t)(pe - ps));
                q += pe - ps;
                memcpy(a->keys + q, a->values + vs, (size_t)(ve - vs));
                q += ve - vs;
            }
        }
    }
    a->value_off[a->rows] = p;
    a->key_off[a->rows] = q;
    if (o != a->n_over)
        return "more converted values than slow ones";
    return NULL;
}

/* Offsets: n + 1 items, non-decreasing, from 0 or more, up to `limit`. */
static int
check_offsets(const int64_t *off, Py_ssize_t items, Py_ssize_t n, Py_ssize_t limit,
              const char *name)
{
    if (items != n + 1) {
        PyErr_Format(PyExc_ValueError, "assemble: %s must have %zd items", name, n + 1);
        return -1;
    }
    for (Py_ssize_t i = 0; i <= n; i++) {
        if (off[i] < (i ? off[i - 1] : 0) || off[i] > limit) {
            PyErr_Format(PyExc_ValueError, "assemble: %s are not offsets into their data", name);
            return -1;
        }
    }
    return 0;
}

static PyObject *
assemble(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Views views = {.count = 0};
    Assembly a;
    Py_ssize_t n_params, n_fields, n_buf, rows_max, rows_e, width_e, n_slow, n_over_bytes;
    Py_ssize_t n_over_off, n_pieces, n_piece_off, n_kpieces, n_kpiece_off, n_value_off;
    Py_ssize_t n_key_off;
    Py_ssize_t *columns = NULL;
    const char *failed;
    (void)module;
    if (!has_args(nargs, 19, "assemble(kinds, params, fields, buf, starts, ends, rows, slow, "
                  "over, over_off, pieces, piece_off, key_cols, key_pieces, key_piece_off, "
                  "values, value_off, keys, key_off)"))
        return NULL;
    a.rows = PyLong_AsSsize_t(args[6]);
    if (a.rows == -1 && PyErr_Occurred())
        return NULL;
    Views *vs = &views;
    if ((a.kinds = acquire(vs, args[0], 1, 0, "kinds", &a.ncols)) == NULL
            || (a.params = acquire(vs, args[1], 1, 0, "params", &n_params)) == NULL
            || (a.fields = acquire(vs, args[2], 1, 0, "fields", &n_fields)) == NULL
            || (a.buf = acquire(vs, args[3], 0, 0, "buf", &n_buf)) == NULL
            || (a.starts = acquire_bounds(vs, args[4], 0, "starts", &rows_max, &a.width)) == NULL
            || (a.ends = acquire_bounds(vs, args[5], 0, "ends", &rows_e, &width_e)) == NULL
            || (a.slow = acquire(vs, args[7], 0, 0, "slow", &n_slow)) == NULL
            || (a.over = acquire(vs, args[8], 0, 0, "over", &n_over_bytes)) == NULL
            || (a.over_off = acquire(vs, args[9], 1, 0, "over_off", &n_over_off)) == NULL
            || (a.pieces = acquire(vs, args[10], 0, 0, "pieces", &n_pieces)) == NULL
            || (a.piece_off = acquire(vs, args[11], 1, 0, "piece_off", &n_piece_off)) == NULL
            || (a.key_cols = acquire(vs, args[12], 1, 0, "key_cols", &a.nkeys)) == NULL
            || (a.key_pieces = acquire(vs, args[13], 0, 0, "key_pieces", &n_kpieces)) == NULL
            || (a.key_piece_off = acquire(vs, args[14], 1, 0, "key_piece_off",
                                          &n_kpiece_off)) == NULL
            || (a.values = acquire(vs, args[15], 0, 1, "values", &a.values_cap)) == NULL
            || (a.value_off = acquire(vs, args[16], 1, 1, "value_off", &n_value_off)) == NULL
            || (a.keys = acquire(vs, args[17], 0, 1, "keys", &a.keys_cap)) == NULL
            || (a.key_off = acquire(vs, args[18], 1, 1, "key_off", &n_key_off)) == NULL)
        goto fail;
    if (n_params != a.ncols || n_fields != a.ncols || rows_e != rows_max || width_e != a.width
            || a.rows < 0 || a.rows > rows_max || n_slow != a.rows * a.ncols
            || n_value_off != a.rows + 1 || n_key_off != a.rows + 1 || n_over_off < 1) {
        PyErr_SetString(PyExc_ValueError, "assemble: kinds, params and fields must have one "
                        "length, starts and ends one shape of at least `rows` rows, slow "
                        "[rows, columns], value_off and key_off rows + 1 items");
        goto fail;
    }
    a.n_over = n_over_off - 1;
    if (check_bounds(a.fields, a.ncols, a.starts, a.ends, a.rows, a.width, n_buf) < 0
            || check_offsets(a.over_off, n_over_off, a.n_over, n_over_bytes, "over_off") < 0
            || check_offsets(a.piece_off, n_piece_off, a.ncols + 1, n_pieces, "piece_off") < 0
            || check_offsets(a.key_piece_off, n_kpiece_off, a.nkeys + 1, n_kpieces,
                             "key_piece_off") < 0)
        goto fail;
    for (Py_ssize_t k = 0; k < a.nkeys; k++) {
        if (a.key_cols[k] < 0 || a.key_cols[k] >= a.ncols) {
            PyErr_SetString(PyExc_ValueError, "assemble: a key column beyond the columns");
            goto fail;
        }
    }
    columns = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(2 * a.ncols + 1));
    if (columns == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    a.vs = columns;
    a.ve = columns + a.ncols;
    RUN_NOGIL_IF_LARGE(n_buf, failed = assemble_rows(&a));
    PyMem_Free(columns);
    if (failed != NULL) {
        PyErr_Format(PyExc_ValueError, "assemble: %s", failed);
        goto fail;
    }
    release(vs);
    Py_RETURN_NONE;
fail:
    release(vs);
    return NULL;
}

static PyMethodDef methods[] = {
    FASTCALL_METHOD(scan,
     "scan(buf, nfields, starts, ends): the field boundaries of every line of `buf` (whole\n"
     "lines, each ending with a newline) into starts/ends [row, field] (int64); the number of\n"
     "rows, or -(row + 1) of a line whose field count is not `nfields` (or beyond the\n"
     "arrays' rows)."),
    FASTCALL_METHOD(check,
     "check(kinds, params, fields, buf, starts, ends, rows, slow): sets slow[row, column]\n"
     "(bool) where a value needs the Python converter (FALLBACK columns, and values a kernel\n"
     "does not handle); nulls never do."),
    FASTCALL_METHOD(assemble,
     "assemble(kinds, params, fields, buf, starts, ends, rows, slow, over, over_off, pieces,\n"
     "piece_off, key_cols, key_pieces, key_piece_off, values, value_off, keys, key_off):\n"
     "every row's value (pieces[0], value 0, pieces[1], ..., pieces[ncols]) and key\n"
     "(key_pieces[0], key value 0, ...) into values/keys, row r at [value_off[r],\n"
     "value_off[r + 1]).  A slow value is copied from `over` (the converter's JSON, row by row\n"
     "and column by column in `over_off` order).  ValueError when an index or offset is out\n"
     "of its buffer or an output buffer is too small."),
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = STATIC_MODULE_DEF(
    "headwater.connectors.postgres._copykernels",
    "The column-wise snapshot's kernels (C; see headwater.connectors.postgres."
    "snapshot_columnar).", methods);

PyMODINIT_FUNC
PyInit__copykernels(void)
{
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    if (PyModule_AddIntConstant(m, "GROWTH", GROWTH) < 0
            || PyModule_AddIntConstant(m, "SLACK", SLACK) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    PyObject *kinds = Py_BuildValue(
        "{sisisisisisisisisisisisisisisisisi}", "FALLBACK", FALLBACK, "INT", INT, "BOOL", BOOL,
        "STRING", STRING, "DECIMAL", DECIMAL, "VSD", VSD, "DECIMAL_STRING", DECIMAL_STRING,
        "DATE", DATE, "TIME_MICROS", TIME_MICROS, "TIME_MILLIS", TIME_MILLIS,
        "TIMESTAMP_MICROS", TIMESTAMP_MICROS, "TIMESTAMP_MILLIS", TIMESTAMP_MILLIS,
        "ZONED_TIMESTAMP", ZONED_TIMESTAMP, "BYTEA", BYTEA, "BYTEA_BASE64", BYTEA_BASE64,
        "BYTEA_BASE64_URL", BYTEA_BASE64_URL, "BYTEA_HEX", BYTEA_HEX);
    if (kinds == NULL || PyModule_AddObject(m, "KINDS", kinds) < 0) {
        Py_XDECREF(kinds);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
