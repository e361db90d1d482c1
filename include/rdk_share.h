/* librdkafka's share consumer (KIP-932, preview in 2.15), the group-config Admin call
 * rdk.ShareConsumer needs (share.auto.offset.reset), rdk's share helpers and the
 * C -> Python callbacks (served inside rd_kafka_share_poll on rdk's share thread).
 * cdef only (build_ffi.py); the structs are in rdk_share_structs.h. */

typedef struct rd_kafka_share_s rd_kafka_share_t;
typedef struct rd_kafka_messages_s rd_kafka_messages_t;
typedef struct rd_kafka_share_partition_offsets_s rd_kafka_share_partition_offsets_t;
typedef struct rd_kafka_share_partition_offsets_list_s rd_kafka_share_partition_offsets_list_t;
typedef enum rd_kafka_share_AcknowledgeType_s {
    RD_KAFKA_SHARE_ACKNOWLEDGE_TYPE_ACCEPT = 1,
    RD_KAFKA_SHARE_ACKNOWLEDGE_TYPE_RELEASE = 2,
    RD_KAFKA_SHARE_ACKNOWLEDGE_TYPE_REJECT = 3
} rd_kafka_share_AcknowledgeType_t;

rd_kafka_share_t *rd_kafka_share_consumer_new(rd_kafka_conf_t *conf, char *errstr,
                                              size_t errstr_size);
rd_kafka_resp_err_t rd_kafka_share_subscribe(rd_kafka_share_t *rkshare,
                                             const rd_kafka_topic_partition_list_t *topics);
rd_kafka_error_t *rd_kafka_share_poll(rd_kafka_share_t *rkshare, int timeout_ms,
                                      rd_kafka_messages_t **rkmessages);
size_t rd_kafka_messages_count(const rd_kafka_messages_t *messages);
void rd_kafka_messages_destroy(rd_kafka_messages_t *messages);
rd_kafka_error_t *rd_kafka_share_commit_sync(rd_kafka_share_t *rkshare, int timeout_ms,
                                             rd_kafka_topic_partition_list_t **partitions);
rd_kafka_error_t *rd_kafka_share_consumer_close(rd_kafka_share_t *rkshare);
rd_kafka_error_t *rd_kafka_share_destroy(rd_kafka_share_t *rkshare);
rd_kafka_error_t *rd_kafka_share_set_log_queue(rd_kafka_share_t *rkshare, rd_kafka_queue_t *rkqu);
rd_kafka_error_t *rd_kafka_share_set_acknowledgement_commit_cb(
    rd_kafka_share_t *rkshare,
    void (*cb)(rd_kafka_share_t *, rd_kafka_share_partition_offsets_list_t *,
               rd_kafka_resp_err_t, void *),
    void *opaque);
size_t rd_kafka_share_partition_offsets_list_count(
    const rd_kafka_share_partition_offsets_list_t *list);
const rd_kafka_share_partition_offsets_t *rd_kafka_share_partition_offsets_list_get(
    const rd_kafka_share_partition_offsets_list_t *list, size_t index);
const rd_kafka_topic_partition_t *rd_kafka_share_partition_offsets_partition(
    const rd_kafka_share_partition_offsets_t *partition_offsets);
size_t rd_kafka_share_partition_offsets_offsets_cnt(
    const rd_kafka_share_partition_offsets_t *partition_offsets);

/* C -> Python, all served on rdk's share thread (inside rd_kafka_share_poll/commit) */
void rd_kafka_conf_set_opaque(rd_kafka_conf_t *conf, void *opaque);
void rd_kafka_conf_set_stats_cb(rd_kafka_conf_t *conf,
                                int (*stats_cb)(rd_kafka_t *, char *, size_t, void *));
void rd_kafka_conf_set_error_cb(rd_kafka_conf_t *conf,
                                void (*error_cb)(rd_kafka_t *, int, const char *, void *));
void rd_kafka_conf_set_log_cb(rd_kafka_conf_t *conf,
                              void (*log_cb)(const rd_kafka_t *, int, const char *, const char *));
void *rd_kafka_opaque(const rd_kafka_t *rk);
extern "Python" void rdk_share_on_log(const rd_kafka_t *, int, const char *, const char *);
extern "Python" int rdk_share_on_stats(rd_kafka_t *, char *, size_t, void *);
extern "Python" void rdk_share_on_error(rd_kafka_t *, int, const char *, void *);
extern "Python" void rdk_share_on_ack(rd_kafka_share_t *, rd_kafka_share_partition_offsets_list_t *,
                                      rd_kafka_resp_err_t, void *);

/* ---- group configs (IncrementalAlterConfigs on a GROUP resource) ---------- */
typedef struct rd_kafka_ConfigResource_s rd_kafka_ConfigResource_t;
typedef struct rd_kafka_IncrementalAlterConfigs_result_s rd_kafka_IncrementalAlterConfigs_result_t;
typedef enum { RD_KAFKA_RESOURCE_GROUP, ... } rd_kafka_ResourceType_t;
typedef enum { RD_KAFKA_ALTER_CONFIG_OP_TYPE_SET, ... } rd_kafka_AlterConfigOpType_t;
#define RD_KAFKA_EVENT_INCREMENTALALTERCONFIGS_RESULT ...
rd_kafka_ConfigResource_t *rd_kafka_ConfigResource_new(rd_kafka_ResourceType_t restype,
                                                       const char *resname);
void rd_kafka_ConfigResource_destroy(rd_kafka_ConfigResource_t *config);
rd_kafka_error_t *rd_kafka_ConfigResource_add_incremental_config(
    rd_kafka_ConfigResource_t *config, const char *name, rd_kafka_AlterConfigOpType_t op_type,
    const char *value);
void rd_kafka_IncrementalAlterConfigs(rd_kafka_t *rk, rd_kafka_ConfigResource_t **configs,
                                      size_t config_cnt, const rd_kafka_AdminOptions_t *options,
                                      rd_kafka_queue_t *rkqu);
const rd_kafka_IncrementalAlterConfigs_result_t *rd_kafka_event_IncrementalAlterConfigs_result(
    rd_kafka_event_t *rkev);
const rd_kafka_ConfigResource_t **rd_kafka_IncrementalAlterConfigs_result_resources(
    const rd_kafka_IncrementalAlterConfigs_result_t *result, size_t *cntp);
rd_kafka_resp_err_t rd_kafka_ConfigResource_error(const rd_kafka_ConfigResource_t *config);
const char *rd_kafka_ConfigResource_error_string(const rd_kafka_ConfigResource_t *config);

/* ---- rdk's share helpers (src/rdk/_share.c): one call per batch ---------- */
rdk_share_batch *rdk_share_batch_new(void);
/* Destroy the batch's rd_kafka_messages_t (if any) and clear the rows. */
void rdk_share_batch_clear(rdk_share_batch *b);
void rdk_share_batch_free(rdk_share_batch *b);
/* Take over msgs (destroyed by the next clear/free) and copy its rows into b.
 * Returns b->n, or -1 if out of memory. */
int rdk_share_fill(rdk_share_batch *b, rd_kafka_messages_t *msgs);
/* Acknowledge every row j with types[j] (1 accept, 2 release, 3 reject; 0 skips it):
 * one rd_kafka_share_acknowledge_type per row, in one crossing. b->ack_err[j] gets each
 * result. Returns how many failed. */
int rdk_share_ack(rd_kafka_share_t *rkshare, rdk_share_batch *b, const int8_t *types);
