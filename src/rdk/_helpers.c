/* rdk's C helpers: batch produce, folded delivery reports, batch consume into
 * contiguous Arrow-layout buffers. Structs: include/rdk_structs.h (included below);
 * function declarations for the cdef: include/rdk_helpers.h. */
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include "rdk_structs.h" /* rdk_produce_args, rdk_deliveries, rdk_batch, RDK_BALANCE_* */

/* ---- balancers ---------------------------------------------------------- */
static int64_t rdk_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

struct rdk_balancer {
    int kind;
    pthread_mutex_t lock;
    uint64_t next;      /* round robin */
    int64_t *bytes;     /* least bytes: bytes sent per partition */
    int bytes_cap;
    int32_t *heap;      /* least bytes: partitions as a min-heap on (bytes, partition) */
    int heap_n;         /* partitions in the heap (the partition count it was built for) */
    int32_t sticky;     /* sticky: current partition (-1: none yet) */
    int64_t sticky_left, sticky_until_us;
    int sticky_ms, sticky_messages;
    uint64_t rng;
};

static rdk_balancer *rdk_balancer_new(int kind) {
    rdk_balancer *b = calloc(1, sizeof(*b));
    if (!b) return NULL;
    b->kind = kind;
    b->sticky = -1;
    b->sticky_ms = 10;
    b->sticky_messages = 10000;
    b->rng = ((uint64_t)(uintptr_t)b ^ (uint64_t)rdk_now_us()) | 1;
    pthread_mutex_init(&b->lock, NULL);
    return b;
}

static void rdk_balancer_set_sticky(rdk_balancer *b, int sticky_ms, int sticky_messages) {
    pthread_mutex_lock(&b->lock);
    b->sticky_ms = sticky_ms > 0 ? sticky_ms : 0;
    b->sticky_messages = sticky_messages > 0 ? sticky_messages : 1;
    pthread_mutex_unlock(&b->lock);
}

static uint32_t rdk_rand(rdk_balancer *b) { /* xorshift64* */
    b->rng ^= b->rng >> 12;
    b->rng ^= b->rng << 25;
    b->rng ^= b->rng >> 27;
    return (uint32_t)((b->rng * 0x2545F4914F6CDD1DULL) >> 32);
}

static void rdk_balancer_free(rdk_balancer *b) {
    if (!b) return;
    pthread_mutex_destroy(&b->lock);
    free(b->bytes);
    free(b->heap);
    free(b);
}

/* least bytes: a min-heap of partitions ordered by (bytes sent, partition id), so the
 * choice is the lowest-numbered of the least-loaded partitions, as a linear scan would pick */
static int rdk_heap_less(const rdk_balancer *b, int32_t x, int32_t y) {
    return b->bytes[x] < b->bytes[y] || (b->bytes[x] == b->bytes[y] && x < y);
}

static void rdk_heap_down(rdk_balancer *b, int i) {
    int32_t *h = b->heap;
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < b->heap_n && rdk_heap_less(b, h[l], h[m])) m = l;
        if (r < b->heap_n && rdk_heap_less(b, h[r], h[m])) m = r;
        if (m == i) return;
        int32_t t = h[i]; h[i] = h[m]; h[m] = t;
        i = m;
    }
}

/* (Re)build the heap for partition_cnt partitions (new ones start at 0 bytes). */
static int rdk_heap_build(rdk_balancer *b, int32_t partition_cnt) {
    if (b->bytes_cap < partition_cnt) {
        int64_t *grown = realloc(b->bytes, sizeof(int64_t) * partition_cnt);
        if (!grown) return -1;
        memset(grown + b->bytes_cap, 0, sizeof(int64_t) * (partition_cnt - b->bytes_cap));
        b->bytes = grown;
        int32_t *heap = realloc(b->heap, sizeof(int32_t) * partition_cnt);
        if (!heap) return -1;
        b->heap = heap;
        b->bytes_cap = partition_cnt;
    }
    for (int32_t p = 0; p < partition_cnt; p++) b->heap[p] = p;
    b->heap_n = partition_cnt;
    for (int i = partition_cnt / 2 - 1; i >= 0; i--) rdk_heap_down(b, i);
    return 0;
}

