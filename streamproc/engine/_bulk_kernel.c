/*
 * The bulk replay loop of streamproc.engine.bulk_replay (``_BulkLoop._steps_python``), compiled.
 *
 * Why: in a batch replay the per-record cost of the loop itself (OpenJDK's PriorityQueue sift step, RecordQueue's
 * updateHead, the record context, the commit bookkeeping) is about 70% of the time when written in Python. This
 * file is the same loop, statement for statement, on the same Python objects: the heap of partition indices, the
 * head timestamps, the heads and partition times stay Python lists owned by ``_BulkLoop``, so its Python
 * callbacks (``_slow_head``, ``_refill``, ``_slow_process``, ``_punctuate``, ``_fail_processing``) see exactly the
 * state the Python loop would give them. Everything unusual (a negative timestamp, another timestamp extractor, a
 * deserialization error, a StampedRecord or CorruptedRecord head, a punctuation that may be due, a processing
 * exception) is handed to those callbacks, so the only logic here is the common step.
 *
 * ``tests/unit/engine/test_bulk_replay.py`` proves with hypothesis that this loop, the Python loop and
 * ``StreamTask.process`` agree on every observable. When this module is not built, bulk_replay uses the Python loop.
 *
 * Two more per-record helpers live here, each the compiled twin of a Python definition that stays the reference
 * (and the fallback when this module is not built), checked equal by the tests: ``murmur2``/``partition_for_key``
 * (partitioner.py, the sink's default partitioner) and ``build_slotted`` (slotted_init.build_slotted: the raw
 * records of a segment batch built from its columns) and ``SlottedInit`` (slotted_init.fast_frozen_init: the
 * ``__init__`` of the frozen slotted values built per record, ``Record``, ``ValueAndTimestamp``, ``Change``, ...).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>

/* "Unknown" timestamp of RecordQueue/PartitionGroup (Kafka Streams' RecordQueue.UNKNOWN). */
#define UNKNOWN (-1LL)

static PyObject *s_popleft, *s_appendleft, *s_timestamp, *s_topic, *s_key, *s_value, *s_headers, *s_offset;
static PyObject *s_current_node, *s_record_context, *s_lazy_record, *s_lazy_timestamp, *s_system_time_ms;
static PyObject *s_stream_time, *s_records_processed, *s_schedules_registered, *s_all_buffered;
static PyObject *s_slow_head, *s_refill, *s_slow_process, *s_punctuate, *s_fail_processing, *s_run, *s_failed;

/* One partition's constants: ``_BulkLoop``'s ``statics`` entry (borrowed: the caller keeps the list alive). */
typedef struct {
    PyObject *fifo;
    int fast_extract;
    PyObject *key_deserializer;
    PyObject *value_deserializer;
    PyObject *source;
    PyObject *forward;
    PyObject *children; /* the source's children when ProcessorContextImpl.forward may be inlined, else None */
} Static;

/* A due time of the punctuation check: a Python int that may lie outside a C long long (NEVER = 2**63, -NEVER). */
typedef struct {
    long long value;
    int overflow; /* > 0: never reached, < 0: always reached */
} Due;

static int due_from(PyObject *obj, Due *due) {
    int overflow = 0;
    long long value = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (value == -1 && !overflow && PyErr_Occurred()) {
        return -1;
    }
    due->value = value;
    due->overflow = overflow;
    return 0;
}

static int reached(long long stream_time, const Due *due) {
    if (due->overflow) {
        return due->overflow < 0;
    }
    return stream_time >= due->value;
}

/* A timestamp as a C long long (Kafka's are Java longs); PyLong_AsLongLong is slow for multi-digit ints. */
static inline int as_long(PyObject *obj, long long *value) {
    int overflow = 0;
    *value = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow) {
        PyErr_Format(PyExc_OverflowError, "timestamp %R does not fit a Java long", obj);
        return -1;
    }
    return (*value == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* ConsumerRecord's slot descriptors, read without the attribute look-up when a raw record is exactly that type. */
enum { F_TIMESTAMP, F_TOPIC, F_KEY, F_VALUE, F_HEADERS, F_OFFSET, F_COUNT };

typedef struct {
    PyTypeObject *type; /* NULL: always PyObject_GetAttr */
    PyObject *descriptors[F_COUNT];
    PyObject *names[F_COUNT];
} RawFields;

static inline PyObject *raw_get(const RawFields *fields, PyObject *raw, int field) {
    if (Py_TYPE(raw) == fields->type) {
        PyObject *descriptor = fields->descriptors[field];
        return Py_TYPE(descriptor)->tp_descr_get(descriptor, raw, (PyObject *)fields->type);
    }
    return PyObject_GetAttr(raw, fields->names[field]);
}

/* list[position] = item (a new reference to item is taken). */
static inline void list_put(PyObject *list, Py_ssize_t position, PyObject *item) {
    Py_INCREF(item);
    PyObject *old = PyList_GET_ITEM(list, position);
    PyList_SET_ITEM(list, position, item);
    Py_XDECREF(old);
}

static PyObject *call_method_index(PyObject *self, PyObject *name, PyObject *index_obj) {
    PyObject *args[2] = {self, index_obj};
    return PyObject_VectorcallMethod(name, args, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}

/* Call loop.<name>(...) as if inside ``except`` of ``exc``: Python chains what it raises to ``exc`` implicitly. */
static PyObject *call_while_handling(PyObject *exc, PyObject *name, PyObject *const *args, size_t nargsf) {
    PyObject *old_type, *old_value, *old_traceback;
    PyErr_GetExcInfo(&old_type, &old_value, &old_traceback);
    PyObject *traceback = PyException_GetTraceback(exc); /* new reference or NULL */
    Py_INCREF(Py_TYPE(exc));
    Py_INCREF(exc);
    PyErr_SetExcInfo((PyObject *)Py_TYPE(exc), exc, traceback);
    PyObject *result = PyObject_VectorcallMethod(name, args, nargsf, NULL);
    PyErr_SetExcInfo(old_type, old_value, old_traceback);
    return result;
}

/* Take the pending exception, normalized, with its traceback attached (a new reference). */
static PyObject *fetch_exception(void) {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    if (traceback != NULL && value != NULL) {
        PyException_SetTraceback(value, traceback);
    }
    Py_XDECREF(type);
    Py_XDECREF(traceback);
    return value;
}

/*
 * Record(key, value, timestamp, headers) for a slotted frozen dataclass whose __new__ is object.__new__ and whose
 * __init__ stores the four fields through their slot descriptors (slotted_init.fast_frozen_init): the same object,
 * built without running the Python __init__. ``record_slots`` None means: call the class.
 */
static PyObject *new_record(PyObject *record_type, PyObject *record_slots, PyObject *const *fields) {
    if (record_slots == Py_None) {
        return PyObject_Vectorcall(record_type, fields, 4, NULL);
    }
    PyTypeObject *type = (PyTypeObject *)record_type;
    PyObject *record = type->tp_alloc(type, 0);
    if (record == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < 4; i++) {
        PyObject *descriptor = PyTuple_GET_ITEM(record_slots, i);
        descrsetfunc set = Py_TYPE(descriptor)->tp_descr_set;
        if (set == NULL || set(descriptor, record, fields[i]) < 0) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_TypeError, "record slot descriptor cannot be set");
            }
            Py_DECREF(record);
            return NULL;
        }
    }
    return record;
}

