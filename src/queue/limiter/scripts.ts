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
 * When the job with `ahead` jobs in line before it can have a slot, with at most `cap` slots
 * taken in the given ledgers at a time. The slots free oldest first (a ledger holding more than
 * `cap`, when other clients spend, frees its surplus first); a free slot is taken at once. A
 * position beyond one cap's worth wraps: a slot taken by a job ahead frees again one life
 * later, so the line drains `cap` per life whatever the ledger holds now. (Wrapping over the
 * slots the ledger holds instead would promise a lull's few slots for cycle after cycle,
 * minutes away.)
 *
 * Each round also starts `lag.settle` ms late: a slot is settled at its request's answer,
 * later than its grant. Promises that ignore it drift earlier than the slots by that much per
 * round, and a burst of fifty rounds comes back seconds early. A slot whose answer is still
 * awaited will be settled later by the same. A woken job reaches the limiter `lag.grant` ms
 * after the moment it was told; it is told `lag.lead` ms early (that delay, up to two slot
 * intervals) and waits for its slot in the process, so only the rest is added per round. (A
 * longer lead would hold a worker's concurrency for every waiting job, and the jobs behind
 * them would come back later still.)
 */
const KTH = `
local function kth(keys, ahead, cap, now, life, lag, pending)
  local round = life + lag.settle + lag.grant - lag.lead
  local floor = '(' .. (now - life)
  cap = math.max(cap, 1)
  local held = 0
  for _, key in ipairs(keys) do held = held + redis.call('ZCOUNT', key, floor, '+inf') end
  local cycles = math.floor(ahead / cap)
  local index = ahead % cap + held - cap
  if index < 0 then return math.ceil(now + round * cycles) end
  local slots = {}
  for _, key in ipairs(keys) do
    local entries = redis.call('ZRANGEBYSCORE', key, floor, '+inf', 'WITHSCORES', 'LIMIT', 0, index + 1)
    for i = 2, #entries, 2 do slots[#slots + 1] = {tonumber(entries[i]), entries[i - 1]} end
  end
  table.sort(slots, function(a, b) return a[1] < b[1] end)
  local slot = slots[index + 1]
  local frees = slot[1] + life
  if redis.call('ZSCORE', pending, slot[2]) then frees = frees + lag.settle end
  return math.ceil(frees + round * cycles)
end
`;

