/*
 * The fetch's two per-message loops over a batch of confluent-kafka ``Message`` objects, compiled.
 *
 * Why: a fetch copies every record of a range, and in Python the two loops that touch each message (the range
 * reader's check of each message against the range's end, and the segment's column appends) cost the fetch more
 * CPU than librdkafka's consume and the Parquet encoding together, about 1.6x a bare consume loop in all. This
 * file is the same two loops, statement for statement, on the same Python objects:
 *
 * - ``scan``: RangeReader.batches' check, message by message, of an error or an offset at or past the range's end;
 * - ``fill``: SegmentColumns.fill_python's appends to the segment's columns (Arrow's buffers, as bytearrays) until
 *   the next message would close the segment.
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

/*
 * ``n`` more bytes at the end of a bytearray, returned for writing. The bytearray grows by doubling: its own
 * resize grows an append-at-a-time buffer by an eighth, which copies a segment's value bytes several times over.
 */
static char *extend(PyObject *array, Py_ssize_t n) {
    PyByteArrayObject *bytes = (PyByteArrayObject *)array;
    if (bytes->ob_exports > 0) {
        PyErr_SetString(PyExc_BufferError, "a segment column is exported (encoded) and cannot grow");
        return NULL;
    }
    Py_ssize_t size = Py_SIZE(array), wanted = size + n;
    if ((bytes->ob_start - bytes->ob_bytes) + wanted + 1 > bytes->ob_alloc) {
        if (PyByteArray_Resize(array, wanted < 64 ? 128 : 2 * wanted) < 0) {
            return NULL;
        }
    }
    Py_SET_SIZE(array, wanted);
    bytes->ob_start[wanted] = '\0';
    return bytes->ob_start + size;
}

/* A fixed-width cell (``size`` bytes, native order, as Arrow's buffers hold them) at the end of ``array``. */
static int put_cell(PyObject *array, const void *cell, Py_ssize_t size) {
    char *at = extend(array, size);
    if (at == NULL) {
        return -1;
    }
    memcpy(at, cell, size);
    return 0;
}

static int put_int64(PyObject *array, long long value) {
    int64_t cell = (int64_t)value;
    return put_cell(array, &cell, 8);
}

static int put_int32(PyObject *array, long long value) {
    int32_t cell = (int32_t)value;
    return put_cell(array, &cell, 4);
}

/* A binary cell: its bytes, its end offset, its validity bit (the bitmap's byte for the row already added). */
static int put_binary(PyObject *data, PyObject *offsets, PyObject *validity, Py_ssize_t row, PyObject *obj) {
    if (obj != Py_None) {
        Py_buffer view;
        if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0) {
            return -1;
        }
        char *at = extend(data, view.len);
        if (at == NULL) {
            PyBuffer_Release(&view);
            return -1;
        }
        memcpy(at, view.buf, view.len);
        PyBuffer_Release(&view);
        PyByteArray_AS_STRING(validity)[row / 8] |= (char)(1 << (row % 8));
    }
    if (PyByteArray_GET_SIZE(data) > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "a segment's binary column passed 2 GiB");
        return -1;
    }
    return put_int32(offsets, PyByteArray_GET_SIZE(data));
}

/* The columns of a SegmentColumns, in its slot order; borrowed from the object for one fill. */
enum {
    C_OFFSETS, C_TIMESTAMPS, C_TYPES, C_KEY_OFFSETS, C_KEY_DATA, C_KEY_VALIDITY, C_VALUE_OFFSETS, C_VALUE_DATA,
    C_VALUE_VALIDITY, C_HEADER_OFFSETS, C_HEADER_KEYS, C_HEADER_VALUES, C_EPOCHS, C_EPOCH_VALIDITY, C_COUNT_OF
};
static PyObject *s_columns[C_COUNT_OF];
static PyObject *s_count, *s_size;

static int read_long(PyObject *owner, PyObject *name, long long *value) {
    PyObject *obj = PyObject_GetAttr(owner, name);
    if (obj == NULL) {
        return -1;
    }
    *value = PyLong_AsLongLong(obj);
    Py_DECREF(obj);
    return (*value == -1 && PyErr_Occurred()) ? -1 : 0;
}

static int write_long(PyObject *owner, PyObject *name, long long value) {
    PyObject *obj = PyLong_FromLongLong(value);
    if (obj == NULL) {
        return -1;
    }
    int failed = PyObject_SetAttr(owner, name, obj);
    Py_DECREF(obj);
    return failed;
}

