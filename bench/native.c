/* native.c: the benchmark's "native C" contender, the physical limit on this machine.
 *
 * It does the work the Python contenders do, with librdkafka's own batch calls
 * (rd_kafka_produce_batch, rd_kafka_consume_batch_queue) and nothing in between.
 * bench/run.py compiles it against the same static librdkafka rdk links.
 *
 *   native produce  bootstrap=H topic=T count=N size=B partitions=P chunk=C [any=0|1] [X.prop=value ...]
 *   native consume  bootstrap=H topic=T count=N partitions=P batch=M wait=MS arrow=0|1 [X.prop=value ...]
 *   native latency  bootstrap=H topic=T partitions=P rate=R duration=S warmup=W size=B batch=M wait=MS
 *                   [X.prop=value ...]
 *
 * batch/wait: consume: each rd_kafka_consume_batch_queue call takes up to `batch` messages
 * and returns when it has them or after `wait` ms. latency: rd_kafka_consume_queue waits up
 * to `wait` ms for one message, then rd_kafka_consume_batch_queue takes what else is ready.
 *
 * any=1: produce with RD_KAFKA_PARTITION_UA (librdkafka's partitioner picks; scale family).
 * timeout=S bounds a run; idle=S stops a consumer that got nothing new for S seconds.
 * X.prop=value passes a librdkafka property to every client, P.prop=value to producers
 * only, C.prop=value to consumers only. The last line printed is
 * "RESULT {json}" (see bench/contenders/common.py for the fields).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <librdkafka/rdkafka.h>

#define MAX_PROPS 64

static const char *arg_bootstrap = "127.0.0.1:9092", *arg_topic = "bench";
static long long arg_count = 0, arg_size = 100, arg_partitions = 1, arg_chunk = 10000;
static long long arg_any = 0;
static long long arg_batch = 10000, arg_arrow = 0, arg_rate = 10000, arg_warmup = 0, arg_wait = 100;
static double arg_duration = 1.0, arg_timeout = 120.0, arg_idle = 20.0;
static const char *prop_names[MAX_PROPS], *prop_values[MAX_PROPS];
static char prop_roles[MAX_PROPS]; /* 'X' both, 'P' producer only, 'C' consumer only */
static int n_props = 0;

static void die(const char *what, const char *detail) {
    fprintf(stderr, "native: %s: %s\n", what, detail ? detail : "");
    exit(2);
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* CPU time of every thread of this process (librdkafka's included), like Python's
 * time.process_time() in the Python contenders. */
static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void parse_args(int argc, char **argv) {
    for (int i = 2; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq) die("argument is not key=value", argv[i]);
        *eq = '\0';
        const char *k = argv[i], *v = eq + 1;
        if ((k[0] == 'X' || k[0] == 'P' || k[0] == 'C') && k[1] == '.') {
            if (n_props == MAX_PROPS) die("too many properties", k);
            prop_roles[n_props] = k[0];
            prop_names[n_props] = k + 2;
            prop_values[n_props++] = v;
        } else if (!strcmp(k, "bootstrap")) arg_bootstrap = v;
        else if (!strcmp(k, "topic")) arg_topic = v;
        else if (!strcmp(k, "count")) arg_count = atoll(v);
        else if (!strcmp(k, "size")) arg_size = atoll(v);
        else if (!strcmp(k, "partitions")) arg_partitions = atoll(v);
        else if (!strcmp(k, "chunk")) arg_chunk = atoll(v);
        else if (!strcmp(k, "batch")) arg_batch = atoll(v);
        else if (!strcmp(k, "arrow")) arg_arrow = atoll(v);
        else if (!strcmp(k, "any")) arg_any = atoll(v);
        else if (!strcmp(k, "rate")) arg_rate = atoll(v);
        else if (!strcmp(k, "warmup")) arg_warmup = atoll(v);
        else if (!strcmp(k, "wait")) arg_wait = atoll(v);
        else if (!strcmp(k, "duration")) arg_duration = atof(v);
        else if (!strcmp(k, "timeout")) arg_timeout = atof(v);
        else if (!strcmp(k, "idle")) arg_idle = atof(v);
        else die("unknown argument", k);
    }
    if (arg_partitions < 1 || arg_chunk < 1 || arg_batch < 1 || arg_size < 1)
        die("bad arguments", "partitions, chunk, batch, size >= 1 required");
    if (!strcmp(argv[1], "latency") && arg_size < 16)
        die("bad arguments", "latency needs size >= 16 (sequence number and send time)");
}

/* ---- delivery reports --------------------------------------------------- */
static long long delivered = 0, failed = 0;
static int first_error = 0;

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk; (void)opaque;
    if (m->err) {
        if (!first_error) first_error = m->err;
        failed++;
    } else {
        delivered++;
    }
}

