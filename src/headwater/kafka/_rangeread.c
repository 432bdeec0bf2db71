/* headwater.kafka._rangeread: one Kafka partition's range read into column buffers.
 *
 * A `Reader` reads one partition from a start offset to a stop offset (exclusive) with
 * librdkafka's partition consumer (rd_kafka_consume_start / rd_kafka_consume_batch), and
 * appends each record's offset, key and value to growing buffers: the offsets (int64), and
 * for keys and for values an Arrow large_binary column's three buffers (validity bitmap,
 * int64 ends starting at 0, the bytes).  `take` hands the buffers over (as objects exporting
 * the buffer protocol, no copy) for `pa.Array.from_buffers`.  No Python object is made per
 * record: confluent-kafka's `consume` made a Message per record and a bytes object per key
 * and value, then the reader joined them again (headwater.kafka.columns says what it cost).
 *
 * librdkafka is the one confluent-kafka loaded (its wheel bundles it): its path is handed to
 * `load` once, which dlopens it and looks up the few functions used here; their prototypes
 * and rd_kafka_message_t's layout are librdkafka's public, stable C API (rdkafka.h, which the
 * wheel does not ship).  Error messages (a partition's end, a transient fetch error) are
 * returned to the caller, which handles them as `consume.read_range` does; offsets must go up
 * (a compacted or transactional gap is fine), a repeat or a step back is reported.
 * The GIL is released while librdkafka waits and while the records are copied.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_cext.h"

/* ---- librdkafka's API, as rdkafka.h declares it ---- */

typedef struct rd_kafka_s rd_kafka_t;
typedef struct rd_kafka_topic_s rd_kafka_topic_t;
typedef struct rd_kafka_conf_s rd_kafka_conf_t;

typedef struct {
    int err;                 /* rd_kafka_resp_err_t */
    rd_kafka_topic_t *rkt;
    int32_t partition;
    void *payload;
    size_t len;
    void *key;
    size_t key_len;
    int64_t offset;
    void *_private;
} rd_kafka_message_t;

#define RD_KAFKA_CONSUMER 1
#define RD_KAFKA_CONF_OK 0

static rd_kafka_conf_t *(*conf_new)(void);
static int (*conf_set)(rd_kafka_conf_t *, const char *, const char *, char *, size_t);
static void (*conf_destroy)(rd_kafka_conf_t *);
static rd_kafka_t *(*kafka_new)(int, rd_kafka_conf_t *, char *, size_t);
static void (*kafka_destroy)(rd_kafka_t *);
static rd_kafka_topic_t *(*topic_new)(rd_kafka_t *, const char *, void *);
static void (*topic_destroy)(rd_kafka_topic_t *);
static int (*consume_start)(rd_kafka_topic_t *, int32_t, int64_t);
static int (*consume_stop)(rd_kafka_topic_t *, int32_t);
static Py_ssize_t (*consume_batch)(rd_kafka_topic_t *, int32_t, int, rd_kafka_message_t **,
                                   size_t);
static void (*message_destroy)(rd_kafka_message_t *);
static const char *(*err2str)(int);
static int (*last_error)(void);
static int (*kafka_poll)(rd_kafka_t *, int);

static const char *(*version_str)(void);

static void *library = NULL;

/* ---- growing buffers ---- */

typedef struct {
    char *data;
    size_t len, cap;
} Growing;

static int
grow(Growing *g, size_t more)
{
    if (g->len + more <= g->cap)
        return 0;
    size_t cap = g->cap ? g->cap : 1 << 16;
    while (cap < g->len + more)
        cap *= 2;
    char *data = realloc(g->data, cap);
    if (data == NULL)
        return -1;
    g->data = data;
    g->cap = cap;
    return 0;
}

/* A column of large_binary: validity bits, ends (n + 1 int64, from 0), bytes. */
typedef struct {
    Growing valid, ends, bytes;
    Py_ssize_t nulls;
} Column;

