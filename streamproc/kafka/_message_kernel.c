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
 *
 * A third part reads librdkafka's messages without a Python object per message (``consume``): a ``Batch`` holds the
 * ``rd_kafka_message_t`` pointers one ``rd_kafka_consume_batch_queue`` returned, and ``scan`` and ``fill`` read
 * their fields in place. confluent-kafka's ``consume()`` builds a ``Message`` with a ``bytes`` key and value per
 * record, which cost a fetch more CPU than librdkafka's own consume. librdkafka is confluent-kafka's own (its
 * wheel's), reached through the function addresses ``bind`` is given (``kafka/native_consume.py``), so nothing is
 * linked at build time. A ``Batch``'s messages are also readable one by one (``batch[i]``, a view with ``Message``'s
 * methods), which the fetch uses only for the rare message it does not copy (an error, a segment's first offset).
 *
 * The fourth is the other direction, the hand-off's (``produce``): an output object's rows handed to librdkafka
 * straight from Arrow's buffers, through the same bound librdkafka (``kafka/native_produce.py``).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *s_error, *s_offset, *s_key, *s_value, *s_headers, *s_timestamp, *s_leader_epoch;

/* What ended a scan (RangeReader.batches' cases). */
enum { SCAN_ALL = 0, SCAN_ERROR = 1, SCAN_PAST_END = 2, SCAN_LAST_OFFSET = 3 };


/* ---------------------------------------------------------------------------------------------------------------
 * librdkafka's messages read in place.
 *
 * The struct is librdkafka's public ABI (rdkafka.h's rd_kafka_message_t, unchanged since 0.9); the functions are
 * the addresses ``bind`` was given, those of the very librdkafka confluent-kafka uses.
 */
typedef struct {
    int err;
    void *rkt;
    int32_t partition;
    void *payload;
    size_t len;
    void *key;
    size_t key_len;
    int64_t offset;
    void *_private;
} rk_message;

static struct {
    Py_ssize_t (*consume_batch_queue)(void *queue, int timeout_ms, rk_message **messages, size_t size);
    void (*message_destroy)(rk_message *message);
    int64_t (*message_timestamp)(const rk_message *message, int *type);
    int (*message_headers)(const rk_message *message, void **headers);
    size_t (*header_cnt)(const void *headers);
    int (*header_get_all)(const void *headers, size_t index, const char **name, const void **value, size_t *size);
    int32_t (*message_leader_epoch)(const rk_message *message);
    const char *(*message_errstr)(const rk_message *message);
    int (*producev)(void *rk, ...); /* rd_kafka_producev: the hand-off's ``produce`` */
    void *(*topic_new)(void *rk, const char *topic, void *conf);
    void (*topic_destroy)(void *rkt);
} rk;
static int rk_bound = 0;
static PyObject *s_KafkaError; /* confluent_kafka.KafkaError, imported at bind */

/* A batch of consumed messages: the root owns them (``release`` or deallocation destroys them); a slice is a view
 * of the root's first ``n``. */
typedef struct {
    PyObject_HEAD
    PyObject *root; /* NULL for the root itself */
    rk_message **messages;
    Py_ssize_t n;
    int released;
} Batch;

/* One message of a batch, with confluent-kafka Message's methods. */
typedef struct {
    PyObject_HEAD
    Batch *batch;
    Py_ssize_t index;
} BatchMessage;

static PyTypeObject BatchType, BatchMessageType;

static Batch *batch_root(Batch *batch) {
    return batch->root == NULL ? batch : (Batch *)batch->root;
}

/* The batch's messages, or NULL with a ValueError once the root released them. */
static rk_message **batch_messages(Batch *batch) {
    if (batch_root(batch)->released) {
        PyErr_SetString(PyExc_ValueError, "the batch's messages were released");
        return NULL;
    }
    return batch->messages;
}

static void batch_destroy_messages(Batch *batch) {
    if (batch->root == NULL && !batch->released) {
        for (Py_ssize_t i = 0; i < batch->n; i++) {
            rk.message_destroy(batch->messages[i]);
        }
        PyMem_Free(batch->messages);
        batch->messages = NULL;
        batch->released = 1;
    }
}

static void batch_dealloc(Batch *batch) {
    batch_destroy_messages(batch);
    Py_XDECREF(batch->root);
    Py_TYPE(batch)->tp_free((PyObject *)batch);
}

static PyObject *batch_release(Batch *batch, PyObject *unused) {
    if (batch->root != NULL) {
        PyErr_SetString(PyExc_ValueError, "release the batch, not a slice of it");
        return NULL;
    }
    batch_destroy_messages(batch);
    Py_RETURN_NONE;
}

static Py_ssize_t batch_length(Batch *batch) {
    return batch->n;
}

static PyObject *batch_item(Batch *batch, Py_ssize_t index) {
    if (index < 0 || index >= batch->n) {
        PyErr_SetString(PyExc_IndexError, "batch index out of range");
        return NULL;
    }
    if (batch_messages(batch) == NULL) {
        return NULL;
    }
    BatchMessage *message = PyObject_New(BatchMessage, &BatchMessageType);
    if (message == NULL) {
        return NULL;
    }
    Py_INCREF(batch);
    message->batch = batch;
    message->index = index;
    return (PyObject *)message;
}

/* batch[i], batch[-1] and batch[:k] (a view of the first k, the only slice a range reader takes). */
static PyObject *batch_subscript(Batch *batch, PyObject *key) {
    if (PySlice_Check(key)) {
        Py_ssize_t start, stop, step;
        if (PySlice_Unpack(key, &start, &stop, &step) < 0) {
            return NULL;
        }
        Py_ssize_t length = PySlice_AdjustIndices(batch->n, &start, &stop, step);
        if (start != 0 || step != 1) {
            PyErr_SetString(PyExc_ValueError, "a batch slices only as batch[:k]");
            return NULL;
        }
        Batch *view = PyObject_New(Batch, &BatchType);
        if (view == NULL) {
            return NULL;
        }
        PyObject *root = (PyObject *)batch_root(batch);
        Py_INCREF(root);
        view->root = root;
        view->messages = batch->messages;
        view->n = length;
        view->released = 0;
        return (PyObject *)view;
    }
    Py_ssize_t index = PyNumber_AsSsize_t(key, PyExc_IndexError);
    if (index == -1 && PyErr_Occurred()) {
        return NULL;
    }
    return batch_item(batch, index < 0 ? index + batch->n : index);
}

static PySequenceMethods batch_as_sequence = {.sq_length = (lenfunc)batch_length,
                                              .sq_item = (ssizeargfunc)batch_item};
static PyMappingMethods batch_as_mapping = {.mp_length = (lenfunc)batch_length,
                                            .mp_subscript = (binaryfunc)batch_subscript};
/* The messages' offsets as a list of ints: what a reader records of a batch whose offsets are not one run (a
 * transactional log's markers leave gaps in most batches), without a message view per record. */
static PyObject *batch_offsets(Batch *batch, PyObject *unused) {
    rk_message **messages = batch_messages(batch);
    if (messages == NULL) {
        return NULL;
    }
    PyObject *offsets = PyList_New(batch->n);
    if (offsets == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < batch->n; i++) {
        PyObject *offset = PyLong_FromLongLong(messages[i]->offset);
        if (offset == NULL) {
            Py_DECREF(offsets);
            return NULL;
        }
        PyList_SET_ITEM(offsets, i, offset);
    }
    return offsets;
}

static PyMethodDef batch_methods[] = {
    {"release", (PyCFunction)batch_release, METH_NOARGS,
     "Destroy the batch's messages now (before their consumer closes); its views and messages fail after."},
    {"offsets", (PyCFunction)batch_offsets, METH_NOARGS, "The messages' offsets, in order, as a list of ints."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject BatchType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "streamproc.kafka._message_kernel.Batch",
    .tp_basicsize = sizeof(Batch),
    .tp_dealloc = (destructor)batch_dealloc,
    .tp_as_sequence = &batch_as_sequence,
    .tp_as_mapping = &batch_as_mapping,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "librdkafka messages of one consume, read in place (see _message_kernel.c).",
    .tp_methods = batch_methods,
};

static rk_message *message_of(BatchMessage *message) {
    rk_message **messages = batch_messages(message->batch);
    return messages == NULL ? NULL : messages[message->index];
}

static void message_dealloc(BatchMessage *message) {
    Py_DECREF(message->batch);
    PyObject_Free(message);
}

/* A key or value as confluent-kafka gives it: bytes, or None where librdkafka has no pointer. */
static PyObject *payload_or_none(const void *data, size_t size) {
    if (data == NULL) {
        Py_RETURN_NONE;
    }
    return PyBytes_FromStringAndSize((const char *)data, (Py_ssize_t)size);
}

static PyObject *message_offset(BatchMessage *self, PyObject *unused) {
    rk_message *m = message_of(self);
    return m == NULL ? NULL : PyLong_FromLongLong(m->offset);
}

static PyObject *message_partition(BatchMessage *self, PyObject *unused) {
    rk_message *m = message_of(self);
    return m == NULL ? NULL : PyLong_FromLong(m->partition);
}

static PyObject *message_key(BatchMessage *self, PyObject *unused) {
    rk_message *m = message_of(self);
    return m == NULL ? NULL : payload_or_none(m->key, m->key_len);
}

static PyObject *message_value(BatchMessage *self, PyObject *unused) {
    rk_message *m = message_of(self);
    if (m == NULL) {
        return NULL;
    }
    if (m->err) {
        Py_RETURN_NONE; /* an error's payload is its text: error() gives it */
    }
    return payload_or_none(m->payload, m->len);
}

static PyObject *message_timestamp(BatchMessage *self, PyObject *unused) {
    rk_message *m = message_of(self);
    if (m == NULL) {
        return NULL;
    }
    int type = 0;
    int64_t timestamp = rk.message_timestamp(m, &type);
    return Py_BuildValue("(iL)", type, (long long)timestamp);
}

static PyObject *message_leader_epoch(BatchMessage *self, PyObject *unused) {
    rk_message *m = message_of(self);
    if (m == NULL) {
        return NULL;
    }
    int32_t epoch = rk.message_leader_epoch(m);
    if (epoch < 0) {
        Py_RETURN_NONE;
    }
    return PyLong_FromLong(epoch);
}

/* The headers as confluent-kafka's Message.headers(): a list of (str, bytes | None), or None without any. */
static PyObject *headers_list(const rk_message *m) {
    void *headers = NULL;
    if (rk.message_headers(m, &headers) != 0 || headers == NULL || rk.header_cnt(headers) == 0) {
        Py_RETURN_NONE;
    }
    size_t count = rk.header_cnt(headers);
    PyObject *list = PyList_New((Py_ssize_t)count);
    if (list == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < count; i++) {
        const char *name;
        const void *value;
        size_t size;
        if (rk.header_get_all(headers, i, &name, &value, &size) != 0) {
            Py_DECREF(list);
            PyErr_SetString(PyExc_RuntimeError, "librdkafka could not read a header it counted");
            return NULL;
        }
        PyObject *pair = Py_BuildValue("(sN)", name, payload_or_none(value, size));
        if (pair == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, pair);
    }
    return list;
}

static PyObject *message_headers(BatchMessage *self, PyObject *unused) {
    rk_message *m = message_of(self);
    return m == NULL ? NULL : headers_list(m);
}

/* None, or confluent_kafka.KafkaError(code, librdkafka's text) as a consumed Message's error() gives it. */
static PyObject *message_error(BatchMessage *self, PyObject *unused) {
    rk_message *m = message_of(self);
    if (m == NULL) {
        return NULL;
    }
    if (!m->err) {
        Py_RETURN_NONE;
    }
    return PyObject_CallFunction(s_KafkaError, "is", m->err, rk.message_errstr(m));
}

static PyMethodDef message_methods[] = {
    {"offset", (PyCFunction)message_offset, METH_NOARGS, NULL},
    {"partition", (PyCFunction)message_partition, METH_NOARGS, NULL},
    {"key", (PyCFunction)message_key, METH_NOARGS, NULL},
    {"value", (PyCFunction)message_value, METH_NOARGS, NULL},
    {"headers", (PyCFunction)message_headers, METH_NOARGS, NULL},
    {"timestamp", (PyCFunction)message_timestamp, METH_NOARGS, NULL},
    {"leader_epoch", (PyCFunction)message_leader_epoch, METH_NOARGS, NULL},
    {"error", (PyCFunction)message_error, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject BatchMessageType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "streamproc.kafka._message_kernel.BatchMessage",
    .tp_basicsize = sizeof(BatchMessage),
    .tp_dealloc = (destructor)message_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One message of a Batch, with confluent-kafka Message's methods (valid until the batch's release).",
    .tp_methods = message_methods,
};

/*
 * bind(addresses: tuple[int, ...], kafka_error: type) -> None
 *
 * librdkafka's functions, in the order of the ``rk`` struct (kafka/native_consume.LIBRDKAFKA_FUNCTIONS), and
 * confluent_kafka.KafkaError. Binding again replaces them (one librdkafka per process: the same addresses).
 */
static PyObject *bind(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    enum { FUNCTIONS = sizeof(rk) / sizeof(void *) };
    if (nargs != 2 || !PyTuple_Check(args[0]) || PyTuple_GET_SIZE(args[0]) != FUNCTIONS) {
        PyErr_Format(PyExc_TypeError, "bind(addresses: tuple of %d ints, kafka_error: type)", (int)FUNCTIONS);
        return NULL;
    }
    void *pointers[FUNCTIONS];
    for (Py_ssize_t i = 0; i < FUNCTIONS; i++) {
        pointers[i] = PyLong_AsVoidPtr(PyTuple_GET_ITEM(args[0], i));
        if (pointers[i] == NULL) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_ValueError, "bind: a librdkafka function's address is NULL");
            }
            return NULL;
        }
    }
    memcpy(&rk, pointers, sizeof(rk));
    Py_INCREF(args[1]);
    Py_XSETREF(s_KafkaError, args[1]);
    rk_bound = 1;
    Py_RETURN_NONE;
}

