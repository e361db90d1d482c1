/* rdk.ShareConsumer's C helpers (compiled into rdk._rdkafka after _helpers.c, which
 * includes rdkafka.h): copy a share poll's batch into contiguous buffers, and acknowledge
 * a whole batch in one crossing from Python. */
#include <stdlib.h>
#include <string.h>
#include "rdk_share_structs.h"

static int rdk_share_grow(void **buf, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *p = realloc(*buf, c * elem);
    if (!p) return -1;
    *buf = p;
    *cap = c;
    return 0;
}

/* capacities, kept after the public struct (rdk_share_batch_new allocates both) */
typedef struct rdk_share_batch_priv {
    rdk_share_batch pub;
    size_t rows_cap, values_cap, keys_cap, topics_cap, hcap, hnames_cap, hvalues_cap;
    const rd_kafka_topic_t **topic_rkt;
} rdk_share_batch_priv;

static rdk_share_batch *rdk_share_batch_new(void) {
    rdk_share_batch_priv *p = calloc(1, sizeof(*p));
    return p ? &p->pub : NULL;
}

static void rdk_share_batch_clear(rdk_share_batch *b) {
    if (b->msgs) rd_kafka_messages_destroy((rd_kafka_messages_t *)b->msgs);
    b->msgs = NULL;
    b->n = b->n_all = b->n_errors = b->n_topics = b->n_headers = 0;
    b->first_err = 0;
}

static void rdk_share_batch_free(rdk_share_batch *b) {
    if (!b) return;
    rdk_share_batch_priv *p = (rdk_share_batch_priv *)b;
    rdk_share_batch_clear(b);
    free(b->index); free(b->topic); free((void *)b->topic_names); free(p->topic_rkt);
    free(b->partition); free(b->offset); free(b->timestamp); free(b->delivery_count);
    free(b->value_offsets); free(b->values); free(b->value_null);
    free(b->key_offsets); free(b->keys); free(b->key_null);
    free(b->header_index); free(b->header_name_offsets); free(b->header_names);
    free(b->header_value_offsets); free(b->header_values); free(b->header_value_null);
    free(b->ack_err);
    free(p);
}

static int rdk_share_rows(rdk_share_batch_priv *p, size_t n) {
    rdk_share_batch *b = &p->pub;
    if (n + 1 <= p->rows_cap) return 0;
    size_t c = p->rows_cap ? p->rows_cap : 64;
    while (c < n + 1) c *= 2;
#define RDK_RE(f, t) do { void *q = realloc(b->f, c * sizeof(t)); if (!q) return -1; b->f = q; } while (0)
    RDK_RE(index, int32_t); RDK_RE(topic, int32_t); RDK_RE(partition, int32_t);
    RDK_RE(offset, int64_t); RDK_RE(timestamp, int64_t); RDK_RE(delivery_count, int16_t);
    RDK_RE(value_offsets, int64_t); RDK_RE(value_null, uint8_t);
    RDK_RE(key_offsets, int64_t); RDK_RE(key_null, uint8_t);
    RDK_RE(header_index, int32_t); RDK_RE(ack_err, int32_t);
#undef RDK_RE
    p->rows_cap = c;
    return 0;
}