static rd_kafka_t *new_client(rd_kafka_type_t type) {
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", arg_bootstrap, errstr, sizeof errstr))
        die("bootstrap.servers", errstr);
    char skip = type == RD_KAFKA_PRODUCER ? 'C' : 'P';
    for (int i = 0; i < n_props; i++)
        if (prop_roles[i] != skip &&
            rd_kafka_conf_set(conf, prop_names[i], prop_values[i], errstr, sizeof errstr))
            die(prop_names[i], errstr);
    if (type == RD_KAFKA_PRODUCER) rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_t *rk = rd_kafka_new(type, conf, errstr, sizeof errstr);
    if (!rk) die("rd_kafka_new", errstr);
    return rk;
}

/* Connected and the topic's partitions known, before any timer starts. */
static void warm_up(rd_kafka_t *rk, rd_kafka_topic_t *rkt) {
    const struct rd_kafka_metadata *md;
    for (int attempt = 0; attempt < 50; attempt++) {
        rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, rkt, &md, 5000);
        if (!err) {
            int ok = md->topic_cnt == 1 && !md->topics[0].err &&
                     md->topics[0].partition_cnt >= arg_partitions;
            rd_kafka_metadata_destroy(md);
            if (ok) return;
        }
        struct timespec pause = {0, 100 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    die("topic metadata", arg_topic);
}

/* Enqueue n messages on one partition, waiting on a full queue; returns when all are in. */
static void enqueue_all(rd_kafka_t *rk, rd_kafka_topic_t *rkt, int32_t partition,
                        rd_kafka_message_t *msgs, int n) {
    while (n > 0) {
        int got = rd_kafka_produce_batch(rkt, partition, RD_KAFKA_MSG_F_COPY, msgs, n);
        if (got == n) break;
        int left = 0;
        for (int i = 0; i < n; i++) {
            if (!msgs[i].err) continue;
            if (msgs[i].err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
                die("rd_kafka_produce_batch", rd_kafka_err2str(msgs[i].err));
            msgs[i].err = 0;
            msgs[left++] = msgs[i];
        }
        n = left;
        rd_kafka_poll(rk, 10);
    }
    rd_kafka_poll(rk, 0);
}

/* ---- produce -------------------------------------------------------------- */
static int run_produce(void) {
    rd_kafka_t *rk = new_client(RD_KAFKA_PRODUCER);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, arg_topic, NULL);
    warm_up(rk, rkt);
    /* a pool of `chunk` distinct payloads, sent again for every chunk (like the Python contenders) */
    char *pool = malloc((size_t)(arg_chunk * arg_size));
    rd_kafka_message_t *msgs = calloc((size_t)arg_chunk, sizeof *msgs);
    if (!pool || !msgs) die("malloc", "payload pool");
    for (long long i = 0; i < arg_chunk * arg_size; i++) pool[i] = (char)('a' + (i * 7 + i / arg_size) % 26);

    int64_t t0 = now_ns();
    double c0 = cpu_s();
    long long sent = 0, chunk_no = 0;
    while (sent < arg_count) {
        int n = (int)(arg_count - sent < arg_chunk ? arg_count - sent : arg_chunk);
        memset(msgs, 0, sizeof(*msgs) * (size_t)n);
        for (int i = 0; i < n; i++) {
            msgs[i].payload = pool + (size_t)i * (size_t)arg_size;
            msgs[i].len = (size_t)arg_size;
        }
        enqueue_all(rk, rkt, arg_any ? RD_KAFKA_PARTITION_UA : (int32_t)(chunk_no % arg_partitions),
                    msgs, n);
        chunk_no++;
        sent += n;
    }
    double enqueue_secs = (now_ns() - t0) / 1e9; /* what follows waits for the broker's acks */
    while (delivered + failed < arg_count && (now_ns() - t0) / 1e9 < arg_timeout)
        rd_kafka_flush(rk, 100);
    double secs = (now_ns() - t0) / 1e9, cpu = cpu_s() - c0;
    printf("RESULT {\"count\": %lld, \"failed\": %lld, \"bytes\": %lld, \"seconds\": %.6f, "
           "\"cpu_seconds\": %.6f, \"enqueue_seconds\": %.6f, \"error\": \"%s\"}\n", delivered, failed,
           delivered * arg_size, secs, cpu, enqueue_secs,
           first_error ? rd_kafka_err2name(first_error) : "");
    fflush(stdout);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    free(pool);
    free(msgs);
    return delivered == arg_count ? 0 : 1;
}

/* ---- Arrow-layout columns, as rdk's batch consume fills them ------------- */
typedef struct {
    int32_t *value_offsets, *key_offsets, *partition;
    int64_t *offset, *timestamp;
    uint8_t *value_valid, *key_valid;
    char *values, *keys;
    size_t values_cap, keys_cap;
} columns;

static void grow(char **buf, size_t *cap, size_t need) {
    if (need <= *cap) return;
    size_t c = *cap ? *cap : 65536;
    while (c < need) c *= 2;
    if (!(*buf = realloc(*buf, c))) die("realloc", "column buffer");
    *cap = c;
}

static void columns_init(columns *c, size_t n) {
    memset(c, 0, sizeof *c);
    c->value_offsets = calloc(n + 1, 4);
    c->key_offsets = calloc(n + 1, 4);
    c->partition = calloc(n, 4);
    c->offset = calloc(n, 8);
    c->timestamp = calloc(n, 8);
    c->value_valid = calloc(n / 8 + 1, 1);
    c->key_valid = calloc(n / 8 + 1, 1);
    if (!c->value_offsets || !c->key_offsets || !c->partition || !c->offset || !c->timestamp ||
        !c->value_valid || !c->key_valid)
        die("calloc", "columns");
}

/* One batch into columns; returns a checksum so the work cannot be optimised away. */
static int64_t columns_fill(columns *c, rd_kafka_message_t **msgs, int n) {
    size_t vsize = 0, ksize = 0;
    for (int i = 0; i < n; i++) {
        vsize += msgs[i]->len;
        ksize += msgs[i]->key_len;
    }
    grow(&c->values, &c->values_cap, vsize + 1);
    grow(&c->keys, &c->keys_cap, ksize + 1);
    memset(c->value_valid, 0, (size_t)n / 8 + 1);
    memset(c->key_valid, 0, (size_t)n / 8 + 1);
    int32_t vo = 0, ko = 0;
    for (int i = 0; i < n; i++) {
        rd_kafka_message_t *m = msgs[i];
        rd_kafka_headers_t *hdrs;
        c->partition[i] = m->partition;
        c->offset[i] = m->offset;
        c->timestamp[i] = rd_kafka_message_timestamp(m, NULL);
        if (m->payload) {
            memcpy(c->values + vo, m->payload, m->len);
            vo += (int32_t)m->len;
            c->value_valid[i >> 3] |= (uint8_t)(1u << (i & 7));
        }
        c->value_offsets[i + 1] = vo;
        if (m->key) {
            memcpy(c->keys + ko, m->key, m->key_len);
            ko += (int32_t)m->key_len;
            c->key_valid[i >> 3] |= (uint8_t)(1u << (i & 7));
        }
        c->key_offsets[i + 1] = ko;
        (void)rd_kafka_message_headers(m, &hdrs);
    }
    return (int64_t)vo + c->offset[n - 1];
}

/* ---- consume -------------------------------------------------------------- */
/* Timed like every contender's consume (bench/contenders/common.py ConsumeClock): from the
 * arrival of the batch that brings the count past the first 10 % to the end of the last
 * batch's processing; only the messages after that batch are counted. */
static int run_consume(void) {
    int64_t t0 = now_ns(), t_first = 0, t_end = 0;
    long long first_n = 0, seen = 0, warmup = arg_count / 10;
    double c_first = 0, c_end = 0;
    rd_kafka_t *rk = new_client(RD_KAFKA_CONSUMER);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, arg_topic, NULL);
    warm_up(rk, rkt);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_message_t **msgs = calloc((size_t)arg_batch, sizeof *msgs);
    long long *next = calloc((size_t)arg_partitions, sizeof *next);
    if (!msgs || !next) die("calloc", "batch");
    columns cols;
    if (arg_arrow) columns_init(&cols, (size_t)arg_batch);

    long long count = 0, bytes = 0, errors = 0, out_of_order = 0;
    int64_t checksum = 0;
    int first_err = 0;
    for (int p = 0; p < arg_partitions; p++)
        if (rd_kafka_consume_start_queue(rkt, p, RD_KAFKA_OFFSET_BEGINNING, q) == -1)
            die("rd_kafka_consume_start_queue", rd_kafka_err2str(rd_kafka_last_error()));
    int64_t last_progress = t0;
    while (count < arg_count && (now_ns() - t0) / 1e9 < arg_timeout &&
           (now_ns() - last_progress) / 1e9 < arg_idle) {
        ssize_t n = rd_kafka_consume_batch_queue(q, (int)arg_wait, msgs, (size_t)arg_batch);
        if (n <= 0) continue;
        last_progress = now_ns();
        seen += n;
        if (!t_first && seen > warmup) {
            t_first = last_progress;
            c_first = cpu_s();
            first_n = seen;
        }
        int good = 0;
        for (ssize_t i = 0; i < n; i++) {
            rd_kafka_message_t *m = msgs[i];
            if (m->err) {
                if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                    if (!first_err) first_err = m->err;
                    errors++;
                }
                rd_kafka_message_destroy(m);
                continue;
            }
            if (m->partition >= 0 && m->partition < arg_partitions) {
                if (m->offset != next[m->partition]) out_of_order++;
                next[m->partition] = m->offset + 1;
            }
            bytes += (long long)m->len;
            msgs[good++] = m;
        }
        if (arg_arrow && good) checksum += columns_fill(&cols, msgs, good);
        count += good;
        for (int i = 0; i < good; i++) rd_kafka_message_destroy(msgs[i]);
        if (t_first) {
            t_end = now_ns();
            c_end = cpu_s();
        }
    }
    double secs = t_first ? (t_end - t_first) / 1e9 : 0.0;
    printf("RESULT {\"count\": %lld, \"timed_count\": %lld, \"bytes\": %lld, \"seconds\": %.6f, "
           "\"cpu_seconds\": %.6f, \"errors\": %lld, \"gaps\": %lld, \"checksum\": %" PRId64
           ", \"error\": \"%s\"}\n",
           count, count > first_n ? count - first_n : 0, bytes, secs, t_first ? c_end - c_first : 0.0,
           errors, out_of_order, checksum,
           first_err ? rd_kafka_err2name(first_err) : "");
    fflush(stdout);
    for (int p = 0; p < arg_partitions; p++) rd_kafka_consume_stop(rkt, p);
    rd_kafka_queue_destroy(q);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    return count == arg_count ? 0 : 1;
}