/*
 * consume(queue: int, timeout_ms: int, max_messages: int) -> Batch
 *
 * rd_kafka_consume_batch_queue on ``queue`` (a partition's queue that forwards nowhere: only its messages and its
 * partition events are on it, never a callback, so librdkafka is called without the GIL), as a Batch.
 */
static PyObject *consume(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!rk_bound) {
        PyErr_SetString(PyExc_RuntimeError, "consume: librdkafka is not bound (native_consume.bind)");
        return NULL;
    }
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "consume(queue: int, timeout_ms: int, max_messages: int)");
        return NULL;
    }
    void *queue = PyLong_AsVoidPtr(args[0]);
    int timeout_ms = (int)PyLong_AsLong(args[1]);
    Py_ssize_t max_messages = PyLong_AsSsize_t(args[2]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (queue == NULL || max_messages < 1) {
        PyErr_SetString(PyExc_ValueError, "consume: no queue, or max_messages < 1");
        return NULL;
    }
    rk_message **messages = PyMem_Malloc(sizeof(rk_message *) * (size_t)max_messages);
    if (messages == NULL) {
        return PyErr_NoMemory();
    }
    Py_ssize_t n;
    Py_BEGIN_ALLOW_THREADS
    n = rk.consume_batch_queue(queue, timeout_ms, messages, (size_t)max_messages);
    Py_END_ALLOW_THREADS
    if (n < 0) {
        PyMem_Free(messages);
        PyErr_SetString(PyExc_RuntimeError, "rd_kafka_consume_batch_queue failed (not a consumer's queue?)");
        return NULL;
    }
    Batch *batch = PyObject_New(Batch, &BatchType);
    if (batch == NULL) {
        for (Py_ssize_t i = 0; i < n; i++) {
            rk.message_destroy(messages[i]);
        }
        PyMem_Free(messages);
        return NULL;
    }
    batch->root = NULL;
    batch->messages = messages;
    batch->n = n;
    batch->released = 0;
    return (PyObject *)batch;
}

