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
 * The k-th slot (0-based) to free across the given ledgers, as a time: the oldest slots free
 * first; a position beyond what is counted wraps into later windows (each slot frees again one
 * life later, when whatever takes it now leaves).
 */
const KTH = `
local function kth(keys, position, now, life)
  local total = 0
  for _, key in ipairs(keys) do total = total + redis.call('ZCARD', key) end
  if total == 0 then return now + life end
  local cycles = math.floor(position / total)
  position = position % total
  local scores = {}
  for _, key in ipairs(keys) do
    local entries = redis.call('ZRANGE', key, 0, position, 'WITHSCORES')
    for i = 2, #entries, 2 do scores[#scores + 1] = tonumber(entries[i]) end
  end
  table.sort(scores)
  return scores[position + 1] + life * (cycles + 1)
end
`;

/**
 * KEYS: slots (bulk work's), blocked, live waiters, bulk waiters, live slots, others (other
 * clients' requests learned from the server's headers), pending (our slots whose answer is not
 * back yet), seen (the time of the last answer), paced (when the next bulk grant is due).
 * ARGV: limit, windowMs, marginMs, reserve (slots bulk work leaves to live work), member, waiter
 * (a job id, or ''), priority ('live' | 'bulk'), prepaid (a slot granted earlier to whoever
 * queued the job, or ''), headroom (slots left unused while another client is spending), pace
 * ('1' to pace bulk work).
 * Returns {granted(1|0), time (grant time or retry-at), reason, remaining}.
 *
 * The rule (ADR 0001): bulk work and other clients' requests together stay below
 * `limit - headroom - reserve`, and bulk work takes a slot only while the whole window is below
 * `limit - headroom`; live work takes any slot up to the limit. The reserve is counted against
 * everything but live work, so live orders add to a saturated window instead of replacing bulk
 * slots, and a live order finds a slot at once unless live work alone exceeds its reserve and
 * the headroom. The headroom is kept only while another client is spending the store's budget:
 * its requests since our last answer are unseen. Every cap is also lowered by the other
 * client's requests expected since that answer (its count in the last window, pro rata), so a
 * stalled process does not spend what the other client has meanwhile used.
 *
 * Pacing (ARGV[10] = '1'): bulk work's slots are spread evenly over the window, one per
 * `window / (bulk ceiling - other clients' requests)` on average (the most it can use in a
 * window), a generic cell rate algorithm allowing two intervals of burst. A slot
 * pattern repeats itself a window later (a slot is taken again when it frees), so bursts and
 * silences would otherwise last: other clients' requests are learned in clumps (all those made
 * since our last answer, at once) and leave the ledger in clumps, bulk work taking every freed
 * slot at once copies the clump into the next window, and a window filled faster than its length
 * leaves a silence at its end in which nothing is learned and live orders find the window full.
 * Paced, our requests spread evenly, we hear from the server every slot or so, and bulk work
 * still gets its whole share.
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
export const ACQUIRE = `${NOW}${KTH}
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local margin = tonumber(ARGV[3])
local reserve = tonumber(ARGV[4])
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
for _, key in ipairs({KEYS[1], KEYS[5], KEYS[6], KEYS[7]}) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - life)
end
local bulkUsed = redis.call('ZCARD', KEYS[1])
local liveUsed = redis.call('ZCARD', KEYS[5])
local othersUsed = redis.call('ZCARD', KEYS[6])
local used = bulkUsed + liveUsed + othersUsed
if ARGV[8] ~= '' then
  for _, key in ipairs({KEYS[1], KEYS[5]}) do
    if redis.call('ZREM', key, ARGV[8]) == 1 then
      redis.call('ZADD', key, now, ARGV[5])
      redis.call('ZREM', KEYS[7], ARGV[8])
      redis.call('ZADD', KEYS[7], now, ARGV[5])
      return {1, now, 'prepaid', limit - used}
    end
  end
end
local headroom = 0
local unseen = 0
if othersUsed > 0 then
  local seen = tonumber(redis.call('GET', KEYS[8]) or '0')
  local since = math.min(math.max(now - seen, 0), window)
  unseen = math.floor(othersUsed * since / window)
  headroom = tonumber(ARGV[9])
end
local liveCap = math.max(1, limit - unseen)
local cap = math.max(1, limit - unseen - headroom)
local bulkCap = math.max(1, cap - reserve)
local nonLive = bulkUsed + othersUsed
-- Pacing as GCRA: \`paced\` holds the theoretical time of the next bulk grant; a grant may come
-- up to two intervals early (so a late caller catches up), and moves it one interval on.
local pacedUntil = 0
local nextAt = now
local interval = window / math.max(1, bulkCap - othersUsed)
if not live and ARGV[10] == '1' then
  nextAt = math.max(tonumber(redis.call('GET', KEYS[9]) or '0'), now)
  pacedUntil = math.ceil(nextAt - 2 * interval)
end
-- Slots already promised to waiters whose moment has come (they are on their way back).
local liveDue = redis.call('ZCOUNT', KEYS[3], '-inf', now)
local bulkDue = 0
if not live then bulkDue = redis.call('ZCOUNT', KEYS[4], '-inf', now) end
local fits
if live then fits = used + liveDue < liveCap
else fits = used + liveDue + bulkDue < cap and nonLive + bulkDue < bulkCap end
if fits and pacedUntil <= now then
  local key = KEYS[1]
  if live then key = KEYS[5]
  elseif ARGV[10] == '1' then redis.call('SET', KEYS[9], tostring(nextAt + interval), 'PX', window) end
  redis.call('ZADD', key, now, ARGV[5])
  redis.call('PEXPIRE', key, window * 2 + margin)
  redis.call('ZADD', KEYS[7], now, ARGV[5])
  redis.call('PEXPIRE', KEYS[7], window * 2 + margin)
  return {1, now, 'ok', limit - used - 1}
end
local ahead = redis.call('ZCARD', KEYS[3])
local all = {KEYS[1], KEYS[5], KEYS[6]}
local retry
if fits then
  -- Only pacing refused it.
  retry = pacedUntil
elseif live then
  retry = kth(all, math.max(used - liveCap, 0) + ahead, now, life)
else
  local bulkAhead = redis.call('ZCARD', KEYS[4])
  retry = math.max(
    kth(all, math.max(used - cap, 0) + ahead + bulkAhead, now, life),
    kth({KEYS[1], KEYS[6]}, math.max(nonLive - bulkCap, 0) + bulkAhead, now, life))
end
if waiter ~= '' then
  local set = KEYS[4]
  if live then set = KEYS[3] end
  redis.call('ZADD', set, retry, waiter)
  redis.call('PEXPIRE', set, math.max(retry - now, 0) + life * 2)
end
local reason = 'window'
if fits then reason = 'paced'
elseif not live and used < cap then reason = 'reserved' end
return {0, retry, reason, 0}
`;

/**
 * KEYS: slots, live slots, pending. ARGV: member, marginMs. Called when a request's answer (or
 * its failure) is back: the server counted the request when it arrived, which was no later than
 * now, so the slot is moved to start no earlier than now - margin. However long the request took
 * to leave (a busy event loop, a slow connection), the ledger then frees the slot no earlier
 * than the server does. The slot is no longer pending.
 */
