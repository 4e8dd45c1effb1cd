-- Release committed pods: give back their requests, ports and peers, and forget them.
-- A pod released by key also gives back the room reserved for it, if any (a
-- preemptor deleted before it was bound).
-- ARGV[3]: msgpack list of unit keys (every pod of each unit goes);
-- ARGV[4]: msgpack list of pod keys (those pods alone: a deleted pod, a failed binding).
-- Returns [seq, units released, pods released, holds released].
local dirty = {}
local units, pods, holds = 0, 0, 0

for _, unit in ipairs(cmsgpack.unpack(ARGV[3])) do
  local blob = is_name(unit) and redis.call('HGET', UNITS, unit)
  if blob then
    for _, pod in ipairs(cmsgpack.unpack(blob)) do
      if release_pod(pod, dirty) then pods = pods + 1 end
    end
    redis.call('HDEL', UNITS, unit)
    units = units + 1
  end
end
for _, pod in ipairs(cmsgpack.unpack(ARGV[4])) do
  if is_name(pod) then
    if release_pod(pod, dirty) then pods = pods + 1 end
    if release_hold(pod, dirty) then holds = holds + 1 end
  end
end
local seq = tonumber(redis.call('GET', SEQ) or '0')
if next(dirty) then seq = bump(dirty) end
return {seq, units, pods, holds}