/* scan over a Batch: the same cases, read in place. */
static PyObject *scan_batch(Batch *batch, long long end) {
    rk_message **messages = batch_messages(batch);
    if (messages == NULL) {
        return NULL;
    }
    Py_ssize_t i = 0;
    int reason = SCAN_ALL;
    for (; i < batch->n; i++) {
        const rk_message *m = messages[i];
        if (m->err) {
            reason = SCAN_ERROR;
            break;
        }
        if (m->offset >= end) {
            reason = SCAN_PAST_END;
            break;
        }
        if (m->offset == end - 1) {
            i++;
            reason = SCAN_LAST_OFFSET;
            break;
        }
    }
    return Py_BuildValue("(ni)", i, reason);
}

/*
 * scan(messages, end) -> (count, reason)
 *
 * ``messages[:count]`` are deliverable (no error, offset < end); ``reason`` says why the scan stopped:
 * SCAN_ALL (every message is deliverable), SCAN_ERROR (``messages[count]`` has an error), SCAN_PAST_END
 * (``messages[count]`` lies at or past ``end``) or SCAN_LAST_OFFSET (``messages[count - 1]`` is at ``end - 1``).
 */
static PyObject *scan(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs == 2 && Py_IS_TYPE(args[0], &BatchType)) {
        long long batch_end = PyLong_AsLongLong(args[1]);
        if (batch_end == -1 && PyErr_Occurred()) {
            return NULL;
        }
        return scan_batch((Batch *)args[0], batch_end);
    }
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

