/*
 * The fetch's two per-message loops over a batch of confluent-kafka ``Message`` objects, compiled.
 *
 * Why: a fetch copies every record of a range, and in Python the two loops that touch each message (the range
 * reader's check of each message against the range's end, and the segment's column appends) cost the fetch more
 * CPU than librdkafka's consume and the Parquet encoding together, about 1.6x a bare consume loop in all. This
 * file is the same two loops, statement for statement, on the same Python objects:
 *
 * - ``scan``: RangeReader.batches' check, message by message, of an error or an offset at or past the range's end;
 * - ``fill``: SegmentColumns.fill_python's appends to the segment's column lists until the next message would close
 *   the segment.
 *
 * The Python definitions stay the reference and the fallback when this module is not built;
 * ``tests/unit/kafka/test_message_kernel.py`` proves with hypothesis that both give the same results. Messages are
 * only called through their methods (``error``, ``offset``, ``key``, ``value``, ``headers``, ``timestamp``,
 * ``leader_epoch``), so any object with those methods works.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *s_error, *s_offset, *s_key, *s_value, *s_headers, *s_timestamp, *s_leader_epoch;

/* What ended a scan (RangeReader.batches' cases). */
enum { SCAN_ALL = 0, SCAN_ERROR = 1, SCAN_PAST_END = 2, SCAN_LAST_OFFSET = 3 };

/*
 * scan(messages, end) -> (count, reason)
 *
 * ``messages[:count]`` are deliverable (no error, offset < end); ``reason`` says why the scan stopped:
 * SCAN_ALL (every message is deliverable), SCAN_ERROR (``messages[count]`` has an error), SCAN_PAST_END
 * (``messages[count]`` lies at or past ``end``) or SCAN_LAST_OFFSET (``messages[count - 1]`` is at ``end - 1``).
 */
static PyObject *scan(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "scan(messages: list, end: int)");
        return NULL;
    }
    PyObject *messages = args[0];
    long long end = PyLong_AsLongLong(args[1]);
    if (end == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(messages);
    Py_ssize_t i = 0;
    int reason = SCAN_ALL;
    for (; i < n; i++) {
        PyObject *message = PyList_GET_ITEM(messages, i);
        PyObject *error = PyObject_CallMethodNoArgs(message, s_error);
        if (error == NULL) {
            return NULL;
        }
        int has_error = error != Py_None;
        Py_DECREF(error);
        if (has_error) {
            reason = SCAN_ERROR;
            break;
        }
        PyObject *offset_obj = PyObject_CallMethodNoArgs(message, s_offset);
        if (offset_obj == NULL) {
            return NULL;
        }
        long long offset = PyLong_AsLongLong(offset_obj);
        Py_DECREF(offset_obj);
        if (offset == -1 && PyErr_Occurred()) {
            return NULL;
        }
        if (offset >= end) {
            reason = SCAN_PAST_END;
            break;
        }
        if (offset == end - 1) {
            i++;
            reason = SCAN_LAST_OFFSET;
            break;
        }
    }
    return Py_BuildValue("(ni)", i, reason);
}

/* len() of a bytes-like key or value, 0 for None or empty (``len(x) if x else 0``). */
static int sized(PyObject *obj, Py_ssize_t *size) {
    if (obj == Py_None) {
        *size = 0;
        return 0;
    }
    Py_ssize_t n = PyObject_Length(obj);
    if (n < 0) {
        return -1;
    }
    *size = n;
    return 0;
}

/* Append ``obj`` to ``list`` and drop the caller's reference (steals ``obj``; NULL passes an error through). */
static int append_steal(PyObject *list, PyObject *obj) {
    if (obj == NULL) {
        return -1;
    }
    int failed = PyList_Append(list, obj);
    Py_DECREF(obj);
    return failed;
}