export const SETTLE = `${NOW}
redis.call('ZREM', KEYS[3], ARGV[1])
local latest = now - tonumber(ARGV[2])
for _, key in ipairs({KEYS[1], KEYS[2]}) do
  local score = redis.call('ZSCORE', key, ARGV[1])
  if score then
    if tonumber(score) < latest then
      redis.call('ZADD', key, 'XX', latest, ARGV[1])
      return 1
    end
    return 0
  end
end
return 0
`;

/**
 * KEYS: slots, live slots, pending. ARGV: member. Gives back a slot whose request never left
 * the process.
 */
export const RELEASE = `redis.call('ZREM', KEYS[3], ARGV[1])
return redis.call('ZREM', KEYS[1], ARGV[1]) + redis.call('ZREM', KEYS[2], ARGV[1])`;

/**
 * KEYS: slots, seen, live slots, others, pending. ARGV: limit (the smaller of ours and the
 * server's), windowMs, marginMs, serverRemaining, serverResetMs.
 * When the server reports fewer requests left than we count (another client shares the
 * store), the difference is added to `others`. When the other client's requests arrived is
 * unknown, so they are taken as just now and live a full window (safe; RateLimit-Reset tells
 * only when the oldest request leaves, and is rounded to whole seconds). Our requests still
 * pending (granted, answer not back) other than the one being answered may not have arrived
 * when the server counted: they are left out of our count, so an in-flight request of ours never
 * hides one of the other client's (which would be sent again over the limit once ours arrived);
 * one of ours that did arrive is then counted twice for a window at most, the safe side.
 * `seen` holds the time of this answer: bulk feeders start slowly until a store's budget has
 * been learned, and ACQUIRE's headroom grows with the time since.
 */
