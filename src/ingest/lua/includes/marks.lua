--[[
  The dedupe marks of the deliveries about an order: field m of its snapshot hash, one entry per
  delivery, `<id>:<expiry>;` (the id: 16 hex digits, see SnapshotStore; the expiry: epoch
  seconds), oldest first. A fragment for snapshot-write.lua and snapshot-mark.lua.
]]
local MAX_MARKS = 100
-- The unexpired entries of field m's value `held` (a string or false), `mark` left out, and
-- whether `mark` was among them.
local function liveMarks(held, nowSec, mark)
  local marks, found = {}, false
  for id, expires in string.gmatch(held or '', '(%x+):(%d+);') do
    if tonumber(expires) > nowSec then
      if id == mark then
        found = true
      else
        marks[#marks + 1] = id .. ':' .. expires .. ';'
      end
    end
  end
  return marks, found
end
-- Field m's new value: `marks` with `mark` added last, kept `ttlSeconds`; at most MAX_MARKS
-- entries (the oldest go first: a redelivery of one is processed again, which is harmless).
local function withMark(marks, mark, nowSec, ttlSeconds)
  local first = math.max(1, #marks - MAX_MARKS + 2)
  return table.concat(marks, '', first) .. mark .. ':' ..
    string.format('%.0f', nowSec + tonumber(ttlSeconds)) .. ';'
end
