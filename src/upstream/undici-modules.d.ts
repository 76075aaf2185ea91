// Types for the undici modules imported by path (see undici-core.ts): they are what undici's index exports.
declare module "undici/lib/dispatcher/pool.js" {
  import { Pool } from "undici";
  export default Pool;
}
declare module "undici/lib/api/api-request.js" {
  import type { Dispatcher } from "undici";

  const request: (this: Dispatcher, options: Dispatcher.RequestOptions) => Promise<Dispatcher.ResponseData>;
  export default request;
}
