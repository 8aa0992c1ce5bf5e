--[[
  The store's small state in one hash, `lag` (a fragment: it runs inline; needs `lagKey`,
  `window` and `now`), read with one HMGET where a script starts and written with one HSET
  where it ends (`flushLag()`), instead of a key and a read and a write per value:
    grant, settle          how late waiters are granted and slots settled (see ACQUIRE, SETTLE)
    others, othersAt, othersDown  the other client's count as read exactly (observe-read)
    othersTop              no request in `others` is later than this: a count from above it is
                           0 without reading the ledger (set where a count finds none, raised
                           where requests are learned)
    seen, seenUntil        when the server last told us its count, and until when that holds
                           (a window after it was told; a separate key with that expiry before)
    doubtCount, doubtAt, doubtUntil  a shortfall held back for a window (observe-doubt)
    answeredUntil          the `answered` set's expiry as last set (settle.lua)
    slotsTop               no bulk slot is later than this (ACQUIRE sets it where it counts
                           none for a live caller, and drops it where it adds one; SETTLE
                           where it moves one past it)
    noWaiters              no job waits in either line (ACQUIRE; SETTLE reads it)
    until                  the hash's expiry as last set
  The hash's expiry (twenty windows) is set when a write finds it without one (new, or written
  by a script that does not keep `until`) or with less than ten windows left: never a hash
  without expiry, never one whose averages are lost sooner than ten windows after a write.
]]
--- @include "lag-write"
local LAG_FIELDS = {'grant', 'settle', 'others', 'othersAt', 'othersDown', 'othersTop', 'seen',
  'seenUntil', 'doubtCount', 'doubtAt', 'doubtUntil', 'answeredUntil', 'slotsTop', 'noWaiters',
  'until'}
local lagState = {}
do
  local values = redis.call('HMGET', lagKey, unpack(LAG_FIELDS))
  for i, field in ipairs(LAG_FIELDS) do
    if values[i] then lagState[field] = values[i] end
  end
end
local lagSets = {}
local lagDrops = {}
local function setLag(field, value)
  lagState[field] = value
  lagSets[field] = value
end
local function dropLag(field)
  if lagState[field] then
    lagState[field] = nil
    lagSets[field] = nil
    lagDrops[#lagDrops + 1] = field
  end
end
local function flushLag()
  if #lagDrops > 0 then redis.call('HDEL', lagKey, unpack(lagDrops)) end
  local args = {}
  for field, value in pairs(lagSets) do
    args[#args + 1] = field
    args[#args + 1] = value
  end
  lagSets = {}
  lagDrops = {}
  if #args == 0 then return end
  lagState['until'] = hsetLag(args, lagState['until'])
end
