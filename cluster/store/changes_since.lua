-- What changed after version ARGV[3], for a reader that keeps the columns ARGV[4]
-- and awaits the units ARGV[5] (its own placements not yet known to be settled).
-- When every version after ARGV[3] is a commit the commit log still holds, returns
-- {'log', msgpack [seq, committed], record, ...}: commit.lua's records, oldest first,
-- a node's last one holding its state now. Otherwise (a node added or removed, a
-- release, a namespace, or a reader far behind) reads every changed node:
-- {msgpack [seq, names, versions, used, deleted, committed, ports, specs, peered,
-- namespaces, gpus, attached],
-- spec, ..., pods, ...}:
-- `ports` lists, for changed nodes with host ports in use, [name, [[protocol,
-- port, ip, pods], ...]]; `peered` names the changed nodes with pods, whose
-- maps of peer id -> pods follow the specs as stored (msgpack), for the
-- reader to decode: quicker there than taking them apart here;
-- `committed` lists the awaited units that are committed, in this same
-- snapshot, so the reader can stop assuming them without counting them twice;
-- `versions` holds each name's version; `used` their committed usage of the
-- reader's columns, sparse: name index, column index (both 0-based), amount, for
-- the amounts there are. A reader of many columns (each node with a resource of its
-- own, as in scheduler_perf's extended-resource case) so gets what the nodes use,
-- not a block of zeros, and each node's own usage fields are read, not every
-- column's; `specs` counts the specs that follow the frame (binary, so they
-- travel outside it): the nodes whose spec changed after ARGV[3]; `namespaces` lists
-- [name, labels as JSON or false if deleted] for those changed after ARGV[3];
-- `gpus` lists [name, milli used per GPU] for changed nodes with GPUs in use;
-- `attached` lists, for changed nodes with volumes attached, [name, [[limit key,
-- volume, pods], ...]].
local since = tonumber(ARGV[3])
local cols = cmsgpack.unpack(ARGV[4])
local awaited = cmsgpack.unpack(ARGV[5])
local seq = tonumber(redis.call('GET', SEQ) or '0')
local committed, found = {}, present(UNITS, awaited)
for _, unit in ipairs(awaited) do
  if found[unit] then committed[#committed + 1] = unit end
end
if seq - since <= COMMIT_LOG_KEPT then
  local logged = redis.call('ZRANGEBYSCORE', COMMIT_LOG, '(' .. since, '+inf')
  if #logged == seq - since then
    local reply = {'log', cmsgpack.pack({seq, committed})}
    for _, record in ipairs(logged) do reply[#reply + 1] = record end
    return reply
  end
end
local fields = {'v', 'specv', 'hp', 'pp', 'g', 'av'}
local column = {}
for j, c in ipairs(cols) do column['u:' .. c] = j - 1 end
local FEW = 64 -- more columns than this: a node's own usage fields, found by name
if #cols <= FEW then
  for _, c in ipairs(cols) do fields[#fields + 1] = 'u:' .. c end
end
local names, versions, used, deleted = {}, {}, {}, {}
local ports, peered, maps, gpus, attached = {}, {}, {}, {}, {}
local reply = {false}

-- Record the amounts there are of the usage fields `of`, from the j-th on, in `used`.
local function add_usage(row, of, amounts, from)
  for j = from, #of do
    if amounts[j] then
      used[#used + 1] = row
      used[#used + 1] = column[of[j]]
      used[#used + 1] = tonumber(amounts[j])
    end
  end
end

for _, name in ipairs(redis.call('ZRANGEBYSCORE', CHANGES, '(' .. since, '+inf')) do
  local key = NODE .. name
  local vals = redis.call('HMGET', key, unpack(fields))
  if not vals[1] then
    deleted[#deleted + 1] = name
  else
    names[#names + 1] = name
    versions[#versions + 1] = tonumber(vals[1])
    if #cols <= FEW then
      add_usage(#names - 1, fields, vals, 7)
    else
      local own = {}
      for _, f in ipairs(redis.call('HKEYS', key)) do
        if column[f] then own[#own + 1] = f end
      end
      if #own > 0 then add_usage(#names - 1, own, redis.call('HMGET', key, unpack(own)), 1) end
    end
    if vals[3] then ports[#ports + 1] = {name, port_entries(cmsgpack.unpack(vals[3]))} end
    if vals[5] then gpus[#gpus + 1] = {name, cmsgpack.unpack(vals[5])} end
    if vals[6] then attached[#attached + 1] = {name, volume_entries(cmsgpack.unpack(vals[6]))} end
    if vals[4] then
      peered[#peered + 1] = name
      maps[#maps + 1] = vals[4]
    end
    if tonumber(vals[2]) > since then
      reply[#reply + 1] = redis.call('HGET', key, 'spec')
    end
  end
end
local namespaces = {}
for _, name in ipairs(redis.call('ZRANGEBYSCORE', NAMESPACE_CHANGES, '(' .. since, '+inf')) do
  namespaces[#namespaces + 1] = {name, redis.call('HGET', NAMESPACES, name)}
end
reply[1] = cmsgpack.pack({seq, names, versions, used, deleted, committed, ports, #reply - 1, peered,
  namespaces, gpus, attached})
for _, map in ipairs(maps) do reply[#reply + 1] = map end
return reply