/* One row's cells after its headers (SegmentColumns._append_row). */
static int put_row(PyObject **c, Py_ssize_t row, PyObject *message, PyObject *key, PyObject *value,
                   PyObject *type_ids, PyObject *stamp) {
    if (row % 8 == 0) {
        for (int v = 0; v < 3; v++) {
            int column = v == 0 ? C_KEY_VALIDITY : v == 1 ? C_VALUE_VALIDITY : C_EPOCH_VALIDITY;
            char *at = extend(c[column], 1);
            if (at == NULL) {
                return -1;
            }
            *at = 0;
        }
    }
    PyObject *offset = PyObject_CallMethodNoArgs(message, s_offset);
    if (offset == NULL) {
        return -1;
    }
    long long offset_value = PyLong_AsLongLong(offset);
    Py_DECREF(offset);
    if ((offset_value == -1 && PyErr_Occurred()) || put_int64(c[C_OFFSETS], offset_value) < 0) {
        return -1;
    }
    long long timestamp = PyLong_AsLongLong(PyTuple_GET_ITEM(stamp, 1));
    if ((timestamp == -1 && PyErr_Occurred()) || put_int64(c[C_TIMESTAMPS], timestamp) < 0) {
        return -1;
    }
    PyObject *type_id = PyDict_GetItemWithError(type_ids, PyTuple_GET_ITEM(stamp, 0));
    if (type_id == NULL && PyErr_Occurred()) {
        return -1;
    }
    long type_value = type_id == NULL ? -1 : PyLong_AsLong(type_id);
    if (type_value == -1 && PyErr_Occurred()) {
        return -1;
    }
    char *type_at = extend(c[C_TYPES], 1);
    if (type_at == NULL) {
        return -1;
    }
    *type_at = (char)type_value;
    if (put_binary(c[C_KEY_DATA], c[C_KEY_OFFSETS], c[C_KEY_VALIDITY], row, key) < 0 ||
        put_binary(c[C_VALUE_DATA], c[C_VALUE_OFFSETS], c[C_VALUE_VALIDITY], row, value) < 0 ||
        put_int32(c[C_HEADER_OFFSETS], PyList_GET_SIZE(c[C_HEADER_KEYS])) < 0) {
        return -1;
    }
    PyObject *epoch = PyObject_CallMethodNoArgs(message, s_leader_epoch);
    if (epoch == NULL) {
        return -1;
    }
    long long epoch_value = 0;
    if (epoch != Py_None) {
        epoch_value = PyLong_AsLongLong(epoch);
        PyByteArray_AS_STRING(c[C_EPOCH_VALIDITY])[row / 8] |= (char)(1 << (row % 8));
    }
    Py_DECREF(epoch);
    if (epoch_value == -1 && PyErr_Occurred()) {
        return -1;
    }
    return put_int32(c[C_EPOCHS], epoch_value);
}

/*
 * fill(columns, messages, first, max_records, max_bytes, overhead, timestamp_type_ids) -> (index, added)
 *
 * SegmentColumns.fill_python: append ``messages[first:]`` to ``columns`` (a SegmentColumns) until the next one
 * would close the segment (a non-empty segment closes before the row that would pass ``max_records`` or
 * ``max_bytes``).
 */