/**
 * KEYS: slots (bulk work's), blocked, live waiters, bulk waiters, live slots, others (other
 * clients' requests learned from the server's headers), pending (our slots whose answer is not
 * back yet), seen (the time of the last answer), paced (when the next bulk grant is due), lag
 * (a hash: how late woken waiters are granted, \`grant\`, and slots settled, \`settle\`, in ms).
 * ARGV: limit, windowMs, marginMs, reserve (slots bulk work leaves to live work), member, waiter
 * (a job id, or ''), priority ('live' | 'bulk'), prepaid (a slot granted earlier to whoever
 * queued the job, or ''), headroom (slots left unused while another client is spending), pace
 * ('1' to pace bulk work), again ('1' when the caller asks again without having left the
 * process, see acquireOrWait).
 * Returns {granted(1|0), time (grant time or retry-at), reason, remaining, lead (how much
 * earlier than retry-at a job parked in the queue should be handed back, ms)}.
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
 * of every bulk waiter: backfill only gets the slots live work leaves. A waiter that comes back
 * and is refused again (its slot settled later than promised) keeps its first promise as its
 * place in line, so the waiters behind it stay behind it; it is told its new moment.
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
-- A waiter back for its promised slot keeps its place in line: if it is refused again (the slot
-- it was promised settled later than promised), only the waiters promised earlier stay ahead.
local promised = nil
if waiter ~= '' then
  promised = redis.call('ZSCORE', KEYS[3], waiter) or redis.call('ZSCORE', KEYS[4], waiter)
  redis.call('ZREM', KEYS[3], waiter)
  redis.call('ZREM', KEYS[4], waiter)
end
local blocked = tonumber(redis.call('GET', KEYS[2]) or '0')
if blocked > now then return {0, blocked, 'blocked', 0} end
-- Slots stay one window past their life: OBSERVE reads a late answer against the ledger as it
-- stood when that request left. Only the living ones count.
redis.call('ZREMRANGEBYSCORE', KEYS[7], '-inf', now - life)
for _, key in ipairs({KEYS[1], KEYS[5], KEYS[6]}) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - life - window)
end
local alive = '(' .. (now - life)
local lagged = redis.call('HMGET', KEYS[10], 'grant', 'settle')
local lag = {grant = tonumber(lagged[1] or '0'), settle = tonumber(lagged[2] or '0')}
lag.lead = math.min(lag.grant, 2 * window / limit)
local bulkUsed = redis.call('ZCOUNT', KEYS[1], alive, '+inf')
local liveUsed = redis.call('ZCOUNT', KEYS[5], alive, '+inf')
local othersUsed = redis.call('ZCOUNT', KEYS[6], alive, '+inf')
local used = bulkUsed + liveUsed + othersUsed
if ARGV[8] ~= '' then
  for _, key in ipairs({KEYS[1], KEYS[5]}) do
    local held = redis.call('ZSCORE', key, ARGV[8])
    if held and tonumber(held) > now - life and redis.call('ZREM', key, ARGV[8]) == 1 then
      redis.call('ZADD', key, now, ARGV[5])
      redis.call('ZREM', KEYS[7], ARGV[8])
      redis.call('ZADD', KEYS[7], now, ARGV[5])
      return {1, now, 'prepaid', limit - used}
    end
  end
end
local headroom = 0
local unseen = 0
local expected = 0
if othersUsed > 0 then
  local seen = tonumber(redis.call('GET', KEYS[8]) or '0')
  local since = math.min(math.max(now - seen, 0), window)
  expected = othersUsed * since / window
  unseen = math.floor(expected)
  headroom = tonumber(ARGV[9])
end
local liveCap = math.max(1, limit - unseen)
-- Live work may use the headroom in a short burst, but not in a flood (live jobs waiting): a
-- window kept full by live work alone would put each of the other client's requests over the
-- limit, and ours after it would meet 429s. A flood also counts the other client's request
-- that is probably on its way (rounding up what it is expected to have sent since).
if headroom > 0 and redis.call('ZCARD', KEYS[3]) > 0 then
  liveCap = math.max(1, limit - math.ceil(expected) - headroom)
end
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
-- Slots already promised to waiters whose moment has come (they are on their way back) and
-- who are ahead of this caller: every such waiter for a new caller, only those promised
-- earlier for a waiter back for its own slot (the ones behind it must not hold it back).
local function dueAhead(set)
  if promised and tonumber(promised) <= now then
    return redis.call('ZCOUNT', set, '-inf', '(' .. promised)
  end
  return redis.call('ZCOUNT', set, '-inf', now)
end
local liveDue = redis.call('ZCOUNT', KEYS[3], '-inf', now)
if live then liveDue = dueAhead(KEYS[3]) end
local bulkDue = 0
if not live then bulkDue = dueAhead(KEYS[4]) end
-- Live first: while live jobs wait, every slot that frees is theirs, and bulk work waits (a
-- slot is free for a moment between freeing and its live waiter's return).
local liveWaiting = redis.call('ZCARD', KEYS[3])
local fits
if live then fits = used + liveDue < liveCap
else
  fits = liveWaiting == 0 and used + bulkDue < cap and nonLive + bulkDue < bulkCap
end
-- A waiter back from the queue: how late after the moment it was told (its place, less the
-- lead it was given) it reached us, for the lead given to the next ones (a moving average,
-- bounded so one stalled job cannot skew it).
if promised and ARGV[11] ~= '1' then
  local late = math.max(math.min(now - tonumber(promised) + lag.lead, window / 10), 0)
  redis.call('HSET', KEYS[10], 'grant', tostring(lag.grant + (late - lag.grant) / 8))
  redis.call('PEXPIRE', KEYS[10], window * 10)
end
if fits and pacedUntil <= now then
  local key = KEYS[1]
  if live then key = KEYS[5]
  elseif ARGV[10] == '1' then redis.call('SET', KEYS[9], tostring(nextAt + interval), 'PX', window) end
  redis.call('ZADD', key, now, ARGV[5])
  redis.call('PEXPIRE', key, window * 2 + margin)
  redis.call('ZADD', KEYS[7], now, ARGV[5])
  redis.call('PEXPIRE', KEYS[7], window * 2 + margin)
  return {1, now, 'ok', limit - used - 1, 0}
end
local function inLine(set)
  if promised then return redis.call('ZCOUNT', set, '-inf', '(' .. promised) end
  return redis.call('ZCARD', set)
end
-- Live waiters are all ahead of bulk ones, whatever their promises.
local ahead = liveWaiting
if live then ahead = inLine(KEYS[3]) end
-- The line drains through our own slots: another client keeps taking its share of each
-- window (what it took in the last one), so its slots are not ours to promise.
local ours = {KEYS[1], KEYS[5]}
local retry
if fits then
  -- Only pacing refused it.
  retry = pacedUntil
elseif live then
  -- The waiters ahead take the free slots first, then the slots as they free, oldest first.
  retry = kth(ours, ahead, liveCap - othersUsed, now, life, lag, KEYS[7])
else
  local bulkAhead = inLine(KEYS[4])
  retry = math.max(
    kth(ours, ahead + bulkAhead, cap - othersUsed, now, life, lag, KEYS[7]),
    kth({KEYS[1]}, bulkAhead, bulkCap - othersUsed, now, life, lag, KEYS[7]))
end
if waiter ~= '' then
  local set = KEYS[4]
  if live then set = KEYS[3] end
  -- Back for its slot and refused again for a short while: it keeps its place in line.
  local place = retry
  if promised and tonumber(promised) <= now and retry < tonumber(promised) + life / 2 then
    place = tonumber(promised)
  end
  redis.call('ZADD', set, place, waiter)
  -- The set lives as long as its last promise (never shortened by an earlier one).
  local last = redis.call('ZRANGE', set, -1, -1, 'WITHSCORES')
  redis.call('PEXPIRE', set, math.ceil(math.max(tonumber(last[2]) - now, 0) + life * 2))
end
local reason = 'window'
if fits then reason = 'paced'
elseif not live and (used < cap or liveWaiting > 0) then reason = 'reserved' end
return {0, retry, reason, 0, math.floor(lag.lead)}
`;

/**
 * KEYS: slots, live slots, pending, answered, lag, sent. ARGV: member, marginMs, windowMs. Called when a
 * request's answer (or its failure) is back: the server counted the request when it arrived,
 * which was no later than now, so the slot is moved to start no earlier than now - margin.
 * However long the request took to leave (a busy event loop, a slow connection), the ledger then
 * frees the slot no earlier than the server does. The slot is no longer pending; its grant time
 * moves to `answered` (kept two windows), which OBSERVE reads answers against. How far slots
 * move is averaged in `lag` (field `settle`): waiters are promised their slots that much later.
 */