/*
 * ProcessorContextImpl.forward(record) from the source node, for a record the source built from the installed raw
 * record (same timestamp object, same headers object), so no new record context is installed: each child becomes
 * the current node and processes the record; finally the record context goes back to lazy (None, what the step
 * installed) and the current node to the source. Returns None or NULL with the child's exception set.
 */
static PyObject *forward_to_children(PyObject *context, PyObject *source, PyObject *children, PyObject *record) {
    PyObject *outcome = Py_None;
    Py_INCREF(outcome);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(children); i++) {
        PyObject *child = PyList_GET_ITEM(children, i);
        Py_INCREF(child);
        PyObject *processed = NULL;
        if (PyObject_SetAttr(context, s_current_node, child) == 0) {
            /* try: child.run(record) except Exception as e: child.failed(record, e) -- what
             * ProcessorContextImpl.forward does (ProcessorNode.process without its frame). */
            PyObject *run = PyObject_GetAttr(child, s_run);
            if (run != NULL) {
                processed = PyObject_CallOneArg(run, record);
                Py_DECREF(run);
            }
            if (processed == NULL && PyErr_ExceptionMatches(PyExc_Exception)) {
                PyObject *exc = fetch_exception();
                if (exc != NULL) {
                    PyObject *failed_args[3] = {child, record, exc};
                    processed = call_while_handling(exc, s_failed, failed_args, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET);
                    if (processed == NULL && !PyErr_Occurred()) {
                        PyErr_SetString(PyExc_SystemError, "ProcessorNode.failed returned NULL without an error");
                    }
                    Py_DECREF(exc);
                }
            }
        }
        Py_DECREF(child);
        if (processed == NULL) {
            Py_CLEAR(outcome);
            break;
        }
        Py_DECREF(processed);
    }
    /* finally: self._record_context = installed; self.current_node = previous_node. On success the step sets the
     * current node to None next, with nothing run in between, so the source is only put back for a failure
     * (StreamTask._processing_failure names the current node). */
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    if (PyObject_SetAttr(context, s_record_context, Py_None) < 0 ||
        (type != NULL && PyObject_SetAttr(context, s_current_node, source) < 0)) {
        if (type == NULL) {
            Py_CLEAR(outcome);
            return NULL;
        }
        PyErr_Clear();
    }
    PyErr_Restore(type, value, traceback);
    return outcome;
}

/* context.current_node = node while an exception is pending: the pending one wins, as in a ``finally``. */
static void set_current_node_keeping_error(PyObject *context, PyObject *node) {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    if (PyObject_SetAttr(context, s_current_node, node) < 0) {
        PyErr_Clear();
    }
    PyErr_Restore(type, value, traceback);
}

/* Record the loop's progress for ``_BulkLoop`` whatever happens (an exception may be pending). */
static void report(PyObject *out, Py_ssize_t steps, Py_ssize_t index) {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyObject *steps_obj = PyLong_FromSsize_t(steps);
    PyObject *index_obj = PyLong_FromSsize_t(index);
    if (steps_obj != NULL && index_obj != NULL) {
        list_put(out, 0, steps_obj);
        list_put(out, 1, index_obj);
    }
    Py_XDECREF(steps_obj);
    Py_XDECREF(index_obj);
    PyErr_Clear();
    PyErr_Restore(type, value, traceback);
}

/* heap[:] = the C heap's partition indices (the loop keeps the heap in C; only _export reads the list). */
/* A key shard's skip (engine/key_shards.py, ShardGate.kernel_skip): 1 when the gate already knows that another
   shard owns ``key`` (an exact bytes or str key in ``owners`` with another shard's index), so the record only counts
   here, as the gate's own early return would have it; 0 to hand the record on (the gate decides); -1 on error. */
static int shard_skips(PyObject *owners, long index, PyObject *key) {
    if (owners == NULL || !(PyBytes_CheckExact(key) || PyUnicode_CheckExact(key))) {
        return 0;
    }
    PyObject *owner = PyDict_GetItemWithError(owners, key);
    if (owner == NULL) {
        return PyErr_Occurred() ? -1 : 0;
    }
    long shard = PyLong_AsLong(owner);
    if (shard == -1 && PyErr_Occurred()) {
        return -1;
    }
    return shard >= 0 && shard != index;
}

static int export_heap(PyObject *heap, const Py_ssize_t *heap_c, Py_ssize_t size, PyObject **index_objects) {
    PyObject *exported = PyList_New(size);
    if (exported == NULL) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < size; i++) {
        Py_INCREF(index_objects[heap_c[i]]);
        PyList_SET_ITEM(exported, i, index_objects[heap_c[i]]);
    }
    int failed = PyList_SetSlice(heap, 0, PyList_GET_SIZE(heap), exported);
    Py_DECREF(exported);
    return failed;
}

