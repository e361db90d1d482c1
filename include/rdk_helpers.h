/* rdk's own C helpers, compiled into rdk._rdkafka (source: src/rdk/_helpers.c): the
 * function declarations, for the cdef only. The structs and constants they take are in
 * rdk_structs.h, which the C sources include too.
 * Each helper lets Python cross into C once per batch, never once per message. */

/* ---- batch produce ------------------------------------------------------ */
rdk_balancer *rdk_balancer_new(int kind);
void rdk_balancer_free(rdk_balancer *b);
void rdk_balancer_set_sticky(rdk_balancer *b, int sticky_ms, int sticky_messages);
/* Enqueue one send() call (see rdk_produce_args). Returns how many were enqueued. */
int rdk_produce_batch(const rdk_produce_args *a);

/* ---- delivery reports, folded in C ------------------------------------- */
rdk_deliveries *rdk_deliveries_new(int cap);
void rdk_deliveries_free(rdk_deliveries *d);
/* Wait up to timeout_ms for the first event, then take what is ready. DR events are
 * folded into d (until it is full); the first other event is returned to the caller,
 * who handles and destroys it. Returns NULL when nothing else is ready. */
rd_kafka_event_t *rdk_poll_events(rd_kafka_queue_t *rkqu, int timeout_ms, rdk_deliveries *d);

/* ---- batch consume into contiguous, Arrow-layout buffers ---------------- */
rdk_batch *rdk_batch_new(int max_messages);
void rdk_batch_free(rdk_batch *b);
/* Fetch up to max_messages (<= the batch's capacity) from rkqu, waiting up to
 * timeout_ms for the first, and copy them into b. Returns b->n, or -1 if out of memory. */
int rdk_consume_batch(rd_kafka_queue_t *rkqu, int timeout_ms, int max_messages, rdk_batch *b);
/* Keep mode: destroy the librdkafka messages the batch's rows point into (its rows are
 * unreadable afterwards; messages carried to the next fetch stay). */
void rdk_batch_release(rdk_batch *b);
/* Keep mode: copy column which (0 values, 1 keys) of rows 0..n into dest, back to back
 * (value_offsets[n] or key_offsets[n] bytes): one copy into an Arrow buffer. */
void rdk_batch_gather(const rdk_batch *b, int which, char *dest);
/* kafka-native's repeats/misses against expected[partition] (next expected offset,
 * -1 = unknown), which it advances. Partitions >= n_expected are ignored. */
void rdk_batch_track(const rdk_batch *b, int64_t *expected, int n_expected,
                     int64_t *repeats, int64_t *misses);

/* ---- misc --------------------------------------------------------------- */
uint32_t rdk_fnv1a32(const char *data, size_t len);