static int
column_init(Column *c)
{
    memset(c, 0, sizeof *c);
    if (grow(&c->ends, sizeof(int64_t)) < 0)
        return -1;
    memset(c->ends.data, 0, sizeof(int64_t));
    c->ends.len = sizeof(int64_t);
    return 0;
}

static void
column_free(Column *c)
{
    free(c->valid.data);
    free(c->ends.data);
    free(c->bytes.data);
    memset(c, 0, sizeof *c);
}

/* Appends record number `i` (null when `data` is NULL). */
static int
column_add(Column *c, Py_ssize_t i, const void *data, size_t len)
{
    size_t byte = (size_t)i / 8;
    if (grow(&c->valid, byte + 1 - (c->valid.len > byte ? byte + 1 : c->valid.len)) < 0 ||
        grow(&c->ends, sizeof(int64_t)) < 0 || (data != NULL && grow(&c->bytes, len) < 0))
        return -1;
    if (c->valid.len <= byte) {
        c->valid.data[byte] = 0;
        c->valid.len = byte + 1;
    }
    if (data == NULL) {
        c->nulls++;
    } else {
        c->valid.data[byte] |= (char)(1u << (i % 8));
        memcpy(c->bytes.data + c->bytes.len, data, len);
        c->bytes.len += len;
    }
    int64_t end = (int64_t)c->bytes.len;
    memcpy(c->ends.data + c->ends.len, &end, sizeof end);
    c->ends.len += sizeof end;
    return 0;
}

/* ---- Buffer: malloc'd memory handed to Python, exported read-only, freed with it ---- */

typedef struct {
    PyObject_HEAD
    char *data;
    Py_ssize_t len;
} Buffer;

static int
buffer_get(PyObject *self, Py_buffer *view, int flags)
{
    Buffer *b = (Buffer *)self;
    return PyBuffer_FillInfo(view, self, b->data ? b->data : (char *)"", b->len, 1, flags);
}

static void
buffer_dealloc(PyObject *self)
{
    free(((Buffer *)self)->data);
    Py_TYPE(self)->tp_free(self);
}

static PyBufferProcs buffer_procs = {buffer_get, NULL};

static PyTypeObject BufferType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "headwater.kafka._rangeread.Buffer",
    .tp_basicsize = sizeof(Buffer),
    .tp_dealloc = buffer_dealloc,
    .tp_as_buffer = &buffer_procs,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Memory of a Reader's column, read-only (buffer protocol).",
};

/* A Buffer owning g's memory (g is emptied). */
static PyObject *
hand_over(Growing *g)
{
    Buffer *b = PyObject_New(Buffer, &BufferType);
    if (b == NULL)
        return NULL;
    b->data = g->data;
    b->len = (Py_ssize_t)g->len;
    memset(g, 0, sizeof *g);
    return (PyObject *)b;
}

/* ---- Reader ---- */

typedef struct {
    PyObject_HEAD
    rd_kafka_t *rk;
    rd_kafka_topic_t *rkt;
    int32_t partition;
    int started;
    int64_t at, stop;       /* the next offset wanted; the end of the range (exclusive) */
    Py_ssize_t count;       /* records in the buffers */
    Growing offsets;
    Column keys, values;
    rd_kafka_message_t **msgs;
    size_t msgs_cap;
} Reader;

static void
reader_close_(Reader *r)
{
    rd_kafka_t *rk = r->rk;
    rd_kafka_topic_t *rkt = r->rkt;
    int started = r->started;
    int32_t partition = r->partition;
    r->rk = NULL;
    r->rkt = NULL;
    r->started = 0;
    if (rk == NULL)
        return;
    Py_BEGIN_ALLOW_THREADS
    if (started)
        consume_stop(rkt, partition);
    if (rkt != NULL)
        topic_destroy(rkt);
    kafka_destroy(rk);
    Py_END_ALLOW_THREADS
}

static void
reader_reset(Reader *r)
{
    free(r->offsets.data);
    memset(&r->offsets, 0, sizeof r->offsets);
    column_free(&r->keys);
    column_free(&r->values);
    r->count = 0;
}

