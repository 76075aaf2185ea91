// Types for the undici module imported by path (see undici-pool.ts): the class undici's index exports.
declare module "undici/lib/dispatcher/pool.js" {
  import { Pool } from "undici";
  export default Pool;
}

declare module "undici/lib/api/api-request.js" {
  import type { Dispatcher } from "undici";
  /** undici's request API, called with the dispatcher as `this`. */
  export default function request(
    this: Dispatcher,
    options: Dispatcher.RequestOptions,
  ): Promise<Dispatcher.ResponseData>;
}

declare module "undici/lib/handler/wrap-handler.js" {
  import type { Dispatcher } from "undici";

  /** undici's adapter from its older handler shape (onHeaders, onData, …) to the current one. */
  const WrapHandler: { wrap(handler: Dispatcher.DispatchHandler): Dispatcher.DispatchHandler };
  export default WrapHandler;
}
