-- Release committed units: give back their pods' requests and forget them.
-- ARGV[2]: msgpack list of unit keys. Returns [seq, units released].
local dirty = {}
local released = 0
for _, unit in ipairs(cmsgpack.unpack(ARGV[2])) do
  local blob = is_name(unit) and redis.call('HGET', UNITS, unit)
  if blob then
    for _, pod in ipairs(cmsgpack.unpack(blob)) do
      local rec = redis.call('HGET', PODS, pod)
      if rec then
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
      end
    end
    redis.call('HDEL', UNITS, unit)
    released = released + 1
  end
end
local seq = tonumber(redis.call('GET', SEQ) or '0')
if next(dirty) then seq = bump(dirty) end
return {seq, released}
