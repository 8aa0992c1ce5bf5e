--[[
  `takeInflight(member, grantArg, leftArg)` (a fragment: it runs with the script's locals and
  the `inflight` fragment's; needs `inflightKey`, `slotsKey`, `liveKey`, `first`).
]]
-- The answered (or failed) slot leaves the set: its grant time (ms) and the moment it left (µs,
-- a string, or nil when it was never marked leaving), or false when it was not in flight (a
-- second answer, or settled already). `grantArg` and `leftArg` are what its caller was told at
-- its grant and at SENT ('' when not told: then they are read here; `leftArg` false: not
-- wanted, and not read).
local function takeInflight(member, grantArg, leftArg)
  local left = leftArg
  local unsentAt = nil
  if left == '' then
    left = redis.call('ZSCORE', inflightKey, member)
    if not left then return false, nil end
    redis.call('ZREM', inflightKey, member)
    if tonumber(left) >= UNSENT then
      unsentAt = (tonumber(left) - UNSENT) / 1000
      left = nil
    end
  elseif redis.call('ZREM', inflightKey, member) == 0 then
    return false, nil
  end
  local granted = tonumber(grantArg)
  if not granted then
    -- (Not told: its ledger holds its grant time until it is settled.)
    local keys = {slotsKey, liveKey}
    if first == 'live' then keys = {liveKey, slotsKey} end
    for _, key in ipairs(keys) do
      local score = redis.call('ZSCORE', key, member)
      if score then
        granted = tonumber(score)
        break
      end
    end
  end
  -- (Gone from the ledgers: no later than it was marked leaving.)
  if not granted then granted = unsentAt or (left and math.floor(tonumber(left) / 1000)) or now end
  return granted, left
end
