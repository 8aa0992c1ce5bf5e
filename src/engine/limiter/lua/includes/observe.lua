--[[
  OBSERVE's steps as a function, `observe()`, returning how many other-client requests were
  learned (a fragment: it runs with the script's locals: the KEYS and ARGV of OBSERVE, `now`,
  and `answered` and `left`, the answered slot as it was in flight; see observe-ours). It also
  sets `othersCounted`: the other client's requests it counted in the window (ANSWERED keeps
  the answered slot's grant time in `answered` only while that client is about; see settle).
]]
local othersCounted = 0
local function dropDoubt()
  dropLag('doubtCount')
  dropLag('doubtAt')
  dropLag('doubtUntil')
end
local function observe()
  -- The other client's requests in the window: none when the latest learned one is older
  -- (`othersTop`, see lag.lua), without counting the ledger.
  local floor = now - window - margin
  local others = 0
  if not lagState.othersTop or tonumber(lagState.othersTop) > floor then
    others = redis.call('ZCOUNT', othersKey, '(' .. floor, '+inf')
    if others == 0 then setLag('othersTop', floor) end
  end
  othersCounted = others
--- @include "observe-ours"
  -- Bounded: one script call must stay short whatever a misconfigured budget says.
  local missing = math.min(limit - ours - others - serverRemaining, 10000)
--- @include "observe-read"
--- @include "observe-forget"
--- @include "observe-doubt"
  if learned <= 0 then return 0 end
  -- (The ledger of learned requests is trimmed here, where it grows: counts read a window.)
  redis.call('ZREMRANGEBYSCORE', othersKey, '-inf', now - 2 * window - margin)
  local score = now - margin
  for i = 1, learned do
    redis.call('ZADD', othersKey, score, now .. ':' .. i .. ':' .. math.random(1000000))
  end
  redis.call('PEXPIRE', othersKey, window * 2 + margin)
  setLag('othersTop', math.max(score, tonumber(lagState.othersTop or '0')))
  return learned
end
