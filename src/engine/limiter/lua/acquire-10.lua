--[[
  ACQUIRE: one decision on a slot of a store's budget (ADR 0001). Each policy is a fragment in
  includes/, run inline in this order with the locals named below:

    acquire-waiter      the caller back for its promised slot leaves the line (keeps its place)
    acquire-block       a 429 blocks everyone until its end; the line keeps its order
    (here)              the ledger: what the window holds, ours and the other client's
    acquire-prepaid     a slot the backfill feeder took before it queued the job
    acquire-slow-start  an unknown store: the first live request goes alone
    acquire-headroom    the caps: limit, headroom, live reserve, the other client expected
    acquire-pacing      bulk work spread evenly over the window (GCRA)
    (here)              waiters due ahead of the caller
    acquire-spread      a flood while another client spends: the line spread over the window
    (here)              the grant
    acquire-promise     the refusal: the caller's moment (KTH) and its place in line

  Input:
    KEYS[1]  slots        bulk work's slots (zset: member → grant time, ms)
    KEYS[2]  liveWaiters  live jobs refused, by their promised moment
    KEYS[3]  bulkWaiters  bulk jobs refused, by their promised moment
    KEYS[4]  live         live work's slots
    KEYS[5]  others       other clients' requests learned from the server's headers
    KEYS[6]  inflight     our slots whose answer is not back yet, by the moment their request
                          left (µs; see includes/inflight.lua)
    KEYS[7]  paced        when the next bulk grant is due (GCRA)
    KEYS[8]  lag          hash (lag.lua): `grant` (how late woken waiters come), `settle` (how
                          far slots move), ms; `seen`, `seenUntil` (when the server last told
                          us its count); `othersTop` (no learned request later than it);
                          `blocked` (until when a 429 blocks the store, ms); `liveUntil`,
                          `slotsUntil` (the ledgers' expiry as last set); `noWaiters` (no
                          job waits in either line: they are not counted); `slotsTop` (no
                          bulk slot later than it); `inflightUntil` (the inflight set's
                          expiry as last set); `until` (its own)
    KEYS[9]  probe        hash: the live request that went out alone to learn an unknown
                          store's budget (`slot`) and when (`at`)
    KEYS[10] told         hash: waiter → the moment it was told to come back (its promise less
                          the lead), against which its lateness is measured
    ARGV[1]  limit
    ARGV[2]  windowMs
    ARGV[3]  marginMs
    ARGV[4]  reserve      slots bulk work leaves to live work
    ARGV[5]  member       the new slot's id
    ARGV[6]  waiter       the job id, or ''
    ARGV[7]  priority     'live' | 'bulk'
    ARGV[8]  prepaid      a slot granted earlier to whoever queued the job, or ''
    ARGV[9]  sharedHeadroom slots left unused while another client is spending
    ARGV[10] pace         '1' to pace bulk work
    ARGV[11] again        '1' when the caller asks again without having left the process
    ARGV[12] probeMs      how long live work waits for that request's answer (0: no slow start)
    ARGV[13] sendsNow     '1' when the caller sends the request the moment it is granted (its
                          intent already written): the grant marks it as leaving, as SENT
                          would just before it left

  Output:
    {granted (1|0), time (grant time or retry-at), reason, remaining,
     lead (how much earlier than retry-at a job parked in the queue is handed back, ms),
     left (granted to a caller that sends at once: the moment its request left, µs; else '')}
]]
-- KEYS
local slotsKey = KEYS[1]
local liveWaitersKey = KEYS[2]
local bulkWaitersKey = KEYS[3]
local liveKey = KEYS[4]
local othersKey = KEYS[5]
local inflightKey = KEYS[6]
local pacedKey = KEYS[7]
local lagKey = KEYS[8]
local probeKey = KEYS[9]
local toldKey = KEYS[10]
-- ARGV
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local margin = tonumber(ARGV[3])
local reserve = tonumber(ARGV[4])
local member = ARGV[5]
local waiter = ARGV[6]
local live = ARGV[7] == 'live'
local prepaid = ARGV[8]
local sharedHeadroom = tonumber(ARGV[9])
local pace = ARGV[10] == '1'
local again = ARGV[11] == '1'
local probeMs = tonumber(ARGV[12])
local sendsNow = ARGV[13] == '1'


--- @include "now"
--- @include "kth"
--- @include "inflight"

local life = window + margin
-- The store's small state (lag.lua), read once. (Positional: the fragments read some by index.)
local lagged = redis.call('HMGET', lagKey, 'grant', 'settle', 'others', 'othersAt', 'liveAt', 'liveTold',
  'seen', 'seenUntil', 'othersTop', 'blocked', 'until', 'liveUntil', 'slotsUntil', 'noWaiters',
  'slotsTop', 'inflightUntil')
local LAGGED = {['until'] = 11, liveUntil = 12, slotsUntil = 13, noWaiters = 14, slotsTop = 15,
  inflightUntil = 16}
-- Writes to it, each with its expiry kept as lag.lua keeps it (`until`): set when it has none
-- or less than half of twenty windows is left, so it is never left without one.
--- @include "lag-write"
local function writeLag(...)
  lagged[LAGGED['until']] = hsetLag({...}, lagged[LAGGED['until']])
end
-- A slot ledger's expiry: twice the life of what it holds (a slot is counted for its life and
-- read a window past it), renewed when less than that life is left, so a slot added now is
-- kept to its end; set at once where the ledger may be new (nothing counted in it, or its
-- expiry unknown). Not on every grant: one PEXPIRE per ledger per life instead.
local ledgerLife = window * 2 + margin
local function keepLedger(key, field, counted)
  local untilMs = tonumber(lagged[LAGGED[field]] or '0')
  if counted > 0 and untilMs - now >= ledgerLife then return end
  redis.call('PEXPIRE', key, 2 * ledgerLife)
  lagged[LAGGED[field]] = now + 2 * ledgerLife
  writeLag(field, now + 2 * ledgerLife)