export const SETTLE = `${NOW}
local granted = redis.call('ZSCORE', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[6], ARGV[1])
if granted then
  local window = tonumber(ARGV[3])
  redis.call('ZADD', KEYS[4], granted, ARGV[1])
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - 2 * window)
  redis.call('PEXPIRE', KEYS[4], 2 * window)
end
local latest = now - tonumber(ARGV[2])
for _, key in ipairs({KEYS[1], KEYS[2]}) do
  local score = redis.call('ZSCORE', key, ARGV[1])
  if score then
    local window = tonumber(ARGV[3])
    local shift = math.min(math.max(latest - tonumber(score), 0), window / 10)
    local average = tonumber(redis.call('HGET', KEYS[5], 'settle') or '0')
    redis.call('HSET', KEYS[5], 'settle', tostring(average + (shift - average) / 8))
    redis.call('PEXPIRE', KEYS[5], window * 10)
    if shift > 0 then
      redis.call('ZADD', key, 'XX', latest, ARGV[1])
      return 1
    end
    return 0
  end
end
return 0
`;

/**
 * KEYS: slots, live slots, pending, sent. ARGV: member. Gives back a slot whose request never
 * left the process.
 */
export const RELEASE = `redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
return redis.call('ZREM', KEYS[1], ARGV[1]) + redis.call('ZREM', KEYS[2], ARGV[1])`;

/**
 * KEYS: pending, sent. ARGV: member, windowMs. The slot's request is leaving now: `sent` orders
 * the pending requests by the moment they left (Redis's clock, in microseconds), which is the
 * order the server counts them in. Grant order is not: between its grant and its request a job
 * writes its intent, and a busy process may send a request granted earlier after another
 * process has sent one granted later.
 */
export const SENT = `
local t = redis.call('TIME')
local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', us - window * 2000)
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[2], us, ARGV[1])
redis.call('PEXPIRE', KEYS[2], window * 2)
return 1
`;

/**
 * KEYS: slots, seen, live slots, others, pending, answered, doubt, sent. ARGV: limit (the smaller of
 * ours and the server's), windowMs, marginMs, serverRemaining, serverResetMs, the answered
 * request's slot (or '').
 * When the server reports fewer requests left than we count (another client shares the
 * store), the difference is added to `others`. When the other client's requests arrived is
 * unknown, so they are taken as just now and live a full window (safe; RateLimit-Reset tells
 * only when the oldest request leaves, and is rounded to whole seconds).
 *
 * The answer is compared with our requests as the server saw them when the answered one
 * arrived: those in the ledger in the window before its grant (slots that have expired since,
 * while its answer was on the way, were still counted), less our requests still in flight that
 * left after it (`sent`, see SENT) or have not left at all. Comparing it with the ledger as it
 * is now instead would mistake our own requests for another client's whenever the answer took
 * longer than theirs: a burst of live orders, with dozens in flight, then fills the window with
 * phantom requests that hold real slots for a whole window.
 *
 * Requests may still arrive in another order than they were marked as leaving: a process whose
 * event loop is busy marks a request and sends it tens of milliseconds later. A shortfall no
 * larger than our requests that left after the answered one and are still in flight may be
 * that, so it is held (`doubt`) and learned only when the answer to a request that left after
 * it was held shows it again; a larger one is learned at once. One phantom request costs a
 * slot for a whole window; waiting for a later answer to learn a real one costs what the
 * headroom covers. Once another client is known to be spending in the window, a shortfall is
 * learned at once: it is most likely that client's next request.
 *
 * A call made outside a slot (ARGV[6] = '') is compared with the ledger, every pending request
 * left out (the safe side: one of ours that did arrive is counted twice for a window at most,
 * never hides one of the other client's). `seen` holds when the server last told us its count
 * (the answered request's leaving, when known): bulk feeders start slowly until a store's
 * budget has been learned, and ACQUIRE lowers every cap by the other client's requests expected
 * since.
 */
