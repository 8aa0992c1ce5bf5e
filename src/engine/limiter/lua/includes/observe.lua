--[[
  OBSERVE's steps as a function, `observe()`, returning how many other-client requests were
  learned (a fragment: it runs with the script's locals: the KEYS and ARGV of OBSERVE, `now`).
  It also sets `answeredGrant`: the answered slot's grant time while it is pending, or false
  (SETTLE, run after it in ANSWERED, reads it instead of asking again; nil until it ran).
]]
local answeredGrant = nil
local function observe()
  local others = redis.call('ZCOUNT', othersKey, '(' .. (now - window - margin), '+inf')
--- @include "observe-ours"
  answeredGrant = answered
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
  return learned
end
