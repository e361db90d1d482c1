/* rdk._messages: the consumer's C fast path from a fetched batch to Python objects.
 *
 * rdk's CFFI module fetches a batch of messages in one call (rdk_consume_batch in
 * _helpers.c): into contiguous Arrow-layout buffers, or, in keep mode, keeping librdkafka's
 * messages alive and pointing at their payloads, so the bytes made here are the one copy. CFFI cannot hand Python objects back from C, so
 * this small CPython extension (stable ABI) turns that rdk_batch into the list of
 * rdk.Message tuples in one call: no Python code per message. Message tuples whose fields
 * are all atomic (bytes, str, int, None) are untracked by the garbage collector, as CPython
 * does for plain tuples; otherwise every batch of 10 000 would make the collector's passes
 * cost more than building the messages.
 *
 * rdk.consumer falls back to an equivalent pure-Python path when this module is absent.
 */
#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x030A0000
#include <Python.h>
#include <stddef.h>
#include <stdint.h>

/* rdk_structs.h names librdkafka's handle types. This module does not link librdkafka
 * and only reads rdk_batch's own fields, so incomplete types are all it needs. */
typedef struct rd_kafka_s rd_kafka_t;
typedef struct rd_kafka_topic_s rd_kafka_topic_t;
typedef struct rd_kafka_op_s rd_kafka_event_t;
typedef struct rd_kafka_message_s rd_kafka_message_t;
#include "rdk_structs.h" /* rdk_batch: the same definition rdk._rdkafka is built with */

#define BIT(bm, i) (((bm)[(i) >> 3] >> ((i) & 7)) & 1)

/* bytes (or str when decode) of row i: offs[i + 1] - offs[i] bytes at ptr[i] (a batch that
 * keeps librdkafka's messages: the one copy from librdkafka's buffer), else at buf + offs[i];
 * None when not valid */
static PyObject *cell(const char *buf, const char *const *ptr, const int32_t *offs,
                      const uint8_t *valid, Py_ssize_t i, int decode) {
    if (!buf || (valid && !BIT(valid, i))) {
        Py_INCREF(Py_None);
        return Py_None;
    }
    const char *start = ptr ? ptr[i] : buf + offs[i];
    Py_ssize_t len = (Py_ssize_t)(offs[i + 1] - offs[i]);
    if (decode) return PyUnicode_DecodeUTF8(start, len, "replace");
    return PyBytes_FromStringAndSize(start, len);
}

PyDoc_STRVAR(build_doc,
"build(cls, topic, batch, decode, headers) -> list\n\n"
"The messages of a fetched rdk_batch as cls tuples (value, key, headers, timestamp, topic,\n"
"partition, offset). batch is the rdk_batch's address; values are str when decode is true;\n"
"rows carrying an error are left out; headers is None or a list with one entry per row.");

