import { lstatSync } from "node:fs";
import module from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensurePrivateDir } from "./private-files.ts";

/**
 * Node's module compile cache for the production build (docs/operations.md, "Start-up"): the
 * V8 code of the bundle's chunks, kept on disk, so a restarted process skips compiling the
 * ~6 MB it loads. The cache is an optimisation and never a reason not to start: Node checks
 * each entry against the source it was made from and ignores one that does not match (a crash
 * halfway through writing, a new build), and anything that keeps the cache from being used
 * leaves the process as it would be without one.
 *
 * Where: NODE_COMPILE_CACHE when set (Node's own variable: Node has then turned the cache on
 * itself, in the directory the operator chose), else a directory of this user's under the
 * system's temporary directory. Code loaded from a directory another user can write to would
 * run as the connector, so one that is not private to this user is not used.
 */
export function enableCompileCache(env: NodeJS.ProcessEnv = process.env): string | null {
  if (typeof module.enableCompileCache !== "function" || env.NODE_DISABLE_COMPILE_CACHE) {
    return null;
  }
  if (env.NODE_COMPILE_CACHE) return module.getCompileCacheDir?.() ?? null;
  const dir = join(tmpdir(), `connector-compile-cache-${process.getuid?.() ?? 0}`);
  try {
    ensurePrivateDir(dir);
    const stat = lstatSync(dir);
    const mine = process.getuid === undefined || stat.uid === process.getuid();
    if (!stat.isDirectory() || !mine || (stat.mode & 0o022) !== 0) return null;
  } catch {
    return null;
  }
  const result = module.enableCompileCache(dir);
  return result.directory ?? null;
}

/**
 * Writes what was compiled so far to the cache now, instead of at exit: a process that is
 * killed (kill -9, an OOM kill) still leaves its start-up's code for the next one.
 */
export function flushCompileCache(): void {
  module.flushCompileCache?.();
}