/*
 * steps(loop, heap, keys, heads, partition_times, consumed, statics, task, group, context, record_type,
 *       now, due, schedules_seen, unknown, out, record_slots, raw_fields) -> int
 *
 * Runs ``_BulkLoop._steps_python``'s loop from the given state and returns the number of steps. ``out`` (a list
 * of two) receives the step count and the last polled partition index (-1: none) on return and on error; ``heap``
 * holds the heap again on return and on error. ``record_slots``: see new_record. ``raw_fields``: None or
 * ``(ConsumerRecord, (descriptors of timestamp, topic, key, value, headers, offset))``.
 */
static PyObject *steps(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 19) {
        PyErr_SetString(PyExc_TypeError, "steps() takes 19 arguments");
        return NULL;
    }
    PyObject *skip_owners = NULL;
    long skip_index = -1;
    if (args[18] != Py_None) {
        if (!PyTuple_CheckExact(args[18]) || PyTuple_GET_SIZE(args[18]) != 2 ||
            !PyDict_CheckExact(PyTuple_GET_ITEM(args[18], 0))) {
            PyErr_SetString(PyExc_TypeError, "steps(): shard_skip must be None or (dict, shard index)");
            return NULL;
        }
        skip_owners = PyTuple_GET_ITEM(args[18], 0);
        skip_index = PyLong_AsLong(PyTuple_GET_ITEM(args[18], 1));
        if (skip_index == -1 && PyErr_Occurred()) {
            return NULL;
        }
    }
    PyObject *loop = args[0], *heap = args[1], *keys = args[2], *heads = args[3], *partition_times = args[4];
    PyObject *consumed = args[5], *statics_list = args[6], *task = args[7], *group = args[8], *context = args[9];
    PyObject *record_type = args[10], *now = args[11], *unknown = args[14], *out = args[15];
    PyObject *record_slots = args[16], *raw_fields_arg = args[17];
    if (record_slots != Py_None && (!PyTuple_CheckExact(record_slots) || PyTuple_GET_SIZE(record_slots) != 4 ||
                                    !PyType_Check(record_type))) {
        PyErr_SetString(PyExc_TypeError, "steps(): record_slots must be None or 4 slot descriptors of a type");
        return NULL;
    }
    if (!PyList_CheckExact(heap) || !PyList_CheckExact(keys) || !PyList_CheckExact(heads) ||
        !PyList_CheckExact(partition_times) || !PyDict_CheckExact(consumed) || !PyList_CheckExact(statics_list) ||
        !PyList_CheckExact(out) || PyList_GET_SIZE(out) != 2) {
        PyErr_SetString(PyExc_TypeError, "steps(): unexpected argument types");
        return NULL;
    }
    RawFields raw_fields = {NULL, {NULL}, {s_timestamp, s_topic, s_key, s_value, s_headers, s_offset}};
    if (raw_fields_arg != Py_None) {
        PyObject *descriptors = PyTuple_Check(raw_fields_arg) && PyTuple_GET_SIZE(raw_fields_arg) == 2
                                    ? PyTuple_GET_ITEM(raw_fields_arg, 1)
                                    : NULL;
        if (descriptors == NULL || !PyType_Check(PyTuple_GET_ITEM(raw_fields_arg, 0)) ||
            !PyTuple_Check(descriptors) || PyTuple_GET_SIZE(descriptors) != F_COUNT) {
            PyErr_SetString(PyExc_TypeError, "steps(): raw_fields must be None or (type, 6 descriptors)");
            return NULL;
        }
        for (int f = 0; f < F_COUNT; f++) {
            raw_fields.descriptors[f] = PyTuple_GET_ITEM(descriptors, f);
            if (Py_TYPE(raw_fields.descriptors[f])->tp_descr_get == NULL) {
                PyErr_SetString(PyExc_TypeError, "steps(): a raw_fields descriptor cannot be read");
                return NULL;
            }
        }
        raw_fields.type = (PyTypeObject *)PyTuple_GET_ITEM(raw_fields_arg, 0);
    }
    Py_ssize_t partitions = PyList_GET_SIZE(statics_list);
    if (PyList_GET_SIZE(keys) != partitions || PyList_GET_SIZE(heads) != partitions ||
        PyList_GET_SIZE(partition_times) != partitions || PyList_GET_SIZE(heap) > partitions) {
        PyErr_SetString(PyExc_ValueError, "steps(): per-partition lists differ in length");
        return NULL;
    }
    Py_ssize_t slots = partitions > 0 ? partitions : 1;
    Static *statics = PyMem_New(Static, slots);
    PyObject **index_objects = PyMem_New(PyObject *, slots);
    Py_ssize_t *heap_c = PyMem_New(Py_ssize_t, slots);
    long long *keys_c = PyMem_New(long long, slots);
    long long *partition_times_c = PyMem_New(long long, slots);
    if (statics == NULL || index_objects == NULL || heap_c == NULL || keys_c == NULL || partition_times_c == NULL) {
        PyMem_Free(statics);
        PyMem_Free(index_objects);
        PyMem_Free(heap_c);
        PyMem_Free(keys_c);
        PyMem_Free(partition_times_c);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < partitions; i++) {
        index_objects[i] = NULL;
    }
    Py_ssize_t steps_done = 0;
    Py_ssize_t index = -1;
    Py_ssize_t heap_size = 0;
    int heap_imported = 0;
    PyObject *result = NULL;
    PyObject *schedules_seen = NULL;
    for (Py_ssize_t i = 0; i < partitions; i++) {
        PyObject *entry = PyList_GET_ITEM(statics_list, i);
        if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 7) {
            PyErr_SetString(PyExc_TypeError, "steps(): a statics entry is not a 7-tuple");
            goto done;
        }
        statics[i].fifo = PyTuple_GET_ITEM(entry, 0);
        statics[i].fast_extract = PyObject_IsTrue(PyTuple_GET_ITEM(entry, 1));
        statics[i].key_deserializer = PyTuple_GET_ITEM(entry, 2);
        statics[i].value_deserializer = PyTuple_GET_ITEM(entry, 3);
        statics[i].source = PyTuple_GET_ITEM(entry, 4);
        statics[i].forward = PyTuple_GET_ITEM(entry, 5);
        statics[i].children = PyTuple_GET_ITEM(entry, 6);
        if (statics[i].children != Py_None && !PyList_CheckExact(statics[i].children)) {
            PyErr_SetString(PyExc_TypeError, "steps(): children must be a list or None");
            goto done;
        }
        if (statics[i].fast_extract < 0 || (index_objects[i] = PyLong_FromSsize_t(i)) == NULL ||
            as_long(PyList_GET_ITEM(keys, i), &keys_c[i]) < 0 ||
            as_long(PyList_GET_ITEM(partition_times, i), &partition_times_c[i]) < 0) {
            goto done;
        }
    }
    for (heap_size = 0; heap_size < PyList_GET_SIZE(heap); heap_size++) {
        Py_ssize_t entry = PyLong_AsSsize_t(PyList_GET_ITEM(heap, heap_size));
        if (entry < 0 || entry >= partitions) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_ValueError, "steps(): a heap entry is not a partition index");
            }
            goto done;
        }
        heap_c[heap_size] = entry;
    }
    heap_imported = 1;
    long long stream_time, records_processed;
    PyObject *attribute = PyObject_GetAttr(group, s_stream_time);
    if (attribute == NULL) {
        goto done;
    }
    int failed = as_long(attribute, &stream_time);
    Py_DECREF(attribute);
    if (failed) {
        goto done;
    }
    attribute = PyObject_GetAttr(task, s_records_processed);
    if (attribute == NULL) {
        goto done;
    }
    failed = as_long(attribute, &records_processed);
    Py_DECREF(attribute);
    if (failed) {
        goto done;
    }
    Due due;
    if (due_from(args[12], &due) < 0) {
        goto done;
    }
    schedules_seen = args[13];
    Py_INCREF(schedules_seen);

    while (heap_size > 0) {
        /* PartitionGroup.nextRecord: poll the root (siftDownUsingComparator of the last element). */
        index = heap_c[0];
        Py_ssize_t size = --heap_size;
        if (size) {
            Py_ssize_t last = heap_c[size];
            long long last_key = keys_c[last];
            Py_ssize_t half = size >> 1;
            Py_ssize_t k = 0;
            while (k < half) {
                Py_ssize_t child = 2 * k + 1;
                Py_ssize_t child_index = heap_c[child];
                long long child_key = keys_c[child_index];
                Py_ssize_t right = child + 1;
                if (right < size) {
                    Py_ssize_t right_index = heap_c[right];
                    long long right_key = keys_c[right_index];
                    if (child_key > right_key) {
                        child = right;
                        child_index = right_index;
                        child_key = right_key;
                    }
                }
                if (last_key <= child_key) {
                    break;
                }
                heap_c[k] = child_index;
                k = child;
            }
            heap_c[k] = last;
        }
        PyObject *index_obj = index_objects[index];
        PyObject *head = PyList_GET_ITEM(heads, index);
        Py_INCREF(head);
        PyObject *timestamp_obj = PyList_GET_ITEM(keys, index);
        Py_INCREF(timestamp_obj);
        long long timestamp = keys_c[index];
        Static *st = &statics[index];
        /* RecordQueue.poll: partition time, then updateHead. */
        if (timestamp > partition_times_c[index]) {
            partition_times_c[index] = timestamp;
            list_put(partition_times, index, timestamp_obj);
        }
        Py_ssize_t buffered = PyObject_Length(st->fifo);
        if (buffered < 0) {
            goto fail_step;
        }
        if (buffered) {
            PyObject *popleft_args[1] = {st->fifo};
            PyObject *raw = PyObject_VectorcallMethod(s_popleft, popleft_args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                                      NULL);
            if (raw == NULL) {
                goto fail_step;
            }
            PyObject *new_key_obj = raw_get(&raw_fields, raw, F_TIMESTAMP);
            long long new_key;
            if (new_key_obj == NULL || as_long(new_key_obj, &new_key) < 0) {
                Py_DECREF(raw);
                Py_XDECREF(new_key_obj);
                goto fail_step;
            }
            if (new_key >= 0 && st->fast_extract) {
                if (buffered == 1) {
                    PyObject *refilled = call_method_index(loop, s_refill, index_obj);
                    if (refilled == NULL) {
                        Py_DECREF(raw);
                        Py_DECREF(new_key_obj);
                        goto fail_step;
                    }
                    Py_DECREF(refilled);
                }
                PyObject *topic = raw_get(&raw_fields, raw, F_TOPIC);
                PyObject *key = NULL, *value = NULL;
                if (topic != NULL) {
                    PyObject *raw_key = raw_get(&raw_fields, raw, F_KEY);
                    if (raw_key != NULL) {
                        PyObject *call_args[2] = {topic, raw_key};
                        key = PyObject_Vectorcall(st->key_deserializer, call_args, 2, NULL);
                        Py_DECREF(raw_key);
                    }
                    if (key != NULL) {
                        PyObject *raw_value = raw_get(&raw_fields, raw, F_VALUE);
                        if (raw_value != NULL) {
                            PyObject *call_args[2] = {topic, raw_value};
                            value = PyObject_Vectorcall(st->value_deserializer, call_args, 2, NULL);
                            Py_DECREF(raw_value);
                        }
                    }
                    Py_DECREF(topic);
                }
                if (value == NULL) {
                    /* A deserializer raised: RecordQueue's handler decides (BaseException propagates). */
                    Py_XDECREF(key);
                    Py_DECREF(new_key_obj);
                    if (!PyErr_ExceptionMatches(PyExc_Exception)) {
                        Py_DECREF(raw);
                        goto fail_step;
                    }
                    PyObject *failure = fetch_exception();
                    if (failure == NULL) {
                        Py_DECREF(raw);
                        goto fail_step;
                    }
                    PyObject *slow_args[4] = {loop, index_obj, raw, failure};
                    new_key_obj = call_while_handling(failure, s_slow_head, slow_args,
                                                      4 | PY_VECTORCALL_ARGUMENTS_OFFSET);
                    Py_DECREF(failure);
                    if (new_key_obj == NULL) {
                        Py_DECREF(raw);
                        goto fail_step;
                    }
                } else {
                    PyObject *fresh_head = PyTuple_Pack(3, raw, key, value);
                    Py_DECREF(key);
                    Py_DECREF(value);
                    if (fresh_head == NULL) {
                        Py_DECREF(raw);
                        Py_DECREF(new_key_obj);
                        goto fail_step;
                    }
                    list_put(heads, index, fresh_head);
                    Py_DECREF(fresh_head);
                }
            } else {
                PyObject *push_args[2] = {st->fifo, raw};
                PyObject *pushed = PyObject_VectorcallMethod(s_appendleft, push_args,
                                                             2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
                Py_DECREF(new_key_obj);
                if (pushed == NULL) {
                    Py_DECREF(raw);
                    goto fail_step;
                }
                Py_DECREF(pushed);
                PyObject *slow_args[4] = {loop, index_obj, Py_None, Py_None};
                new_key_obj = PyObject_VectorcallMethod(s_slow_head, slow_args, 4 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                                        NULL);
                if (new_key_obj == NULL) {
                    Py_DECREF(raw);
                    goto fail_step;
                }
            }
            Py_DECREF(raw);
            failed = as_long(new_key_obj, &new_key);
            list_put(keys, index, new_key_obj);
            Py_DECREF(new_key_obj);
            if (failed) {
                goto fail_step;
            }
            keys_c[index] = new_key;
            /* offer: append and siftUpUsingComparator (the queue cannot have drained: a head is left). */
            Py_ssize_t k = heap_size++;
            while (k > 0) {
                Py_ssize_t parent = (k - 1) >> 1;
                Py_ssize_t parent_index = heap_c[parent];
                if (new_key >= keys_c[parent_index]) {
                    break;
                }
                heap_c[k] = parent_index;
                k = parent;
            }
            heap_c[k] = index;
        } else {
            list_put(heads, index, Py_None);
            list_put(keys, index, unknown);
            keys_c[index] = UNKNOWN;
            if (PyObject_SetAttr(group, s_all_buffered, Py_False) < 0) {
                goto fail_step;
            }
        }
        if (timestamp > stream_time) {
            stream_time = timestamp;
            if (PyObject_SetAttr(group, s_stream_time, timestamp_obj) < 0) {
                goto fail_step;
            }
        }

        /* StreamTask.process: the record (or the placeholder's skip), then the offset is consumed. */
        if (PyTuple_CheckExact(head)) {
            PyObject *raw = PyTuple_GET_ITEM(head, 0);
            int inline_forward = st->children != Py_None;
            /* ProcessorContextImpl.set_raw_record, inlined (an inlined forward sets the current node itself). */
            if ((!inline_forward && PyObject_SetAttr(context, s_current_node, st->source) < 0) ||
                PyObject_SetAttr(context, s_record_context, Py_None) < 0 ||
                PyObject_SetAttr(context, s_lazy_record, raw) < 0 ||
                PyObject_SetAttr(context, s_lazy_timestamp, timestamp_obj) < 0 ||
                PyObject_SetAttr(context, s_system_time_ms, now) < 0) {
                goto fail_step;
            }
            int skipped = shard_skips(skip_owners, skip_index, PyTuple_GET_ITEM(head, 1));
            if (skipped < 0) {
                goto fail_step;
            }
            PyObject *forwarded = NULL;
            if (skipped) {
                forwarded = Py_NewRef(Py_None);
            } else {
                PyObject *headers = raw_get(&raw_fields, raw, F_HEADERS);
                if (headers == NULL) {
                    goto fail_step;
                }
                PyObject *record_args[4] = {PyTuple_GET_ITEM(head, 1), PyTuple_GET_ITEM(head, 2), timestamp_obj,
                                            headers};
                PyObject *record = new_record(record_type, record_slots, record_args);
                Py_DECREF(headers);
                if (record != NULL) {
                    forwarded = inline_forward ? forward_to_children(context, st->source, st->children, record)
                                               : PyObject_Vectorcall(st->forward, &record, 1, NULL);
                    Py_DECREF(record);
                } else if (inline_forward) {
                    /* as if set_raw_record had installed the source before Record() failed */
                    set_current_node_keeping_error(context, st->source);
                }
            }
            if (forwarded == NULL) {
                if (PyErr_ExceptionMatches(PyExc_Exception)) {
                    /* _fail_processing raises the task's error, as the Python loop's ``except`` does. */
                    PyObject *exc = fetch_exception();
                    if (exc != NULL) {
                        PyObject *fail_args[4] = {loop, exc, index_obj, raw};
                        PyObject *none = call_while_handling(exc, s_fail_processing, fail_args,
                                                             4 | PY_VECTORCALL_ARGUMENTS_OFFSET);
                        Py_DECREF(exc);
                        if (none != NULL) {
                            Py_DECREF(none);
                            PyErr_SetString(PyExc_SystemError, "_fail_processing returned without raising");
                        }
                    }
                }
                /* finally: context.current_node = None */
                set_current_node_keeping_error(context, Py_None);
                goto fail_step;
            }
            Py_DECREF(forwarded);
            if (PyObject_SetAttr(context, s_current_node, Py_None) < 0) {
                goto fail_step;
            }
            records_processed += 1;
            PyObject *count = PyLong_FromLongLong(records_processed);
            if (count == NULL) {
                goto fail_step;
            }
            failed = PyObject_SetAttr(task, s_records_processed, count);
            Py_DECREF(count);
            PyObject *offset = failed < 0 ? NULL : raw_get(&raw_fields, raw, F_OFFSET);
            if (offset == NULL) {
                goto fail_step;
            }
            failed = PyDict_SetItem(consumed, index_obj, offset);
            Py_DECREF(offset);
            if (failed < 0) {
                goto fail_step;
            }
        } else {
            PyObject *slow_args[3] = {loop, index_obj, head};
            PyObject *none = PyObject_VectorcallMethod(s_slow_process, slow_args, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                                       NULL);
            if (none == NULL) {
                goto fail_step;
            }
            Py_DECREF(none);
            attribute = PyObject_GetAttr(task, s_records_processed);
            if (attribute == NULL) {
                goto fail_step;
            }
            failed = as_long(attribute, &records_processed);
            Py_DECREF(attribute);
            if (failed) {
                goto fail_step;
            }
        }
        Py_DECREF(head);
        Py_DECREF(timestamp_obj);
        steps_done += 1;

        /* The punctuation checks after each step: only when something may be due (else they are no-ops). */
        int check = reached(stream_time, &due);
        if (!check) {
            PyObject *registered = PyObject_GetAttr(task, s_schedules_registered);
            if (registered == NULL) {
                goto done;
            }
            check = PyObject_RichCompareBool(registered, schedules_seen, Py_NE);
            Py_DECREF(registered);
            if (check < 0) {
                goto done;
            }
        }
        if (check) {
            PyObject *punctuate_args[1] = {loop};
            PyObject *answer = PyObject_VectorcallMethod(s_punctuate, punctuate_args,
                                                         1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
            if (answer == NULL) {
                goto done;
            }
            if (!PyTuple_CheckExact(answer) || PyTuple_GET_SIZE(answer) != 2 ||
                due_from(PyTuple_GET_ITEM(answer, 0), &due) < 0) {
                Py_DECREF(answer);
                if (!PyErr_Occurred()) {
                    PyErr_SetString(PyExc_TypeError, "_punctuate must return (due, schedules_seen)");
                }
                goto done;
            }
            Py_DECREF(schedules_seen);
            schedules_seen = PyTuple_GET_ITEM(answer, 1);
            Py_INCREF(schedules_seen);
            Py_DECREF(answer);
        }
        continue;
    fail_step:
        Py_DECREF(head);
        Py_DECREF(timestamp_obj);
        goto done;
    }
    result = PyLong_FromSsize_t(steps_done);
done:
    Py_XDECREF(schedules_seen);
    if (heap_imported) {
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        if (export_heap(heap, heap_c, heap_size, index_objects) < 0) {
            Py_CLEAR(result);
            if (type != NULL) {
                PyErr_Clear();
            }
        }
        if (type != NULL) {
            PyErr_Restore(type, value, traceback);
        }
    }
    report(out, steps_done, index);
    for (Py_ssize_t i = 0; i < partitions; i++) {
        Py_XDECREF(index_objects[i]);
    }
    PyMem_Free(index_objects);
    PyMem_Free(statics);
    PyMem_Free(heap_c);
    PyMem_Free(keys_c);
    PyMem_Free(partition_times_c);
    return result;
}

/*
 * Kafka's Utils.murmur2 on the bytes of ``data`` (a signed Java int). The rule's reference is
 * streamproc.engine.partitioner._murmur2_reference (pure Python); tests/unit/engine/test_partitioner.py checks the
 * two equal on many keys. Unsigned 32-bit arithmetic, so Java's wrap-around and ``>>>`` come for free.
 */
static int32_t murmur2_bytes(const unsigned char *data, Py_ssize_t length) {
    const uint32_t seed = 0x9747b28cU, m = 0x5bd1e995U;
    const int r = 24;
    uint32_t h = seed ^ (uint32_t)length;
    Py_ssize_t length4 = length / 4;
    for (Py_ssize_t i = 0; i < length4; i++) {
        Py_ssize_t i4 = i * 4;
        uint32_t k = (uint32_t)data[i4] | ((uint32_t)data[i4 + 1] << 8) | ((uint32_t)data[i4 + 2] << 16) |
                     ((uint32_t)data[i4 + 3] << 24);
        k *= m;
        k ^= k >> r;
        k *= m;
        h *= m;
        h ^= k;
    }
    Py_ssize_t base = length & ~(Py_ssize_t)3;
    switch (length % 4) {
        case 3:
            h ^= (uint32_t)data[base + 2] << 16;
            /* fall through */
        case 2:
            h ^= (uint32_t)data[base + 1] << 8;
            /* fall through */
        case 1:
            h ^= (uint32_t)data[base];
            h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return (int32_t)h;
}

static int bytes_view(PyObject *data, Py_buffer *view) {
    return PyObject_GetBuffer(data, view, PyBUF_SIMPLE);
}

/* murmur2(data) -> int: ``Utils.murmur2`` as a signed Java int. */
static PyObject *murmur2(PyObject *module, PyObject *data) {
    Py_buffer view;
    if (bytes_view(data, &view) < 0) {
        return NULL;
    }
    int32_t hash = murmur2_bytes((const unsigned char *)view.buf, view.len);
    PyBuffer_Release(&view);
    return PyLong_FromLong((long)hash);
}

/* partition_for_key(key, num_partitions) -> int: ``toPositive(murmur2(key)) % numPartitions``. */
static PyObject *partition_for_key(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "partition_for_key(key, num_partitions) takes two arguments");
        return NULL;
    }
    long long count = PyLong_AsLongLong(args[1]);
    if (count == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (count <= 0) {
        PyErr_Format(PyExc_ValueError, "number of partitions must be positive, got %lld", count);
        return NULL;
    }
    Py_buffer view;
    if (bytes_view(args[0], &view) < 0) {
        return NULL;
    }
    int32_t hash = murmur2_bytes((const unsigned char *)view.buf, view.len);
    PyBuffer_Release(&view);
    return PyLong_FromLongLong((long long)((uint32_t)hash & 0x7fffffffU) % count);
}

/*
 * build_slotted(type, descriptors, columns) -> list: one ``type`` instance per row of ``columns`` (equal-length
 * lists, one per descriptor), each built as ``type.__init__`` would build it when that __init__ only stores its
 * arguments through the slot descriptors in order (slotted_init.fast_frozen_init; the caller checks that): the
 * same objects as ``list(map(type, *columns))`` without running the Python __init__ per row.
 */
static PyObject *build_slotted(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyType_Check(args[0]) || !PyTuple_Check(args[1]) || !PyTuple_Check(args[2]) ||
        PyTuple_GET_SIZE(args[1]) != PyTuple_GET_SIZE(args[2])) {
        PyErr_SetString(PyExc_TypeError, "build_slotted(type, descriptors, columns): one list per descriptor");
        return NULL;
    }
    PyTypeObject *type = (PyTypeObject *)args[0];
    PyObject *descriptors = args[1], *columns = args[2];
    Py_ssize_t fields = PyTuple_GET_SIZE(descriptors);
    Py_ssize_t rows = -1;
    for (Py_ssize_t f = 0; f < fields; f++) {
        PyObject *column = PyTuple_GET_ITEM(columns, f);
        if (!PyList_Check(column) || (rows >= 0 && PyList_GET_SIZE(column) != rows)) {
            PyErr_SetString(PyExc_ValueError, "build_slotted: the columns must be lists of equal length");
            return NULL;
        }
        rows = PyList_GET_SIZE(column);
        if (Py_TYPE(PyTuple_GET_ITEM(descriptors, f))->tp_descr_set == NULL) {
            PyErr_SetString(PyExc_TypeError, "build_slotted: a descriptor cannot be set");
            return NULL;
        }
    }
    if (rows < 0) {
        rows = 0;
    }
    PyObject *result = PyList_New(rows);
    if (result == NULL) {
        return NULL;
    }
    for (Py_ssize_t row = 0; row < rows; row++) {
        PyObject *item = type->tp_alloc(type, 0);
        if (item == NULL) {
            Py_DECREF(result);
            return NULL;
        }
        for (Py_ssize_t f = 0; f < fields; f++) {
            PyObject *descriptor = PyTuple_GET_ITEM(descriptors, f);
            PyObject *value = PyList_GET_ITEM(PyTuple_GET_ITEM(columns, f), row);
            if (Py_TYPE(descriptor)->tp_descr_set(descriptor, item, value) < 0) {
                Py_DECREF(item);
                Py_DECREF(result);
                return NULL;
            }
        }
        PyList_SET_ITEM(result, row, item);
    }
    return result;
}

