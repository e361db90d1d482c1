/* The subset of librdkafka 2.15 (rdkafka.h) that rdk calls, grouped by area.
 * Read by build_ffi.py into ffibuilder.cdef(); the compiler checks every
 * declaration against the real header, so a mismatch fails the build. */

/* ---- opaque handles ---------------------------------------------------- */
typedef struct rd_kafka_s rd_kafka_t;
typedef struct rd_kafka_topic_s rd_kafka_topic_t;
typedef struct rd_kafka_conf_s rd_kafka_conf_t;
typedef struct rd_kafka_topic_conf_s rd_kafka_topic_conf_t;
typedef struct rd_kafka_queue_s rd_kafka_queue_t;
typedef struct rd_kafka_op_s rd_kafka_event_t;
typedef struct rd_kafka_headers_s rd_kafka_headers_t;
typedef struct rd_kafka_topic_result_s rd_kafka_topic_result_t;
typedef struct rd_kafka_NewTopic_s rd_kafka_NewTopic_t;
typedef struct rd_kafka_DeleteTopic_s rd_kafka_DeleteTopic_t;
typedef struct rd_kafka_AdminOptions_s rd_kafka_AdminOptions_t;
typedef struct rd_kafka_CreateTopics_result_s rd_kafka_CreateTopics_result_t;
typedef struct rd_kafka_DeleteTopics_result_s rd_kafka_DeleteTopics_result_t;
typedef struct rd_kafka_CreatePartitions_result_s rd_kafka_CreatePartitions_result_t;
typedef struct rd_kafka_NewPartitions_s rd_kafka_NewPartitions_t;
typedef struct rd_kafka_error_s rd_kafka_error_t;
typedef struct rd_kafka_consumer_group_metadata_s rd_kafka_consumer_group_metadata_t;

/* ---- version and errors ------------------------------------------------ */
int rd_kafka_version(void);
const char *rd_kafka_version_str(void);

typedef enum {
    RD_KAFKA_RESP_ERR__BAD_MSG,
    RD_KAFKA_RESP_ERR__TRANSPORT,
    RD_KAFKA_RESP_ERR__PARTITION_EOF,
    RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION,
    RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC,
    RD_KAFKA_RESP_ERR__TIMED_OUT,
    RD_KAFKA_RESP_ERR__QUEUE_FULL,
    RD_KAFKA_RESP_ERR__MSG_TIMED_OUT,
    RD_KAFKA_RESP_ERR__INVALID_ARG,
    RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET,
    RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN,
    RD_KAFKA_RESP_ERR__FATAL,
    RD_KAFKA_RESP_ERR__PURGE_QUEUE,
    RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS,
    RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS,
    RD_KAFKA_RESP_ERR__STATE,
    RD_KAFKA_RESP_ERR__FENCED,
    RD_KAFKA_RESP_ERR__NOT_CONFIGURED,
    RD_KAFKA_RESP_ERR__PREV_IN_PROGRESS,
    RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH,
    RD_KAFKA_RESP_ERR_PRODUCER_FENCED,
    RD_KAFKA_RESP_ERR_NO_ERROR,
    RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE,
    RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART,
    RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE,
    RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
    RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT,
    RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE,
    RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS,
    RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS,
    RD_KAFKA_RESP_ERR_INVALID_REQUIRED_ACKS,
    ...
} rd_kafka_resp_err_t;

struct rd_kafka_err_desc {
    rd_kafka_resp_err_t code;
    const char *name;
    const char *desc;
};
void rd_kafka_get_err_descs(const struct rd_kafka_err_desc **errdescs, size_t *cntp);
const char *rd_kafka_err2str(rd_kafka_resp_err_t err);
const char *rd_kafka_err2name(rd_kafka_resp_err_t err);
rd_kafka_resp_err_t rd_kafka_fatal_error(rd_kafka_t *rk, char *errstr, size_t errstr_size);

rd_kafka_resp_err_t rd_kafka_error_code(const rd_kafka_error_t *error);
const char *rd_kafka_error_string(const rd_kafka_error_t *error);
int rd_kafka_error_is_fatal(const rd_kafka_error_t *error);
int rd_kafka_error_is_retriable(const rd_kafka_error_t *error);
int rd_kafka_error_txn_requires_abort(const rd_kafka_error_t *error);
const char *rd_kafka_error_name(const rd_kafka_error_t *error);
void rd_kafka_error_destroy(rd_kafka_error_t *error);