export const OBSERVE = `${NOW}
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local margin = tonumber(ARGV[3])
local serverRemaining = tonumber(ARGV[4])
redis.call('SET', KEYS[2], now, 'PX', window)
for _, key in ipairs({KEYS[1], KEYS[3], KEYS[4], KEYS[5]}) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window - margin)
end
local inFlight = math.max(redis.call('ZCARD', KEYS[5]) - 1, 0)
local ours = limit - redis.call('ZCARD', KEYS[1]) - redis.call('ZCARD', KEYS[3])
  - redis.call('ZCARD', KEYS[4]) + inFlight
-- Bounded: one script call must stay short whatever a misconfigured budget says.
local missing = math.min(ours - serverRemaining, 10000)
if missing <= 0 then return 0 end
local score = now - margin
for i = 1, missing do
  redis.call('ZADD', KEYS[4], score, now .. ':' .. i .. ':' .. math.random(1000000))
end
redis.call('PEXPIRE', KEYS[4], window * 2 + margin)
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

/**
 * KEYS: slots, blocked, live slots, others. ARGV: windowMs, marginMs.
 * Returns {used, blockedUntil, oldest, now}.
 */
export const STATE = `${NOW}
local floor = now - tonumber(ARGV[1]) - tonumber(ARGV[2])
local used = 0
local oldest = -1
for _, key in ipairs({KEYS[1], KEYS[3], KEYS[4]}) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', floor)
  used = used + redis.call('ZCARD', key)
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if first[2] and (oldest < 0 or tonumber(first[2]) < oldest) then oldest = tonumber(first[2]) end
end
local blocked = tonumber(redis.call('GET', KEYS[2]) or '0')
return {used, blocked, oldest, now}
`;

export const NOW_SCRIPT = `${NOW} return now`;

/**
 * KEYS: slots, blocked, live waiters, bulk waiters, live slots, others. ARGV: windowMs, marginMs.
 * Read-only (for `connector status`): counts what is live without removing anything.
 * Returns {used, blockedUntil, oldest (-1 when none), liveWaiters, bulkWaiters, now}.
 */
export const INSPECT = `${NOW}
local floor = '(' .. (now - tonumber(ARGV[1]) - tonumber(ARGV[2]))
local used = 0
local oldest = -1
for _, key in ipairs({KEYS[1], KEYS[5], KEYS[6]}) do
  used = used + redis.call('ZCOUNT', key, floor, '+inf')
  local first = redis.call('ZRANGEBYSCORE', key, floor, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if first[2] and (oldest < 0 or tonumber(first[2]) < oldest) then oldest = tonumber(first[2]) end
end
local blocked = tonumber(redis.call('GET', KEYS[2]) or '0')
local live = redis.call('ZCOUNT', KEYS[3], floor, '+inf')
local bulk = redis.call('ZCOUNT', KEYS[4], floor, '+inf')
return {used, blocked, oldest, live, bulk, now}
`;
