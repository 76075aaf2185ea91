// Types for the undici module imported by path (see undici-pool.ts): the class undici's index exports.
declare module "undici/lib/dispatcher/pool.js" {
  import { Pool } from "undici";
  export default Pool;
}
