import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getRawAsset, isSea } from "node:sea";

/** The asset of the single executable that holds better-sqlite3's native addon (scripts/build-binary.ts). */
export const SQLITE_ADDON_ASSET = "better_sqlite3.node";

let addon: object | undefined;

/**
 * better-sqlite3's option that gives it its native addon. On Node it finds the addon in node_modules by
 * itself; in the single executable there is no node_modules, so the addon travels as an asset and is loaded
 * from it here, once.
 */
export function sqliteNative(): { nativeBinding?: string } {
  if (!isSea()) return {};
  addon ??= loadAddon();
  // better-sqlite3 takes the loaded addon object too (its lib/database.js); its types know only a path.
  return { nativeBinding: addon as unknown as string };
}

/**
 * The kernel loads a shared library only from a file: the asset is written to a folder only this user can
 * read, loaded, and removed at once (the loaded library stays mapped).
 */
function loadAddon(): object {
  const dir = mkdtempSync(join(tmpdir(), "node-gateway-"));
  const file = join(dir, SQLITE_ADDON_ASSET);
  try {
    writeFileSync(file, new Uint8Array(getRawAsset(SQLITE_ADDON_ASSET) as ArrayBuffer), { mode: 0o700 });
    const module = { exports: {} };
    process.dlopen(module, file);
    return module.exports;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