/*
 * fill(messages, first, max_records, max_bytes, overhead, timestamp_type_ids, size_now,
 *      offsets, timestamps, types, keys, values, header_offsets, header_keys, header_values, epochs)
 *   -> (index, added, size_now)
 *
 * SegmentColumns.fill_python: append ``messages[first:]`` until the next one would close the segment (a non-empty
 * segment closes before the row that would pass ``max_records`` or ``max_bytes``).
 */
static PyObject *fill(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 16 || !PyList_Check(args[0]) || !PyDict_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError, "fill(messages: list, first, max_records, max_bytes, overhead, "
                                         "timestamp_type_ids: dict, size_now, offsets, timestamps, types, keys, "
                                         "values, header_offsets, header_keys, header_values, epochs)");
        return NULL;
    }
    for (int a = 7; a < 16; a++) {
        if (!PyList_Check(args[a])) {
            PyErr_SetString(PyExc_TypeError, "fill: the column arguments must be lists");
            return NULL;
        }
    }
    PyObject *messages = args[0], *type_ids = args[5];
    PyObject *offsets = args[7], *timestamps = args[8], *types = args[9], *keys = args[10], *values = args[11];
    PyObject *header_offsets = args[12], *header_keys = args[13], *header_values = args[14], *epochs = args[15];
    Py_ssize_t first = PyLong_AsSsize_t(args[1]);
    long long max_records = PyLong_AsLongLong(args[2]);
    long long max_bytes = PyLong_AsLongLong(args[3]);
    long long overhead = PyLong_AsLongLong(args[4]); /* segments.RECORD_OVERHEAD_BYTES */
    long long size_now = PyLong_AsLongLong(args[6]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    long long added = 0;
    Py_ssize_t count = PyList_GET_SIZE(offsets);
    Py_ssize_t index = first, end = PyList_GET_SIZE(messages);
    PyObject *minus_one = PyLong_FromLong(-1);
    if (minus_one == NULL) {
        return NULL;
    }
    for (; index < end; index++) {
        PyObject *message = PyList_GET_ITEM(messages, index);
        PyObject *key = NULL, *value = NULL, *headers = NULL, *stamp = NULL;
        key = PyObject_CallMethodNoArgs(message, s_key);
        if (key == NULL) {
            goto error;
        }
        value = PyObject_CallMethodNoArgs(message, s_value);
        if (value == NULL) {
            goto error;
        }
        headers = PyObject_CallMethodNoArgs(message, s_headers);
        if (headers == NULL) {
            goto error;
        }
        Py_ssize_t key_size, value_size;
        if (sized(key, &key_size) < 0 || sized(value, &value_size) < 0) {
            goto error;
        }
        long long size = overhead + key_size + value_size;
        int has_headers = headers != Py_None && PyObject_IsTrue(headers);
        if (has_headers < 0) {
            goto error;
        }
        PyObject *header_list = NULL;
        if (has_headers) {
            header_list = PySequence_Fast(headers, "headers must be a sequence of (key, value) pairs");
            if (header_list == NULL) {
                goto error;
            }
            Py_ssize_t h = PySequence_Fast_GET_SIZE(header_list);
            for (Py_ssize_t j = 0; j < h; j++) {
                PyObject *pair = PySequence_Fast_GET_ITEM(header_list, j);
                PyObject *hk, *hv;
                if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
                    PyErr_SetString(PyExc_TypeError, "a header must be a (key, value) tuple");
                    Py_DECREF(header_list);
                    goto error;
                }
                hk = PyTuple_GET_ITEM(pair, 0);
                hv = PyTuple_GET_ITEM(pair, 1);
                Py_ssize_t key_bytes, value_bytes;
                if (PyUnicode_AsUTF8AndSize(hk, &key_bytes) == NULL || sized(hv, &value_bytes) < 0) {
                    Py_DECREF(header_list);
                    goto error;
                }
                size += key_bytes + value_bytes;
            }
        }
        if (count && (count >= max_records || size_now + size > max_bytes)) {
            Py_XDECREF(header_list);
            Py_DECREF(key);
            Py_DECREF(value);
            Py_DECREF(headers);
            break;
        }
        if (header_list != NULL) {
            Py_ssize_t h = PySequence_Fast_GET_SIZE(header_list);
            for (Py_ssize_t j = 0; j < h; j++) {
                PyObject *pair = PySequence_Fast_GET_ITEM(header_list, j);
                if (PyList_Append(header_keys, PyTuple_GET_ITEM(pair, 0)) < 0 ||
                    PyList_Append(header_values, PyTuple_GET_ITEM(pair, 1)) < 0) {
                    Py_DECREF(header_list);
                    goto error;
                }
            }
            Py_DECREF(header_list);
        }
        Py_CLEAR(headers);
        if (append_steal(header_offsets, PyLong_FromSsize_t(PyList_GET_SIZE(header_keys))) < 0) {
            goto error;
        }
        stamp = PyObject_CallMethodNoArgs(message, s_timestamp);
        if (stamp == NULL) {
            goto error;
        }
        if (!PyTuple_Check(stamp) || PyTuple_GET_SIZE(stamp) != 2) {
            PyErr_SetString(PyExc_TypeError, "a message's timestamp() must be a (type, timestamp) tuple");
            goto error;
        }
        if (append_steal(offsets, PyObject_CallMethodNoArgs(message, s_offset)) < 0 ||
            PyList_Append(timestamps, PyTuple_GET_ITEM(stamp, 1)) < 0) {
            goto error;
        }
        PyObject *type_id = PyDict_GetItemWithError(type_ids, PyTuple_GET_ITEM(stamp, 0));
        if (type_id == NULL && PyErr_Occurred()) {
            goto error;
        }
        if (PyList_Append(types, type_id != NULL ? type_id : minus_one) < 0) {
            goto error;
        }
        Py_CLEAR(stamp);
        int failed = PyList_Append(keys, key) < 0 || PyList_Append(values, value) < 0;
        Py_CLEAR(key);
        Py_CLEAR(value);
        if (failed || append_steal(epochs, PyObject_CallMethodNoArgs(message, s_leader_epoch)) < 0) {
            goto error;
        }
        size_now += size;
        added += size;
        count++;
        continue;
    error:
        Py_XDECREF(key);
        Py_XDECREF(value);
        Py_XDECREF(headers);
        Py_XDECREF(stamp);
        Py_DECREF(minus_one);
        return NULL;
    }
    Py_DECREF(minus_one);
    return Py_BuildValue("(nLL)", index, added, size_now);
}

