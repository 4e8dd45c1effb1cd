-- A hold changes hands: room held under one key (a reservation's own, while it
-- waits for a pod its selector picks) is held under another (that pod's) from now
-- on. Usage does not change, so neither do versions.
-- ARGV[3]: the key it is held under; ARGV[4]: the pod that claims it.
-- Returns 'claimed', 'gone' (no such hold: it expired or was claimed) or 'taken'
-- (the pod holds room already).
if not is_name(ARGV[3]) or not is_name(ARGV[4]) then
  return redis.error_reply('claim: expected two keys')
end
local rec = redis.call('HGET', HOLDS, ARGV[3])
if not rec then return 'gone' end
if redis.call('HEXISTS', HOLDS, ARGV[4]) == 1 then return 'taken' end
redis.call('HSET', HOLDS, ARGV[4], rec)
redis.call('HDEL', HOLDS, ARGV[3])
return 'claimed'