/* ---- configuration ----------------------------------------------------- */
typedef enum {
    RD_KAFKA_CONF_UNKNOWN = -2,
    RD_KAFKA_CONF_INVALID = -1,
    RD_KAFKA_CONF_OK = 0
} rd_kafka_conf_res_t;

rd_kafka_conf_t *rd_kafka_conf_new(void);
void rd_kafka_conf_destroy(rd_kafka_conf_t *conf);
rd_kafka_conf_res_t rd_kafka_conf_set(rd_kafka_conf_t *conf, const char *name,
                                      const char *value, char *errstr, size_t errstr_size);
rd_kafka_conf_res_t rd_kafka_conf_get(const rd_kafka_conf_t *conf, const char *name,
                                      char *dest, size_t *dest_size);
void rd_kafka_conf_set_events(rd_kafka_conf_t *conf, int events);
void rd_kafka_conf_set_default_topic_conf(rd_kafka_conf_t *conf, rd_kafka_topic_conf_t *tconf);

rd_kafka_topic_conf_t *rd_kafka_topic_conf_new(void);
rd_kafka_topic_conf_t *rd_kafka_topic_conf_dup(const rd_kafka_topic_conf_t *conf);
void rd_kafka_topic_conf_destroy(rd_kafka_topic_conf_t *topic_conf);
rd_kafka_conf_res_t rd_kafka_topic_conf_set(rd_kafka_topic_conf_t *conf, const char *name,
                                            const char *value, char *errstr, size_t errstr_size);
void rd_kafka_topic_conf_set_opaque(rd_kafka_topic_conf_t *conf, void *rkt_opaque);

/* ---- client handles ---------------------------------------------------- */
typedef enum { RD_KAFKA_PRODUCER, RD_KAFKA_CONSUMER } rd_kafka_type_t;

rd_kafka_t *rd_kafka_new(rd_kafka_type_t type, rd_kafka_conf_t *conf,
                         char *errstr, size_t errstr_size);
void rd_kafka_destroy(rd_kafka_t *rk);
const char *rd_kafka_name(const rd_kafka_t *rk);
int rd_kafka_outq_len(rd_kafka_t *rk);
rd_kafka_resp_err_t rd_kafka_flush(rd_kafka_t *rk, int timeout_ms);
rd_kafka_resp_err_t rd_kafka_purge(rd_kafka_t *rk, int purge_flags);
#define RD_KAFKA_PURGE_F_QUEUE ...
#define RD_KAFKA_PURGE_F_INFLIGHT ...
#define RD_KAFKA_PURGE_F_NON_BLOCKING ...

rd_kafka_topic_t *rd_kafka_topic_new(rd_kafka_t *rk, const char *topic,
                                     rd_kafka_topic_conf_t *conf);
void rd_kafka_topic_destroy(rd_kafka_topic_t *rkt);
const char *rd_kafka_topic_name(const rd_kafka_topic_t *rkt);

/* ---- messages and headers ---------------------------------------------- */
typedef struct rd_kafka_message_s {
    rd_kafka_resp_err_t err;
    rd_kafka_topic_t *rkt;
    int32_t partition;
    void *payload;
    size_t len;
    void *key;
    size_t key_len;
    int64_t offset;
    void *_private;
} rd_kafka_message_t;
void rd_kafka_message_destroy(rd_kafka_message_t *rkmessage);

#define RD_KAFKA_PARTITION_UA ...
#define RD_KAFKA_OFFSET_BEGINNING ...
#define RD_KAFKA_OFFSET_END ...
#define RD_KAFKA_OFFSET_STORED ...
#define RD_KAFKA_OFFSET_INVALID ...
#define RD_KAFKA_MSG_F_COPY ...
#define RD_KAFKA_MSG_F_PARTITION ...

/* ---- event queues (all callbacks arrive here, polled by rdk threads) ---- */
#define RD_KAFKA_EVENT_NONE ...
#define RD_KAFKA_EVENT_DR ...
#define RD_KAFKA_EVENT_LOG ...
#define RD_KAFKA_EVENT_ERROR ...
#define RD_KAFKA_EVENT_STATS ...
#define RD_KAFKA_EVENT_REBALANCE ...
#define RD_KAFKA_EVENT_OFFSET_COMMIT ...
#define RD_KAFKA_EVENT_CREATETOPICS_RESULT ...
#define RD_KAFKA_EVENT_DELETETOPICS_RESULT ...
typedef int rd_kafka_event_type_t;

