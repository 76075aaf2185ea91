import type { Dispatcher } from "undici";
import requestApi from "undici/lib/api/api-request.js";
import streamApi from "undici/lib/api/api-stream.js";
import Pool from "undici/lib/dispatcher/pool.js";

// The gateway needs undici's Pool and two of its request APIs. They are imported by path because
// undici's index also evaluates fetch, WebSocket, caches and mocks, about 9 MB of resident memory in
// every process (bench/README.md). undici is pinned to an exact version in package.json. The APIs are
// called with the dispatcher as `this`, as undici's index does when it adds them to Dispatcher.prototype,
// so an injected dispatcher (a test's MockAgent) works the same way.
export { Pool };

export function request(dispatcher: Dispatcher, options: Dispatcher.RequestOptions) {
  return requestApi.call(dispatcher, options);
}

export function stream(
  dispatcher: Dispatcher,
  options: Dispatcher.RequestOptions,
  factory: Dispatcher.StreamFactory,
) {
  return streamApi.call(dispatcher, options, factory);
}