/*
 * SlottedInit(descriptors, names, defaults): a compiled ``__init__`` for a frozen slotted dataclass whose generated
 * ``__init__`` (slotted_init.fast_frozen_init) only stores its arguments through the slot descriptors, in field
 * order: the same parameters (positional or by name), the same defaults (for the last ``len(defaults)`` fields), the
 * same stores, the same TypeErrors for a missing, unexpected or repeated argument, without a Python frame per
 * instance. It is a method descriptor (``Record.__init__`` binds like a function); its ``__dict__`` carries the
 * Python ``__init__``'s ``__signature__``, ``__qualname__``, ``__doc__`` and ``__slot_fields__``.
 */
#define SLOTTED_MAX_FIELDS 16

typedef struct {
    PyObject_HEAD
    PyObject *descriptors; /* tuple of slot descriptors, in field order */
    PyObject *names;       /* tuple of the field names (str), in field order */
    PyObject *defaults;    /* tuple: the defaults of the last len(defaults) fields */
    PyObject *dict;
    vectorcallfunc vectorcall;
} SlottedInit;

static PyObject *slotted_init_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                         PyObject *kwnames) {
    SlottedInit *init = (SlottedInit *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t fields = PyTuple_GET_SIZE(init->descriptors);
    Py_ssize_t required = fields - PyTuple_GET_SIZE(init->defaults);
    PyObject *values[SLOTTED_MAX_FIELDS];
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "__init__() needs the instance as its first argument");
        return NULL;
    }
    PyObject *self = args[0];
    if (nargs - 1 > fields) {
        PyErr_Format(PyExc_TypeError, "%s.__init__() takes %zd positional arguments but %zd were given",
                     Py_TYPE(self)->tp_name, fields + 1, nargs);
        return NULL;
    }
    for (Py_ssize_t f = 0; f < fields; f++) {
        values[f] = f < nargs - 1 ? args[f + 1] : NULL;
    }
    if (kwnames != NULL) {
        Py_ssize_t given = PyTuple_GET_SIZE(kwnames);
        for (Py_ssize_t k = 0; k < given; k++) {
            PyObject *name = PyTuple_GET_ITEM(kwnames, k);
            Py_ssize_t found = -1;
            for (Py_ssize_t f = 0; f < fields && found < 0; f++) {
                PyObject *field = PyTuple_GET_ITEM(init->names, f);
                if (field == name) {
                    found = f;
                } else {
                    int equal = PyObject_RichCompareBool(field, name, Py_EQ);
                    if (equal < 0) {
                        return NULL;
                    }
                    if (equal) {
                        found = f;
                    }
                }
            }
            if (found < 0) {
                PyErr_Format(PyExc_TypeError, "%s.__init__() got an unexpected keyword argument '%S'",
                             Py_TYPE(self)->tp_name, name);
                return NULL;
            }
            if (values[found] != NULL) {
                PyErr_Format(PyExc_TypeError, "%s.__init__() got multiple values for argument '%S'",
                             Py_TYPE(self)->tp_name, name);
                return NULL;
            }
            values[found] = args[nargs + k];
        }
    }
    for (Py_ssize_t f = 0; f < fields; f++) {
        if (values[f] == NULL) {
            if (f < required) {
                PyErr_Format(PyExc_TypeError, "%s.__init__() missing a required positional argument: '%S'",
                             Py_TYPE(self)->tp_name, PyTuple_GET_ITEM(init->names, f));
                return NULL;
            }
            values[f] = PyTuple_GET_ITEM(init->defaults, f - required);
        }
    }
    for (Py_ssize_t f = 0; f < fields; f++) {
        PyObject *descriptor = PyTuple_GET_ITEM(init->descriptors, f);
        if (Py_TYPE(descriptor)->tp_descr_set(descriptor, self, values[f]) < 0) {
            return NULL;
        }
    }
    Py_RETURN_NONE;
}

