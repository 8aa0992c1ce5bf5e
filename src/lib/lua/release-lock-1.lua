--[[
  Releases a lock only for the owner that took it: a lock that expired and was taken by another
  process is left to that process.

  Input:
    KEYS[1] lock
    ARGV[1] owner   the value the owner wrote with SET NX

  Output:
    1 released, 0 not held by this owner
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
