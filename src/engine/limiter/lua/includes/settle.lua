--[[
  SETTLE's step as a function, `settle(member, answeredAgoMs, granted, keepAnswered)` (a
  fragment: it runs with the script's locals: slotsKey, liveKey, answeredKey, margin, window,
  now, the `lag` state (lag.lua; the caller flushes it), and `first`, the slot ledger to look in
  first: the request's priority). `granted` is the slot's grant time when it was in flight (its
  caller took it out of `inflight`, see inflight-take.lua), false when it was not. While in
  flight a slot's score in its ledger is its grant time (only SETTLE moves it), so it is moved
  without being read. `keepAnswered`: its grant time goes to the `answered` set, which OBSERVE
  reads only while another client is about (observe-forget: our requests the server surely
  had); kept there only then, a slot answered while none was about counts as one the server
  may not have had (the safe side: fewer learned requests are forgotten).
  Returns 1 when the slot moved later, else 0.
]]
local function settle(member, answeredAgoMs, granted, keepAnswered)
  if granted and keepAnswered then
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
  end
  local latest = now - math.min(answeredAgoMs, window) - margin
  local keys = {slotsKey, liveKey}
  if first == 'live' then keys = {liveKey, slotsKey} end
  -- How far slots move, averaged. (Below a hundredth of a ms it is none: the common case, slots
  -- answered within the margin, then writes nothing.) The average is for promising waiters
  -- their slots: with nobody in line (`noWaiters`), a slot answered within the margin starts it
  -- again from zero, in one write, instead of a write per answer while it decays (forty after
  -- one slow answer); a line that forms later learns it from its own answers, as on a new store.
  local function averaged(shift)
    local average = tonumber(lagState.settle or '0')
    local moved = average + (shift - average) / 8
    if shift <= 0 and lagState.noWaiters then moved = 0 end
    if moved < 0.01 then moved = 0 end
    if moved ~= average then setLag('settle', tostring(moved)) end
  end
  -- A bulk slot moved past `slotsTop`: the ledger is no longer known empty above it.
  local function movedTo(key)
    if key == slotsKey and lagState.slotsTop and latest > tonumber(lagState.slotsTop) then
      dropLag('slotsTop')
    end
  end
  if granted then
    local shift = math.min(math.max(latest - granted, 0), window / 10)
    averaged(shift)
    if shift <= 0 then return 0 end
    for _, key in ipairs(keys) do
      if redis.call('ZADD', key, 'XX', 'CH', latest, member) == 1 then
        movedTo(key)
        return 1
      end
    end
    return 0
  end
  for _, key in ipairs(keys) do
    local score = redis.call('ZSCORE', key, member)
    if score then
      local shift = math.min(math.max(latest - tonumber(score), 0), window / 10)
      averaged(shift)
      if shift > 0 then
        redis.call('ZADD', key, 'XX', latest, member)
        movedTo(key)
        return 1
      end
      return 0
    end
  end
  return 0
end