rd_kafka_queue_t *rd_kafka_queue_new(rd_kafka_t *rk);
void rd_kafka_queue_destroy(rd_kafka_queue_t *rkqu);
rd_kafka_queue_t *rd_kafka_queue_get_main(rd_kafka_t *rk);
size_t rd_kafka_queue_length(rd_kafka_queue_t *rkqu);
void rd_kafka_queue_yield(rd_kafka_queue_t *rkqu);
rd_kafka_resp_err_t rd_kafka_set_log_queue(rd_kafka_t *rk, rd_kafka_queue_t *rkqu);

rd_kafka_event_t *rd_kafka_queue_poll(rd_kafka_queue_t *rkqu, int timeout_ms);
rd_kafka_event_type_t rd_kafka_event_type(const rd_kafka_event_t *rkev);
void rd_kafka_event_destroy(rd_kafka_event_t *rkev);
rd_kafka_resp_err_t rd_kafka_event_error(rd_kafka_event_t *rkev);
const char *rd_kafka_event_error_string(rd_kafka_event_t *rkev);
int rd_kafka_event_error_is_fatal(rd_kafka_event_t *rkev);
const char *rd_kafka_event_stats(rd_kafka_event_t *rkev);
int rd_kafka_event_log(rd_kafka_event_t *rkev, const char **fac, const char **str, int *level);

/* ---- legacy (simple) consumer: explicit partitions and start offsets ---- */
int rd_kafka_consume_start_queue(rd_kafka_topic_t *rkt, int32_t partition,
                                 int64_t offset, rd_kafka_queue_t *rkqu);
int rd_kafka_consume_stop(rd_kafka_topic_t *rkt, int32_t partition);
rd_kafka_resp_err_t rd_kafka_last_error(void);

typedef struct rd_kafka_topic_partition_s {
    char *topic;
    int32_t partition;
    int64_t offset;
    void *metadata;
    size_t metadata_size;
    void *opaque;
    rd_kafka_resp_err_t err;
    ...;
} rd_kafka_topic_partition_t;
typedef struct rd_kafka_topic_partition_list_s {
    int cnt;
    int size;
    rd_kafka_topic_partition_t *elems;
} rd_kafka_topic_partition_list_t;
rd_kafka_topic_partition_list_t *rd_kafka_topic_partition_list_new(int size);
void rd_kafka_topic_partition_list_destroy(rd_kafka_topic_partition_list_t *rkparlist);
rd_kafka_topic_partition_t *rd_kafka_topic_partition_list_add(
    rd_kafka_topic_partition_list_t *rktparlist, const char *topic, int32_t partition);
rd_kafka_resp_err_t rd_kafka_pause_partitions(rd_kafka_t *rk,
                                              rd_kafka_topic_partition_list_t *partitions);
rd_kafka_resp_err_t rd_kafka_resume_partitions(rd_kafka_t *rk,
                                               rd_kafka_topic_partition_list_t *partitions);

/* group offsets (BrokerOffsetStore) */
rd_kafka_resp_err_t rd_kafka_commit(rd_kafka_t *rk, const rd_kafka_topic_partition_list_t *offsets,
                                    int async);
rd_kafka_resp_err_t rd_kafka_committed(rd_kafka_t *rk, rd_kafka_topic_partition_list_t *partitions,
                                       int timeout_ms);

/* ---- metadata and offsets lookup --------------------------------------- */
typedef struct rd_kafka_metadata_broker {
    int32_t id;
    char *host;
    int port;
} rd_kafka_metadata_broker_t;
typedef struct rd_kafka_metadata_partition {
    int32_t id;
    rd_kafka_resp_err_t err;
    int32_t leader;
    int replica_cnt;
    int32_t *replicas;
    int isr_cnt;
    int32_t *isrs;
} rd_kafka_metadata_partition_t;
typedef struct rd_kafka_metadata_topic {
    char *topic;
    int partition_cnt;
    struct rd_kafka_metadata_partition *partitions;
    rd_kafka_resp_err_t err;
} rd_kafka_metadata_topic_t;
typedef struct rd_kafka_metadata {
    int broker_cnt;
    struct rd_kafka_metadata_broker *brokers;
    int topic_cnt;
    struct rd_kafka_metadata_topic *topics;
    int32_t orig_broker_id;
    char *orig_broker_name;
} rd_kafka_metadata_t;
rd_kafka_resp_err_t rd_kafka_metadata(rd_kafka_t *rk, int all_topics, rd_kafka_topic_t *only_rkt,
                                      const struct rd_kafka_metadata **metadatap, int timeout_ms);
