import type { Dispatcher } from "undici";
import requestApi from "undici/lib/api/api-request.js";
import Pool from "undici/lib/dispatcher/pool.js";

// The gateway needs undici's Pool and its request API; the relay is a handler of its own
// (response-relay.ts). They are imported by path because undici's index also evaluates fetch, WebSocket,
// caches and mocks, about 9 MB of resident memory in every process (bench/README.md). undici is pinned to
// an exact version in package.json. The API is called with the dispatcher as `this`, as undici's index
// does when it adds it to Dispatcher.prototype, so an injected dispatcher works the same way.
export { Pool };

export function request(dispatcher: Dispatcher, options: Dispatcher.RequestOptions) {
  return requestApi.call(dispatcher, options);
}
