import { chmodSync, mkdirSync } from "node:fs";

/**
 * Creates a directory, and its missing parents, that only the connector's user can enter: the
 * files in it hold links, sealed secrets and queued webhooks. A directory that already exists
 * (a mounted volume, the working directory) keeps its mode: the image creates /data as 0700.
 */
export function ensurePrivateDir(dir: string): void {
  const firstCreated = mkdirSync(dir, { recursive: true, mode: 0o700 });
  // mkdir's mode passes through the umask; a umask of 0 would still leave 0700, but a stricter
  // one (0277) would lock the process out of its own directory.
  if (firstCreated !== undefined) chmodSync(dir, 0o700);
}