/* Caller holds b->lock. */
static int32_t rdk_balancer_pick(rdk_balancer *b, int32_t partition_cnt, size_t size) {
    if (partition_cnt <= 0) return RD_KAFKA_PARTITION_UA;
    if (b->kind == RDK_BALANCE_ROUND_ROBIN)
        return (int32_t)(b->next++ % (uint64_t)partition_cnt);
    if (b->kind == RDK_BALANCE_STICKY) {
        if (b->sticky < 0 || b->sticky >= partition_cnt || b->sticky_left <= 0) {
            int32_t p = (int32_t)(rdk_rand(b) % (uint32_t)partition_cnt);
            if (partition_cnt > 1 && p == b->sticky) p = (p + 1) % partition_cnt;
            b->sticky = p;
            b->sticky_left = b->sticky_messages;
        }
        b->sticky_left--;
        return b->sticky;
    }
    if (b->heap_n != partition_cnt && rdk_heap_build(b, partition_cnt))
        return (int32_t)(b->next++ % (uint64_t)partition_cnt); /* out of memory: round robin */
    /* the least-loaded partition is the heap's root: O(log partitions) per message */
    int32_t best = b->heap[0];
    b->bytes[best] += (int64_t)size;
    rdk_heap_down(b, 0);
    return best;
}

/* ---- batch produce ------------------------------------------------------ */
static int rdk_produce_batch_offsets(const rdk_produce_args *a);

/* Lengths instead of offsets (they are small, cached ints on the Python side): compute
 * the offsets here, then enqueue as usual. */
static int rdk_produce_batch(const rdk_produce_args *a) {
    if (a->value_offsets || !a->value_lengths) return rdk_produce_batch_offsets(a);
    int n = a->n;
    if (n <= 0) return 0;
    if (a->indices) { /* offsets are needed for random access: the caller passes them */
        for (int i = 0; i < n; i++) a->errs[i] = RD_KAFKA_RESP_ERR__INVALID_ARG;
        return 0;
    }
    int64_t *offsets = malloc(sizeof(int64_t) * ((size_t)n + 1));
    if (!offsets) {
        for (int i = 0; i < n; i++) a->errs[i] = RD_KAFKA_RESP_ERR__FAIL;
        return 0;
    }
    offsets[0] = 0;
    for (int i = 0; i < n; i++) offsets[i + 1] = offsets[i] + (int64_t)a->value_lengths[i];
    rdk_produce_args copy = *a;
    copy.value_offsets = offsets;
    copy.value_lengths = NULL;
    int enqueued = rdk_produce_batch_offsets(&copy);
    free(offsets);
    return enqueued;
}

