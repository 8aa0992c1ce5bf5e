--[[
  KNOWN: whether an answer told us the store's count within the last window (`seen` holds; see
  includes/lag.lua), on Redis's clock.

  Input:
    KEYS[1] lag

  Output:
    1 or 0
]]
--- @include "now"
local seenUntil = redis.call('HGET', KEYS[1], 'seenUntil')
if seenUntil and now < tonumber(seenUntil) then return 1 end
return 0
