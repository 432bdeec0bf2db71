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
 * batches.  Built by setuptools with the package (setup.py); headwater.topics.log falls back
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

static PyMethodDef methods[] = {
    FASTCALL_METHOD(checksum_lines,
     "checksum_lines(data, count): writes, in place, the CRC-32C digits of each of the `count`\n"
     "record lines of `data` (a writable buffer holding these lines and nothing else, each\n"
     "ending with the checksum member, any 8 bytes in place of its digits, `\"}` and a\n"
     "newline).  Raises ValueError when it does not hold them."),
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