void rd_kafka_metadata_destroy(const struct rd_kafka_metadata *metadata);

rd_kafka_resp_err_t rd_kafka_query_watermark_offsets(rd_kafka_t *rk, const char *topic,
                                                     int32_t partition, int64_t *low,
                                                     int64_t *high, int timeout_ms);
rd_kafka_resp_err_t rd_kafka_get_watermark_offsets(rd_kafka_t *rk, const char *topic,
                                                   int32_t partition, int64_t *low,
                                                   int64_t *high);
rd_kafka_resp_err_t rd_kafka_offsets_for_times(rd_kafka_t *rk,
                                               rd_kafka_topic_partition_list_t *offsets,
                                               int timeout_ms);

/* ---- admin: topics ----------------------------------------------------- */
typedef enum {
    RD_KAFKA_ADMIN_OP_ANY,
    ...
} rd_kafka_admin_op_t;
rd_kafka_AdminOptions_t *rd_kafka_AdminOptions_new(rd_kafka_t *rk, rd_kafka_admin_op_t for_api);
void rd_kafka_AdminOptions_destroy(rd_kafka_AdminOptions_t *options);
rd_kafka_resp_err_t rd_kafka_AdminOptions_set_operation_timeout(rd_kafka_AdminOptions_t *options,
                                                                int timeout_ms, char *errstr,
                                                                size_t errstr_size);
rd_kafka_resp_err_t rd_kafka_AdminOptions_set_request_timeout(rd_kafka_AdminOptions_t *options,
                                                              int timeout_ms, char *errstr,
                                                              size_t errstr_size);

rd_kafka_NewTopic_t *rd_kafka_NewTopic_new(const char *topic, int num_partitions,
                                           int replication_factor, char *errstr,
                                           size_t errstr_size);
void rd_kafka_NewTopic_destroy(rd_kafka_NewTopic_t *new_topic);
rd_kafka_resp_err_t rd_kafka_NewTopic_set_config(rd_kafka_NewTopic_t *new_topic,
                                                 const char *name, const char *value);
void rd_kafka_CreateTopics(rd_kafka_t *rk, rd_kafka_NewTopic_t **new_topics, size_t new_topic_cnt,
                           const rd_kafka_AdminOptions_t *options, rd_kafka_queue_t *rkqu);
const rd_kafka_CreateTopics_result_t *rd_kafka_event_CreateTopics_result(rd_kafka_event_t *rkev);
const rd_kafka_topic_result_t **rd_kafka_CreateTopics_result_topics(
    const rd_kafka_CreateTopics_result_t *result, size_t *cntp);

rd_kafka_DeleteTopic_t *rd_kafka_DeleteTopic_new(const char *topic);
void rd_kafka_DeleteTopic_destroy(rd_kafka_DeleteTopic_t *del_topic);
void rd_kafka_DeleteTopics(rd_kafka_t *rk, rd_kafka_DeleteTopic_t **del_topics,
                           size_t del_topic_cnt, const rd_kafka_AdminOptions_t *options,
                           rd_kafka_queue_t *rkqu);
const rd_kafka_DeleteTopics_result_t *rd_kafka_event_DeleteTopics_result(rd_kafka_event_t *rkev);
const rd_kafka_topic_result_t **rd_kafka_DeleteTopics_result_topics(
    const rd_kafka_DeleteTopics_result_t *result, size_t *cntp);

rd_kafka_NewPartitions_t *rd_kafka_NewPartitions_new(const char *topic, size_t new_total_cnt,
                                                     char *errstr, size_t errstr_size);
void rd_kafka_NewPartitions_destroy(rd_kafka_NewPartitions_t *new_parts);
void rd_kafka_CreatePartitions(rd_kafka_t *rk, rd_kafka_NewPartitions_t **new_parts,
                               size_t new_parts_cnt, const rd_kafka_AdminOptions_t *options,
                               rd_kafka_queue_t *rkqu);
