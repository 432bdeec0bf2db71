/* headwater.topics._crcfill: the topic log writer's batch checksummer.
 *
 * The writer joins a batch's record lines into one bytearray, each line ending with the
 * checksum member whose 8 digits are a placeholder: ,"crc":"XXXXXXXX"}\n
 * (headwater.topics.checksum).  `checksum_lines` walks the lines (cut at each newline: no
 * record line holds a raw newline but its last byte), computes each line's CRC-32C over its
 * bytes before the member with google-crc32c's own `crc32c_extend` (its address handed in
 * once by `set_crc32c_extend`, from the shared library google_crc32c loaded: one CRC-32C
 * implementation for every path), and writes the digits in place, lower-case hex.
 *
 * One call per batch, where the per-record encoder made two or three calls into the C library
 * and formatted each member in CPython.  The GIL is released around the loop for large
 * batches.
 *
 * `pack_lines` lays out the lines of a PackedRecords (headwater.model.topic: a column-wise
 * snapshot's batch, the keys and values in two buffers with their offsets, the shared prefix
 * of each once) in one pass, the bytes the Python encoder writes for the same records, so no
 * Python object is made per record between the snapshot's kernels and the file.
 *
 * Built by setuptools with the package (setup.py); headwater.topics.log falls back
 * to its per-record encoder, which writes the same bytes, with a warning, when this module
 * was not built.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_cext.h"

typedef uint32_t (*crc32c_extend_fn)(uint32_t crc, const uint8_t *data, size_t length);

static crc32c_extend_fn crc32c_extend = NULL;

static const char MEMBER[] = ",\"crc\":\"";
#define MEMBER_LEN 8
/* the member, 8 digits, `"}`: the bytes of a line after its checksummed part, newline not
   counted (checksum.TAIL_LEN) */
#define TAIL_LEN (MEMBER_LEN + 8 + 2)

static const char HEX[] = "0123456789abcdef";

/* Fills the first `count` lines of data[0:n); returns the number of lines done and sets *end
   to the index after the last.  Stops early at a line that does not end with the member. */
static Py_ssize_t
fill(uint8_t *data, Py_ssize_t n, Py_ssize_t count, Py_ssize_t *end)
{
    Py_ssize_t p = 0, lines = 0;
    while (p < n && lines < count) {
        uint8_t *found = memchr(data + p, '\n', (size_t)(n - p));
        if (found == NULL)
            break;
        Py_ssize_t nl = found - data;
        Py_ssize_t cut = nl - TAIL_LEN;
        if (cut < p || data[nl - 1] != '}' || data[nl - 2] != '"'
                || memcmp(data + cut, MEMBER, MEMBER_LEN) != 0)
            break;
        uint32_t crc = crc32c_extend(0, data + p, (size_t)(cut - p));
        uint8_t *digits = data + cut + MEMBER_LEN;
        for (int i = 0; i < 8; i++)
            digits[i] = (uint8_t)HEX[(crc >> (28 - 4 * i)) & 15];
        lines++;
        p = nl + 1;
    }
    *end = p;
    return lines;
}

static PyObject *
checksum_lines(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    Py_ssize_t count, lines, end;
    (void)module;
    if (!has_args(nargs, 2, "checksum_lines(data, count)"))
        return NULL;
    if (crc32c_extend == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "checksum_lines: set_crc32c_extend(address) was not called");
        return NULL;
    }
    count = PyLong_AsSsize_t(args[1]);
    if (count == -1 && PyErr_Occurred())
        return NULL;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    RUN_NOGIL_IF_LARGE(view.len, lines = fill((uint8_t *)view.buf, view.len, count, &end));
    Py_ssize_t n = view.len;
    PyBuffer_Release(&view);
    if (lines != count || end != n) {
        PyErr_Format(PyExc_ValueError,
                     "the batch's %zd encoded bytes are not the %zd lines of its records: "
                     "line %zd at byte %zd does not end with the checksum member (a newline "
                     "inside a record, or missing at the end)", n, count, lines + 1, end);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
set_crc32c_extend(PyObject *module, PyObject *address)
{
    (void)module;
    void *fn = PyLong_AsVoidPtr(address);
    if (fn == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "set_crc32c_extend: a null address");
        return NULL;
    }
    crc32c_extend = (crc32c_extend_fn)fn;
    Py_RETURN_NONE;
}


/* The decimal digits of v >= 0 at dst; returns their number. */
static Py_ssize_t
put_decimal(uint8_t *dst, long long v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (int i = 0; i < n; i++)
        dst[i] = (uint8_t)tmp[n - 1 - i];
    return n;
}

