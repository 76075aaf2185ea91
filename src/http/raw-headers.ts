/**
 * A request header read straight from `rawHeaders`. Node builds `req.headers` on first use, lower-casing
 * and copying every header into a new object; the data plane needs two or three of them, so it looks
 * them up here instead. Values of a repeated header are joined with ", " the way `req.headers` joins
 * list-valued ones; `first` takes the first, as Node does for Content-Type and Content-Length.
 */
export function rawHeader(raw: readonly string[], name: string, first = false): string | undefined {
  let value: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const field = raw[i] as string;
    // the first letter, case folded, before a lower-cased copy: Content-Type is as long as X-Request-Id
    if (field.length !== name.length || (field.charCodeAt(0) | 0x20) !== (name.charCodeAt(0) | 0x20))
      continue;
    if (field.toLowerCase() !== name) continue;
    const next = raw[i + 1] as string;
    if (first) return next;
    value = value === undefined ? next : `${value}, ${next}`;
  }
  return value;
}
