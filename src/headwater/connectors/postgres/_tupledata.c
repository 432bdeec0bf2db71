/* headwater.connectors.postgres._tupledata: pgoutput's TupleData, read in C.
 *
 * The streaming decoder (pgoutput.py) reads one row image per Insert and Delete and one or
 * two per Update: a column count, then per column a kind byte ('n' null, 'u' unchanged
 * TOAST, 't' text, 'b' binary) and for 't'/'b' an Int32 length and the bytes.  In CPython
 * that loop cost ~1.2 us of a row change's ~1.6 us of decoding (six columns); here it is one
 * call per image.
 *
 * `read_tuple(data, pos, ncols, toast)` returns (values, end): the values (None, `toast`,
 * str decoded as strict UTF-8, bytes) and the offset after the last column; or None when the
 * bytes are malformed (a kind byte it does not know, a length past the end, invalid UTF-8),
 * so that the Python reader, which builds the exact error, decodes the message again.  The
 * values are those of that reader for every well-formed message.
 *
 * Built by setuptools with the package (setup.py); pgoutput.py reads in Python where it was
 * not built.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "_cext.h"

static PyObject *
read_tuple(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (!has_args(nargs, 4, "read_tuple(data, pos, ncols, toast)"))
        return NULL;
    PyObject *data = args[0];
    if (!PyBytes_CheckExact(data)) {
        PyErr_SetString(PyExc_TypeError, "read_tuple: data must be bytes");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    if (pos == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t ncols = PyLong_AsSsize_t(args[2]);
    if (ncols == -1 && PyErr_Occurred())
        return NULL;
    PyObject *toast = args[3];
    const uint8_t *buf = (const uint8_t *)PyBytes_AS_STRING(data);
    Py_ssize_t n = PyBytes_GET_SIZE(data);
    if (pos < 0 || ncols < 0)
        Py_RETURN_NONE;
    PyObject *values = PyTuple_New(ncols);
    if (values == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < ncols; i++) {
        if (pos >= n)
            goto malformed;
        uint8_t kind = buf[pos];
        PyObject *v;
        if (kind == 't' || kind == 'b') {
            if (n - pos < 5)
                goto malformed;
            const uint8_t *p = buf + pos + 1;
            uint32_t len = ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16)
                           | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
            Py_ssize_t start = pos + 5;
            if ((uint64_t)len > (uint64_t)(n - start))
                goto malformed;
            if (kind == 't') {
                v = PyUnicode_DecodeUTF8((const char *)buf + start, (Py_ssize_t)len, NULL);
                if (v == NULL) {
                    if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
                        goto failed;
                    PyErr_Clear();
                    goto malformed;
                }
            } else {
                v = PyBytes_FromStringAndSize((const char *)buf + start, (Py_ssize_t)len);
                if (v == NULL)
                    goto failed;
            }
            pos = start + (Py_ssize_t)len;
        } else if (kind == 'n') {
            v = Py_None;
            Py_INCREF(v);
            pos += 1;
        } else if (kind == 'u') {
            v = toast;
            Py_INCREF(v);
            pos += 1;
        } else {
            goto malformed;
        }
        PyTuple_SET_ITEM(values, i, v);
    }
    PyObject *end = PyLong_FromSsize_t(pos);
    if (end == NULL)
        goto failed;
    PyObject *result = PyTuple_New(2);
    if (result == NULL) {
        Py_DECREF(end);
        goto failed;
    }
    PyTuple_SET_ITEM(result, 0, values);
    PyTuple_SET_ITEM(result, 1, end);
    return result;
malformed:
    Py_DECREF(values);
    Py_RETURN_NONE;
failed:
    Py_DECREF(values);
    return NULL;
}

static PyMethodDef methods[] = {
    FASTCALL_METHOD(read_tuple, "read_tuple(data, pos, ncols, toast) -> (values, end) | None"),
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = STATIC_MODULE_DEF(
    "_tupledata", "pgoutput TupleData reader (see _tupledata.c).", methods);

PyMODINIT_FUNC
PyInit__tupledata(void)
{
    return PyModule_Create(&module_def);
}