static PyObject *fill(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7 || !PyList_Check(args[1]) || !PyDict_Check(args[6])) {
        PyErr_SetString(PyExc_TypeError, "fill(columns: SegmentColumns, messages: list, first, max_records, "
                                         "max_bytes, overhead, timestamp_type_ids: dict)");
        return NULL;
    }
    PyObject *owner = args[0], *messages = args[1], *type_ids = args[6];
    Py_ssize_t first = PyLong_AsSsize_t(args[2]);
    long long max_records = PyLong_AsLongLong(args[3]);
    long long max_bytes = PyLong_AsLongLong(args[4]);
    long long overhead = PyLong_AsLongLong(args[5]); /* segments.RECORD_OVERHEAD_BYTES */
    if (PyErr_Occurred()) {
        return NULL;
    }
    long long count, size_now;
    if (read_long(owner, s_count, &count) < 0 || read_long(owner, s_size, &size_now) < 0) {
        return NULL;
    }
    PyObject *c[C_COUNT_OF] = {NULL};
    PyObject *result = NULL;
    for (int i = 0; i < C_COUNT_OF; i++) {
        c[i] = PyObject_GetAttr(owner, s_columns[i]);
        if (c[i] == NULL) {
            goto done;
        }
        int is_list = i == C_HEADER_KEYS || i == C_HEADER_VALUES;
        if (is_list ? !PyList_CheckExact(c[i]) : !PyByteArray_CheckExact(c[i])) {
            PyErr_SetString(PyExc_TypeError, "fill: a SegmentColumns' column is not of its type");
            goto done;
        }
    }
    long long added = 0;
    Py_ssize_t index = first, end = PyList_GET_SIZE(messages);
    for (; index < end; index++) {
        PyObject *message = PyList_GET_ITEM(messages, index);
        PyObject *key = NULL, *value = NULL, *headers = NULL, *stamp = NULL, *header_list = NULL;
        key = PyObject_CallMethodNoArgs(message, s_key);
        if (key == NULL) {
            goto row_error;
        }
        value = PyObject_CallMethodNoArgs(message, s_value);
        if (value == NULL) {
            goto row_error;
        }
        headers = PyObject_CallMethodNoArgs(message, s_headers);
        if (headers == NULL) {
            goto row_error;
        }
        Py_ssize_t key_size, value_size;
        if (sized(key, &key_size) < 0 || sized(value, &value_size) < 0) {
            goto row_error;
        }
        long long size = overhead + key_size + value_size;
        int has_headers = headers != Py_None && PyObject_IsTrue(headers);
        if (has_headers < 0) {
            goto row_error;
        }
        if (has_headers) {
            header_list = PySequence_Fast(headers, "headers must be a sequence of (key, value) pairs");
            if (header_list == NULL) {
                goto row_error;
            }
            Py_ssize_t h = PySequence_Fast_GET_SIZE(header_list);
            for (Py_ssize_t j = 0; j < h; j++) {
                PyObject *pair = PySequence_Fast_GET_ITEM(header_list, j);
                if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
                    PyErr_SetString(PyExc_TypeError, "a header must be a (key, value) tuple");
                    goto row_error;
                }
                Py_ssize_t key_bytes, value_bytes;
                if (PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(pair, 0), &key_bytes) == NULL ||
                    sized(PyTuple_GET_ITEM(pair, 1), &value_bytes) < 0) {
                    goto row_error;
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
        stamp = PyObject_CallMethodNoArgs(message, s_timestamp);
        if (stamp == NULL) {
            goto row_error;
        }
        if (!PyTuple_Check(stamp) || PyTuple_GET_SIZE(stamp) != 2) {
            PyErr_SetString(PyExc_TypeError, "a message's timestamp() must be a (type, timestamp) tuple");
            goto row_error;
        }
        if (header_list != NULL) {
            Py_ssize_t h = PySequence_Fast_GET_SIZE(header_list);
            for (Py_ssize_t j = 0; j < h; j++) {
                PyObject *pair = PySequence_Fast_GET_ITEM(header_list, j);
                if (PyList_Append(c[C_HEADER_KEYS], PyTuple_GET_ITEM(pair, 0)) < 0 ||
                    PyList_Append(c[C_HEADER_VALUES], PyTuple_GET_ITEM(pair, 1)) < 0) {
                    goto row_error;
                }
            }
        }
        if (put_row(c, (Py_ssize_t)count, message, key, value, type_ids, stamp) < 0) {
            goto row_error;
        }
        Py_XDECREF(header_list);
        Py_DECREF(key);
        Py_DECREF(value);
        Py_DECREF(headers);
        Py_DECREF(stamp);
        size_now += size;
        added += size;
        count++;
        continue;
    row_error:
        Py_XDECREF(header_list);
        Py_XDECREF(key);
        Py_XDECREF(value);
        Py_XDECREF(headers);
        Py_XDECREF(stamp);
        /* the rows appended before this one stay, counted, as Python's loop leaves them */
        write_long(owner, s_count, count);
        write_long(owner, s_size, size_now);
        goto done;
    }
    if (write_long(owner, s_count, count) == 0 && write_long(owner, s_size, size_now) == 0) {
        result = Py_BuildValue("(nL)", index, added);
    }
done:
    for (int i = 0; i < C_COUNT_OF; i++) {
        Py_XDECREF(c[i]);
    }
    return result;
}

static PyMethodDef methods[] = {
    {"scan", (PyCFunction)(void (*)(void))scan, METH_FASTCALL,
     "RangeReader.batches' per-message check: (deliverable count, why the scan stopped)."},
    {"fill", (PyCFunction)(void (*)(void))fill, METH_FASTCALL,
     "SegmentColumns.fill_python: append messages to the segment's columns until the segment would close."},
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
    INTERN(s_count, "count");
    INTERN(s_size, "size");
    static const char *column_names[C_COUNT_OF] = {
        "offsets", "timestamps", "timestamp_types", "key_offsets", "key_data", "key_validity", "value_offsets",
        "value_data", "value_validity", "header_offsets", "header_keys", "header_values", "leader_epochs",
        "leader_epoch_validity",
    };
    for (int i = 0; i < C_COUNT_OF; i++) {
        INTERN(s_columns[i], column_names[i]);
    }
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