static int rdk_share_fill(rdk_share_batch *b, rd_kafka_messages_t *msgs) {
    rdk_share_batch_priv *p = (rdk_share_batch_priv *)b;
    rdk_share_batch_clear(b);
    b->msgs = msgs;
    size_t all = rd_kafka_messages_count(msgs);
    b->n_all = (int)all;
    if (rdk_share_rows(p, all)) return -1;
    size_t vend = 0, kend = 0, hnend = 0, hvend = 0;
    int n = 0, nh = 0;
    b->value_offsets[0] = b->key_offsets[0] = 0;
    b->header_index[0] = 0;
    for (size_t i = 0; i < all; i++) {
        rd_kafka_message_t *m = rd_kafka_messages_get(msgs, i);
        if (m->err) {
            if (!b->n_errors++) b->first_err = m->err;
            continue;
        }
        /* topic: a short table of the batch's topics */
        int t = 0;
        for (; t < b->n_topics; t++)
            if (p->topic_rkt[t] == m->rkt) break;
        if (t == b->n_topics) {
            size_t cap = p->topics_cap;
            if (rdk_share_grow((void **)&p->topic_rkt, &cap, (size_t)t + 1, sizeof(*p->topic_rkt)))
                return -1;
            cap = p->topics_cap;
            if (rdk_share_grow((void **)&b->topic_names, &cap, (size_t)t + 1, sizeof(char *)))
                return -1;
            p->topics_cap = cap;
            p->topic_rkt[t] = m->rkt;
            b->topic_names[t] = m->rkt ? rd_kafka_topic_name(m->rkt) : "";
            b->n_topics++;
        }
        b->index[n] = (int32_t)i;
        b->topic[n] = t;
        b->partition[n] = m->partition;
        b->offset[n] = m->offset;
        rd_kafka_timestamp_type_t tstype;
        int64_t ts = rd_kafka_message_timestamp(m, &tstype);
        b->timestamp[n] = tstype == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE ? -1 : ts;
        b->delivery_count[n] = rd_kafka_message_delivery_count(m);
        b->value_null[n] = m->payload == NULL;
        if (m->payload && m->len) {
            if (rdk_share_grow((void **)&b->values, &p->values_cap, vend + m->len, 1)) return -1;
            memcpy(b->values + vend, m->payload, m->len);
            vend += m->len;
        }
        b->value_offsets[n + 1] = (int64_t)vend;
        b->key_null[n] = m->key == NULL;
        if (m->key && m->key_len) {
            if (rdk_share_grow((void **)&b->keys, &p->keys_cap, kend + m->key_len, 1)) return -1;
            memcpy(b->keys + kend, m->key, m->key_len);
            kend += m->key_len;
        }
        b->key_offsets[n + 1] = (int64_t)kend;
        rd_kafka_headers_t *hdrs = NULL;
        if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
            const char *name;
            const void *val;
            size_t size;
            for (size_t h = 0; rd_kafka_header_get_all(hdrs, h, &name, &val, &size) == 0; h++) {
                size_t cap = p->hcap;
                if (rdk_share_grow((void **)&b->header_name_offsets, &cap, (size_t)nh + 2,
                                   sizeof(int64_t)))
                    return -1;
                cap = p->hcap;
                if (rdk_share_grow((void **)&b->header_value_offsets, &cap, (size_t)nh + 2,
                                   sizeof(int64_t)))
                    return -1;
                cap = p->hcap;
                if (rdk_share_grow((void **)&b->header_value_null, &cap, (size_t)nh + 2, 1))
                    return -1;
                p->hcap = cap;
                if (nh == 0) b->header_name_offsets[0] = b->header_value_offsets[0] = 0;
                size_t nl = strlen(name);
                if (rdk_share_grow((void **)&b->header_names, &p->hnames_cap, hnend + nl + 1, 1))
                    return -1;
                memcpy(b->header_names + hnend, name, nl);
                hnend += nl;
                b->header_name_offsets[nh + 1] = (int64_t)hnend;
                b->header_value_null[nh] = val == NULL;
                if (val && size) {
                    if (rdk_share_grow((void **)&b->header_values, &p->hvalues_cap, hvend + size, 1))
                        return -1;
                    memcpy(b->header_values + hvend, val, size);
                    hvend += size;
                }
                b->header_value_offsets[nh + 1] = (int64_t)hvend;
                nh++;
            }
        }
        b->header_index[n + 1] = nh;
        n++;
    }
    b->n = n;
    b->n_headers = nh;
    return n;
}

static int rdk_share_ack(rd_kafka_share_t *rkshare, rdk_share_batch *b, const int8_t *types) {
    int failed = 0;
    if (!b->msgs) return 0;
    for (int j = 0; j < b->n; j++) {
        b->ack_err[j] = 0;
        if (!types[j]) continue;
        rd_kafka_message_t *m = rd_kafka_messages_get((rd_kafka_messages_t *)b->msgs,
                                                      (size_t)b->index[j]);
        rd_kafka_resp_err_t err =
            rd_kafka_share_acknowledge_type(rkshare, m, (rd_kafka_share_AcknowledgeType_t)types[j]);
        if (err) {
            b->ack_err[j] = err;
            failed++;
        }
    }
    return failed;
}
