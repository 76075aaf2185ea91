import type { Dispatcher } from "undici";
import apiRequest from "undici/lib/api/api-request.js";
import Pool from "undici/lib/dispatcher/pool.js";

// undici's Pool, imported by path: undici's index also evaluates fetch, WebSocket, caches and mocks,
// which cost 20.5 MB of resident memory against 11.0 MB for the Pool alone (measured on Node 20.20 with
// undici 7.30.2: RSS before and after the import, three runs each), in every process and worker. The
// Pool is undici's public class, the same object the index exports; undici is pinned to an exact version
// in package.json.
export { Pool };

/**
 * undici's `dispatcher.request()`, for any dispatcher: the index is what puts it on Dispatcher.prototype
 * (`Object.assign(Dispatcher.prototype, api)`), so a Pool imported by path has none of its own.
 */
export function requestOn(
  dispatcher: Dispatcher,
  options: Dispatcher.RequestOptions,
): Promise<Dispatcher.ResponseData> {
  return apiRequest.call(dispatcher, options);
}