/* ---- latency -------------------------------------------------------------- */
typedef struct {
    rd_kafka_t *rk;
    rd_kafka_topic_t *rkt;
    long long total;
} producer_ctx;

static void put_u64(char *p, uint64_t v) { memcpy(p, &v, 8); }   /* little-endian host */
static uint64_t get_u64(const char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* Every millisecond, send the messages due by then at `rate`; each carries (seq, send time). */
static void *paced_producer(void *arg) {
    producer_ctx *ctx = arg;
    int cap = (int)(arg_rate / 100 + 16);
    char *buf = calloc((size_t)cap, (size_t)arg_size);
    rd_kafka_message_t *msgs = calloc((size_t)cap, sizeof *msgs);
    if (!buf || !msgs) die("calloc", "producer");
    int64_t start = now_ns();
    long long sent = 0, tick = 0;
    while (sent < ctx->total) {
        int64_t t = now_ns();
        long long due = (long long)((double)(t - start) * (double)arg_rate / 1e9);
        if (due > ctx->total) due = ctx->total;
        int n = (int)(due - sent < cap ? due - sent : cap);
        if (n > 0) {
            memset(msgs, 0, sizeof(*msgs) * (size_t)n);
            for (int i = 0; i < n; i++) {
                char *p = buf + (size_t)i * (size_t)arg_size;
                put_u64(p, (uint64_t)(sent + i));
                put_u64(p + 8, (uint64_t)t);
                msgs[i].payload = p;
                msgs[i].len = (size_t)arg_size;
            }
            enqueue_all(ctx->rk, ctx->rkt, (int32_t)(tick % arg_partitions), msgs, n);
            sent += n;
        }
        tick++;
        struct timespec next = {0, 0};
        int64_t wake = start + tick * 1000000LL;
        next.tv_sec = wake / 1000000000LL;
        next.tv_nsec = wake % 1000000000LL;
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    }
    while (delivered + failed < ctx->total && rd_kafka_outq_len(ctx->rk) > 0)
        rd_kafka_flush(ctx->rk, 100);
    free(buf);
    free(msgs);
    return NULL;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int run_latency(void) {
    long long total = (long long)(arg_rate * arg_duration);
    rd_kafka_t *prk = new_client(RD_KAFKA_PRODUCER);
    rd_kafka_topic_t *prkt = rd_kafka_topic_new(prk, arg_topic, NULL);
    warm_up(prk, prkt);
    rd_kafka_t *crk = new_client(RD_KAFKA_CONSUMER);
    rd_kafka_topic_t *crkt = rd_kafka_topic_new(crk, arg_topic, NULL);
    warm_up(crk, crkt);
    rd_kafka_queue_t *q = rd_kafka_queue_new(crk);
    for (int p = 0; p < arg_partitions; p++)
        if (rd_kafka_consume_start_queue(crkt, p, RD_KAFKA_OFFSET_BEGINNING, q) == -1)
            die("rd_kafka_consume_start_queue", rd_kafka_err2str(rd_kafka_last_error()));

    producer_ctx ctx = {prk, prkt, total};
    pthread_t thr;
    pthread_create(&thr, NULL, paced_producer, &ctx);

    int64_t *lat = calloc((size_t)total + 1, sizeof *lat);
    unsigned char *seen = calloc((size_t)total + 1, 1);
    rd_kafka_message_t **msgs = calloc((size_t)arg_batch, sizeof *msgs);
    if (!lat || !seen || !msgs) die("calloc", "latency");
    long long received = 0, measured = 0, dupes = 0, errors = 0;
    int64_t t0 = now_ns();
    int64_t last_progress = t0;
    while (received < total && (now_ns() - t0) / 1e9 < arg_duration + arg_timeout &&
           (now_ns() - last_progress) / 1e9 < arg_duration + arg_idle) {
        /* latency: wake on the first message, then take whatever else is ready */
        rd_kafka_message_t *first = rd_kafka_consume_queue(q, (int)arg_wait);
        if (!first) continue;
        last_progress = now_ns();
        msgs[0] = first;
        ssize_t n = rd_kafka_consume_batch_queue(q, 0, msgs + 1, (size_t)arg_batch - 1);
        n = n < 0 ? 1 : n + 1;
        int64_t t = now_ns();
        for (ssize_t i = 0; i < n; i++) {
            rd_kafka_message_t *m = msgs[i];
            if (m->err) {
                if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) errors++;
            } else if (m->len >= 16) {
                uint64_t seq = get_u64(m->payload);
                int64_t sent_at = (int64_t)get_u64((const char *)m->payload + 8);
                if (seq < (uint64_t)total && !seen[seq]) {
                    seen[seq] = 1;
                    received++;
                    if ((long long)seq >= arg_warmup) lat[measured++] = t - sent_at;
                } else {
                    dupes++;
                }
            }
            rd_kafka_message_destroy(m);
        }
    }
    pthread_join(thr, NULL);
    qsort(lat, (size_t)measured, sizeof *lat, cmp_i64);
    double p50 = measured ? lat[(measured - 1) * 50 / 100] / 1e6 : -1;
    double p99 = measured ? lat[(measured - 1) * 99 / 100] / 1e6 : -1;
    double mx = measured ? lat[measured - 1] / 1e6 : -1;
    printf("RESULT {\"count\": %lld, \"produced\": %lld, \"measured\": %lld, \"duplicates\": %lld, "
           "\"errors\": %lld, \"p50_ms\": %.3f, \"p99_ms\": %.3f, \"max_ms\": %.3f, "
           "\"bytes\": %lld, \"seconds\": %.6f}\n",
           received, delivered, measured, dupes, errors, p50, p99, mx, received * arg_size,
           (now_ns() - t0) / 1e9);
    fflush(stdout);
    for (int p = 0; p < arg_partitions; p++) rd_kafka_consume_stop(crkt, p);
    rd_kafka_queue_destroy(q);
    rd_kafka_topic_destroy(crkt);
    rd_kafka_destroy(crk);
    rd_kafka_topic_destroy(prkt);
    rd_kafka_destroy(prk);
    return received == total ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc < 2) die("usage", "native produce|consume|latency key=value...");
    setvbuf(stdout, NULL, _IOLBF, 0);
    parse_args(argc, argv);
    if (!strcmp(argv[1], "produce")) return run_produce();
    if (!strcmp(argv[1], "consume")) return run_consume();
    if (!strcmp(argv[1], "latency")) return run_latency();
    die("unknown mode", argv[1]);
    return 2;
}