end
-- Sets that grow with every grant (the ledgers, `inflight`) are trimmed at one grant in
-- sixteen, picked by the new slot's id (random; the clock's milliseconds fall in step with a
-- steady stream of jobs): every count and read of them is bounded to the range they keep, so
-- what a trim leaves for later only takes memory.
local trimming = member:byte(1) == 48
-- A granted slot is in flight (includes/inflight.lua): marked as leaving now when its caller sends
-- at once (SENT's record), else by its grant time above every moment of leaving until SENT. What
-- a lost process left there is trimmed: leavings two windows old here (OBSERVE reads none
-- older), slots never marked leaving where OBSERVE finds them past their life. The set's expiry
-- is renewed as a ledger's is (its marker keeps it from being emptied in between, so it
-- holds). Returns the moment of leaving (µs) to a caller that sends at once, else ''.
local function addInflight(slot)
  local nowUs = tonumber(t[1]) * 1000000 + tonumber(t[2])
  if trimming then redis.call('ZREMRANGEBYSCORE', inflightKey, '(0', usArg(nowUs - window * 2000)) end
  local score = nowUs
  if not sendsNow then score = UNSENT + nowUs end
  redis.call('ZADD', inflightKey, usArg(score), slot)
  if tonumber(lagged[LAGGED.inflightUntil] or '0') - now < ledgerLife then
    redis.call('ZADD', inflightKey, 0, '~')
    redis.call('PEXPIRE', inflightKey, 2 * ledgerLife)
    lagged[LAGGED.inflightUntil] = now + 2 * ledgerLife
    writeLag('inflightUntil', now + 2 * ledgerLife)
  end
  if sendsNow then return usArg(nowUs) end
  return ''
end
-- A bulk slot added: the bulk ledger is no longer known empty from `slotsTop` on.
local function bulkAdded()
  if lagged[LAGGED.slotsTop] then
    lagged[LAGGED.slotsTop] = false
    redis.call('HDEL', lagKey, 'slotsTop')
  end
end
-- A waiter put in line: the lines are no longer known empty.
local function addWaiter(set, score, id)
  redis.call('ZADD', set, score, id)
  if lagged[LAGGED.noWaiters] then
    lagged[LAGGED.noWaiters] = false
    redis.call('HDEL', lagKey, 'noWaiters')
  end
end
--- @include "acquire-waiter"
--- @include "acquire-block"
-- The ledgers keep slots one window past their life (OBSERVE reads a late answer against the
-- ledger as it stood when that request left), requests in flight two windows after they left;
-- each is only ever counted within that range, and trimmed now and then where it grows: a grant here, a
-- learned request in OBSERVE.
local alive = '(' .. (now - life)
-- When the server last told us its count, while that holds (a window; see lag.lua), or nil.
local seen = nil
if lagged[8] and now < tonumber(lagged[8]) then seen = tonumber(lagged[7]) end
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
-- (Bulk slots: none when the latest is older than the window, `slotsTop`; a live caller that
-- finds none records it, so a store without bulk work does not count them again.)
local bulkUsed = 0
if not lagged[LAGGED.slotsTop] or tonumber(lagged[LAGGED.slotsTop]) > now - life then
  bulkUsed = redis.call('ZCOUNT', slotsKey, alive, '+inf')
  if bulkUsed == 0 and live then
    lagged[LAGGED.slotsTop] = now - life
    writeLag('slotsTop', now - life)
  end
end
local liveUsed = redis.call('ZCOUNT', liveKey, alive, '+inf')
-- (None when the latest learned request is older than the window: no count of the ledger.)
local othersUsed = 0
if not lagged[9] or tonumber(lagged[9]) > now - life then
  othersUsed = redis.call('ZCOUNT', othersKey, alive, '+inf')
end
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
--- @include "acquire-prepaid"
--- @include "acquire-slow-start"
--- @include "acquire-headroom"
--- @include "acquire-pacing"
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
local liveDue = 0
if live and liveCount > 0 then liveDue = dueAhead(liveWaitersKey) end
local bulkDue = 0
if not live and bulkCount > 0 then bulkDue = dueAhead(bulkWaitersKey) end
-- Live first: while live jobs wait, every slot that frees is theirs, and bulk work waits (a
-- slot is free for a moment between freeing and its live waiter's return).
local liveWaiting = liveCount
--- @include "acquire-spread"
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
if told and not again then
  local late = math.max(math.min(now - told, window / 10), 0)
  writeLag('grant', tostring(lag.grant + (late - lag.grant) / 8))
end
if fits and pacedUntil <= now then
  local key = slotsKey
  if live then
    key = liveKey
    if spread > 0 then writeLag('liveAt', tostring(nextAt + spread)) end
  elseif pace then redis.call('SET', pacedKey, tostring(nextAt + interval), 'PX', window) end
  if trimming then redis.call('ZREMRANGEBYSCORE', key, '-inf', now - life - window) end
  redis.call('ZADD', key, now, member)
  if live then
    keepLedger(key, 'liveUntil', liveUsed)
  else
    bulkAdded()
    keepLedger(key, 'slotsUntil', bulkUsed)
  end
  local left = addInflight(member)
  if probing then
    redis.call('HSET', probeKey, 'at', now, 'slot', member)
    redis.call('PEXPIRE', probeKey, window)
  end
  return {1, now, 'ok', limit - used - 1, 0, left}
end
--- @include "acquire-promise"
