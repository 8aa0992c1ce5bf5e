--[[
  The rule (ADR 0001): bulk work and other clients' requests together stay below
  `limit - headroom - reserve`, and bulk work takes a slot only while the whole window is below
  `limit - headroom`; live work takes any slot up to the limit. The reserve is counted against
  everything but live work, so live orders add to a saturated window instead of replacing bulk
  slots, and a live order finds a slot at once unless live work alone exceeds its reserve and
  the headroom. The headroom is kept only while another client is spending the store's budget:
  its requests since our last answer are unseen. Every cap is also lowered by the other
  client's requests expected since that answer (its count in the last window, pro rata), so a
  stalled process does not spend what the other client has meanwhile used.

  Pacing (ARGV[10] = '1'): bulk work's slots are spread evenly over the window, one per
  `window / (bulk ceiling - other clients' requests)` on average (the most it can use in a
  window), a generic cell rate algorithm allowing two intervals of burst. A slot
  pattern repeats itself a window later (a slot is taken again when it frees), so bursts and
  silences would otherwise last: other clients' requests are learned in clumps (all those made
  since our last answer, at once) and leave the ledger in clumps, bulk work taking every freed
  slot at once copies the clump into the next window, and a window filled faster than its length
  leaves a silence at its end in which nothing is learned and live orders find the window full.
  Paced, our requests spread evenly, we hear from the server every slot or so, and bulk work
  still gets its whole share.

  Prepaid: a backfill feeder takes the slot before it queues the job (see budget-feeder.ts), so
  the job never waits in the delayed set. The slot is moved to now when the job uses it (its life
  then starts when the request leaves, which only ever counts longer) and renamed, so a job that
  runs twice cannot spend it twice.

  Waiters: a refused job is given its own future moment, the k-th slot to free counting the
  jobs waiting ahead of it, instead of the first one; otherwise every waiting job would wake at
  the same instant, one would win and the rest would be delayed again. Live waiters are ahead
  of every bulk waiter: backfill only gets the slots live work leaves. A waiter that comes back
  and is refused again (its slot settled later than promised) keeps its first promise as its
  place in line, so the waiters behind it stay behind it; it is told its new moment. It keeps
  it through a 429 block too, and those due come back after the block one slot interval apart.

  A flood while another client spends: the line is spread over the window (one promise per
  slot interval of our share) instead of each waiter being promised the moment a slot frees;
  see SPREAD below. Slow start: on a store no answer has told us about for a window, the first
  live request goes alone and the others wait for its answer (ARGV[12]).

  Input:
    KEYS[1]  slots        bulk work's slots (zset: member → grant time, ms)
    KEYS[2]  blocked      until when a 429 blocks the store (ms)
    KEYS[3]  liveWaiters  live jobs refused, by their promised moment
    KEYS[4]  bulkWaiters  bulk jobs refused, by their promised moment
    KEYS[5]  live         live work's slots
    KEYS[6]  others       other clients' requests learned from the server's headers
    KEYS[7]  pending      our slots whose answer is not back yet
    KEYS[8]  seen         when the server last told us its count
    KEYS[9]  paced        when the next bulk grant is due (GCRA)
    KEYS[10] lag          hash: `grant` (how late woken waiters come), `settle` (how far slots move), ms
    KEYS[11] probe        hash: the live request that went out alone to learn an unknown
                          store's budget (`slot`) and when (`at`)
    KEYS[12] told         hash: waiter → the moment it was told to come back (its promise less
                          the lead), against which its lateness is measured
    ARGV[1]  limit
    ARGV[2]  windowMs
    ARGV[3]  marginMs
    ARGV[4]  reserve      slots bulk work leaves to live work
    ARGV[5]  member       the new slot's id
    ARGV[6]  waiter       the job id, or ''
    ARGV[7]  priority     'live' | 'bulk'
    ARGV[8]  prepaid      a slot granted earlier to whoever queued the job, or ''
    ARGV[9]  headroom     slots left unused while another client is spending
    ARGV[10] pace         '1' to pace bulk work
    ARGV[11] again        '1' when the caller asks again without having left the process
    ARGV[12] probeMs      how long live work waits for that request's answer (0: no slow start)

  Output:
    {granted (1|0), time (grant time or retry-at), reason, remaining,
     lead (how much earlier than retry-at a job parked in the queue is handed back, ms)}
]]
--- @include "now"
--- @include "kth"

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
local told = nil
local promisedIn = KEYS[3]
if waiter ~= '' then
  promised = redis.call('ZSCORE', KEYS[3], waiter)
  if not promised then
    promised = redis.call('ZSCORE', KEYS[4], waiter)
    promisedIn = KEYS[4]
  end
  redis.call('ZREM', KEYS[3], waiter)
  redis.call('ZREM', KEYS[4], waiter)
  told = redis.call('HGET', KEYS[12], waiter)
  if told then
    told = tonumber(told)
    redis.call('HDEL', KEYS[12], waiter)
  end
  -- (A missing member reads as false.)
  if not promised then promised = nil end