static void
reader_dealloc(PyObject *self)
{
    Reader *r = (Reader *)self;
    reader_close_(r);
    reader_reset(r);
    free(r->msgs);
    Py_TYPE(self)->tp_free(self);
}

static int
reader_init(PyObject *self, PyObject *args, PyObject *kwds)
{
    static char *names[] = {"config", "topic", "partition", "start", "stop", NULL};
    Reader *r = (Reader *)self;
    PyObject *config;
    const char *topic;
    int partition;
    long long start, stop;
    char errstr[512];

    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!siLL:Reader", names, &PyList_Type,
                                     &config, &topic, &partition, &start, &stop))
        return -1;
    if (library == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Reader: librdkafka is not loaded (call load)");
        return -1;
    }
    if (r->rk != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Reader: already initialised");
        return -1;
    }
    if (start < 0 || stop < start) {
        PyErr_Format(PyExc_ValueError, "Reader: a range of offsets [%lld, %lld)", start, stop);
        return -1;
    }
    rd_kafka_conf_t *conf = conf_new();
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(config); i++) {
        const char *name, *value;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(config, i), "ss:config item", &name, &value)) {
            conf_destroy(conf);
            return -1;
        }
        if (conf_set(conf, name, value, errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
            conf_destroy(conf);
            PyErr_Format(PyExc_ValueError, "Kafka consumer setting %s: %s", name, errstr);
            return -1;
        }
    }
    rd_kafka_t *rk = kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    if (rk == NULL) {
        conf_destroy(conf);
        PyErr_Format(PyExc_RuntimeError, "Kafka consumer: %s", errstr);
        return -1;
    }
    r->rk = rk;  /* (conf is rk's now) */
    r->partition = partition;
    r->at = start;
    r->stop = stop;
    r->rkt = topic_new(rk, topic, NULL);
    if (r->rkt == NULL) {
        PyErr_Format(PyExc_RuntimeError, "Kafka topic %s: %s", topic, err2str(last_error()));
        reader_close_(r);
        return -1;
    }
    if (column_init(&r->keys) < 0 || column_init(&r->values) < 0) {
        reader_close_(r);
        PyErr_NoMemory();
        return -1;
    }
    if (start < stop) {
        if (consume_start(r->rkt, partition, start) == -1) {
            PyErr_Format(PyExc_RuntimeError, "reading %s[%d] from offset %lld: %s", topic,
                         partition, start, err2str(last_error()));
            reader_close_(r);
            return -1;
        }
        r->started = 1;
    }
    return 0;
}

/* read(timeout_ms) -> (records added, [(error code, offset, reason)], out-of-order offset or
   -1): one rd_kafka_consume_batch call for what is left of the range (at most 10,000). */