static PyObject *slotted_init_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *descriptors, *names, *defaults;
    if (kwds != NULL && PyDict_GET_SIZE(kwds) > 0) {
        PyErr_SetString(PyExc_TypeError, "SlottedInit(descriptors, names, defaults) takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!O!O!:SlottedInit", &PyTuple_Type, &descriptors, &PyTuple_Type, &names,
                          &PyTuple_Type, &defaults)) {
        return NULL;
    }
    Py_ssize_t fields = PyTuple_GET_SIZE(descriptors);
    if (fields > SLOTTED_MAX_FIELDS || PyTuple_GET_SIZE(names) != fields ||
        PyTuple_GET_SIZE(defaults) > fields) {
        PyErr_SetString(PyExc_ValueError, "SlottedInit: one name per descriptor (at most 16), no more defaults");
        return NULL;
    }
    for (Py_ssize_t f = 0; f < fields; f++) {
        if (Py_TYPE(PyTuple_GET_ITEM(descriptors, f))->tp_descr_set == NULL ||
            !PyUnicode_Check(PyTuple_GET_ITEM(names, f))) {
            PyErr_SetString(PyExc_TypeError, "SlottedInit: settable descriptors and str names");
            return NULL;
        }
    }
    SlottedInit *init = (SlottedInit *)type->tp_alloc(type, 0);
    if (init == NULL) {
        return NULL;
    }
    init->descriptors = Py_NewRef(descriptors);
    init->names = Py_NewRef(names);
    init->defaults = Py_NewRef(defaults);
    init->dict = NULL;
    init->vectorcall = slotted_init_vectorcall;
    return (PyObject *)init;
}

