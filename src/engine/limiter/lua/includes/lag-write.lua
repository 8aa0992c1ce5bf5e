--[[
  The one write to the store's `lag` hash (a fragment: needs `lagKey`, `window` and `now`):
  `args` (field, value, …) in one HSET, with its expiry kept as lag.lua describes: twenty
  windows, set when the hash has none (`kept`, its `until` as last read, is nil) or less than
  half of it is left, so a hash is never left without one. Returns the hash's `until` after the
  write, for the caller's copy of its state.
]]
local function hsetLag(args, kept)
  local ttl = window * 20
  local renew = not kept or tonumber(kept) - now < ttl / 2
  if renew then
    args[#args + 1] = 'until'
    args[#args + 1] = now + ttl
  end
  redis.call('HSET', lagKey, unpack(args))
  if not renew then return kept end
  redis.call('PEXPIRE', lagKey, ttl)
  return now + ttl
end
