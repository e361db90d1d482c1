/* librdkafka's built-in mock cluster (rdkafka_mock.h): real TCP listeners on
 * 127.0.0.1 with fault injection. Used by rdk.mock.MockCluster. */
typedef struct rd_kafka_mock_cluster_s rd_kafka_mock_cluster_t;

rd_kafka_mock_cluster_t *rd_kafka_mock_cluster_new(rd_kafka_t *rk, int broker_cnt);
void rd_kafka_mock_cluster_destroy(rd_kafka_mock_cluster_t *mcluster);
const char *rd_kafka_mock_cluster_bootstraps(const rd_kafka_mock_cluster_t *mcluster);
void rd_kafka_mock_group_initial_rebalance_delay_ms(rd_kafka_mock_cluster_t *mcluster,
                                                    int32_t delay_ms);

rd_kafka_resp_err_t rd_kafka_mock_topic_create(rd_kafka_mock_cluster_t *mcluster,
                                               const char *topic, int partition_cnt,
                                               int replication_factor);
void rd_kafka_mock_topic_set_error(rd_kafka_mock_cluster_t *mcluster, const char *topic,
                                   rd_kafka_resp_err_t err);

rd_kafka_resp_err_t rd_kafka_mock_broker_set_down(rd_kafka_mock_cluster_t *mcluster,
                                                  int32_t broker_id);
rd_kafka_resp_err_t rd_kafka_mock_broker_set_up(rd_kafka_mock_cluster_t *mcluster,
                                                int32_t broker_id);
rd_kafka_resp_err_t rd_kafka_mock_broker_set_rtt(rd_kafka_mock_cluster_t *mcluster,
                                                 int32_t broker_id, int rtt_ms);
rd_kafka_resp_err_t rd_kafka_mock_broker_remove_from_metadata(rd_kafka_mock_cluster_t *mcluster,
                                                             int32_t broker_id);

rd_kafka_resp_err_t rd_kafka_mock_coordinator_set(rd_kafka_mock_cluster_t *mcluster,
                                                  const char *key_type, const char *key,
                                                  int32_t broker_id);

rd_kafka_resp_err_t rd_kafka_mock_partition_set_leader(rd_kafka_mock_cluster_t *mcluster,
                                                       const char *topic, int32_t partition,
                                                       int32_t broker_id);
rd_kafka_resp_err_t rd_kafka_mock_partition_set_follower(rd_kafka_mock_cluster_t *mcluster,
                                                         const char *topic, int32_t partition,
                                                         int32_t broker_id);

void rd_kafka_mock_push_request_errors_array(rd_kafka_mock_cluster_t *mcluster, int16_t ApiKey,
                                             size_t cnt, const rd_kafka_resp_err_t *errors);
void rd_kafka_mock_clear_request_errors(rd_kafka_mock_cluster_t *mcluster, int16_t ApiKey);
