import { archiveRequiredDetail } from "../answers/archive.js";
import { errorFormOf, rpcErrorJson } from "../errors/respond.js";
import { scanMembers } from "../jsonrpc/scan.js";
import type { Mounted } from "../pipeline/stages.js";
import type { JsonRpcPolicy } from "../registry/types.js";

// What a connection makes of a node's message before its calls' answers go to the client: an answer over
// the size cap, or one that says the node has no such state, is replaced by the gateway's errors by id.

/**
 * A node's message within `maxBytes`, else the answer its calls get instead: each id it answers,
 * UPSTREAM_RESPONSE_TOO_LARGE, as an HTTP caller's call gets, told to `failed`, as it costs nothing. Sent again on another node, it would come
 * back as large; a notification that large is dropped (undefined).
 */
export function withinCap(
  text: string,
  maxBytes: number,
  requestId: string | undefined,
  policy: JsonRpcPolicy,
  failed: (id: string) => void,
): string | undefined {
  if (text.length <= maxBytes / 4 || Buffer.byteLength(text) <= maxBytes) return text;
  const errors = scanMembers(text).flatMap((members) => {
    const id = members.get("id");
    if (id !== undefined) failed(id);
    return id === undefined
      ? []
      : [
          rpcErrorJson(
            "UPSTREAM_RESPONSE_TOO_LARGE",
            id,
            { maxBytes },
            requestId,
            errorFormOf(policy, false),
          ),
        ];
  });
  if (errors.length === 0) return undefined;
  return text.trimStart().startsWith("[") ? `[${errors.join(",")}]` : errors[0];
}

/**
 * What a connection makes of its node's answers that say the node has no such state; `refused` is told
 * each id answered ARCHIVE_REQUIRED instead.
 */
export type ArchiveRefusals = (
  text: string,
  envelopes: readonly ReadonlyMap<string, string>[],
  refused: (id: string) => void,
) => string;

/**
 * For a key that may not reach archive nodes (one that may has them asked: archive-reads.ts). A node's "no such state"
 * answer to one (a read older than a full node keeps: the registry's `reads.archive.missingState`) becomes
 * ARCHIVE_REQUIRED by its id, naming the archive label, as an HTTP caller's read is answered when no
 * archive node may take it (docs/upstreams.md, "Archive"): never the node's raw error. None where the label
 * has no archive endpoint or its dialect no archive rule.
 */
export function archiveRefusals(mounted: Mounted): ArchiveRefusals | undefined {
  const texts = mounted.mount.policy.jsonrpc?.reads?.archive?.missingState;
  const archiveLabel = mounted.admitted.endpoint.archiveLabel;
  const policy = mounted.mount.policy.jsonrpc;
  if (texts === undefined || archiveLabel === undefined || policy === undefined) return undefined;
  const detail = archiveRequiredDetail(archiveLabel);
  const { requestId } = mounted.admitted;
  return (text, envelopes, told) => {
    const refused = missingStateIds(texts, text, envelopes);
    if (refused.length === 0) return text;
    const parts = envelopes.map((members) => {
      const id = members.get("id");
      if (id === undefined || !refused.includes(id)) return textOf(members);
      told(id);
      return rpcErrorJson("ARCHIVE_REQUIRED", id, detail, requestId, errorFormOf(policy, false));
    });
    return text.trimStart().startsWith("[") ? `[${parts.join(",")}]` : (parts[0] as string);
  };
}

/**
 * The ids a node's message answers "no such state" (registry `reads.archive.missingState`): none, found
 * without decoding anything, for most messages.
 */
export function missingStateIds(
  texts: readonly string[],
  text: string,
  envelopes: readonly ReadonlyMap<string, string>[],
): string[] {
  if (!texts.some((wanted) => text.includes(wanted))) return [];
  return envelopes.flatMap((members) => {
    const id = members.get("id");
    const error = members.get("error");
    return id !== undefined && error !== undefined && texts.some((wanted) => error.includes(wanted))
      ? [id]
      : [];
  });
}

/** An answer object again from its members, each value the source text it was; its id `id` when given. */
export function textOf(members: ReadonlyMap<string, string>, id?: string): string {
  const parts = [...members].map(
    ([name, value]) => `${JSON.stringify(name)}:${name === "id" && id !== undefined ? id : value}`,
  );
  return `{${parts.join(",")}}`;
}