end
local blocked = tonumber(redis.call('GET', KEYS[2]) or '0')
if blocked > now then
  -- The line waits out a block in order: a waiter keeps its place, and those due come back
  -- one slot interval apart after it, not all at its end.
  local retry = blocked
  if promised then
    redis.call('ZADD', promisedIn, promised, waiter)
    -- (Those due ahead of it: the rest of the line keeps its moments.)
    local ahead = redis.call('ZCOUNT', promisedIn, now - window, '(' .. promised)
    retry = math.max(tonumber(promised), math.ceil(blocked + ahead * window / limit))
  elseif waiter ~= '' then
    retry = math.ceil(blocked + redis.call('ZCARD', KEYS[3]) * window / limit)
  end
  return {0, retry, 'blocked', 0}
end
-- Slots stay one window past their life: OBSERVE reads a late answer against the ledger as it
-- stood when that request left. Only the living ones count.
redis.call('ZREMRANGEBYSCORE', KEYS[7], '-inf', now - life)
for _, key in ipairs({KEYS[1], KEYS[5], KEYS[6]}) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - life - window)
end
local alive = '(' .. (now - life)
local lagged = redis.call('HMGET', KEYS[10], 'grant', 'settle', 'others', 'othersAt', 'liveAt', 'liveTold')
local lag = {grant = tonumber(lagged[1] or '0'), settle = tonumber(lagged[2] or '0')}
-- Handed back the queue's delay early and an interval more, so a woken job is back before its
-- slot frees and takes it at once; up to a tenth of the window.
lag.lead = math.min(lag.grant + window / limit, window / 10, 500)
-- Each round after the current one is promised a slot's life and the time slots settle late
-- after the one before, but no more than a slot interval (less the margin) late: a burst's first
-- answers come late while the rest of the burst is being read, and the rounds after it do
-- not. Every later round promised that late would leave its slots unused that long, a slot
-- interval per round at a 2 s window.
lag.cycle = math.min(lag.settle, math.max(window / limit - margin, 0))
local bulkUsed = redis.call('ZCOUNT', KEYS[1], alive, '+inf')
local liveUsed = redis.call('ZCOUNT', KEYS[5], alive, '+inf')
local othersUsed = redis.call('ZCOUNT', KEYS[6], alive, '+inf')
-- What the other client had in the window at the last answer that read it exactly (see
-- OBSERVE), if within two windows: it keeps spending at that pace while we do not hear from
-- the server, though the requests we learned from that answer leave the ledger a window after
-- we learned them. (In a flood whose requests went out in one clump, the requests learned at
-- its start would all have left, and with them every trace of that client, just as the next
-- clump goes out.)
local read = nil
if lagged[3] and now - tonumber(lagged[4]) < 2 * window then read = tonumber(lagged[3]) end
if read then othersUsed = math.max(othersUsed, read) end
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
-- Slow start for live work: while no answer has told us the store's budget (another client
-- may be spending it), the first live request goes alone and the others wait for its answer,
-- up to `probeMs`: a blind burst into a shared budget meets 429s that stop the store. Once a
-- window: an answer without RateLimit headers teaches nothing, but ends the wait.
local probing = false
if live and tonumber(ARGV[12]) > 0 and redis.call('EXISTS', KEYS[8]) == 0 then
  local probe = redis.call('HMGET', KEYS[11], 'at', 'slot')
  if not probe[1] then
    probing = true
  elseif now < tonumber(probe[1]) + tonumber(ARGV[12]) and redis.call('ZSCORE', KEYS[7], probe[2]) then
    local poll = math.max(1, math.min(math.ceil(window / limit), 50))
    local retry = math.min(now + poll, tonumber(probe[1]) + tonumber(ARGV[12]))
    -- In line already: if the answer is slow and the job leaves the process, it keeps its place.
    if waiter ~= '' then
      redis.call('ZADD', KEYS[3], promised or retry, waiter)
      local last = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
      redis.call('PEXPIRE', KEYS[3], math.ceil(math.max(tonumber(last[2]) - now, 0) + (window + margin) * 2))
    end
    return {0, retry, 'window', 0, 0}
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
-- A burst of live work counts the other client's request expected since the last answer from
-- half a request on (a burst that fills the window at once would meet it otherwise).
local liveCap = math.max(1, limit - math.floor(expected + 0.5))
-- Live work may use the headroom in a short burst, and in a flood (live jobs waiting) all but
-- the other client's request that is probably on its way (rounding up what it is expected to
-- have sent since). No slot of the headroom is kept for requests of that client not learned
-- yet: the flood's line is spread (see SPREAD) and an answer comes every slot or so, so none
-- is unseen for longer than a slot. Each slot kept cost one of our 80 a window with it at 20 %,
-- and a burst of 5,000 two windows.
if headroom > 0 and redis.call('ZCARD', KEYS[3]) > 0 then
  liveCap = math.max(1, limit - math.ceil(expected))