static int slotted_init_traverse(SlottedInit *init, visitproc visit, void *arg) {
    Py_VISIT(init->descriptors);
    Py_VISIT(init->names);
    Py_VISIT(init->defaults);
    Py_VISIT(init->dict);
    return 0;
}

static int slotted_init_clear(SlottedInit *init) {
    Py_CLEAR(init->descriptors);
    Py_CLEAR(init->names);
    Py_CLEAR(init->defaults);
    Py_CLEAR(init->dict);
    return 0;
}

static void slotted_init_dealloc(SlottedInit *init) {
    PyObject_GC_UnTrack(init);
    slotted_init_clear(init);
    Py_TYPE(init)->tp_free((PyObject *)init);
}

static PyObject *slotted_init_get(PyObject *init, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None) {
        return Py_NewRef(init);
    }
    return PyMethod_New(init, obj);
}

static PyTypeObject SlottedInitType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "streamproc.engine._bulk_kernel.SlottedInit",
    .tp_basicsize = sizeof(SlottedInit),
    .tp_dealloc = (destructor)slotted_init_dealloc,
    .tp_vectorcall_offset = offsetof(SlottedInit, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_getattro = PyObject_GenericGetAttr,
    .tp_setattro = PyObject_GenericSetAttr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "A compiled __init__ storing its arguments through slot descriptors (slotted_init.fast_frozen_init).",
    .tp_traverse = (traverseproc)slotted_init_traverse,
    .tp_clear = (inquiry)slotted_init_clear,
    .tp_descr_get = slotted_init_get,
    .tp_dictoffset = offsetof(SlottedInit, dict),
    .tp_new = slotted_init_new,
};