static int rdk_produce_batch_offsets(const rdk_produce_args *a) {
    int n = a->n, enqueued = 0;
    if (n <= 0) return 0;
    int use_balancer = a->balancer && a->partition == RD_KAFKA_PARTITION_UA &&
                       a->balancer->kind != RDK_BALANCE_LIBRDKAFKA;
    if (use_balancer) {
        rdk_balancer *b = a->balancer;
        pthread_mutex_lock(&b->lock);
        if (b->kind == RDK_BALANCE_STICKY) { /* the time window is checked once per call */
            int64_t now = rdk_now_us();
            if (now >= b->sticky_until_us) {
                b->sticky_left = 0;
                b->sticky_until_us = now + (int64_t)b->sticky_ms * 1000;
            }
        }
    }

    if (!a->timestamps && !a->header_index) {
        /* The common case: librdkafka's own batch enqueue, one topic lock for all. */
        rd_kafka_message_t *msgs = calloc((size_t)n, sizeof(*msgs));
        if (!msgs) {
            if (use_balancer) pthread_mutex_unlock(&a->balancer->lock);
            for (int i = 0; i < n; i++) a->errs[i] = RD_KAFKA_RESP_ERR__FAIL;
            return 0;
        }
        for (int i = 0; i < n; i++) {
            int j = a->indices ? a->indices[i] : i;
            rd_kafka_message_t *m = &msgs[i];
            if (!(a->value_null && a->value_null[j])) {
                m->payload = (void *)(a->values + a->value_offsets[j]);
                m->len = (size_t)(a->value_offsets[j + 1] - a->value_offsets[j]);
            }
            if (a->keys && !(a->key_null && a->key_null[j])) {
                m->key = (void *)(a->keys + a->key_offsets[j]);
                m->key_len = (size_t)(a->key_offsets[j + 1] - a->key_offsets[j]);
            }
            m->partition = use_balancer
                ? rdk_balancer_pick(a->balancer, a->partition_cnt, m->len + m->key_len)
                : a->partition;
            m->_private = (void *)(uintptr_t)(a->opaque_base | (uint64_t)(uint32_t)j);
        }
        if (use_balancer) pthread_mutex_unlock(&a->balancer->lock);
        int flags = (a->no_copy ? 0 : RD_KAFKA_MSG_F_COPY) | (use_balancer ? RD_KAFKA_MSG_F_PARTITION : 0);
        enqueued = rd_kafka_produce_batch(a->rkt, a->partition, flags, msgs, n);
        for (int i = 0; i < n; i++) a->errs[i] = msgs[i].err;
        free(msgs);
        return enqueued;
    }

    /* Timestamps or headers: librdkafka's batch call carries neither, so loop here.
     * Like rd_kafka_produce_batch, stop trying after the first _QUEUE_FULL, so what is
     * enqueued stays in order (a prefix, apart from messages refused for other reasons). */
    int queue_full = 0;
    for (int i = 0; i < n; i++) {
        int j = a->indices ? a->indices[i] : i;
        if (queue_full) {
            a->errs[i] = RD_KAFKA_RESP_ERR__QUEUE_FULL;
            continue;
        }
        const char *value = NULL, *key = NULL;
        size_t value_len = 0, key_len = 0;
        if (!(a->value_null && a->value_null[j])) {
            value = a->values + a->value_offsets[j];
            value_len = (size_t)(a->value_offsets[j + 1] - a->value_offsets[j]);
        }
        if (a->keys && !(a->key_null && a->key_null[j])) {
            key = a->keys + a->key_offsets[j];
            key_len = (size_t)(a->key_offsets[j + 1] - a->key_offsets[j]);
        }
        int32_t partition = use_balancer
            ? rdk_balancer_pick(a->balancer, a->partition_cnt, value_len + key_len)
            : a->partition;
        rd_kafka_headers_t *hdrs = NULL;
        if (a->header_index && a->header_index[j + 1] > a->header_index[j]) {
            int h0 = a->header_index[j], h1 = a->header_index[j + 1];
            hdrs = rd_kafka_headers_new((size_t)(h1 - h0));
            for (int h = h0; h < h1; h++) {
                const char *hv = NULL;
                ssize_t hv_len = 0;
                if (!(a->header_value_null && a->header_value_null[h])) {
                    hv = a->header_values + a->header_value_offsets[h];
                    hv_len = (ssize_t)(a->header_value_offsets[h + 1] - a->header_value_offsets[h]);
                }
                rd_kafka_header_add(hdrs, a->header_names + a->header_name_offsets[h],
                                    (ssize_t)(a->header_name_offsets[h + 1] - a->header_name_offsets[h]),
                                    hv, hv_len);
            }
        }
        rd_kafka_resp_err_t err = rd_kafka_producev(
            a->rk, RD_KAFKA_V_RKT(a->rkt), RD_KAFKA_V_PARTITION(partition),
            RD_KAFKA_V_MSGFLAGS(a->no_copy ? 0 : RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_VALUE((void *)value, value_len),
            RD_KAFKA_V_KEY((const void *)key, key_len),
            RD_KAFKA_V_TIMESTAMP(a->timestamps ? a->timestamps[j] : 0),
            RD_KAFKA_V_HEADERS(hdrs),
            RD_KAFKA_V_OPAQUE((void *)(uintptr_t)(a->opaque_base | (uint64_t)(uint32_t)j)),
            RD_KAFKA_V_END);
        if (err && hdrs) rd_kafka_headers_destroy(hdrs);
        if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) queue_full = 1;
        a->errs[i] = err;
        if (!err) enqueued++;
    }
    if (use_balancer) pthread_mutex_unlock(&a->balancer->lock);
    return enqueued;
}