/* A binary cell from raw bytes (``bytes`` NULL: a null cell): its bytes, its end offset, its validity bit (the
 * bitmap's byte for the row already added). */
static int put_binary_raw(PyObject *data, PyObject *offsets, PyObject *validity, Py_ssize_t row, const void *bytes,
                          Py_ssize_t size) {
    if (bytes != NULL) {
        char *at = extend(data, size);
        if (at == NULL) {
            return -1;
        }
        memcpy(at, bytes, size);
        PyByteArray_AS_STRING(validity)[row / 8] |= (char)(1 << (row % 8));
    }
    if (PyByteArray_GET_SIZE(data) > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "a segment's binary column passed 2 GiB");
        return -1;
    }
    return put_int32(offsets, PyByteArray_GET_SIZE(data));
}

/* A binary cell from a bytes-like object or None. */
static int put_binary(PyObject *data, PyObject *offsets, PyObject *validity, Py_ssize_t row, PyObject *obj) {
    if (obj == Py_None) {
        return put_binary_raw(data, offsets, validity, row, NULL, 0);
    }
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0) {
        return -1;
    }
    /* an empty value is not null: any non-NULL pointer marks it valid */
    int failed = put_binary_raw(data, offsets, validity, row, view.len ? view.buf : "", view.len);
    PyBuffer_Release(&view);
    return failed;
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
static int open_validity_bytes(PyObject **c, Py_ssize_t row);