static PyMethodDef methods[] = {
    {"scan", (PyCFunction)(void (*)(void))scan, METH_FASTCALL,
     "RangeReader.batches' per-message check: (deliverable count, why the scan stopped)."},
    {"fill", (PyCFunction)(void (*)(void))fill, METH_FASTCALL,
     "SegmentColumns.fill_python: append messages to the column lists until the segment would close."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_message_kernel",
    "The fetch's per-message loops over confluent-kafka Message batches, compiled (see _message_kernel.c).", -1,
    methods,
};

#define INTERN(var, text)                                       \
    do {                                                        \
        if ((var = PyUnicode_InternFromString(text)) == NULL) { \
            return NULL;                                        \
        }                                                       \
    } while (0)

PyMODINIT_FUNC PyInit__message_kernel(void) {
    INTERN(s_error, "error");
    INTERN(s_offset, "offset");
    INTERN(s_key, "key");
    INTERN(s_value, "value");
    INTERN(s_headers, "headers");
    INTERN(s_timestamp, "timestamp");
    INTERN(s_leader_epoch, "leader_epoch");
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) {
        return NULL;
    }
    if (PyModule_AddIntConstant(module, "SCAN_ALL", SCAN_ALL) < 0 ||
        PyModule_AddIntConstant(module, "SCAN_ERROR", SCAN_ERROR) < 0 ||
        PyModule_AddIntConstant(module, "SCAN_PAST_END", SCAN_PAST_END) < 0 ||
        PyModule_AddIntConstant(module, "SCAN_LAST_OFFSET", SCAN_LAST_OFFSET) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
