--[[
  ACQUIRE, the refusal (a fragment: it runs inline, with the script's locals; it ends the
  script). The refused caller's moment: the k-th slot to free counting the waiters ahead of it
  (KTH), or, in a spread line, one interval after the last promise; a caller refused by pacing
  alone is told the paced moment. A waiter is put in line at that moment (or keeps its earlier
  place) and told it, less the lead. Returns {0, retry-at, reason, 0, lead}.
]]
local function inLine(set)
  if promised then return redis.call('ZCOUNT', set, '-inf', '(' .. promised) end
  return redis.call('ZCARD', set)
end
-- Live waiters are all ahead of bulk ones, whatever their promises.
local ahead = liveWaiting
if live then ahead = inLine(liveWaitersKey) end
-- A waiter of a spread line back at its moment and refused (its slot freed later than the
-- line was planned): it keeps its place and takes the next slot to free after those due just
-- ahead of it. Counting the whole line before it (waiters refused in the same way keep their
-- earlier places) would send it rounds back, and the line, promised again where the slots
-- free, back into clumps.
if live and spread > 0 and promised and tonumber(promised) <= now then ahead = liveDue end
-- The line drains through our own slots: another client keeps taking its share of each
-- window (what it took in the last one), so its slots are not ours to promise.
local ours = {slotsKey, liveKey}
local retry
if fits then
  -- Only pacing refused it. A waiter of a spread line is told the next moment no waiter refused
  -- by pacing has been told yet (those come back one interval apart); it keeps its place (below).
  retry = pacedUntil
  if live then
    retry = math.max(pacedUntil, tonumber(lagged[6] or '0') + spread)
    writeLag('liveTold', tostring(retry))
  end
elseif live then
  -- The waiters ahead take the free slots first, then the slots as they free, oldest first.
  local last = nil
  if spread > 0 and not promised and ahead >= share then
    last = redis.call('ZRANGE', liveWaitersKey, -1, -1, 'WITHSCORES')[2]
  end
  if last then
    -- Spread, behind a round's worth of waiters: a newcomer goes one interval after the last
    -- promise in line (the line drains one per interval, whatever the ledger holds now). Kept
    -- to the fraction: a promise rounded up to the millisecond would put every next one later,
    -- and a line of a thousand drift a slot interval per 25 promises behind its share.
    retry = tonumber(last) + spread
  else
    retry = kth(ours, ahead, share, now, life, lag, inflightKey, spread > 0 and spread or nil)
  end
else
  local bulkAhead = inLine(bulkWaitersKey)
  retry = math.max(
    kth(ours, ahead + bulkAhead, cap - othersUsed, now, life, lag, inflightKey),
    kth({slotsKey}, bulkAhead, bulkCap - othersUsed, now, life, lag, inflightKey))
end
if waiter ~= '' then
  local set = bulkWaitersKey
  if live then set = liveWaitersKey end
  -- Back for its slot and refused again for a short while: it keeps its place in line.
  local place = retry
  if promised and tonumber(promised) <= now and retry < tonumber(promised) + life / 2 then
    place = tonumber(promised)
  end
  if promised and fits then place = tonumber(promised) end
  addWaiter(set, place, waiter)
  redis.call('HSET', toldKey, waiter, math.ceil(retry) - math.floor(lag.lead))
  -- The set lives as long as its last promise (never shortened by an earlier one).
  local last = redis.call('ZRANGE', set, -1, -1, 'WITHSCORES')
  local ttl = math.ceil(math.max(tonumber(last[2]) - now, 0) + life * 2)
  redis.call('PEXPIRE', set, ttl)
  if redis.call('PTTL', toldKey) < ttl then redis.call('PEXPIRE', toldKey, ttl) end
end
local reason = 'window'
if fits then reason = 'paced'
elseif not live and (used < cap or liveWaiting > 0) then reason = 'reserved' end
return {0, math.ceil(retry), reason, 0, math.floor(lag.lead)}