static Py_ssize_t
decimal_len(long long v)
{
    Py_ssize_t n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

typedef struct {
    const uint8_t *head, *mid, *vmid, *end, *keys, *values;
    Py_ssize_t head_n, mid_n, vmid_n, end_n;
    const int64_t *ko, *vo;
    Py_ssize_t rows;
    long long first;
} pack_args;

static void
pack(const pack_args *a, uint8_t *dst)
{
    for (Py_ssize_t i = 0; i < a->rows; i++) {
        Py_ssize_t k = (Py_ssize_t)(a->ko[i + 1] - a->ko[i]);
        Py_ssize_t v = (Py_ssize_t)(a->vo[i + 1] - a->vo[i]);
        memcpy(dst, a->head, (size_t)a->head_n);
        dst += a->head_n;
        dst += put_decimal(dst, a->first + i);
        memcpy(dst, a->mid, (size_t)a->mid_n);
        dst += a->mid_n;
        memcpy(dst, a->keys + a->ko[i], (size_t)k);
        dst += k;
        memcpy(dst, a->vmid, (size_t)a->vmid_n);
        dst += a->vmid_n;
        memcpy(dst, a->values + a->vo[i], (size_t)v);
        dst += v;
        memcpy(dst, a->end, (size_t)a->end_n);
        dst += a->end_n;
    }
}

/* pack_lines(out, first, head, mid, keys, key_off, vmid, values, value_off, end): appends to
   the bytearray `out` one line per row i: head, the decimal first + i, mid, the key bytes
   keys[key_off[i]:key_off[i + 1]], vmid, the value bytes likewise, end.  The offsets are
   int64 buffers of rows + 1 entries, non-decreasing, within their buffers. */
static PyObject *
pack_lines(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer b[8];
    /* argument index of each buffer: head, mid, keys, key_off, vmid, values, value_off, end */
    static const int at[8] = {2, 3, 4, 5, 6, 7, 8, 9};
    int got = 0;
    PyObject *result = NULL;
    (void)module;
    if (!has_args(nargs, 10,
                  "pack_lines(out, first, head, mid, keys, key_off, vmid, values, value_off, end)"))
        return NULL;
    if (!PyByteArray_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "pack_lines: out must be a bytearray");
        return NULL;
    }
    long long first = PyLong_AsLongLong(args[1]);
    if (first == -1 && PyErr_Occurred())
        return NULL;
    if (first < 0) {
        PyErr_SetString(PyExc_ValueError, "pack_lines: a negative first offset");
        return NULL;
    }
    for (; got < 8; got++)
        if (PyObject_GetBuffer(args[at[got]], &b[got], PyBUF_C_CONTIGUOUS) < 0)
            goto done;
    if (b[3].len != b[6].len || b[3].len % 8 || b[3].len < 8) {
        PyErr_SetString(PyExc_ValueError, "pack_lines: the offsets are not rows + 1 int64s each");
        goto done;
    }
    pack_args a = {
        b[0].buf, b[1].buf, b[4].buf, b[7].buf, b[2].buf, b[5].buf,
        b[0].len, b[1].len, b[4].len, b[7].len,
        b[3].buf, b[6].buf, b[3].len / 8 - 1, first,
    };
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < a.rows; i++) {
        if (a.ko[i] < 0 || a.ko[i] > a.ko[i + 1] || a.ko[i + 1] > b[2].len
                || a.vo[i] < 0 || a.vo[i] > a.vo[i + 1] || a.vo[i + 1] > b[5].len) {
            PyErr_Format(PyExc_ValueError, "pack_lines: row %zd's offsets are out of bounds", i);
            goto done;
        }
        total += (Py_ssize_t)(a.ko[i + 1] - a.ko[i] + a.vo[i + 1] - a.vo[i])
                 + decimal_len(first + i);
    }
    total += a.rows * (a.head_n + a.mid_n + a.vmid_n + a.end_n);
    Py_ssize_t old = PyByteArray_GET_SIZE(args[0]);
    if (PyByteArray_Resize(args[0], old + total) < 0)
        goto done;
    uint8_t *dst = (uint8_t *)PyByteArray_AS_STRING(args[0]) + old;
    RUN_NOGIL_IF_LARGE(total, pack(&a, dst));
    result = Py_None;
    Py_INCREF(result);
done:
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&b[i]);
    return result;
}

static PyMethodDef methods[] = {
    FASTCALL_METHOD(checksum_lines,
     "checksum_lines(data, count): writes, in place, the CRC-32C digits of each of the `count`\n"
     "record lines of `data` (a writable buffer holding these lines and nothing else, each\n"
     "ending with the checksum member, any 8 bytes in place of its digits, `\"}` and a\n"
     "newline).  Raises ValueError when it does not hold them."),
    FASTCALL_METHOD(pack_lines,
     "pack_lines(out, first, head, mid, keys, key_off, vmid, values, value_off, end): appends\n"
     "to the bytearray `out` a line per row i: head, the decimal first + i, mid,\n"
     "keys[key_off[i]:key_off[i + 1]], vmid, values[value_off[i]:value_off[i + 1]], end\n"
     "(the offsets: int64 buffers of rows + 1 entries)."),
    {"set_crc32c_extend", set_crc32c_extend, METH_O,
     "set_crc32c_extend(address): the address of google-crc32c's\n"
     "`uint32_t crc32c_extend(uint32_t, const uint8_t *, size_t)`, used by checksum_lines."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = STATIC_MODULE_DEF(
    "headwater.topics._crcfill",
    "The topic log writer's batch checksummer (C; see headwater.topics.log).", methods);

PyMODINIT_FUNC
PyInit__crcfill(void)
{
    return PyModule_Create(&module_def);
}