/* ---- delivery reports --------------------------------------------------- */
static rdk_deliveries *rdk_deliveries_new(int cap) {
    rdk_deliveries *d = calloc(1, sizeof(*d));
    if (!d) return NULL;
    d->cap = cap;
    d->run_send = calloc((size_t)cap, sizeof(uint64_t));
    d->run_count = calloc((size_t)cap, sizeof(int32_t));
    d->failed_send = calloc((size_t)cap, sizeof(uint64_t));
    d->failed_index = calloc((size_t)cap, sizeof(int32_t));
    d->failed_err = calloc((size_t)cap, sizeof(int32_t));
    d->failed_partition = calloc((size_t)cap, sizeof(int32_t));
    if (!d->run_send || !d->run_count || !d->failed_send || !d->failed_index || !d->failed_err ||
        !d->failed_partition) {
        free(d->run_send); free(d->run_count); free(d->failed_send);
        free(d->failed_index); free(d->failed_err); free(d->failed_partition); free(d);
        return NULL;
    }
    return d;
}

static void rdk_deliveries_free(rdk_deliveries *d) {
    if (!d) return;
    if (d->pending) rd_kafka_event_destroy(d->pending);
    free(d->run_send); free(d->run_count); free(d->failed_send);
    free(d->failed_index); free(d->failed_err); free(d->failed_partition); free(d);
}

/* Fold the rest of a DR event into d. Returns 1 when the event is used up. */
static int rdk_fold_dr(rd_kafka_event_t *ev, rdk_deliveries *d) {
    const rd_kafka_message_t *m;
    while (d->n_runs < d->cap && d->n_failed < d->cap) {
        if (!(m = rd_kafka_event_message_next(ev))) return 1;
        uint64_t op = (uint64_t)(uintptr_t)m->_private;
        uint64_t send = op >> 32;
        if (m->err) {
            d->failed_send[d->n_failed] = send;
            d->failed_index[d->n_failed] = (int32_t)(op & 0xffffffffu);
            d->failed_err[d->n_failed] = m->err;
            d->failed_partition[d->n_failed] = m->partition;
            d->n_failed++;
        } else {
            if (m->offset == -1 && /* the answer's base offset */
                rd_kafka_message_status(m) == RD_KAFKA_MSG_STATUS_PERSISTED) {
                if (d->n_no_offset_batches++ == 0) { /* only the first one's place is kept */
                    d->no_offset_partition = m->partition;
                    strncpy(d->no_offset_topic, m->rkt ? rd_kafka_topic_name(m->rkt) : "",
                            sizeof(d->no_offset_topic) - 1);
                    d->no_offset_topic[sizeof(d->no_offset_topic) - 1] = '\0';
                }
                d->n_no_offset++;
                d->dup_partition = m->partition;
                d->dup_next = 0;
            } else if (m->partition == d->dup_partition && m->offset == d->dup_next) {
                d->n_no_offset++;
                d->dup_next++;
            } else {
                d->dup_partition = -1;
            }
            if (d->n_runs > 0 && d->run_send[d->n_runs - 1] == send) {
                d->run_count[d->n_runs - 1]++;
            } else {
                d->run_send[d->n_runs] = send;
                d->run_count[d->n_runs] = 1;
                d->n_runs++;
            }
        }
    }
    return 0;
}

static rd_kafka_event_t *rdk_poll_events(rd_kafka_queue_t *rkqu, int timeout_ms, rdk_deliveries *d) {
    d->n_runs = 0;
    d->n_failed = 0;
    d->n_no_offset = 0;
    d->n_no_offset_batches = 0;
    if (d->pending) {
        if (!rdk_fold_dr(d->pending, d)) return NULL;
        rd_kafka_event_destroy(d->pending);
        d->pending = NULL;
        timeout_ms = 0;
    }
    for (;;) {
        rd_kafka_event_t *ev = rd_kafka_queue_poll(rkqu, timeout_ms);
        if (!ev) return NULL;
        timeout_ms = 0;
        if (rd_kafka_event_type(ev) != RD_KAFKA_EVENT_DR) return ev;
        d->dup_partition = -1; /* a batch answered DUPLICATE_SEQUENCE_NUMBER is one event */
        if (!rdk_fold_dr(ev, d)) {
            d->pending = ev;
            return NULL;
        }
        rd_kafka_event_destroy(ev);
    }
}

/* ---- batch consume ------------------------------------------------------ */
static void rdk_batch_release(rdk_batch *b) {
    for (int i = 0; i < b->n_kept; i++) rd_kafka_message_destroy(b->msgs[i]);
    b->n_kept = 0;
}