static PyObject *build(PyObject *self, PyObject *args) {
    PyObject *cls, *topic, *headers;
    unsigned long long address;
    int decode;
    if (!PyArg_ParseTuple(args, "OOKpO", &cls, &topic, &address, &decode, &headers))
        return NULL;
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "build: cls must be a tuple subclass");
        return NULL;
    }
    const rdk_batch *b = (const rdk_batch *)(uintptr_t)address;
    if (!b) {
        PyErr_SetString(PyExc_ValueError, "build: batch is NULL");
        return NULL;
    }
    Py_ssize_t n = b->n;
    PyTypeObject *type = (PyTypeObject *)cls;
    /* keep mode: rows point into librdkafka's messages (buf only says "some are there") */
    const char *const *vptr = b->keep ? b->value_ptr : NULL;
    const char *const *kptr = b->keep ? b->key_ptr : NULL;
    const char *values = b->keep ? (const char *)b->value_ptr : b->values;
    const int32_t *voffs = b->value_offsets;
    const uint8_t *vvalid = b->value_nulls ? b->value_valid : NULL;
    const char *keys = b->key_nulls == b->n ? NULL /* every key is None */
                       : b->keep ? (const char *)b->key_ptr : b->keys;
    const int32_t *koffs = b->key_offsets;
    const uint8_t *kvalid = b->key_nulls ? b->key_valid : NULL;
    const int64_t *ts = b->timestamp;
    const int8_t *tstype = b->timestamp_type;
    const int32_t *parts = b->partition;
    const int64_t *offs = b->offset;
    const int32_t *errs = b->n_errors ? b->err : NULL;
    if (n < 0 || !voffs || !ts || !tstype || !parts || !offs || (keys && !koffs)) {
        PyErr_SetString(PyExc_ValueError, "build: bad batch buffers");
        return NULL;
    }
    if (headers != Py_None && (!PyList_Check(headers) || PyList_Size(headers) != n)) {
        PyErr_SetString(PyExc_TypeError, "build: headers must be None or a list of n entries");
        return NULL;
    }

    Py_ssize_t good = n;
    if (errs)
        for (Py_ssize_t i = 0; i < n; i++)
            if (errs[i]) good--;
    PyObject *list = PyList_New(good);
    if (!list) return NULL;
    /* No collection while the batch is built: the thousands of tuples allocated here would
     * start one every 700; the next allocation after re-enabling makes up for them. */
    int gc_was_enabled = PyGC_Disable();

    /* consecutive messages often share a partition and a timestamp: share the int objects */
    PyObject *part_obj = NULL, *ts_obj = NULL;
    int32_t part_val = 0;
    int64_t ts_val = 0;
    Py_ssize_t j = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (errs && errs[i]) continue;
        PyObject *m = PyType_GenericAlloc(type, 7);
        if (!m) goto fail;
        PyList_SetItem(list, j++, m); /* the list owns m from here on */

        PyObject *v = cell(values, vptr, voffs, vvalid, i, decode);
        if (!v) goto fail;
        PyTuple_SetItem(m, 0, v);
        PyObject *k = cell(keys, kptr, koffs, kvalid, i, 0);
        if (!k) goto fail;
        PyTuple_SetItem(m, 1, k);
        PyObject *h = Py_None;
        if (headers != Py_None) h = PyList_GetItem(headers, i); /* borrowed */
        Py_INCREF(h);
        PyTuple_SetItem(m, 2, h);
        PyObject *t;
        if (tstype[i] == 0) {
            t = Py_None;
            Py_INCREF(t);
        } else {
            if (!ts_obj || ts[i] != ts_val) {
                Py_XDECREF(ts_obj);
                ts_obj = PyLong_FromLongLong(ts[i]);
                if (!ts_obj) goto fail;
                ts_val = ts[i];
            }
            t = ts_obj;
            Py_INCREF(t);
        }
        PyTuple_SetItem(m, 3, t);
        Py_INCREF(topic);
        PyTuple_SetItem(m, 4, topic);
        if (!part_obj || parts[i] != part_val) {
            Py_XDECREF(part_obj);
            part_obj = PyLong_FromLong(parts[i]);
            if (!part_obj) goto fail;
            part_val = parts[i];
        }
        Py_INCREF(part_obj);
        PyTuple_SetItem(m, 5, part_obj);
        PyObject *o = PyLong_FromLongLong(offs[i]);
        if (!o) goto fail;
        PyTuple_SetItem(m, 6, o);
        if (h == Py_None) PyObject_GC_UnTrack(m); /* atomic fields only: never in a cycle */
    }
    Py_XDECREF(part_obj);
    Py_XDECREF(ts_obj);
    if (gc_was_enabled) PyGC_Enable();
    return list;

fail:
    Py_XDECREF(part_obj);
    Py_XDECREF(ts_obj);
    Py_DECREF(list);
    if (gc_was_enabled) PyGC_Enable();
    return NULL;
}

static PyMethodDef methods[] = {
    {"build", build, METH_VARARGS, build_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "rdk._messages",
    "C fast path: fetched batch buffers to rdk.Message tuples.", -1, methods,
};

PyMODINIT_FUNC PyInit__messages(void) { return PyModule_Create(&module); }
