/* rdk.ShareConsumer's C struct, written once: read by build_ffi.py into the cdef and
 * #included by src/rdk/_share.c. Plain C the cdef parser reads (no #if, no guard). */

/* One rd_kafka_share_poll() batch, copied into contiguous buffers by rdk_share_fill().
 * Rows are the batch's messages without a record-level error (those librdkafka has
 * acknowledged itself, see rdkafka.h); row j is message index[j] of the poll's list.
 * Value j is values[value_offsets[j]:value_offsets[j+1]] (None when value_null[j]),
 * likewise keys; header h of row j is h in header_index[j]..header_index[j+1]. */
typedef struct rdk_share_batch {
    void *msgs;               /* the rd_kafka_messages_t the rows point into (owned) */
    int n_all;                /* messages in the poll's list, error rows included */
    int n;                    /* rows */
    int n_errors;             /* error rows left out (err_code/err_partition: the first) */
    int32_t first_err;
    int32_t *index;
    int32_t *topic;           /* index into topic_names */
    int n_topics;
    const char **topic_names; /* valid until msgs is destroyed */
    int32_t *partition;
    int64_t *offset;
    int64_t *timestamp;       /* -1 when none */
    int16_t *delivery_count;
    int64_t *value_offsets;   /* n + 1 */
    char *values;
    uint8_t *value_null;
    int64_t *key_offsets;     /* n + 1 */
    char *keys;
    uint8_t *key_null;
    int32_t *header_index;    /* n + 1 */
    int n_headers;
    int64_t *header_name_offsets;
    char *header_names;
    int64_t *header_value_offsets;
    char *header_values;
    uint8_t *header_value_null;
    int32_t *ack_err;         /* n: rdk_share_ack's per-row result */
} rdk_share_batch;