const rd_kafka_CreatePartitions_result_t *rd_kafka_event_CreatePartitions_result(
    rd_kafka_event_t *rkev);
const rd_kafka_topic_result_t **rd_kafka_CreatePartitions_result_topics(
    const rd_kafka_CreatePartitions_result_t *result, size_t *cntp);

rd_kafka_resp_err_t rd_kafka_topic_result_error(const rd_kafka_topic_result_t *topicres);
const char *rd_kafka_topic_result_error_string(const rd_kafka_topic_result_t *topicres);
const char *rd_kafka_topic_result_name(const rd_kafka_topic_result_t *topicres);

/* ---- admin: groups (list, describe, delete; group configs) ------------------
 * ConfigResource is typedef'd in rdk_share.h (read later): named by its struct here. */
typedef struct rd_kafka_group_result_s rd_kafka_group_result_t;
typedef struct rd_kafka_DeleteGroup_s rd_kafka_DeleteGroup_t;
typedef struct rd_kafka_ConsumerGroupListing_s rd_kafka_ConsumerGroupListing_t;
typedef struct rd_kafka_ConsumerGroupDescription_s rd_kafka_ConsumerGroupDescription_t;
typedef struct rd_kafka_MemberDescription_s rd_kafka_MemberDescription_t;
typedef struct rd_kafka_MemberAssignment_s rd_kafka_MemberAssignment_t;
typedef struct rd_kafka_ConfigEntry_s rd_kafka_ConfigEntry_t;
typedef struct rd_kafka_ListConsumerGroups_result_s rd_kafka_ListConsumerGroups_result_t;
typedef struct rd_kafka_DescribeConsumerGroups_result_s rd_kafka_DescribeConsumerGroups_result_t;
typedef struct rd_kafka_DeleteGroups_result_s rd_kafka_DeleteGroups_result_t;
typedef struct rd_kafka_DescribeConfigs_result_s rd_kafka_DescribeConfigs_result_t;
typedef enum { RD_KAFKA_CONSUMER_GROUP_STATE_UNKNOWN, ... } rd_kafka_consumer_group_state_t;
typedef enum { RD_KAFKA_CONSUMER_GROUP_TYPE_UNKNOWN, ... } rd_kafka_consumer_group_type_t;
const char *rd_kafka_consumer_group_state_name(rd_kafka_consumer_group_state_t state);
const char *rd_kafka_consumer_group_type_name(rd_kafka_consumer_group_type_t type);
/* an rd_kafka_AlterConfigOpType_t value (that enum is declared in rdk_share.h) */
static const int RD_KAFKA_ALTER_CONFIG_OP_TYPE_DELETE;

const rd_kafka_error_t *rd_kafka_group_result_error(const rd_kafka_group_result_t *groupres);
const char *rd_kafka_group_result_name(const rd_kafka_group_result_t *groupres);

rd_kafka_DeleteGroup_t *rd_kafka_DeleteGroup_new(const char *group);
void rd_kafka_DeleteGroup_destroy(rd_kafka_DeleteGroup_t *del_group);
void rd_kafka_DeleteGroups(rd_kafka_t *rk, rd_kafka_DeleteGroup_t **del_groups,
                           size_t del_group_cnt, const rd_kafka_AdminOptions_t *options,
                           rd_kafka_queue_t *rkqu);
const rd_kafka_DeleteGroups_result_t *rd_kafka_event_DeleteGroups_result(rd_kafka_event_t *rkev);
const rd_kafka_group_result_t **rd_kafka_DeleteGroups_result_groups(
    const rd_kafka_DeleteGroups_result_t *result, size_t *cntp);

void rd_kafka_ListConsumerGroups(rd_kafka_t *rk, const rd_kafka_AdminOptions_t *options,
                                 rd_kafka_queue_t *rkqu);
const rd_kafka_ListConsumerGroups_result_t *rd_kafka_event_ListConsumerGroups_result(
    rd_kafka_event_t *rkev);
const rd_kafka_ConsumerGroupListing_t **rd_kafka_ListConsumerGroups_result_valid(
    const rd_kafka_ListConsumerGroups_result_t *result, size_t *cntp);