export const OBSERVE = `${NOW}
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local margin = tonumber(ARGV[3])
local serverRemaining = tonumber(ARGV[4])
local others = redis.call('ZCOUNT', KEYS[4], '(' .. (now - window - margin), '+inf')
local ours
local after = 0
local answered = ARGV[6] ~= '' and redis.call('ZSCORE', KEYS[5], ARGV[6])
local left = answered and redis.call('ZSCORE', KEYS[8], ARGV[6])
-- The answer tells the server's count as of its request's arrival, which under load can be a
-- good part of a slot before we read it: what is unseen starts there (never earlier than a
-- later answer already said).
local seenAt = now
if left then seenAt = math.min(now, math.floor(tonumber(left) / 1000)) end
local seenBefore = tonumber(redis.call('GET', KEYS[2]) or '0')
redis.call('SET', KEYS[2], math.max(seenAt, seenBefore), 'PX', window)
if answered and left then
  local from = '(' .. (tonumber(answered) - window - margin)
  -- In flight and not counted: pending, less those that left before it (itself included).
  local before = redis.call('ZCOUNT', KEYS[8], '-inf', left)
  after = redis.call('ZCOUNT', KEYS[8], '(' .. left, '+inf')
  ours = redis.call('ZCOUNT', KEYS[1], from, '+inf') + redis.call('ZCOUNT', KEYS[3], from, '+inf')
    - math.max(redis.call('ZCARD', KEYS[5]) - before, 0)
elseif answered then
  -- Not marked as sent (a client without the hook): grant order stands for send order.
  local from = '(' .. (tonumber(answered) - window - margin)
  after = redis.call('ZCOUNT', KEYS[5], '(' .. answered, '+inf')
  ours = redis.call('ZCOUNT', KEYS[1], from, '+inf') + redis.call('ZCOUNT', KEYS[3], from, '+inf')
    - after
else
  local from = '(' .. (now - window - margin)
  ours = redis.call('ZCOUNT', KEYS[1], from, '+inf') + redis.call('ZCOUNT', KEYS[3], from, '+inf')
    - math.max(redis.call('ZCARD', KEYS[5]) - 1, 0)
end
-- Bounded: one script call must stay short whatever a misconfigured budget says.
local missing = math.min(limit - ours - others - serverRemaining, 10000)
if missing <= 0 then
  redis.call('DEL', KEYS[7])
  return 0
end
local sure = math.max(missing - after, 0)
local doubt = missing - sure
local learned = sure
if others > 0 then
  -- Another client has been spending in this window: a shortfall is most likely its next
  -- request, and learning it late risks a 429 that stops the store for a whole Retry-After.
  learned = missing
  redis.call('DEL', KEYS[7])
elseif doubt > 0 then
  -- Confirmed only by an answer to a request that left after the doubt was recorded: every
  -- request that could have overtaken the doubted one had left by then, and counts as ours.
  local held = redis.call('HMGET', KEYS[7], 'count', 'at')
  if held[1] and left and tonumber(left) > tonumber(held[2]) then
    learned = learned + math.min(doubt, tonumber(held[1]))
    redis.call('DEL', KEYS[7])
  elseif not held[1] then
    local t = redis.call('TIME')
    redis.call('HSET', KEYS[7], 'count', doubt, 'at', tonumber(t[1]) * 1000000 + tonumber(t[2]))
    redis.call('PEXPIRE', KEYS[7], window)
  end
else
  redis.call('DEL', KEYS[7])
end
if learned <= 0 then return 0 end
local score = now - margin
for i = 1, learned do
  redis.call('ZADD', KEYS[4], score, now .. ':' .. i .. ':' .. math.random(1000000))
end
redis.call('PEXPIRE', KEYS[4], window * 2 + margin)
return learned
`;

/** KEYS: blocked. ARGV: retryAfterMs, jitterMs. Keeps the later of two blocks. */
export const BLOCK = `${NOW}
local untilMs = now + tonumber(ARGV[1]) + math.random(0, tonumber(ARGV[2]))
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current > untilMs then return current end
redis.call("SET", KEYS[1], untilMs, "PX", untilMs - now + 1000)
return untilMs
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
