--[[
  Redis's clock, the one every worker process decides against.

  Input:
    (none)

  Output:
    now, ms
]]
--- @include "now"
 return now
