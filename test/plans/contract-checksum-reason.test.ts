import { describe, expect, it } from "vitest";
import { checkedSettings } from "../../src/keys/key-settings.js";

// A refused entry's reason says what an entry must be, as every other reason does: the dashboard writes
// "Line 1, “…”: not <reason>." (docs/plans.md, "Key settings").

describe("a refused contract's reason", () => {
  const reasonOf = (contract: string) => {
    try {
      checkedSettings({ contracts: [contract] });
    } catch (error) {
      return (error as { detail: { field: string; reason: string } }).detail;
    }
    return undefined;
  };

  it("says what an entry must be: read after the dashboard's “not”, it is not a double negative", () => {
    const eip55 = reasonOf("0xdAC17F958D2ee523a2206206994597C13D831ec8");
    expect(eip55?.field).toBe("contracts[0]");
    expect(eip55?.reason).toBe("an address whose mixed case matches its EIP-55 checksum (or all one case)");
    const tron = reasonOf("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u");
    expect(tron?.reason).toBe(
      "a base58check address whose checksum holds (a version byte, 20 bytes and a 4-byte checksum)",
    );
    for (const reason of [eip55?.reason, tron?.reason]) expect(reason).not.toMatch(/fails|does not hold/);
    // the address in its own EIP-55 case, and in one case, are kept
    expect(reasonOf("0xdAC17F958D2ee523a2206206994597C13D831ec7")).toBeUndefined();
    expect(reasonOf("0xdac17f958d2ee523a2206206994597c13d831ec8")).toBeUndefined();
  });
});
