/**
 * Lua scripts of the per-store limiter. Time is Redis's own (`TIME`), so every worker process
 * decides against one clock. A slot is the score (grant time, ms) of a sorted-set member; it
 * occupies the window until `score + window + margin`.
 */

const NOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

/**
 * KEYS: slots, blocked, live waiters, bulk waiters. ARGV: limit, windowMs, marginMs, ceiling
 * (limit for live work, the bulk ceiling for backfill), member, waiter (a job id, or ''),
 * priority ('live' | 'bulk'), prepaid (a slot granted earlier to whoever queued the job, or '').
 * Returns {granted(1|0), time (grant time or retry-at), reason, remaining}.
 *
 * Prepaid: a backfill feeder takes the slot before it queues the job (see budget-feeder.ts), so
 * the job never waits in the delayed set. The slot is moved to now when the job uses it (its life
 * then starts when the request leaves, which only ever counts longer) and renamed, so a job that
 * runs twice cannot spend it twice.
 *
 * Waiters: a refused job is given its own future moment, the k-th slot to free counting the
 * jobs waiting ahead of it, instead of the first one; otherwise every waiting job would wake at
 * the same instant, one would win and the rest would be delayed again. Live waiters are ahead
 * of every bulk waiter: backfill only gets the slots live work leaves.
 */
export const ACQUIRE = `${NOW}
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local margin = tonumber(ARGV[3])
local ceiling = tonumber(ARGV[4])
local life = window + margin
local waiter = ARGV[6]
local live = ARGV[7] == 'live'
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - life)
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - life)
if waiter ~= '' then
  redis.call('ZREM', KEYS[3], waiter)
  redis.call('ZREM', KEYS[4], waiter)
end
local blocked = tonumber(redis.call('GET', KEYS[2]) or '0')
if blocked > now then return {0, blocked, 'blocked', 0} end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - life)
if ARGV[8] ~= '' and redis.call('ZREM', KEYS[1], ARGV[8]) == 1 then
  redis.call('ZADD', KEYS[1], now, ARGV[5])
  return {1, now, 'prepaid', limit - redis.call('ZCARD', KEYS[1])}
end
local used = redis.call('ZCARD', KEYS[1])
-- Slots already promised to waiters whose moment has come (they are on their way back).
local due = redis.call('ZCOUNT', KEYS[3], '-inf', now)
if not live then due = due + redis.call('ZCOUNT', KEYS[4], '-inf', now) end
if used + due < ceiling then
  redis.call('ZADD', KEYS[1], now, ARGV[5])
  redis.call('PEXPIRE', KEYS[1], window * 2 + margin)
  return {1, now, 'ok', limit - used - 1}
end
local ahead = redis.call('ZCARD', KEYS[3])
if not live then ahead = ahead + redis.call('ZCARD', KEYS[4]) end
local position = math.max(used - ceiling, 0) + ahead
local cycles = 0
if used > 0 then
  cycles = math.floor(position / used)
  position = position % used
end
local retry = now + life
if used > 0 then
  local entry = redis.call('ZRANGE', KEYS[1], position, position, 'WITHSCORES')
  retry = tonumber(entry[2]) + life * (cycles + 1)
end
if waiter ~= '' then
  local set = KEYS[4]
  if live then set = KEYS[3] end
  redis.call('ZADD', set, retry, waiter)
  redis.call('PEXPIRE', set, life * (cycles + 3))
end
local reason = 'window'
if used < limit then reason = 'reserved' end
return {0, retry, reason, 0}
`;

/**
 * KEYS: slots. ARGV: member, marginMs. Called when a request's answer (or its failure) is back:
 * the server counted the request when it arrived, which was no later than now, so the slot is
 * moved to start no earlier than now - margin. However long the request took to leave (a busy
 * event loop, a slow connection), the ledger then frees the slot no earlier than the server does.
 */
export const SETTLE = `${NOW}
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
local latest = now - tonumber(ARGV[2])
if score and tonumber(score) < latest then
  redis.call('ZADD', KEYS[1], 'XX', latest, ARGV[1])
  return 1
end
return 0
`;

/** KEYS: slots. ARGV: member. Gives back a slot whose request never left the process. */
export const RELEASE = `return redis.call('ZREM', KEYS[1], ARGV[1])`;

/**
 * KEYS: slots, seen. ARGV: limit (the smaller of ours and the server's), windowMs, marginMs,
 * serverRemaining, serverResetMs.
 * When the server reports fewer requests left than we count (another client shares the
 * store), phantom slots are added. When the other client's requests arrived is unknown, so they
 * are taken as just now: a phantom lives a full window (safe; RateLimit-Reset tells only when
 * the oldest request leaves, and is rounded to whole seconds). `seen` marks that the store's
 * budget was learned within the last window (bulk feeders start slowly until it is).
 */
export const OBSERVE = `${NOW}
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local margin = tonumber(ARGV[3])
local serverRemaining = tonumber(ARGV[4])
redis.call('SET', KEYS[2], now, 'PX', window)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window - margin)
local ours = limit - redis.call('ZCARD', KEYS[1])
-- Bounded: one script call must stay short whatever a misconfigured budget says.
local missing = math.min(ours - serverRemaining, 10000)
if missing <= 0 then return 0 end
local score = now - margin
for i = 1, missing do
  redis.call('ZADD', KEYS[1], score, 'phantom:' .. now .. ':' .. i .. ':' .. math.random(1000000))
end
redis.call('PEXPIRE', KEYS[1], window * 2 + margin)
return missing
`;

/** KEYS: blocked. ARGV: retryAfterMs, jitterMs. Keeps the later of two blocks. */
export const BLOCK = `${NOW}
local untilMs = now + tonumber(ARGV[1]) + math.random(0, tonumber(ARGV[2]))
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current > untilMs then return current end
redis.call("SET", KEYS[1], untilMs, "PX", untilMs - now + 1000)
return untilMs
`;

/** KEYS: slots, blocked. ARGV: windowMs, marginMs. Returns {used, blockedUntil, oldest, now}. */
export const STATE = `${NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[1]) - tonumber(ARGV[2]))
local used = redis.call('ZCARD', KEYS[1])
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local blocked = tonumber(redis.call('GET', KEYS[2]) or '0')
return {used, blocked, oldest[2] or -1, now}
`;

export const NOW_SCRIPT = `${NOW} return now`;

/**
 * KEYS: slots, blocked, live waiters, bulk waiters. ARGV: windowMs, marginMs.
 * Read-only (for `connector status`): counts what is live without removing anything.
 * Returns {used, blockedUntil, oldest (-1 when none), liveWaiters, bulkWaiters, now}.
 */
export const INSPECT = `${NOW}
local floor = '(' .. (now - tonumber(ARGV[1]) - tonumber(ARGV[2]))
local used = redis.call('ZCOUNT', KEYS[1], floor, '+inf')
local oldest = redis.call('ZRANGEBYSCORE', KEYS[1], floor, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
local blocked = tonumber(redis.call('GET', KEYS[2]) or '0')
local live = redis.call('ZCOUNT', KEYS[3], floor, '+inf')
local bulk = redis.call('ZCOUNT', KEYS[4], floor, '+inf')
return {used, blocked, oldest[2] or -1, live, bulk, now}
`;
