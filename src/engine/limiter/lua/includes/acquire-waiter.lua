--[[
  ACQUIRE, waiters (a fragment: it runs inline, with the script's locals).
  A refused job is given its own future moment, the k-th slot to free counting the jobs
  waiting ahead of it, instead of the first one; otherwise every waiting job would wake at the
  same instant, one would win and the rest would be delayed again. Live waiters are ahead of
  every bulk waiter: backfill only gets the slots live work leaves. A waiter that comes back
  and is refused again (its slot settled later than promised) keeps its first promise as its
  place in line, so the waiters behind it stay behind it; it is told its new moment.

  This part takes the caller out of the line. Sets: `promised` (its earlier promise, or nil),
  `promisedIn` (the line it was in), `told` (the moment it was told to come back, or nil).
  The promise for a refusal is made at the end (acquire-promise).
]]
-- Most callers find both lines empty: a line is trimmed, and looked in, only when it is not.
-- `liveCount` and `bulkCount` follow each line's size (after the caller leaves it).
-- (Not counted while the lines are known empty, `noWaiters` in `lag`: every waiter put in line
-- clears it, and it is set again where both are counted empty.)
local liveCount = 0
local bulkCount = 0
if not lagged[LAGGED.noWaiters] then
  liveCount = redis.call('ZCARD', liveWaitersKey)
  if liveCount > 0 then
    liveCount = liveCount - redis.call('ZREMRANGEBYSCORE', liveWaitersKey, '-inf', now - life)
  end
  bulkCount = redis.call('ZCARD', bulkWaitersKey)
  if bulkCount > 0 then
    bulkCount = bulkCount - redis.call('ZREMRANGEBYSCORE', bulkWaitersKey, '-inf', now - life)
  end
  if liveCount == 0 and bulkCount == 0 then
    lagged[LAGGED.noWaiters] = '1'
    writeLag('noWaiters', '1')
  end
end
-- A waiter back for its promised slot keeps its place in line: if it is refused again (the slot
-- it was promised settled later than promised), only the waiters promised earlier stay ahead.
-- (A missing member reads as false.)
local promised = nil
local told = nil
local promisedIn = liveWaitersKey
if waiter ~= '' then
  if liveCount > 0 then promised = redis.call('ZSCORE', liveWaitersKey, waiter) end
  if promised then
    redis.call('ZREM', liveWaitersKey, waiter)
    liveCount = liveCount - 1
  elseif bulkCount > 0 then
    promised = redis.call('ZSCORE', bulkWaitersKey, waiter)
    if promised then
      promisedIn = bulkWaitersKey
      redis.call('ZREM', bulkWaitersKey, waiter)
      bulkCount = bulkCount - 1
    end
  end
  if not promised then promised = nil end
  -- Told its moment along with its promise (see acquire-promise).
  if promised then
    told = redis.call('HGET', toldKey, waiter)
    if told then
      told = tonumber(told)
      redis.call('HDEL', toldKey, waiter)
    else
      told = nil
    end
  end
end
