--[[
  OBSERVE, our requests as the server saw them (a fragment: it runs inline, with the script's
  locals). The answer is compared with our requests as the server saw them when the answered
  one arrived: those in the ledger in the window before its grant (slots that have expired
  since, while its answer was on the way, were still counted), less our requests still in
  flight that left after it (`inflight`, see SENT) or have not left at all. Comparing it with the
  ledger as it is now instead would mistake our own requests for another client's whenever the
  answer took longer than theirs: a burst of live orders, with dozens in flight, then fills the
  window with phantom requests that hold real slots for a whole window.

  Reads `answered` (the answered slot's grant time while it was in flight, else false) and
  `left` (when it left, µs, or nil), set by its caller (includes/inflight-take.lua).
  Sets: `ours`, `after` (ours in flight that left after it), `countBefore()` (ours in flight
  that left before it, counted only where it is read), `seenAt`, `seenBefore`, `markSeen()`.
]]
local ours
local after = 0
-- The answer tells the server's count as of its request's arrival, which under load can be a
-- good part of a slot before we read it: what is unseen starts there (never earlier than a
-- later answer already said).
local seenAt = now
if left then seenAt = math.min(now, math.floor(tonumber(left) / 1000)) end
local seenBefore = 0
if lagState.seenUntil and now < tonumber(lagState.seenUntil) then seenBefore = tonumber(lagState.seen) end
-- Alone on the store (no other client's request counted, read within two windows or learned
-- from this answer), the time only says that the budget is known (slow start, `knows`): it is
-- rewritten once half its window has passed, not at every answer. With another client about
-- it also says since when that client's requests are unseen (ACQUIRE's headroom): every time.
local function markSeen(learning)
  local alone = others == 0 and not learning
    and not (lagState.othersAt and now - tonumber(lagState.othersAt) < 2 * window)
  if alone and seenBefore > 0 and tonumber(lagState.seenUntil) - now > window / 2 then return end
  setLag('seen', math.max(seenAt, seenBefore))
  setLag('seenUntil', now + window)
end
-- Our slots granted after `fromMs`, bulk and live (bulk: none when the latest is older,
-- `slotsTop` in `lag`, without counting the ledger).
local function oursFrom(fromMs)
  local from = '(' .. fromMs
  local counted = redis.call('ZCOUNT', liveKey, from, '+inf')
  if lagState.slotsTop and tonumber(lagState.slotsTop) <= fromMs then return counted end
  return counted + redis.call('ZCOUNT', slotsKey, from, '+inf')
end
-- Our requests in flight that left before the answered one (it has left the set): read only
-- where an answer alone in flight matters (observe-read).
local function countBefore()
  return redis.call('ZCOUNT', inflightKey, usArg(tonumber(left) - window * 2000), left)
end
-- Our slots granted but not marked leaving, within their life: in flight after any answer.
local function unsentAlive()
  return redis.call('ZCOUNT', inflightKey, '(' .. usArg(UNSENT + (now - window - margin) * 1000), '+inf')
end
if answered and left then
  -- In flight and not counted: those that left after it, and those not marked leaving yet
  -- (counted apart only when the set holds any after it).
  local notBefore = redis.call('ZCOUNT', inflightKey, '(' .. left, '+inf')
  after = notBefore
  local unsent = 0
  if notBefore > 0 then
    after = redis.call('ZCOUNT', inflightKey, '(' .. left, '(' .. usArg(UNSENT))
    if notBefore > after then
      unsent = unsentAlive()
      -- Past their life, never marked leaving (a lost process's): trimmed where they cost.
      if notBefore - after > unsent then
        redis.call('ZREMRANGEBYSCORE', inflightKey, '(' .. usArg(UNSENT),
          usArg(UNSENT + (now - window - margin) * 1000))
      end
    end
  end
  ours = oursFrom(answered - window - margin) - after - unsent
elseif answered then
  -- Not marked as sent (a client without the hook): grant order stands for send order, for
  -- those not marked either; those marked count by when they left.
  local grantUs = usArg(answered * 1000)
  after = redis.call('ZCOUNT', inflightKey, '(' .. grantUs, '(' .. usArg(UNSENT))
    + redis.call('ZCOUNT', inflightKey, '(' .. usArg(UNSENT + answered * 1000), '+inf')
  ours = oursFrom(answered - window - margin) - after
else
  local inFlight = redis.call('ZCOUNT', inflightKey, '(' .. usArg((now - window - margin) * 1000), '(' .. usArg(UNSENT))
    + unsentAlive()
  ours = oursFrom(now - window - margin) - math.max(inFlight - 1, 0)
end