static PyObject *
reader_read(PyObject *self, PyObject *arg)
{
    Reader *r = (Reader *)self;
    long timeout = PyLong_AsLong(arg);
    if (timeout == -1 && PyErr_Occurred())
        return NULL;
    if (r->rk == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "read: the reader is closed");
        return NULL;
    }
    if (r->at >= r->stop)
        return Py_BuildValue("(n[]L)", (Py_ssize_t)0, (long long)-1);
    int64_t left = r->stop - r->at;
    size_t want = left < 10000 ? (size_t)left : 10000;
    if (r->msgs_cap < want) {
        free(r->msgs);
        r->msgs = malloc(want * sizeof *r->msgs);
        if (r->msgs == NULL) {
            r->msgs_cap = 0;
            return PyErr_NoMemory();
        }
        r->msgs_cap = want;
    }
    Py_ssize_t got, added = 0, errors = 0;
    int64_t bad = -1;
    int nomem = 0;
    Py_BEGIN_ALLOW_THREADS
    kafka_poll(r->rk, 0);  /* (serves the client's callbacks: logs, errors) */
    got = consume_batch(r->rkt, r->partition, (int)timeout, r->msgs, want);
    for (Py_ssize_t i = 0; i < got; i++) {
        rd_kafka_message_t *m = r->msgs[i];
        if (m->err) {
            errors++;
            continue;
        }
        if (bad >= 0 || nomem || r->at >= r->stop)
            continue;
        if (m->offset < r->at) {
            bad = m->offset;
            continue;
        }
        if (m->offset >= r->stop) {  /* (a compacted gap can carry a call past the stop) */
            r->at = r->stop;
            continue;
        }
        int64_t offset = m->offset;
        if (grow(&r->offsets, sizeof offset) < 0 ||
            column_add(&r->keys, r->count, m->key, m->key_len) < 0 ||
            column_add(&r->values, r->count, m->payload, m->len) < 0) {
            nomem = 1;
            continue;
        }
        memcpy(r->offsets.data + r->offsets.len, &offset, sizeof offset);
        r->offsets.len += sizeof offset;
        r->count++;
        added++;
        r->at = offset + 1;
    }
    Py_END_ALLOW_THREADS
    if (got < 0) {
        PyErr_Format(PyExc_RuntimeError, "reading partition %d: %s", (int)r->partition,
                     err2str(last_error()));
        return NULL;
    }
    PyObject *list = PyList_New(0);
    for (Py_ssize_t i = 0; list != NULL && i < got && errors; i++) {
        rd_kafka_message_t *m = r->msgs[i];
        if (!m->err)
            continue;
        PyObject *item;
        if (m->payload != NULL && m->len)
            item = Py_BuildValue("(iLs#)", m->err, (long long)m->offset, (char *)m->payload,
                                 (Py_ssize_t)m->len);
        else
            item = Py_BuildValue("(iLs)", m->err, (long long)m->offset, err2str(m->err));
        if (item == NULL) {  /* (a reason that is not UTF-8) */
            PyErr_Clear();
            item = Py_BuildValue("(iLs)", m->err, (long long)m->offset, err2str(m->err));
        }
        if (item == NULL || PyList_Append(list, item) < 0)
            Py_CLEAR(list);
        Py_XDECREF(item);
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < got; i++)
        message_destroy(r->msgs[i]);
    Py_END_ALLOW_THREADS
    if (nomem) {
        Py_XDECREF(list);
        return PyErr_NoMemory();
    }
    if (list == NULL)
        return NULL;
    return Py_BuildValue("(nNL)", added, list, (long long)bad);
}

/* take() -> (count, offsets, (key validity, key ends, key bytes, key nulls), (the same of
   the values)): the buffers since the last take, handed over. */
static PyObject *
reader_take(PyObject *self, PyObject *unused)
{
    (void)unused;
    Reader *r = (Reader *)self;
    Column *cols[2] = {&r->keys, &r->values};
    PyObject *parts[2] = {NULL, NULL};
    Py_ssize_t count = r->count;
    for (int c = 0; c < 2; c++) {
        Py_ssize_t nulls = cols[c]->nulls;
        PyObject *valid = hand_over(&cols[c]->valid);
        PyObject *ends = hand_over(&cols[c]->ends);
        PyObject *bytes = hand_over(&cols[c]->bytes);
        if (valid && ends && bytes)
            parts[c] = Py_BuildValue("(NNNn)", valid, ends, bytes, nulls);
        else {
            Py_XDECREF(valid);
            Py_XDECREF(ends);
            Py_XDECREF(bytes);
        }
    }
    PyObject *offsets = hand_over(&r->offsets);
    reader_reset(r);
    if (column_init(&r->keys) < 0 || column_init(&r->values) < 0) {
        PyErr_NoMemory();
        offsets = NULL;
    }
    if (parts[0] == NULL || parts[1] == NULL || offsets == NULL) {
        Py_XDECREF(parts[0]);
        Py_XDECREF(parts[1]);
        Py_XDECREF(offsets);
        return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    }
    return Py_BuildValue("(nNNN)", count, offsets, parts[0], parts[1]);
}

static PyObject *
reader_close(PyObject *self, PyObject *unused)
{
    (void)unused;
    reader_close_((Reader *)self);
    Py_RETURN_NONE;
}

