--[[
  SETTLE's step as a function, `settle(member, answeredAgoMs, granted)` (a fragment: it runs
  with the script's locals: slotsKey, liveKey, pendingKey, answeredKey, sentKey, margin,
  window, now, the `lag` state (lag.lua; the caller flushes it), and `first`, the slot ledger to look in first: the request's priority).
  `granted` is the slot's grant time while pending, false when not, or nil to look it up.
  Returns 1 when the slot moved later, else 0.
]]
local function settle(member, answeredAgoMs, granted)
  if granted == nil then granted = redis.call('ZSCORE', pendingKey, member) end
  if granted then
    redis.call('ZREM', pendingKey, member)
    redis.call('ZREM', sentKey, member)
    -- Trimmed now and then (reads of it are bounded to two windows), before the add, so the
    -- set is never emptied there. It lives four windows, renewed when two are left (its
    -- expiry in `lag`, `answeredUntil`), or at once where it may have been emptied (the
    -- trim) or not made yet (no expiry known; BLOCK, the one other remover, drops it).
    local trimmed = now % 8 == 0
    if trimmed then redis.call('ZREMRANGEBYSCORE', answeredKey, '-inf', now - 2 * window) end
    redis.call('ZADD', answeredKey, granted, member)
    local kept = tonumber(lagState.answeredUntil or '0')
    if trimmed or kept - now < 2 * window then
      redis.call('PEXPIRE', answeredKey, 4 * window)
      setLag('answeredUntil', now + 4 * window)
    end
  else
    redis.call('ZREM', sentKey, member)
  end
  local latest = now - math.min(answeredAgoMs, window) - margin
  local keys = {slotsKey, liveKey}
  if first == 'live' then keys = {liveKey, slotsKey} end
  for _, key in ipairs(keys) do
    local score = redis.call('ZSCORE', key, member)
    if score then
      local shift = math.min(math.max(latest - tonumber(score), 0), window / 10)
      local average = tonumber(lagState.settle or '0')
      -- (Below a hundredth of a ms it is none: the common case, slots answered within the
      -- margin, then writes nothing.)
      local moved = average + (shift - average) / 8
      if moved < 0.01 then moved = 0 end
      if moved ~= average then setLag('settle', tostring(moved)) end
      if shift > 0 then
        redis.call('ZADD', key, 'XX', latest, member)
        -- (A bulk slot moved past `slotsTop`: the ledger is no longer known empty above it.)
        if key == slotsKey and lagState.slotsTop and latest > tonumber(lagState.slotsTop) then
          dropLag('slotsTop')
        end
        return 1
      end
      return 0
    end
  end
  return 0
end
