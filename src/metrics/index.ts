export {
  ConnectorMetrics,
  DEFAULT_STORE_SERIES,
  operationOf,
  type QueueDepthSource,
} from "./connector-metrics.ts";
export { HEARTBEAT_EVERY_MS, readHeartbeats, startHeartbeat } from "./heartbeat.ts";
export { metricsRoute, startMetricsServer } from "./metrics-server.ts";
