// The deployment config's JSON Schema: separate from the registry's, and as strict. `npm run codegen`
// compiles it into generated/config-validator.js (codegen/config-validator.ts), which src/config/load.ts
// runs; nothing in src/ imports this file, so ajv stays out of the gateway.
import { KEY_PATTERN } from "../keys/types.js";

const rate = {
  type: "object",
  additionalProperties: false,
  required: ["perSecond", "burst"],
  properties: { perSecond: { type: "number", exclusiveMinimum: 0 }, burst: { type: "number", minimum: 1 } },
} as const;

/**
 * Headers the gateway adds to its own requests (a node's, the trace exporter's): what undici and node:http
 * would refuse at every request, refused here once. A name is an HTTP token; a value holds no control
 * character but tab (CR or LF would start another header), and nothing past U+00FF.
 */
const headers = {
  type: "object",
  propertyNames: { pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$" },
  additionalProperties: { type: "string", pattern: "^[\\t\\x20-\\x7e\\x80-\\xff]*$" },
} as const;

const upstream = {
  anyOf: [
    { type: "string", pattern: "^https?://" },
    {
      type: "object",
      additionalProperties: false,
      required: ["url"],
      properties: {
        url: { type: "string", pattern: "^https?://" },
        ws: { type: "string", pattern: "^wss?://" },
        headers,
        name: { type: "string", pattern: "^[A-Za-z0-9._:/-]{1,100}$" },
        tier: { enum: ["primary", "fallback"] },
        weight: { type: "number", exclusiveMinimum: 0, maximum: 1000 },
      },
    },
  ],
} as const;

const ms = { type: "integer", minimum: 1 } as const;

/** A key setting's list (src/keys/key-settings.ts checks each entry's form). */
const strings = { type: "array", maxItems: 30, items: { type: "string" } } as const;

/** A plan's name: what the account store keeps with each key. */
const PLAN_NAME = "^[a-z0-9][a-z0-9-]{0,39}$";

const healthFields = {
  probeIntervalMs: { type: "integer", minimum: 0 },
  probeTimeoutMs: ms,
  chainCheckIntervalMs: ms,
  failAfter: { type: "integer", minimum: 1 },
  recoverAfter: { type: "integer", minimum: 1 },
  maxLagBlocks: { type: "integer", minimum: 0 },
  maxLagSeconds: { type: "number", minimum: 0 },
} as const;

const cacheFields = {
  enabled: { type: "boolean" },
  maxBytes: { type: "integer", minimum: 0 },
  maxEntryBytes: { type: "integer", minimum: 1 },
  headRelative: { type: "boolean" },
  headMaxAgeMs: { type: "integer", minimum: 0 },
} as const;

export const configSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    domain: { type: "string", pattern: "^[A-Za-z0-9.-]+$" },
    listen: {
      type: "object",
      additionalProperties: false,
      properties: { host: { type: "string" }, port: { type: "integer", minimum: 0, maximum: 65535 } },
    },
    publicHosts: { type: "object", additionalProperties: { type: "string" } },
    trustedProxies: { type: "array", items: { type: "string" } },
    support: {
      type: "object",
      additionalProperties: false,
      properties: { email: { type: "string" }, dedicatedNodeUrl: { type: "string" } },
    },
    upstreams: {
      type: "object",
      additionalProperties: {
        // a label with no node would only ever answer NO_UPSTREAM: leave the label out instead
        anyOf: [
          { type: "array", minItems: 1, items: upstream },
          { type: "object", additionalProperties: { type: "array", minItems: 1, items: upstream } },
        ],
      },
    },
    limits: {
      type: "object",
      additionalProperties: false,
      properties: {
        maxHeaderBytes: ms,
        maxHeaders: ms,
        maxBodyBytes: ms,
        maxBatch: ms,
        maxJsonDepth: ms,
        maxHeldCallsPerCaller: ms,
        headersTimeoutMs: ms,
        requestTimeoutMs: ms,
        connectionsCheckingIntervalMs: ms,
        socketIdleTimeoutMs: ms,
        keepAliveTimeoutMs: ms,
        shutdownDelayMs: { type: "integer", minimum: 0 },
        drainTimeoutMs: { type: "integer", minimum: 0 },
        upstream: {
          type: "object",
          additionalProperties: false,
          properties: {
            connectTimeoutMs: ms,
            headersTimeoutMs: ms,
            bodyTimeoutMs: ms,
            maxResponseBytes: ms,
            connections: ms,
            deadlineMs: ms,
            hedgeMinMs: ms,
            hedgeMaxMs: ms,
          },
        },
        publicRate: rate,
        ws: {
          type: "object",
          additionalProperties: false,
          properties: {
            maxMessageBytes: ms,
            maxBufferedBytes: ms,
            maxSubscriptions: ms,
            maxInFlight: ms,
            maxConnectionsPerKey: ms,
            maxConnectionsPerIp: ms,
            pingIntervalMs: ms,
            idleTimeoutMs: ms,
            handshakeTimeoutMs: ms,
          },
        },
      },
    },
    health: {
      type: "object",
      additionalProperties: false,
      properties: {
        ...healthFields,
        labels: {
          type: "object",
          additionalProperties: { type: "object", additionalProperties: false, properties: healthFields },
        },
      },
    },
    blockRanges: {
      type: "object",
      additionalProperties: {
        type: "object",
        additionalProperties: {
          type: "object",
          additionalProperties: false,
          properties: {
            splitAbove: { type: "integer", minimum: 1 },
            refuseAbove: { type: "integer", minimum: 1 },
          },
        },
      },
    },
    cache: {
      type: "object",
      additionalProperties: false,
      properties: {
        ...cacheFields,
        labels: {
          type: "object",
          additionalProperties: { type: "object", additionalProperties: false, properties: cacheFields },
        },
      },
    },
    metrics: {
      type: "object",
      additionalProperties: false,
      properties: { enabled: { type: "boolean" } },
    },
    tracing: {
      type: "object",
      additionalProperties: false,
      properties: {
        enabled: { type: "boolean" },
        endpoint: { type: "string", pattern: "^https?://" },
        headers,
        sampleRatio: { type: "number", minimum: 0, maximum: 1 },
        labels: { type: "object", additionalProperties: { type: "number", minimum: 0, maximum: 1 } },
        followCallerSampling: { type: "boolean" },
        serviceName: { type: "string", pattern: "\\S" },
      },
    },
    operator: {
      anyOf: [
        { type: "null" },
        {
          type: "object",
          additionalProperties: false,
          required: ["listen"],
          properties: {
            listen: {
              type: "object",
              additionalProperties: false,
              properties: { host: { type: "string" }, port: { type: "integer", minimum: 0, maximum: 65535 } },
            },
          },
        },
      ],
    },
    defaultRate: rate,
    plans: {
      type: "object",
      propertyNames: { pattern: PLAN_NAME },
      additionalProperties: {
        type: "object",
        additionalProperties: false,
        properties: {
          computeUnitRate: rate,
          dailyQuota: { type: "integer", minimum: 0 },
          monthlyQuota: { type: "integer", minimum: 0 },
          quotaPer: { enum: ["key", "account"] },
          dedicatedMethods: { type: "boolean" },
          disabledMethods: {
            type: "array",
            maxItems: 200,
            items: {
              type: "string",
              // a method, or a REST route as the registry shapes it (`GET /chains/{}/blocks/{}`, families/rest.ts)
              pattern:
                "^(?:[A-Za-z0-9_.*/:-]{1,100}|(?:GET|HEAD|POST|PUT|PATCH|DELETE|\\*) /[A-Za-z0-9_.{}*/:-]{0,100})$",
            },
          },
          archive: { anyOf: [{ type: "boolean" }, { const: "granted" }] },
          maxKeys: { type: "integer", minimum: 1 },
          cachedShare: { type: "number", minimum: 0, maximum: 1 },
          orderable: { type: "boolean" },
        },
      },
    },
    keys: {
      type: "array",
      items: {
        type: "object",
        additionalProperties: false,
        required: ["key", "networks"],
        properties: {
          key: { type: "string", pattern: `^${KEY_PATTERN}$` },
          networks: { anyOf: [{ const: "*" }, { type: "array", items: { type: "string" } }] },
          archive: { type: "boolean" },
          plan: { type: "string", pattern: PLAN_NAME },
          rate,
          settings: {
            type: "object",
            additionalProperties: false,
            properties: {
              origins: strings,
              ips: strings,
              methods: strings,
              contracts: strings,
              jwtKeys: {
                type: "array",
                maxItems: 30,
                items: {
                  type: "object",
                  additionalProperties: false,
                  required: ["pem"],
                  properties: { id: { type: "string" }, pem: { type: "string" } },
                },
              },
            },
          },
        },
      },
    },
    log: {
      type: "object",
      additionalProperties: false,
      properties: {
        level: { enum: ["debug", "info", "warn", "error", "silent"] },
        access: { type: "boolean" },
      },
    },
    localNodes: {
      type: "array",
      items: {
        type: "object",
        additionalProperties: false,
        required: ["label", "command", "args"],
        properties: {
          label: { type: "string" },
          command: { type: "string" },
          args: { type: "array", items: { type: "string" } },
          optional: { type: "boolean" },
        },
      },
    },
    demoKey: { type: "boolean" },
    workers: { type: "integer", minimum: 1, maximum: 256 },
    sharedLimits: {
      type: "object",
      additionalProperties: false,
      required: ["redis"],
      properties: {
        redis: { type: "string", pattern: "^rediss?://" },
        leaseMs: { type: "number", minimum: 1, maximum: 10_000 },
        fallbackShare: { type: "number", exclusiveMinimum: 0, maximum: 1 },
        headHoldMs: { type: "integer", minimum: 1, maximum: 1_000 },
      },
    },
    accounts: {
      type: "object",
      additionalProperties: false,
      required: ["database", "listen", "mail"],
      properties: {
        database: { type: "string", pattern: "^\\S" },
        listen: {
          type: "object",
          additionalProperties: false,
          required: ["host", "port"],
          properties: { host: { type: "string" }, port: { type: "integer", minimum: 0, maximum: 65535 } },
        },
        publicUrl: { type: "string", pattern: "^https?://" },
        mail: {
          type: "object",
          additionalProperties: false,
          required: ["from", "outbox"],
          properties: {
            from: { type: "string" },
            outbox: { type: "string" },
            smtp: {
              type: "object",
              additionalProperties: false,
              required: ["host", "port"],
              properties: {
                host: { type: "string" },
                port: { type: "integer" },
                secure: { type: "boolean" },
                user: { type: "string" },
                pass: { type: "string" },
              },
            },
          },
        },
        freeTest: {
          type: "object",
          additionalProperties: false,
          properties: { days: ms, maxPerEmail: ms, rate },
        },
        rotationGraceSeconds: ms,
        confirmTokenHours: ms,
        sessionHours: ms,
        signupRatePerIp: rate,
        signupRatePerEmail: rate,
        followIntervalMs: ms,
        usageFlushIntervalMs: ms,
      },
    },
  },
} as const;
