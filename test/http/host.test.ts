import { describe, expect, it } from "vitest";
import { HostResolver } from "../../src/http/host.js";

const resolver = () => new HostResolver("gw.test", { "public.example": "bsc" });
const headers = (host: string) => ["Host", host, "content-type", "application/json"];

describe("HostResolver", () => {
  it("answers a repeated Host value the same way each time, whatever its case, port or trailing dot", () => {
    const hosts = resolver();
    for (let i = 0; i < 3; i++) {
      expect(hosts.resolve(headers("ETH.gw.test"), "/")).toEqual({ kind: "label", label: "eth" });
      expect(hosts.resolve(headers("eth.gw.test.:8443"), "/")).toEqual({ kind: "label", label: "eth" });
      expect(hosts.resolve(headers("Public.Example"), "/")).toEqual({ kind: "public", label: "bsc" });
    }
  });

  it("keeps refusing a bad Host however often it comes, and keeps resolving good ones past its memo size", () => {
    const hosts = resolver();
    for (let port = 1; port <= 3000; port++) {
      expect(hosts.resolve(headers(`near-testnet.gw.test:${port}`), "/").label).toBe("near-testnet");
      expect(() => hosts.resolve(headers(`eth.other.test:${port}`), "/")).toThrow(
        expect.objectContaining({ code: "UNKNOWN_NETWORK" }),
      );
    }
    expect(() => hosts.resolve(headers("a..gw.test"), "/")).toThrow(
      expect.objectContaining({ code: "BAD_HOST" }),
    );
  });

  it("checks an absolute-form target against a remembered Host too", () => {
    const hosts = resolver();
    expect(hosts.resolve(headers("eth.gw.test"), "http://eth.gw.test/FNkey").label).toBe("eth");
    expect(() => hosts.resolve(headers("eth.gw.test"), "http://ksm.gw.test/FNkey")).toThrow(
      expect.objectContaining({ code: "BAD_HOST" }),
    );
  });

  it("refuses two Host headers even when each alone is remembered", () => {
    const hosts = resolver();
    hosts.resolve(headers("eth.gw.test"), "/");
    expect(() => hosts.resolve([...headers("eth.gw.test"), "host", "eth.gw.test"], "/")).toThrow(
      expect.objectContaining({ code: "BAD_HOST" }),
    );
  });
});