static PyMethodDef methods[] = {
    {"steps", (PyCFunction)(void (*)(void))steps, METH_FASTCALL,
     "Run the bulk replay loop (``_BulkLoop._steps_python``) from the given state; returns the step count."},
    {"murmur2", (PyCFunction)murmur2, METH_O, "``Utils.murmur2`` of a bytes-like object, as a signed Java int."},
    {"partition_for_key", (PyCFunction)(void (*)(void))partition_for_key, METH_FASTCALL,
     "``BuiltInPartitioner.partitionForKey``: ``toPositive(murmur2(key)) % num_partitions``."},
    {"build_slotted", (PyCFunction)(void (*)(void))build_slotted, METH_FASTCALL,
     "One instance of a fast_frozen_init slotted class per row of the given column lists."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_bulk_kernel",
    "The compiled step loop of streamproc.engine.bulk_replay (see _bulk_kernel.c).", -1, methods,
};

#define INTERN(var, text)                                  \
    do {                                                   \
        if ((var = PyUnicode_InternFromString(text)) == NULL) { \
            return NULL;                                   \
        }                                                  \
    } while (0)

PyMODINIT_FUNC PyInit__bulk_kernel(void) {
    INTERN(s_popleft, "popleft");
    INTERN(s_appendleft, "appendleft");
    INTERN(s_timestamp, "timestamp");
    INTERN(s_topic, "topic");
    INTERN(s_key, "key");
    INTERN(s_value, "value");
    INTERN(s_headers, "headers");
    INTERN(s_offset, "offset");
    INTERN(s_current_node, "current_node");
    INTERN(s_record_context, "_record_context");
    INTERN(s_lazy_record, "_lazy_record");
    INTERN(s_lazy_timestamp, "_lazy_timestamp");
    INTERN(s_system_time_ms, "system_time_ms");
    INTERN(s_stream_time, "stream_time");
    INTERN(s_records_processed, "records_processed");
    INTERN(s_schedules_registered, "schedules_registered");
    INTERN(s_all_buffered, "_all_buffered");
    INTERN(s_slow_head, "_slow_head");
    INTERN(s_refill, "_refill");
    INTERN(s_slow_process, "_slow_process");
    INTERN(s_punctuate, "_punctuate");
    INTERN(s_fail_processing, "_fail_processing");
    INTERN(s_run, "run");
    INTERN(s_failed, "failed");
    if (PyType_Ready(&SlottedInitType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(module, "SlottedInit", (PyObject *)&SlottedInitType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