const char *rd_kafka_ConsumerGroupListing_group_id(const rd_kafka_ConsumerGroupListing_t *grplist);
rd_kafka_consumer_group_state_t rd_kafka_ConsumerGroupListing_state(
    const rd_kafka_ConsumerGroupListing_t *grplist);
rd_kafka_consumer_group_type_t rd_kafka_ConsumerGroupListing_type(
    const rd_kafka_ConsumerGroupListing_t *grplist);

void rd_kafka_DescribeConsumerGroups(rd_kafka_t *rk, const char **groups, size_t groups_cnt,
                                     const rd_kafka_AdminOptions_t *options,
                                     rd_kafka_queue_t *rkqu);
const rd_kafka_DescribeConsumerGroups_result_t *rd_kafka_event_DescribeConsumerGroups_result(
    rd_kafka_event_t *rkev);
const rd_kafka_ConsumerGroupDescription_t **rd_kafka_DescribeConsumerGroups_result_groups(
    const rd_kafka_DescribeConsumerGroups_result_t *result, size_t *cntp);
const char *rd_kafka_ConsumerGroupDescription_group_id(
    const rd_kafka_ConsumerGroupDescription_t *grpdesc);
const rd_kafka_error_t *rd_kafka_ConsumerGroupDescription_error(
    const rd_kafka_ConsumerGroupDescription_t *grpdesc);
rd_kafka_consumer_group_state_t rd_kafka_ConsumerGroupDescription_state(
    const rd_kafka_ConsumerGroupDescription_t *grpdesc);
rd_kafka_consumer_group_type_t rd_kafka_ConsumerGroupDescription_type(
    const rd_kafka_ConsumerGroupDescription_t *grpdesc);
size_t rd_kafka_ConsumerGroupDescription_member_count(
    const rd_kafka_ConsumerGroupDescription_t *grpdesc);
const rd_kafka_MemberDescription_t *rd_kafka_ConsumerGroupDescription_member(
    const rd_kafka_ConsumerGroupDescription_t *grpdesc, size_t idx);
const char *rd_kafka_MemberDescription_client_id(const rd_kafka_MemberDescription_t *member);
const char *rd_kafka_MemberDescription_consumer_id(const rd_kafka_MemberDescription_t *member);
const char *rd_kafka_MemberDescription_host(const rd_kafka_MemberDescription_t *member);
const rd_kafka_MemberAssignment_t *rd_kafka_MemberDescription_assignment(
    const rd_kafka_MemberDescription_t *member);
const rd_kafka_topic_partition_list_t *rd_kafka_MemberAssignment_partitions(
    const rd_kafka_MemberAssignment_t *assignment);

void rd_kafka_DescribeConfigs(rd_kafka_t *rk, struct rd_kafka_ConfigResource_s **configs,
                              size_t config_cnt, const rd_kafka_AdminOptions_t *options,
                              rd_kafka_queue_t *rkqu);
const rd_kafka_DescribeConfigs_result_t *rd_kafka_event_DescribeConfigs_result(
    rd_kafka_event_t *rkev);
const struct rd_kafka_ConfigResource_s **rd_kafka_DescribeConfigs_result_resources(
    const rd_kafka_DescribeConfigs_result_t *result, size_t *cntp);
const rd_kafka_ConfigEntry_t **rd_kafka_ConfigResource_configs(
    const struct rd_kafka_ConfigResource_s *config, size_t *cntp);
const char *rd_kafka_ConfigEntry_name(const rd_kafka_ConfigEntry_t *entry);
const char *rd_kafka_ConfigEntry_value(const rd_kafka_ConfigEntry_t *entry);
int rd_kafka_ConfigEntry_is_default(const rd_kafka_ConfigEntry_t *entry);
int rd_kafka_ConfigEntry_source(const rd_kafka_ConfigEntry_t *entry); /* rd_kafka_ConfigSource_t */

/* ---- high-level (group) consumer: subscribe, rebalance, seek ------------- */
rd_kafka_resp_err_t rd_kafka_subscribe(rd_kafka_t *rk, const rd_kafka_topic_partition_list_t *topics);
rd_kafka_resp_err_t rd_kafka_unsubscribe(rd_kafka_t *rk);
rd_kafka_resp_err_t rd_kafka_subscription(rd_kafka_t *rk, rd_kafka_topic_partition_list_t **topics);
rd_kafka_resp_err_t rd_kafka_assign(rd_kafka_t *rk, const rd_kafka_topic_partition_list_t *partitions);
rd_kafka_error_t *rd_kafka_incremental_assign(rd_kafka_t *rk,
                                              const rd_kafka_topic_partition_list_t *partitions);