/* The row's timestamp type as Kafka's id (``timestamp_type_ids[type_key]``, -1 where confluent-kafka's type is not
 * in it), as _append_row's ``timestamp_type_ids.get(ts_type, -1)``. */
static int put_timestamp_type(PyObject **c, PyObject *type_ids, PyObject *type_key) {
    PyObject *type_id = PyDict_GetItemWithError(type_ids, type_key);
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
    return 0;
}

static int put_row(PyObject **c, Py_ssize_t row, PyObject *message, PyObject *key, PyObject *value,
                   PyObject *type_ids, PyObject *stamp) {
    if (open_validity_bytes(c, row) < 0) {
        return -1;
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
    if (put_timestamp_type(c, type_ids, PyTuple_GET_ITEM(stamp, 0)) < 0) {
        return -1;
    }
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

/* The validity bytes of a new group of eight rows (key, value, leader epoch), as _append_row adds them. */
static int open_validity_bytes(PyObject **c, Py_ssize_t row) {
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
    return 0;
}

/* One message read in place appended as fill's loop appends a Message (its headers first, then its cells). */
static int put_native_row(PyObject **c, Py_ssize_t row, const rk_message *m, void *headers, size_t header_count,
                          PyObject *type_ids) {
    for (size_t j = 0; j < header_count; j++) {
        const char *name;
        const void *value;
        size_t size;
        if (rk.header_get_all(headers, j, &name, &value, &size) != 0) {
            PyErr_SetString(PyExc_RuntimeError, "librdkafka could not read a header it counted");
            return -1;
        }
        PyObject *key = PyUnicode_FromString(name);
        if (key == NULL) {
            return -1;
        }
        int failed = PyList_Append(c[C_HEADER_KEYS], key);
        Py_DECREF(key);
        PyObject *cell = failed ? NULL : payload_or_none(value, size);
        if (cell == NULL) {
            return -1;
        }
        failed = PyList_Append(c[C_HEADER_VALUES], cell);
        Py_DECREF(cell);
        if (failed) {
            return -1;
        }
    }
    if (open_validity_bytes(c, row) < 0 || put_int64(c[C_OFFSETS], m->offset) < 0) {
        return -1;
    }
    int type = 0;
    int64_t timestamp = rk.message_timestamp(m, &type);
    if (put_int64(c[C_TIMESTAMPS], timestamp) < 0) {
        return -1;
    }
    PyObject *type_key = PyLong_FromLong(type);
    if (type_key == NULL) {
        return -1;
    }
    int failed = put_timestamp_type(c, type_ids, type_key);
    Py_DECREF(type_key);
    if (failed) {
        return -1;
    }
    if (put_binary_raw(c[C_KEY_DATA], c[C_KEY_OFFSETS], c[C_KEY_VALIDITY], row, m->key, (Py_ssize_t)m->key_len) < 0 ||
        put_binary_raw(c[C_VALUE_DATA], c[C_VALUE_OFFSETS], c[C_VALUE_VALIDITY], row, m->payload,
                       (Py_ssize_t)m->len) < 0 ||
        put_int32(c[C_HEADER_OFFSETS], PyList_GET_SIZE(c[C_HEADER_KEYS])) < 0) {
        return -1;
    }
    int32_t epoch = rk.message_leader_epoch(m);
    if (epoch >= 0) {
        PyByteArray_AS_STRING(c[C_EPOCH_VALIDITY])[row / 8] |= (char)(1 << (row % 8));
    }
    return put_int32(c[C_EPOCHS], epoch >= 0 ? epoch : 0);
}

/* fill's loop over a Batch: ``*index`` advances past each message appended; -1 on an error (the rows before it stay
 * appended and counted). */
static int fill_batch(PyObject **c, Batch *batch, Py_ssize_t *index, long long max_records, long long max_bytes,
                      long long overhead, PyObject *type_ids, long long *count, long long *size_now,
                      long long *added) {
    rk_message **messages = batch_messages(batch);
    if (messages == NULL) {
        return -1;
    }
    for (; *index < batch->n; (*index)++) {
        const rk_message *m = messages[*index];
        if (m->err) {
            PyErr_SetString(PyExc_ValueError, "fill: a message with an error is not a record (scan first)");
            return -1;
        }
        long long size = overhead + (m->key ? (long long)m->key_len : 0) + (m->payload ? (long long)m->len : 0);
        void *headers = NULL;
        size_t header_count = 0;
        if (rk.message_headers(m, &headers) == 0 && headers != NULL) {
            header_count = rk.header_cnt(headers);
            for (size_t j = 0; j < header_count; j++) {
                const char *name;
                const void *value;
                size_t value_size;
                if (rk.header_get_all(headers, j, &name, &value, &value_size) != 0) {
                    PyErr_SetString(PyExc_RuntimeError, "librdkafka could not read a header it counted");
                    return -1;
                }
                size += (long long)strlen(name) + (value ? (long long)value_size : 0);
            }
        }
        if (*count && (*count >= max_records || *size_now + size > max_bytes)) {
            break;
        }
        if (put_native_row(c, (Py_ssize_t)*count, m, headers, header_count, type_ids) < 0) {
            return -1;
        }
        *size_now += size;
        *added += size;
        (*count)++;
    }
    return 0;
}

/*
 * fill(columns, messages, first, max_records, max_bytes, overhead, timestamp_type_ids) -> (index, added)
 *
 * SegmentColumns.fill_python: append ``messages[first:]`` to ``columns`` (a SegmentColumns) until the next one
 * would close the segment (a non-empty segment closes before the row that would pass ``max_records`` or
 * ``max_bytes``).
 */
static PyObject *fill(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7 || !(PyList_Check(args[1]) || Py_IS_TYPE(args[1], &BatchType)) || !PyDict_Check(args[6])) {
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
    Py_ssize_t index = first;
    if (Py_IS_TYPE(messages, &BatchType)) {
        int failed = fill_batch(c, (Batch *)messages, &index, max_records, max_bytes, overhead, type_ids, &count,
                                &size_now, &added);
        if (write_long(owner, s_count, count) == 0 && write_long(owner, s_size, size_now) == 0 && !failed) {
            result = Py_BuildValue("(nL)", index, added);
        }
        goto done;
    }
    Py_ssize_t end = PyList_GET_SIZE(messages);
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

/* ---------------------------------------------------------------------------------------------------------------
 * The hand-off's produce loop over an output object's columns.
 *
 * handoff/publish._produce calls confluent-kafka's ``Producer.produce`` once per row: a Python call, a ``bytes`` key
 * and value made from the Arrow columns, and a per-message state confluent-kafka allocates for its delivery
 * callback. An output record needs none of it (outputs have no delivery report: a refused one fails the
 * transaction), so ``produce`` hands librdkafka each row straight from Arrow's buffers: rd_kafka_producev with a
 * copy of the key and value, the row's timestamp and no opaque, which confluent-kafka's delivery callback skips.
 * rd_kafka_producev's var-arg tags are rdkafka.h's rd_kafka_vtype_t (public ABI).
 */
enum { VTYPE_END = 0, VTYPE_RKT = 2, VTYPE_PARTITION = 3, VTYPE_VALUE = 4, VTYPE_KEY = 5, VTYPE_MSGFLAGS = 7,
       VTYPE_TIMESTAMP = 8 };
enum { MSG_F_COPY = 0x2, ERR_INVALID_ARG = -186 };

/* A binary column's buffers (Arrow's validity bitmap or None, int32 offsets, data) and its array offset. */
typedef struct {
    Py_buffer validity, offsets, data;
    int has_validity;
    Py_ssize_t offset;
} BinaryColumn;

static void binary_column_release(BinaryColumn *column) {
    if (column->has_validity) {
        PyBuffer_Release(&column->validity);
    }
    PyBuffer_Release(&column->offsets);
    PyBuffer_Release(&column->data);
}

/* Borrow ``(validity | None, offsets, data, offset)`` for ``rows`` rows; the buffers must hold them. */
static int binary_column(PyObject *spec, Py_ssize_t rows, BinaryColumn *column) {
    PyObject *validity, *offsets, *data;
    if (!PyArg_ParseTuple(spec, "OOOn", &validity, &offsets, &data, &column->offset)) {
        return -1;
    }
    column->has_validity = validity != Py_None;
    if (column->has_validity && PyObject_GetBuffer(validity, &column->validity, PyBUF_SIMPLE) < 0) {
        return -1;
    }
    if (PyObject_GetBuffer(offsets, &column->offsets, PyBUF_SIMPLE) < 0) {
        if (column->has_validity) {
            PyBuffer_Release(&column->validity);
        }
        return -1;
    }
    if (PyObject_GetBuffer(data, &column->data, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&column->offsets);
        if (column->has_validity) {
            PyBuffer_Release(&column->validity);
        }
        return -1;
    }
    Py_ssize_t end = column->offset + rows;
    int fits = column->offset >= 0 && column->offsets.len >= (end + 1) * (Py_ssize_t)sizeof(int32_t) &&
               (!column->has_validity || column->validity.len * 8 >= end);
    if (fits) {
        const int32_t *at = (const int32_t *)column->offsets.buf;
        fits = at[column->offset] >= 0 && at[column->offset] <= at[end] && at[end] <= column->data.len;
    }
    if (!fits) {
        binary_column_release(column);
        PyErr_SetString(PyExc_ValueError, "produce: a binary column's buffers do not hold its rows");
        return -1;
    }
    return 0;
}

/* Row ``row``'s cell: NULL for a null one (librdkafka's null key or value); an empty one keeps a non-NULL pointer. */
static const char *binary_cell(const BinaryColumn *column, Py_ssize_t row, size_t *size) {
    Py_ssize_t at = column->offset + row;
    *size = 0;
    if (column->has_validity && !((((const uint8_t *)column->validity.buf)[at >> 3] >> (at & 7)) & 1)) {
        return NULL;
    }
    const int32_t *offsets = (const int32_t *)column->offsets.buf;
    *size = (size_t)(offsets[at + 1] - offsets[at]);
    return column->data.buf == NULL ? "" : (const char *)column->data.buf + offsets[at];
}

/*
 * produce(producer: int, topic: bytes, partition: int, first: int, rows: int, timestamps: (data, offset),
 *         keys: (validity, offsets, data, offset), values: (...)) -> (next_row, error)
 *
 * rd_kafka_producev for rows ``first`` .. ``rows - 1`` on the producer's ``rd_kafka_t`` and the topic's handle
 * (rd_kafka_topic_new; a name it refuses is _INVALID_ARG, as confluent-kafka says of it), without the GIL (no
 * confluent-kafka callback runs inside rd_kafka_producev). Stops at the first row librdkafka refuses: (that row,
 * its error code), e.g. _QUEUE_FULL for the caller to poll and go on; (rows, 0) when every row went.
 */
static PyObject *produce(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!rk_bound) {
        PyErr_SetString(PyExc_RuntimeError, "produce: librdkafka is not bound (native_consume.bind)");
        return NULL;
    }
    if (nargs != 8 || !PyBytes_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "produce(producer: int, topic: bytes, partition: int, first: int, rows: int, "
                                         "timestamps: tuple, keys: tuple, values: tuple)");
        return NULL;
    }
    void *producer = PyLong_AsVoidPtr(args[0]);
    const char *topic = PyBytes_AS_STRING(args[1]);
    long partition = PyLong_AsLong(args[2]);
    Py_ssize_t first = PyLong_AsSsize_t(args[3]);
    Py_ssize_t rows = PyLong_AsSsize_t(args[4]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (producer == NULL || first < 0 || first > rows || partition < -1 || partition > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "produce: no producer, a first row outside the rows, or a bad partition");
        return NULL;
    }
    PyObject *timestamp_data;
    Py_ssize_t timestamp_offset;
    if (!PyArg_ParseTuple(args[5], "On", &timestamp_data, &timestamp_offset)) {
        return NULL;
    }
    Py_buffer timestamps;
    if (PyObject_GetBuffer(timestamp_data, &timestamps, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    if (timestamp_offset < 0 || timestamps.len < (timestamp_offset + rows) * (Py_ssize_t)sizeof(int64_t)) {
        PyBuffer_Release(&timestamps);
        PyErr_SetString(PyExc_ValueError, "produce: the timestamp buffer does not hold the rows");
        return NULL;
    }
    BinaryColumn keys, values;
    if (binary_column(args[6], rows, &keys) < 0) {
        PyBuffer_Release(&timestamps);
        return NULL;
    }
    if (binary_column(args[7], rows, &values) < 0) {
        binary_column_release(&keys);
        PyBuffer_Release(&timestamps);
        return NULL;
    }
    const int64_t *stamps = (const int64_t *)timestamps.buf + timestamp_offset;
    Py_ssize_t row = first;
    int error = 0;
    void *rkt = rk.topic_new(producer, topic, NULL); /* the topic's handle once, not a lookup by name per row */
    if (rkt == NULL) {
        binary_column_release(&values);
        binary_column_release(&keys);
        PyBuffer_Release(&timestamps);
        return Py_BuildValue("(ni)", first, (int)ERR_INVALID_ARG);
    }
    Py_BEGIN_ALLOW_THREADS
    for (; row < rows; row++) {
        size_t key_size, value_size;
        const char *key = binary_cell(&keys, row, &key_size);
        const char *value = binary_cell(&values, row, &value_size);
        error = rk.producev(producer, VTYPE_RKT, rkt, VTYPE_PARTITION, (int32_t)partition, VTYPE_VALUE,
                            (void *)value, value_size, VTYPE_KEY, (void *)key, key_size, VTYPE_TIMESTAMP,
                            (int64_t)stamps[row], VTYPE_MSGFLAGS, (int)MSG_F_COPY, VTYPE_END);
        if (error != 0) {
            break;
        }
    }
    Py_END_ALLOW_THREADS
    rk.topic_destroy(rkt);
    binary_column_release(&values);
    binary_column_release(&keys);
    PyBuffer_Release(&timestamps);
    return Py_BuildValue("(ni)", row, error);
}

static PyMethodDef methods[] = {
    {"scan", (PyCFunction)(void (*)(void))scan, METH_FASTCALL,
     "RangeReader.batches' per-message check: (deliverable count, why the scan stopped)."},
    {"fill", (PyCFunction)(void (*)(void))fill, METH_FASTCALL,
     "SegmentColumns.fill_python: append messages to the segment's columns until the segment would close."},
    {"bind", (PyCFunction)(void (*)(void))bind, METH_FASTCALL,
     "Give the kernel librdkafka's functions (kafka/native_consume.py) and confluent_kafka.KafkaError."},
    {"consume", (PyCFunction)(void (*)(void))consume, METH_FASTCALL,
     "rd_kafka_consume_batch_queue on a partition's own queue, without the GIL: a Batch read in place."},
    {"produce", (PyCFunction)(void (*)(void))produce, METH_FASTCALL,
     "The hand-off's produce loop over an output batch's Arrow buffers: rd_kafka_producev per row, no report."},
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
    if (PyType_Ready(&BatchType) < 0 || PyType_Ready(&BatchMessageType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) {
        return NULL;
    }
    Py_INCREF(&BatchType);
    if (PyModule_AddObject(module, "Batch", (PyObject *)&BatchType) < 0) {
        Py_DECREF(&BatchType);
        Py_DECREF(module);
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
