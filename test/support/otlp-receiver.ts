import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";

/** One span as an OTLP/HTTP JSON export carries it, with its attributes as plain values. */
export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly name: string;
  readonly attributes: Readonly<Record<string, unknown>>;
}

export interface OtlpReceiver {
  /** The traces URL to export to (`/v1/traces`). */
  readonly url: string;
  /** Every export's body, as the collector received it: what a search for a secret must read. */
  readonly bodies: string[];
  spans(): ReceivedSpan[];
  close(): Promise<void>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}

/**
 * An in-process OpenTelemetry collector's OTLP/HTTP traces receiver: it takes `POST /v1/traces` with the
 * JSON encoding (the @opentelemetry/exporter-trace-otlp-http exporter's), gzipped or not, and answers as the
 * collector does: 200 with an empty `partialSuccess`.
 */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const bodies: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/traces") {
        res.writeHead(404).end();
        return;
      }
      const raw = Buffer.concat(chunks);
      bodies.push((req.headers["content-encoding"] === "gzip" ? gunzipSync(raw) : raw).toString("utf8"));
      res.writeHead(200, { "content-type": "application/json" }).end('{"partialSuccess":{}}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    bodies,
    spans: () => bodies.flatMap(spansOf),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function spansOf(body: string): ReceivedSpan[] {
  const request = JSON.parse(body) as {
    resourceSpans?: {
      scopeSpans?: {
        spans?: {
          traceId: string;
          spanId: string;
          parentSpanId?: string;
          name: string;
          attributes?: { key: string; value: OtlpValue }[];
        }[];
      }[];
    }[];
  };
  return (request.resourceSpans ?? []).flatMap((r) =>
    (r.scopeSpans ?? []).flatMap((s) =>
      (s.spans ?? []).map((span) => ({
        traceId: span.traceId,
        spanId: span.spanId,
        parentSpanId: span.parentSpanId ?? "",
        name: span.name,
        attributes: Object.fromEntries(
          (span.attributes ?? []).map(({ key, value }) => [
            key,
            value.stringValue ??
              (value.intValue === undefined ? undefined : Number(value.intValue)) ??
              value.boolValue ??
              value.doubleValue,
          ]),
        ),
      })),
    ),
  );
}