rd_kafka_error_t *rd_kafka_incremental_unassign(rd_kafka_t *rk,
                                                const rd_kafka_topic_partition_list_t *partitions);
rd_kafka_resp_err_t rd_kafka_assignment(rd_kafka_t *rk, rd_kafka_topic_partition_list_t **partitions);
int rd_kafka_assignment_lost(rd_kafka_t *rk);
const char *rd_kafka_rebalance_protocol(rd_kafka_t *rk);
rd_kafka_queue_t *rd_kafka_queue_get_consumer(rd_kafka_t *rk);
rd_kafka_resp_err_t rd_kafka_poll_set_consumer(rd_kafka_t *rk);
rd_kafka_resp_err_t rd_kafka_consumer_close(rd_kafka_t *rk);
rd_kafka_error_t *rd_kafka_consumer_close_queue(rd_kafka_t *rk, rd_kafka_queue_t *rkqu);
int rd_kafka_consumer_closed(rd_kafka_t *rk);
rd_kafka_error_t *rd_kafka_seek_partitions(rd_kafka_t *rk, rd_kafka_topic_partition_list_t *partitions,
                                           int timeout_ms);
rd_kafka_resp_err_t rd_kafka_position(rd_kafka_t *rk, rd_kafka_topic_partition_list_t *partitions);
rd_kafka_resp_err_t rd_kafka_offsets_store(rd_kafka_t *rk, rd_kafka_topic_partition_list_t *offsets);
rd_kafka_topic_partition_list_t *rd_kafka_event_topic_partition_list(rd_kafka_event_t *rkev);
rd_kafka_topic_partition_list_t *rd_kafka_topic_partition_list_copy(
    const rd_kafka_topic_partition_list_t *src);
void rd_kafka_queue_forward(rd_kafka_queue_t *src, rd_kafka_queue_t *dst);
rd_kafka_queue_t *rd_kafka_queue_get_partition(rd_kafka_t *rk, const char *topic, int32_t partition);
char *rd_kafka_memberid(const rd_kafka_t *rk);
void rd_kafka_mem_free(rd_kafka_t *rk, void *ptr);
rd_kafka_consumer_group_metadata_t *rd_kafka_consumer_group_metadata(rd_kafka_t *rk);
rd_kafka_consumer_group_metadata_t *rd_kafka_consumer_group_metadata_new(const char *group_id);
void rd_kafka_consumer_group_metadata_destroy(rd_kafka_consumer_group_metadata_t *);

/* ---- transactions (producer) ------------------------------------------- */
rd_kafka_error_t *rd_kafka_init_transactions(rd_kafka_t *rk, int timeout_ms);
rd_kafka_error_t *rd_kafka_begin_transaction(rd_kafka_t *rk);
rd_kafka_error_t *rd_kafka_send_offsets_to_transaction(
    rd_kafka_t *rk, const rd_kafka_topic_partition_list_t *offsets,
    const rd_kafka_consumer_group_metadata_t *cgmetadata, int timeout_ms);
rd_kafka_error_t *rd_kafka_commit_transaction(rd_kafka_t *rk, int timeout_ms);
rd_kafka_error_t *rd_kafka_abort_transaction(rd_kafka_t *rk, int timeout_ms);

/* ---- SASL/OAUTHBEARER token refresh through the event API (oauth_cb) ------ */
#define RD_KAFKA_EVENT_OAUTHBEARER_TOKEN_REFRESH ...
const char *rd_kafka_event_config_string(rd_kafka_event_t *rkev);
rd_kafka_resp_err_t rd_kafka_oauthbearer_set_token(rd_kafka_t *rk, const char *token_value,
                                                   int64_t md_lifetime_ms,
                                                   const char *md_principal_name,
                                                   const char **extensions, size_t extension_size,
                                                   char *errstr, size_t errstr_size);
rd_kafka_resp_err_t rd_kafka_oauthbearer_set_token_failure(rd_kafka_t *rk, const char *errstr);
