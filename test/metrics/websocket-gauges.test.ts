import { describe, expect, it } from "vitest";
import { GatewayMetrics } from "../../src/metrics/gateway-metrics.js";

// A label's WebSocket gauges read 0 once its last connection closes, however short it lived: a
// connection that opened and closed between two scrapes still leaves its label at 0, where the gauges
// had shown nothing (a gauge gone reads as a broken scrape).
describe("the WebSocket gauges", () => {
  it("show a label at 0 from its first connection on, with none open", async () => {
    const none = () => new Map<string, number>();
    const metrics = new GatewayMetrics({ groups: () => [] }, { connections: none, subscriptions: none });
    const gauge = (name: string) => metrics.all.find((m) => m.name === name);
    expect((await gauge("gateway_websocket_connections")?.get())?.values).toEqual([]);
    metrics.webSocketOpened("eth");
    for (const name of ["gateway_websocket_connections", "gateway_websocket_subscriptions"])
      expect((await gauge(name)?.get())?.values, name).toEqual([{ labels: { label: "eth" }, value: 0 }]);
  });
});
