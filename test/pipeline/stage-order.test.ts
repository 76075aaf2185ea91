import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import type { Authorized } from "../../src/families/family.js";
import type { Admitted } from "../../src/pipeline/admitted.js";
import type { Charged, Mounted, Resolved, Stages } from "../../src/pipeline/stages.js";
import type { Endpoint } from "../../src/registry/types.js";

// The stages' order is in the types (src/pipeline/stages.ts): each takes the value of the one before it,
// and only that stage makes it. Each `@ts-expect-error` below is a transport calling a stage out of order;
// `npm run typecheck` fails if one of them compiles, as it did before Resolved, Mounted and the quota's
// Charged argument carried their brands. The functions are never called: the compiler is the test.

declare const stages: Stages;
declare const req: IncomingMessage;
declare const endpoint: Endpoint;
declare const admitted: Admitted;
declare const mounted: Mounted;
declare const authorized: Authorized;

function outOfOrder(): void {
  // @ts-expect-error stage 1's value is made by stage 1 alone
  stages.admitCaller({ endpoint, publicHost: false }, req);
  // @ts-expect-error stage 3's value is made by stage 3 alone
  stages.planUpstream({ admitted, mount: mounted.mount, family: mounted.family, segments: [] }, authorized);
  // @ts-expect-error the quota is held for a charged message: never before the rate's charge
  stages.holdQuota(mounted, authorized);
  // @ts-expect-error the upstream call is planned for a charged message
  stages.planUpstream(mounted, authorized);
}

function inOrder(): void {
  const resolved: Resolved = stages.resolveEndpoint(req);
  const admittedHere = stages.admitCaller(resolved, req);
  const mountedHere = stages.pickMount(admittedHere);
  const charged: Charged<Authorized> = stages.chargeRate(mountedHere, authorized);
  stages.holdQuota(mountedHere, charged);
  stages.planUpstream(mountedHere, charged);
}

describe("the stages' order", () => {
  it("is checked by the compiler (npm run typecheck compiles this file's out-of-order calls as errors)", () => {
    expect(typeof outOfOrder).toBe("function");
    expect(typeof inOrder).toBe("function");
  });
});