static void rdk_batch_gather(const rdk_batch *b, int which, char *dest) {
    const char *const *ptr = which ? b->key_ptr : b->value_ptr;
    const int32_t *offs = which ? b->key_offsets : b->value_offsets;
    if (!ptr) return;
    for (int i = 0; i < b->n; i++)
        if (ptr[i]) memcpy(dest + offs[i], ptr[i], (size_t)(offs[i + 1] - offs[i]));
}

static void rdk_batch_free(rdk_batch *b) {
    if (!b) return;
    rdk_batch_release(b);
    free((void *)b->value_ptr); free((void *)b->key_ptr);
    for (int i = b->carry_start; i < b->carry_end; i++) rd_kafka_message_destroy(b->msgs[i]);
    free(b->err); free(b->partition); free(b->offset); free(b->timestamp);
    free(b->timestamp_type); free(b->value_offsets); free(b->values); free(b->value_valid);
    free(b->key_offsets); free(b->keys); free(b->key_valid); free(b->header_index);
    free(b->header_name_offsets); free(b->header_names); free(b->header_value_offsets);
    free(b->header_values); free(b->header_value_valid); free(b->part_id); free(b->part_first);
    free(b->part_last); free(b->part_count); free(b->msgs);
    free(b);
}

static rdk_batch *rdk_batch_new(int max_messages) {
    if (max_messages < 1) return NULL;
    rdk_batch *b = calloc(1, sizeof(*b));
    if (!b) return NULL;
    size_t n = (size_t)max_messages, bitmap = (n + 8) / 8;
    b->cap = max_messages;
    b->err = calloc(n, sizeof(int32_t));
    b->partition = calloc(n, sizeof(int32_t));
    b->offset = calloc(n, sizeof(int64_t));
    b->timestamp = calloc(n, sizeof(int64_t));
    b->timestamp_type = calloc(n, 1);
    b->value_offsets = calloc(n + 1, sizeof(int32_t));
    b->value_valid = calloc(bitmap, 1);
    b->key_offsets = calloc(n + 1, sizeof(int32_t));
    b->key_valid = calloc(bitmap, 1);
    b->header_index = calloc(n + 1, sizeof(int32_t));
    b->part_id = calloc(n, sizeof(int32_t));
    b->part_first = calloc(n, sizeof(int64_t));
    b->part_last = calloc(n, sizeof(int64_t));
    b->part_count = calloc(n, sizeof(int32_t));
    b->msgs = calloc(n, sizeof(rd_kafka_message_t *));
    b->header_name_offsets = calloc(1, sizeof(int32_t));
    b->header_value_offsets = calloc(1, sizeof(int32_t));
    b->header_value_valid = calloc(1, 1);
    if (!b->err || !b->partition || !b->offset || !b->timestamp || !b->timestamp_type ||
        !b->value_offsets || !b->value_valid || !b->key_offsets || !b->key_valid ||
        !b->header_index || !b->part_id || !b->part_first || !b->part_last || !b->part_count ||
        !b->msgs || !b->header_name_offsets || !b->header_value_offsets || !b->header_value_valid) {
        rdk_batch_free(b);
        return NULL;
    }
    return b;
}

static int rdk_grow(void **buf, size_t *cap, size_t need) {
    if (need <= *cap && *buf) return 0;
    size_t c = *cap ? *cap : 65536;
    while (c < need) c *= 2;
    void *p = realloc(*buf, c);
    if (!p) return -1;
    *buf = p;
    *cap = c;
    return 0;
}

static int rdk_grow_headers(rdk_batch *b, int need) {
    if (need <= b->hcap) return 0;
    int c = b->hcap ? b->hcap : 256;
    while (c < need) c *= 2;
    int32_t *no = realloc(b->header_name_offsets, sizeof(int32_t) * (size_t)(c + 1));
    if (!no) return -1;
    b->header_name_offsets = no;
    int32_t *vo = realloc(b->header_value_offsets, sizeof(int32_t) * (size_t)(c + 1));
    if (!vo) return -1;
    b->header_value_offsets = vo;
    uint8_t *vv = realloc(b->header_value_valid, (size_t)(c + 8) / 8);
    if (!vv) return -1;
    b->header_value_valid = vv;
    b->hcap = c;
    return 0;
}

#define RDK_SET_BIT(bm, i) ((bm)[(i) >> 3] |= (uint8_t)(1u << ((i) & 7)))

/* Append row i of an Arrow binary column: len bytes of src at data + end, or a null when
 * src is NULL. Returns the new end offset. */
