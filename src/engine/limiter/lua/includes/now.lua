-- Redis's own clock (TIME), in ms: every worker process decides against one clock.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
