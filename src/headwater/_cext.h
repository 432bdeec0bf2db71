/* What the package's C modules (topics/_crcfill.c, connectors/postgres/_copykernels.c) share:
 * when their loops give up the GIL, the argument check of a METH_FASTCALL function, the
 * method-table entry of one, and the module definition.  Included after <Python.h>; setup.py puts this folder on each
 * extension's include path.
 */
#ifndef HEADWATER_CEXT_H
#define HEADWATER_CEXT_H

/* A loop over this many bytes or more runs without the GIL (the buffer exports keep the
   objects from being resized meanwhile); below it, giving the GIL up costs more than it frees
   for other threads. */
#define NOGIL_BYTES (64 * 1024)

/* Runs `statement` without the GIL when `nbytes` is at least NOGIL_BYTES, else with it. */
#define RUN_NOGIL_IF_LARGE(nbytes, statement)                                               \
    do {                                                                                    \
        if ((nbytes) >= NOGIL_BYTES) {                                                      \
            Py_BEGIN_ALLOW_THREADS                                                          \
            statement;                                                                      \
            Py_END_ALLOW_THREADS                                                            \
        } else {                                                                            \
            statement;                                                                      \
        }                                                                                   \
    } while (0)

/* 1 when a METH_FASTCALL function got `expected` arguments; else 0 with a TypeError naming
   `signature` (e.g. "scan(buf, nfields, starts, ends)"). */
static inline int
has_args(Py_ssize_t nargs, Py_ssize_t expected, const char *signature)
{
    if (nargs == expected)
        return 1;
    PyErr_Format(PyExc_TypeError, "%s takes %zd arguments", signature, expected);
    return 0;
}

/* The method-table entry of METH_FASTCALL function `fn` under its own name; the cast through
   `void (*)(void)` tells the compiler the signature mismatch is meant (-Wcast-function-type). */
#define FASTCALL_METHOD(fn, doc) {#fn, (PyCFunction)(void (*)(void))fn, METH_FASTCALL, doc}

/* The definition of a module `name` of `methods` whose state is in C statics (m_size -1:
   single-phase initialisation, one instance a process). */
#define STATIC_MODULE_DEF(name, doc, methods)                                               \
    {PyModuleDef_HEAD_INIT, name, doc, -1, methods, NULL, NULL, NULL, NULL}

#endif
