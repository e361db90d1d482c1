/* rdk's own C structs and constants, written once.
 *
 * Read three ways: build_ffi.py puts this file into ffibuilder.cdef() (so Python sees the
 * fields, and CFFI checks every offset against the compiler's at import), and
 * src/rdk/_helpers.c and src/rdk/_messages.c #include it. Plain C the cdef parser reads:
 * no #if, no include guard (each C file includes it once, after declaring librdkafka's
 * handle types: rdkafka.h in _helpers.c, incomplete typedefs in _messages.c). */

/* ---- batch produce ------------------------------------------------------ */
/* Partition choice made in C for the balancers librdkafka has no partitioner for. */
#define RDK_BALANCE_LIBRDKAFKA 0 /* librdkafka's partitioner (topic conf "partitioner") */
#define RDK_BALANCE_ROUND_ROBIN 1
#define RDK_BALANCE_LEAST_BYTES 2
/* Keyless messages of librdkafka's *_random partitioners, decided here so the batch takes
 * librdkafka's per-partition path: one random partition, kept for sticky_ms and at most
 * sticky_messages messages (librdkafka's sticky partitioning, without a clock read and
 * a partition lookup per message). */
#define RDK_BALANCE_STICKY 3
typedef struct rdk_balancer rdk_balancer; /* opaque; defined in _helpers.c */

/* One send() call. Message i (0 <= i < n) is message indices[i] of the call (or i when
 * indices is NULL): its value is values[value_offsets[j]:value_offsets[j+1]] (NULL when
 * value_null && value_null[j]), likewise its key; timestamps (ms, 0 = now) and headers
 * are optional. Header h of message j is h in header_index[j]..header_index[j+1].
 * Each message's opaque is opaque_base | j. errs[i] receives 0 or the enqueue error.
 * After the first _QUEUE_FULL the rest are not tried (errs = _QUEUE_FULL), so what is
 * enqueued is in order. */
typedef struct rdk_produce_args {
    rd_kafka_t *rk;
    rd_kafka_topic_t *rkt;
    int32_t partition;           /* fixed partition, or RD_KAFKA_PARTITION_UA */
    rdk_balancer *balancer;      /* NULL: librdkafka partitions UA messages */
    int32_t partition_cnt;       /* for the balancer */
    int n;
    const int32_t *indices;
    const char *values;
    const int64_t *value_offsets;
    const unsigned char *value_null;
    const char *keys;
    const int64_t *key_offsets;
    const unsigned char *key_null;
    const int64_t *timestamps;
    const int32_t *header_index;
    const char *header_names;
    const int64_t *header_name_offsets;
    const char *header_values;
    const int64_t *header_value_offsets;
    const unsigned char *header_value_null;
    uint64_t opaque_base;
    int32_t *errs;
    int no_copy;                 /* 1: librdkafka points into values (no copy); the caller
                                    keeps values alive until every message is reported */
    const int32_t *value_lengths; /* instead of value_offsets (first attempt only, no
                                     indices): message j's value is value_lengths[j] bytes */
} rdk_produce_args;

/* ---- delivery reports, folded in C ------------------------------------- */
/* Successes are counted in runs of (send id, count); each failure is listed. */
typedef struct rdk_deliveries {
    int cap;
    int n_runs;
    uint64_t *run_send;
    int32_t *run_count;
    int n_failed;
    uint64_t *failed_send;
    int32_t *failed_index;
    int32_t *failed_err;
    rd_kafka_event_t *pending; /* a DR event only partly folded */
    int32_t *failed_partition; /* the partition librdkafka had assigned */
    /* messages of batches librdkafka reports persisted without an offset (a
     * DUPLICATE_SEQUENCE_NUMBER answer, taken as "an earlier attempt was stored"): the batch's
     * first message has offset -1, the next ones -1 + 1, + 2... (rd_kafka_msgq_set_metadata) */
    int n_no_offset;         /* such messages */
    int n_no_offset_batches; /* such batches */
    int32_t no_offset_partition; /* the first one's place */
    char no_offset_topic[256];
    int32_t dup_partition;   /* the partition of the batch being counted, -1 none */
    int64_t dup_next;        /* the offset its next message carries */
} rdk_deliveries;

/* ---- batch consume into contiguous, Arrow-layout buffers ---------------- */
typedef struct rdk_batch {
    int n;                    /* messages in the batch */
    int n_errors;             /* of which have err != 0 (payload holds the error text) */
    int32_t *err;
    int32_t *partition;
    int64_t *offset;
    int64_t *timestamp;       /* ms since epoch, -1 if none */
    int8_t *timestamp_type;   /* 0 none, 1 create time, 2 log-append time (librdkafka's) */
    int32_t *value_offsets;   /* n + 1 */
    char *values;
    uint8_t *value_valid;     /* Arrow validity bitmap, LSB first */
    int value_nulls;
    int32_t *key_offsets;     /* n + 1 */
    char *keys;
    uint8_t *key_valid;
    int key_nulls;
    int32_t *header_index;    /* n + 1: message i owns headers header_index[i]..[i+1] */
    int n_headers;
    int32_t *header_name_offsets;
    char *header_names;
    int32_t *header_value_offsets;
    char *header_values;
    uint8_t *header_value_valid;
    /* per partition seen in the batch, in order of first appearance */
    int n_parts;
    int32_t *part_id;
    int64_t *part_first;
    int64_t *part_last;
    int32_t *part_count;
    /* set by the caller: 1 leaves headers out (n_headers stays 0; saves librdkafka's
     * header lookups when nobody reads them) */
    int skip_headers;
    /* set by the caller: 1 keeps librdkafka's messages in the batch instead of copying
     * their values and keys into values/keys (one copy fewer): row i's value is
     * value_ptr[i] (NULL: null), value_offsets[i + 1] - value_offsets[i] bytes long, and
     * its key likewise (key_ptr, key_offsets). The messages stay alive until
     * rdk_batch_release, the batch's next fetch or rdk_batch_free. values/keys are unused. */
    int keep;
    const char **value_ptr;
    const char **key_ptr;
    /* private: capacities and messages carried to the next call */
    int cap;
    size_t values_cap, keys_cap, hname_cap, hvalue_cap;
    int hcap;
    rd_kafka_message_t **msgs;
    int carry_start, carry_end;
    int n_kept;               /* keep mode: msgs[0..n_kept) are this batch's rows, alive */
    /* the topic of every message in the batch ("" if none says): a batch holds one
     * topic's messages, a message of another topic is carried to the next call */
    char topic[256];
} rdk_batch;