end
local cap = math.max(1, limit - unseen - headroom)
local bulkCap = math.max(1, cap - reserve)
local nonLive = bulkUsed + othersUsed
-- Pacing as GCRA: `paced` holds the theoretical time of the next bulk grant; a grant may come
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
-- earlier for a waiter back for its own slot (the ones behind it must not hold it back). A
-- waiter back does not wait for those more than two slot intervals late either: the queue
-- hands jobs back late now and then, and a slot kept for each late one would make every round
-- start as late as its latest job (the late one takes the next slot to free instead).
local function dueAhead(set)
  if not promised then return redis.call('ZCOUNT', set, '-inf', now) end
  local from = '(' .. (now - 2 * window / limit)
  if tonumber(promised) <= now then return redis.call('ZCOUNT', set, from, '(' .. promised) end
  return redis.call('ZCOUNT', set, from, now)
end
local liveDue = redis.call('ZCOUNT', KEYS[3], '-inf', now)
if live then liveDue = dueAhead(KEYS[3]) end
local bulkDue = 0
if not live then bulkDue = dueAhead(KEYS[4]) end
-- Live first: while live jobs wait, every slot that frees is theirs, and bulk work waits (a
-- slot is free for a moment between freeing and its live waiter's return).
local liveWaiting = redis.call('ZCARD', KEYS[3])
-- SPREAD. A flood while another client spends: the line is spread over the window, one
-- promise per slot interval of our share, instead of each waiter promised the moment a slot
-- frees. Slots taken together free together: the line would go out in a clump at each
-- window's start and fall silent for the rest of it, and that client's requests made in the
-- silence would be learned all at once at the next clump, as it goes out (429s). Spread, we
-- hear from the server every slot or so. Spreading a clump costs its slots part of a window
-- once; the line then keeps the pattern. Only the few jobs due at a time wait in the process,
-- so they are handed back a whole queue delay early, and an interval more.
local spread = 0
local share = liveCap - othersUsed
if live and headroom > 0 and (liveWaiting > 0 or promised ~= nil) then
  -- Planned for the whole line at once, so with what holds while it drains, not with this
  -- moment's: the other client's requests per window as the last unambiguous answer read them
  -- (`others` also holds, on the safe side, requests of ours a burst reordered) and one request
  -- of that client on its way (see above).
  local planned = read or othersUsed
  share = math.max(1, limit - planned - 1)
  lag.lead = math.min(lag.grant + window / share, window / 10, 500)
  -- The line drains `share` slots per slot life. Not per queue delay as well: every waiter of a
  -- continuous line comes back about as late, and takes a slot that freed as late, so that
  -- delay shifts the line without slowing it. Nor per the time slots settle late: the line is
  -- planned while the burst is being read, when answers are read late (13 ms a slot at a 2 s
  -- window, against under 1 ms once the line runs), and a line planned that slow stays that
  -- slow, 0.5 % of the budget. A waiter whose slot has not freed yet at its moment is told the
  -- next one to free and keeps its place.
  spread = life / share
  -- Paced as well, one grant per interval: waiters all due at once (those held back for the
  -- slow start's first answer) would otherwise go out in a clump, and a clump frees its slots
  -- together a window later, faster than the spread line takes them again; the window runs
  -- short of our share from then on. Waiters the line told their moments may be up to four
  -- intervals late and catch up.
  local liveAt = tonumber(lagged[5] or '0')
  if live then
    nextAt = math.max(liveAt, now)
    local slack = 0
    if told then slack = 4 end
    pacedUntil = math.ceil(liveAt - slack * spread)
  end
end
local fits
if live then
  fits = used + liveDue < liveCap
  -- A newcomer to a spread line goes to its back: the line is promised slots later than they
  -- free, so a slot free now is one a waiter is coming for. Taken, the waiter finds the window
  -- full at its moment, is promised again where the slots free (in a clump), and the line
  -- falls back into rounds (and the newcomer overtakes the whole line).
  if spread > 0 and not promised and liveWaiting > 0 then fits = false end
else
  fits = liveWaiting == 0 and used + bulkDue < cap and nonLive + bulkDue < bulkCap
end
-- A waiter back from the queue: how late after the moment it was told (its place, less the
-- lead it was given) it reached us, for the lead given to the next ones (a moving average,
-- bounded so one stalled job cannot skew it).
if told and ARGV[11] ~= '1' then
  local late = math.max(math.min(now - told, window / 10), 0)
  redis.call('HSET', KEYS[10], 'grant', tostring(lag.grant + (late - lag.grant) / 8))
  redis.call('PEXPIRE', KEYS[10], window * 10)
end
if fits and pacedUntil <= now then
  local key = KEYS[1]
  if live then
    key = KEYS[5]
    if spread > 0 then redis.call('HSET', KEYS[10], 'liveAt', tostring(nextAt + spread)) end
  elseif ARGV[10] == '1' then redis.call('SET', KEYS[9], tostring(nextAt + interval), 'PX', window) end
  redis.call('ZADD', key, now, ARGV[5])
  redis.call('PEXPIRE', key, window * 2 + margin)
  redis.call('ZADD', KEYS[7], now, ARGV[5])
  redis.call('PEXPIRE', KEYS[7], window * 2 + margin)
  if probing then
    redis.call('HSET', KEYS[11], 'at', now, 'slot', ARGV[5])
    redis.call('PEXPIRE', KEYS[11], window)
  end
  return {1, now, 'ok', limit - used - 1, 0}
end
local function inLine(set)
  if promised then return redis.call('ZCOUNT', set, '-inf', '(' .. promised) end
  return redis.call('ZCARD', set)
end
-- Live waiters are all ahead of bulk ones, whatever their promises.
local ahead = liveWaiting
if live then ahead = inLine(KEYS[3]) end
-- A waiter of a spread line back at its moment and refused (its slot freed later than the
-- line was planned): it keeps its place and takes the next slot to free after those due just
-- ahead of it. Counting the whole line before it (waiters refused in the same way keep their
-- earlier places) would send it rounds back, and the line, promised again where the slots
-- free, back into clumps.
if live and spread > 0 and promised and tonumber(promised) <= now then ahead = liveDue end
-- The line drains through our own slots: another client keeps taking its share of each
-- window (what it took in the last one), so its slots are not ours to promise.
local ours = {KEYS[1], KEYS[5]}
local retry
if fits then
  -- Only pacing refused it. A waiter of a spread line is told the next moment no waiter refused
  -- by pacing has been told yet (those come back one interval apart); it keeps its place (below).
  retry = pacedUntil
  if live then
    retry = math.max(pacedUntil, tonumber(lagged[6] or '0') + spread)
    redis.call('HSET', KEYS[10], 'liveTold', tostring(retry))
  end
elseif live then
  -- The waiters ahead take the free slots first, then the slots as they free, oldest first.
  local last = nil
  if spread > 0 and not promised and ahead >= share then
    last = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')[2]
  end
  if last then
    -- Spread, behind a round's worth of waiters: a newcomer goes one interval after the last
    -- promise in line (the line drains one per interval, whatever the ledger holds now). Kept
    -- to the fraction: a promise rounded up to the millisecond would put every next one later,
    -- and a line of a thousand drift a slot interval per 25 promises behind its share.
    retry = tonumber(last) + spread
  else
    retry = kth(ours, ahead, share, now, life, lag, KEYS[7], spread > 0 and spread or nil)
  end
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
  if promised and fits then place = tonumber(promised) end
  redis.call('ZADD', set, place, waiter)
  redis.call('HSET', KEYS[12], waiter, math.ceil(retry) - math.floor(lag.lead))
  -- The set lives as long as its last promise (never shortened by an earlier one).
  local last = redis.call('ZRANGE', set, -1, -1, 'WITHSCORES')
  local ttl = math.ceil(math.max(tonumber(last[2]) - now, 0) + life * 2)
  redis.call('PEXPIRE', set, ttl)
  if redis.call('PTTL', KEYS[12]) < ttl then redis.call('PEXPIRE', KEYS[12], ttl) end
end
local reason = 'window'
if fits then reason = 'paced'
elseif not live and (used < cap or liveWaiting > 0) then reason = 'reserved' end
return {0, math.ceil(retry), reason, 0, math.floor(lag.lead)}
