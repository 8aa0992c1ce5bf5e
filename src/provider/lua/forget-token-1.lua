--[[
  Drops the shared provider token only when it is the one the provider refused, so many
  concurrent 401s for one token cause a single renewal and never drop a fresh token.

  Input:
    KEYS[1] token       the shared token record (JSON with `tokenHash`)
    ARGV[1] tokenHash   the hash of the token that was refused

  Output:
    1 dropped, 0 kept
]]
local stored = redis.call('GET', KEYS[1])
if stored and cjson.decode(stored).tokenHash == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
