import type { TracingConfig } from "../config/types.js";
import type { Logger } from "../log.js";
import type { Tracing } from "./tracing.js";

/**
 * The process's tracing when `tracing.enabled`, else undefined. The SDK and its exporter are loaded here,
 * only then: with tracing off a proxy does not hold their code (about 0.6 MB of the bundle, which takes
 * 16 MB of resident memory once loaded from node_modules).
 */
export async function startTracing(config: TracingConfig, logger: Logger): Promise<Tracing | undefined> {
  if (!config.enabled) return undefined;
  const { Tracing } = await import("./tracing.js");
  return new Tracing(config, logger);
}
