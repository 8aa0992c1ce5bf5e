--[[
  ACQUIRE, prepaid (a fragment: it runs inline, with the script's locals).
  A backfill feeder takes the slot before it queues the job (see budget-feeder.ts), so the job
  never waits in the delayed set. The slot is moved to now when the job uses it (its life then
  starts when the request leaves, which only ever counts longer) and renamed to `member`, so a
  job that runs twice cannot spend it twice. Returns the grant when the prepaid slot is held.
]]
if prepaid ~= '' then
  for _, key in ipairs({slotsKey, liveKey}) do
    local held = redis.call('ZSCORE', key, prepaid)
    if held and tonumber(held) > now - life then
      -- (Added before the old one leaves, so the ledger is never emptied and made again
      -- without its expiry.)
      redis.call('ZADD', key, now, member)
      redis.call('ZREM', key, prepaid)
      if key == liveKey then
        keepLedger(key, 'liveUntil', 1)
      else
        bulkAdded()
        keepLedger(key, 'slotsUntil', 1)
      end
      redis.call('ZREM', inflightKey, prepaid)
      return {1, now, 'prepaid', limit - used, 0, addInflight(member)}
    end
  end
end
