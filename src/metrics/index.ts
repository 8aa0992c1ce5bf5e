export { ConnectorMetrics, operationOf, type QueueDepthSource } from "./connector-metrics.ts";
export { metricsRoute, startMetricsServer } from "./metrics-server.ts";
