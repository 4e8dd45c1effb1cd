-- Release committed pods: give back their requests, ports and peers, and forget them.
-- ARGV[2]: msgpack list of unit keys (every pod of each unit goes);
-- ARGV[3]: msgpack list of pod keys (those pods alone: a deleted pod, a failed binding).
-- Returns [seq, units released, pods released].
local dirty = {}
local units, pods = 0, 0

local function release_pod(pod)
  local rec = redis.call('HGET', PODS, pod)
  if not rec then return end
  local r = cmsgpack.unpack(rec)
  local node, names, amounts, ports, peer = r[1], r[3], r[4], r[5], r[6]
  local key = NODE .. node
  if redis.call('EXISTS', key) == 1 then
    for i, name in ipairs(names) do
      redis.call('HINCRBY', key, 'u:' .. name, int(-amounts[i]))
    end
    if #ports > 0 then
      local blob = redis.call('HGET', key, 'hp')
      local used = blob and cmsgpack.unpack(blob) or {}
      count_ports(used, ports, -1)
      write_map(key, 'hp', used)
    end
    local blob = redis.call('HGET', key, 'pp')
    local peers = blob and cmsgpack.unpack(blob) or {}
    count_peer(peers, peer, -1)
    write_map(key, 'pp', peers)
  end
  dirty[node] = true
  redis.call('HDEL', PODS, pod)
  pods = pods + 1
end

for _, unit in ipairs(cmsgpack.unpack(ARGV[2])) do
  local blob = is_name(unit) and redis.call('HGET', UNITS, unit)
  if blob then
    for _, pod in ipairs(cmsgpack.unpack(blob)) do release_pod(pod) end
    redis.call('HDEL', UNITS, unit)
    units = units + 1
  end
end
for _, pod in ipairs(cmsgpack.unpack(ARGV[3])) do
  if is_name(pod) then release_pod(pod) end
end
local seq = tonumber(redis.call('GET', SEQ) or '0')
if next(dirty) then seq = bump(dirty) end
return {seq, units, pods}