static PyObject *
reader_position(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromLongLong(((Reader *)self)->at);
}

static PyObject *
reader_pending(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromSsize_t(((Reader *)self)->count);
}

static PyMethodDef reader_methods[] = {
    {"read", reader_read, METH_O,
     "read(timeout_ms) -> (records added, [(error code, offset, reason)], offset out of order\n"
     "or -1): one fetch of up to 10,000 records of what is left of the range, waiting up to\n"
     "timeout_ms for them; error messages (a partition's end, a fetch error) are returned, not\n"
     "raised."},
    {"take", reader_take, METH_NOARGS,
     "take() -> (count, offsets, keys, values): the records added since the last take; each\n"
     "column (validity bitmap, int64 ends from 0, bytes, null count), as buffers."},
    {"close", reader_close, METH_NOARGS, "close(): stops reading and destroys the client."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef reader_getset[] = {
    {"position", reader_position, NULL, "The next offset wanted (the stop once read).", NULL},
    {"pending", reader_pending, NULL, "Records added since the last take.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "headwater.kafka._rangeread.Reader",
    .tp_basicsize = sizeof(Reader),
    .tp_dealloc = reader_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Reader(config, topic, partition, start, stop): config a list of (name, value)\n"
              "librdkafka settings; reads [start, stop) of the partition.",
    .tp_methods = reader_methods,
    .tp_getset = reader_getset,
    .tp_init = reader_init,
    .tp_new = PyType_GenericNew,
};

/* ---- load ---- */

static PyObject *
load(PyObject *module, PyObject *arg)
{
    (void)module;
    const char *path = PyUnicode_AsUTF8(arg);
    if (path == NULL)
        return NULL;
    if (library != NULL)  /* (once a process: the first library stays) */
        return PyUnicode_FromString(version_str());
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        PyErr_Format(PyExc_OSError, "load: %s", dlerror());
        return NULL;
    }
#define SYM(var, name)                                                                      \
    do {                                                                                    \
        *(void **)(&var) = dlsym(lib, name);                                                \
        if (var == NULL) {                                                                  \
            PyErr_Format(PyExc_OSError, "load: %s has no %s", path, name);                 \
            dlclose(lib);                                                                   \
            return NULL;                                                                    \
        }                                                                                   \
    } while (0)
    SYM(conf_new, "rd_kafka_conf_new");
    SYM(conf_set, "rd_kafka_conf_set");
    SYM(conf_destroy, "rd_kafka_conf_destroy");
    SYM(kafka_new, "rd_kafka_new");
    SYM(kafka_destroy, "rd_kafka_destroy");
    SYM(topic_new, "rd_kafka_topic_new");
    SYM(topic_destroy, "rd_kafka_topic_destroy");
    SYM(consume_start, "rd_kafka_consume_start");
    SYM(consume_stop, "rd_kafka_consume_stop");
    SYM(consume_batch, "rd_kafka_consume_batch");
    SYM(message_destroy, "rd_kafka_message_destroy");
    SYM(err2str, "rd_kafka_err2str");
    SYM(last_error, "rd_kafka_last_error");
    SYM(kafka_poll, "rd_kafka_poll");
    SYM(version_str, "rd_kafka_version_str");
#undef SYM
    library = lib;
    return PyUnicode_FromString(version_str());
}

static PyMethodDef methods[] = {
    {"load", load, METH_O,
     "load(path) -> librdkafka's version: dlopens the shared library at `path` for the\n"
     "Readers (once a process: a later call gives the first library's version)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = STATIC_MODULE_DEF(
    "headwater.kafka._rangeread",
    "One Kafka partition's range read into Arrow column buffers (C; see "
    "headwater.kafka.columns).", methods);

PyMODINIT_FUNC
PyInit__rangeread(void)
{
    if (PyType_Ready(&BufferType) < 0 || PyType_Ready(&ReaderType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    Py_INCREF(&ReaderType);
    if (PyModule_AddObject(m, "Reader", (PyObject *)&ReaderType) < 0) {
        Py_DECREF(&ReaderType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