static inline int32_t rdk_append(char *data, int32_t end, const void *src, size_t len,
                                 uint8_t *valid, int i, int *nulls) {
    if (!src) {
        (*nulls)++;
        return end;
    }
    if (data) memcpy(data + end, src, len);
    RDK_SET_BIT(valid, i);
    return end + (int32_t)len;
}
#define RDK_ARROW_MAX 0x7fffffff

static int rdk_consume_batch(rd_kafka_queue_t *rkqu, int timeout_ms, int max_messages, rdk_batch *b) {
    if (max_messages > b->cap) max_messages = b->cap;
    if (max_messages < 1) max_messages = 1;
    rdk_batch_release(b); /* the rows of the previous fetch (keep mode) */
    b->n = b->n_errors = b->n_headers = b->n_parts = 0;
    b->value_nulls = b->key_nulls = 0;
    const int keep = b->keep;
    if (keep && !b->value_ptr) {
        b->value_ptr = calloc((size_t)b->cap, sizeof(char *));
        b->key_ptr = calloc((size_t)b->cap, sizeof(char *));
        if (!b->value_ptr || !b->key_ptr) return -1;
    }

    /* messages carried over from the previous call come first */
    int have = b->carry_end - b->carry_start;
    if (have > 0 && b->carry_start > 0)
        memmove(b->msgs, b->msgs + b->carry_start, sizeof(*b->msgs) * (size_t)have);
    b->carry_start = 0;
    b->carry_end = have;
    if (have == 0) {
        /* Wait only for the first message: rd_kafka_consume_batch_queue would wait the
         * whole timeout for a full batch, adding up to timeout_ms of latency per batch. */
        rd_kafka_message_t *first = rd_kafka_consume_queue(rkqu, timeout_ms);
        if (first) b->msgs[have++] = first;
    }
    if (have > 0 && have < max_messages) {
        ssize_t got = rd_kafka_consume_batch_queue(rkqu, 0, b->msgs + have,
                                                   (size_t)(max_messages - have));
        if (got > 0) have += (int)got;
    }
    b->carry_end = have;
    if (have == 0) return 0;

    /* sizes first, so each buffer grows once; stop before the Arrow 2 GiB offset limit */
    size_t vsize = 0, ksize = 0, hn = 0, hv = 0;
    int take = 0, nh = 0;
    const int skip = b->skip_headers;
    const rd_kafka_topic_t *rkt = NULL; /* the batch's topic: the first message that names one */
    b->topic[0] = '\0';
    for (; take < have; take++) {
        rd_kafka_message_t *m = b->msgs[take];
        size_t mh = 0, mhn = 0, mhv = 0;
        if (m->rkt) {
            if (!rkt) { /* named now: the messages holding the topic are destroyed below */
                rkt = m->rkt;
                strncpy(b->topic, rd_kafka_topic_name(rkt), sizeof(b->topic) - 1);
                b->topic[sizeof(b->topic) - 1] = '\0';
            } else if (m->rkt != rkt) {
                break; /* another topic: it starts the next batch */
            }
        }
        rd_kafka_headers_t *hdrs = NULL;
        if (!m->err && !skip && rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
            const char *name;
            const void *val;
            size_t size;
            for (size_t h = 0; rd_kafka_header_get_all(hdrs, h, &name, &val, &size) == 0; h++) {
                mh++;
                mhn += strlen(name);
                mhv += val ? size : 0;
            }
        }
        if (take > 0 && (vsize + m->len > RDK_ARROW_MAX || ksize + m->key_len > RDK_ARROW_MAX ||
                         hn + mhn > RDK_ARROW_MAX || hv + mhv > RDK_ARROW_MAX))
            break;
        vsize += m->len;
        ksize += m->key_len;
        hn += mhn;
        hv += mhv;
        nh += (int)mh;
        b->header_index[take + 1] = nh; /* the copy below looks up headers only where some are */
    }
    if ((!keep && (rdk_grow((void **)&b->values, &b->values_cap, vsize + 1) ||
                   rdk_grow((void **)&b->keys, &b->keys_cap, ksize + 1))) ||
        rdk_grow((void **)&b->header_names, &b->hname_cap, hn + 1) ||
        rdk_grow((void **)&b->header_values, &b->hvalue_cap, hv + 1) ||
        rdk_grow_headers(b, nh + 1))
        return -1;

    size_t bitmap = (size_t)(take + 8) / 8;
    memset(b->value_valid, 0, bitmap);
    memset(b->key_valid, 0, bitmap);
    memset(b->header_value_valid, 0, (size_t)(nh + 8) / 8);
    int32_t vo = 0, ko = 0, hno = 0, hvo = 0, h_i = 0;
    b->value_offsets[0] = b->key_offsets[0] = b->header_index[0] = 0;
    b->header_name_offsets[0] = b->header_value_offsets[0] = 0;
    int last_part_slot = -1;
    for (int i = 0; i < take; i++) {
        rd_kafka_message_t *m = b->msgs[i];
        rd_kafka_timestamp_type_t tstype;
        b->err[i] = m->err;
        b->partition[i] = m->partition;
        b->offset[i] = m->offset;
        b->timestamp[i] = rd_kafka_message_timestamp(m, &tstype);
        b->timestamp_type[i] = (int8_t)tstype;
        if (m->err) b->n_errors++;
        const void *key = m->err ? NULL : m->key;
        if (keep) { /* point at librdkafka's copy, which stays alive with the batch */
            b->value_ptr[i] = m->payload;
            vo = rdk_append(NULL, vo, m->payload, m->len, b->value_valid, i, &b->value_nulls);
            b->key_ptr[i] = key;
            ko = rdk_append(NULL, ko, key, m->key_len, b->key_valid, i, &b->key_nulls);
        } else {
            vo = rdk_append(b->values, vo, m->payload, m->len, b->value_valid, i, &b->value_nulls);
            ko = rdk_append(b->keys, ko, key, m->key_len, b->key_valid, i, &b->key_nulls);
        }
        b->value_offsets[i + 1] = vo;
        b->key_offsets[i + 1] = ko;
        rd_kafka_headers_t *hdrs = NULL;
        if (b->header_index[i + 1] > h_i &&
            rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
            const char *name;
            const void *val;
            size_t size;
            for (size_t h = 0; rd_kafka_header_get_all(hdrs, h, &name, &val, &size) == 0; h++) {
                size_t nl = strlen(name);
                memcpy(b->header_names + hno, name, nl);
                hno += (int32_t)nl;
                b->header_name_offsets[h_i + 1] = hno;
                if (val) {
                    memcpy(b->header_values + hvo, val, size);
                    hvo += (int32_t)size;
                    RDK_SET_BIT(b->header_value_valid, h_i);
                }
                b->header_value_offsets[h_i + 1] = hvo;
                h_i++;
            }
        }
        b->header_index[i + 1] = h_i;
        /* per-partition summary of real messages */
        if (!m->err) {
            int slot = -1;
            if (last_part_slot >= 0 && b->part_id[last_part_slot] == m->partition) {
                slot = last_part_slot;
            } else {
                for (int s = 0; s < b->n_parts; s++)
                    if (b->part_id[s] == m->partition) { slot = s; break; }
            }
            if (slot < 0) {
                slot = b->n_parts++;
                b->part_id[slot] = m->partition;
                b->part_first[slot] = m->offset;
                b->part_count[slot] = 0;
            }
            b->part_last[slot] = m->offset;
            b->part_count[slot]++;
            last_part_slot = slot;
        }
        if (!keep) rd_kafka_message_destroy(m);
    }
    b->n_kept = keep ? take : 0;
    b->n = take;
    b->n_headers = h_i;
    b->carry_start = take;
    return take;
}

static void rdk_batch_track(const rdk_batch *b, int64_t *expected, int n_expected,
                            int64_t *repeats, int64_t *misses) {
    int64_t r = 0, x = 0;
    for (int i = 0; i < b->n; i++) {
        int32_t p = b->partition[i];
        if (b->err[i] || p < 0 || p >= n_expected) continue;
        int64_t e = expected[p], o = b->offset[i];
        if (e >= 0) {
            if (o < e) r += 1;
            else if (o > e) x += o - e;
        }
        expected[p] = o + 1;
    }
    *repeats = r;
    *misses = x;
}

/* ---- misc --------------------------------------------------------------- */
static uint32_t rdk_fnv1a32(const char *data, size_t len) {
    uint32_t h = 0x811c9dc5u;
    for (size_t i = 0; i < len; i++) {
        h ^= (uint8_t)data[i];
        h *= 0x01000193u;
    }
    return h;
}
