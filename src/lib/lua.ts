import { readFileSync } from "node:fs";
import type { RedisConnection } from "./redis-keys.ts";

/**
 * The connector's Redis scripts live in `.lua` files beside the module that runs them, in
 * bullmq's layout: `<name>-<keys>.lua` (the number of KEYS it takes; no number when the caller
 * passes it first), a header naming each KEYS[i] and ARGV[i], and shared fragments in
 * `includes/`, pulled in with a line `--- @include "<fragment>"`. This is the one way they are
 * loaded: read once per process, registered once per connection with `defineCommand` (ioredis
 * then sends EVALSHA and falls back to EVAL).
 *
 * The production bundle copies every `lua/` folder into `dist/lua/` (scripts/bundle.ts), where
 * `new URL("./lua/", import.meta.url)` points from the bundle, as it points beside the module in
 * a source checkout.
 */
export interface LuaScript {
  /** The number of KEYS; undefined when the caller passes it as the first argument. */
  readonly numberOfKeys: number | undefined;
  readonly lua: string;
}

const INCLUDE = /^--- @include "([\w-]+)"$/gm;

function read(dir: URL, file: string, seen: ReadonlySet<string> = new Set()): string {
  if (seen.has(file)) throw new Error(`Lua include cycle at ${file}`);
  const text = readFileSync(new URL(file, dir), "utf8");
  return text.replace(INCLUDE, (_, fragment: string) =>
    read(dir, `includes/${fragment}.lua`, new Set([...seen, file])),
  );
}

/** Loads `<dir>/<file>.lua` with its includes expanded. */
export function loadLua(dir: URL, file: string): LuaScript {
  const keys = /-(\d+)$/.exec(file)?.[1];
  return {
    numberOfKeys: keys === undefined ? undefined : Number(keys),
    lua: read(dir, `${file}.lua`),
  };
}

/** Registers each script on the connection as a command of the given name, once. */
export function defineScripts(redis: RedisConnection, scripts: Record<string, LuaScript>): void {
  const added: string[] = [];
  for (const [command, script] of Object.entries(scripts)) {
    if (typeof (redis as unknown as Record<string, unknown>)[command] === "function") continue;
    redis.defineCommand(command, {
      lua: script.lua,
      ...(script.numberOfKeys === undefined ? {} : { numberOfKeys: script.numberOfKeys }),
    });
    added.push(command);
  }
  if (added.length > 0) addToPendingPipelines(redis, added);
}

/** The parts of an ioredis client that auto-pipelining keeps (not in its typings). */
interface AutoPipelined {
  _autoPipelines?: Map<
    string,
    Record<string, unknown> & { _shaToScript?: Record<string, unknown> }
  >;
  scriptsSet?: Record<string, { sha: string }>;
}

/**
 * Auto-pipelining (the `pipelined` and `ingest` connections) batches one event-loop turn's
 * commands in an ioredis Pipeline, which copies the client's script commands when it is created.
 * A script defined later in the same turn (the token cache's `forgetToken` on the provider's
 * first 401, `releaseLock` on a process's first lock) is missing from it: the call fails with
 * "pipeline[functionName] is not a function", and the batch's replies then crash the process
 * ("results[i] is not iterable"; redis/ioredis#1931, fixed upstream by #2180 after 6.0.0). So a
 * batch still waiting gets the new commands as its constructor gives them.
 */
function addToPendingPipelines(redis: RedisConnection, commands: string[]): void {
  const client = redis as unknown as AutoPipelined & Record<string, unknown>;
  const pending = client._autoPipelines;
  if (!(pending instanceof Map)) return;
  for (const pipeline of pending.values()) {
    for (const command of commands) {
      if (typeof pipeline[command] === "function") continue;
      const script = client.scriptsSet?.[command];
      if (script && pipeline._shaToScript) pipeline._shaToScript[script.sha] = script;
      pipeline[command] = client[command];
      pipeline[`${command}Buffer`] = client[`${command}Buffer`];
    }
  }
}
