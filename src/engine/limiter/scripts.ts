import { type LuaScript, loadLua } from "../../lib/lua.ts";

/**
 * The per-store limiter's Redis scripts (`lua/`, each with a header naming its KEYS and ARGV).
 * Time is Redis's own (`TIME`), so every worker process decides against one clock. A slot is the
 * score (grant time, ms) of a sorted-set member; it occupies the window until
 * `score + window + margin`. The rule they keep: ADR 0001.
 */
const dir = new URL("./lua/", import.meta.url);

export const LIMITER_SCRIPTS: Record<string, LuaScript> = {
  limiterAcquire: loadLua(dir, "acquire-12"),
  limiterRelease: loadLua(dir, "release-4"),
  limiterSettle: loadLua(dir, "settle-6"),
  limiterObserve: loadLua(dir, "observe-9"),
  limiterSent: loadLua(dir, "sent-2"),
  limiterBlock: loadLua(dir, "block-2"),
  limiterNow: loadLua(dir, "now-0"),
  limiterInspect: loadLua(dir, "inspect-6"),
};
