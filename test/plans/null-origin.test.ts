import { describe, expect, it } from "vitest";
import { checkedSettings, KeyRules } from "../../src/keys/key-settings.js";

// A customer whose app runs from a local file or in a sandboxed frame sees its calls refused "origins"
// and adds what its browser sends, `Origin: null`, to the key's origins. The entry was taken (read as a
// host named "null", as `localhost` is) and saved, and allowed nothing: the page went on being refused,
// under a setting the dashboard showed as saved. `null` is every local file's and sandboxed frame's Origin,
// any site's page can send it (a sandboxed iframe), so it cannot be allowed: it is refused when saved, by
// its entry, as any other entry the gateway cannot match.

describe("an origins entry of null", () => {
  it("is refused when saved, naming the entry and why", () => {
    let refused: { field?: string; reason?: string } | undefined;
    try {
      checkedSettings({ origins: ["https://app.example.com", "null"] });
    } catch (error) {
      refused = (error as { detail: { field: string; reason: string } }).detail;
    }
    expect(refused?.field).toBe("origins[1]");
    expect(refused?.reason).toMatch(/null/);
  });

  it("so a request whose Origin is null is refused once origins are set, as before", () => {
    const rules = KeyRules.of(checkedSettings({ origins: ["https://app.example.com"] }));
    expect(rules?.allowsOrigin("null")).toBe(false);
  });
});
