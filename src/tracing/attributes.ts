/**
 * The attributes of the gateway's spans: the label values the metrics use (src/metrics/gateway-metrics.ts),
 * under the `gateway.` namespace, and OpenTelemetry's HTTP status. Nothing else is written to a span: never
 * the key or its id, the path, the query, a header, a body or an upstream's URL (docs/operations.md, "Traces").
 */
export const LABEL = "gateway.label";
export const FAMILY = "gateway.family";
export const METHOD = "gateway.method";
export const METHOD_CLASS = "gateway.class";
export const RESULT = "gateway.result";
export const ERROR_CODE = "gateway.error_code";
export const TRANSPORT = "gateway.transport";
export const REQUEST_ID = "gateway.request_id";
export const UPSTREAM = "gateway.upstream";
export const ATTEMPT = "gateway.attempt";
export const OUTCOME = "gateway.outcome";
export const FAILURE = "gateway.failure";
export const CACHE = "gateway.cache";
export const TIER = "gateway.tier";
export const COMPUTE_UNITS = "gateway.compute_units";
export const STATUS = "http.response.status_code";
