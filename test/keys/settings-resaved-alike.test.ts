import { describe, expect, it } from "vitest";
import { keyHash } from "../../src/keys/digest.js";
import type { GrantFeed, KeyGrant } from "../../src/keys/grants.js";
import { CachedKeyStore } from "../../src/keys/key-cache.js";
import type { KeySettings } from "../../src/keys/key-settings.js";

// A customer saved their key's settings again as they were, the lists in another order (a form that sends
// its fields as the page lays them out, a script that builds them from a set): every proxy read new settings
// in JSON of another order, and closed the key's WebSockets (1008) for settings that allow and refuse exactly
// what they did. A change that is one closes them still.

const KEY = "FNresaved00000000000000000000";
const RATE = { perSecond: 1e4, burst: 1e4 };

const grant = (revision: number, settings: KeySettings): KeyGrant => ({
  id: 1,
  accountId: 1,
  keyHash: keyHash(KEY),
  prefix: KEY.slice(0, 8),
  plan: "shared",
  networks: "*",
  archive: false,
  rate: RATE,
  status: "active",
  expiresAt: undefined,
  accountStatus: "active",
  revision,
  settings,
  quotaScope: KEY.slice(0, 8),
});

describe("a key's settings saved again", () => {
  it("end its connections when they changed, not when only their order did", async () => {
    const saved: KeySettings[] = [
      { origins: ["https://a.example", "https://b.example"], methods: ["eth_call", "eth_getLogs"] },
      // the same settings: members and entries in another order
      { methods: ["eth_getLogs", "eth_call"], origins: ["https://b.example", "https://a.example"] },
      // a change
      { methods: ["eth_getLogs"], origins: ["https://b.example", "https://a.example"] },
    ];
    let revision = 1;
    let changed: () => void = () => {};
    const feed: GrantFeed = {
      changesSince: async (since) => ({
        revision,
        grants: since < revision ? [grant(revision, saved[revision - 1] as KeySettings)] : [],
      }),
      watch: (listener) => {
        changed = listener;
        return () => {};
      },
      close: async () => {},
    };
    const keys = await CachedKeyStore.open(feed, RATE);
    try {
      keys.follow();
      const withdrawn: string[] = [];
      keys.onWithdrawn((keyId) => withdrawn.push(keyId));
      revision = 2;
      changed();
      await keys.refresh();
      expect(withdrawn).toEqual([]);
      revision = 3;
      changed();
      await keys.refresh();
      expect(withdrawn).toEqual([KEY.slice(0, 8)]);
    } finally {
      await keys.close();
    }
  });
});
