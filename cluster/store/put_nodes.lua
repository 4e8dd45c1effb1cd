-- Create or replace nodes' specs; their committed usage is kept.
-- ARGV[3]: msgpack list of [name, spec (msgpack bytes), {resource: allocatable},
--          GPU groups {nvlink = [island per GPU], numa = [NUMA node per GPU]} or {},
--          volume limits {limit key: volumes it may attach} or {},
--          in-tree plugins migrated to CSI there (a list)].
local nodes = cmsgpack.unpack(ARGV[3])
local dirty = {}
for _, n in ipairs(nodes) do
  local name, spec, alloc, limits, migrated = n[1], n[2], n[3], n[5], n[6]
  if not is_name(name) or type(spec) ~= 'string' or type(alloc) ~= 'table'
      or type(limits) ~= 'table' or type(migrated) ~= 'table' then
    return redis.error_reply('put_nodes: malformed node entry')
  end
  for key, count in pairs(limits) do
    if not is_name(key) or not is_amount(count) then
      return redis.error_reply('put_nodes: node ' .. name .. ': bad volume limit ' .. tostring(key))
    end
  end
  for _, plugin in ipairs(migrated) do
    if not is_name(plugin) then
      return redis.error_reply('put_nodes: node ' .. name .. ': bad migrated plugin ' .. tostring(plugin))
    end
  end
  local key = NODE .. name
  for _, f in ipairs(redis.call('HKEYS', key)) do
    if string.sub(f, 1, 2) == 'a:' then redis.call('HDEL', key, f) end
  end
  for r, amount in pairs(alloc) do
    if not is_name(r) or not is_amount(amount) then
      return redis.error_reply('put_nodes: node ' .. name .. ': bad allocatable ' .. tostring(r))
    end
    redis.call('HSET', key, 'a:' .. r, int(amount))
  end
  redis.call('HSET', key, 'spec', spec)
  if type(n[4]) == 'table' and next(n[4]) then
    redis.call('HSET', key, 'gt', cmsgpack.pack(n[4]))
  else
    redis.call('HDEL', key, 'gt')
  end
  write_map(key, 'vl', limits)
  write_map(key, 'mp', migrated)
  dirty[name] = true
end
local seq = bump(dirty)
for name, _ in pairs(dirty) do
  redis.call('HSET', NODE .. name, 'specv', seq)
end
return seq
