-- What changed after version ARGV[3], for a reader that keeps the columns ARGV[4]
-- and awaits the units ARGV[5] (its own placements not yet known to be settled).
-- When every version after ARGV[3] is a commit the commit log still holds, returns
-- {'log', msgpack [seq, committed], record, ...}: commit.lua's records, oldest first,
-- a node's last one holding its state now. Otherwise (a node added or removed, a
-- release, a namespace, or a reader far behind) reads every changed node:
-- {msgpack [seq, names, flat, deleted, committed, ports, specs, peered,
-- namespaces, gpus],
-- spec, ..., pods, ...}:
-- `ports` lists, for changed nodes with host ports in use, [name, [[protocol,
-- port, ip, pods], ...]]; `peered` names the changed nodes with pods, whose
-- maps of peer id -> pods follow the specs as stored (msgpack), for the
-- reader to decode: quicker there than taking them apart here;
-- `committed` lists the awaited units that are committed, in this same
-- snapshot, so the reader can stop assuming them without counting them twice;
-- `flat` holds, per name, its version then its committed usage of each
-- column; `specs` counts the specs that follow the frame (binary, so they
-- travel outside it): the nodes whose spec changed after ARGV[3]; `namespaces` lists
-- [name, labels as JSON or false if deleted] for those changed after ARGV[3];
-- `gpus` lists [name, milli used per GPU] for changed nodes with GPUs in use.
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
local fields = {'v', 'specv', 'hp', 'pp', 'g'}
for _, c in ipairs(cols) do fields[#fields + 1] = 'u:' .. c end
local names, flat, deleted, ports, peered, maps, gpus = {}, {}, {}, {}, {}, {}, {}
local reply = {false}
for _, name in ipairs(redis.call('ZRANGEBYSCORE', CHANGES, '(' .. since, '+inf')) do
  local key = NODE .. name
  local vals = redis.call('HMGET', key, unpack(fields))
  if not vals[1] then
    deleted[#deleted + 1] = name
  else
    names[#names + 1] = name
    flat[#flat + 1] = tonumber(vals[1])
    for j = 6, #fields do
      flat[#flat + 1] = vals[j] and tonumber(vals[j]) or 0
    end
    if vals[3] then ports[#ports + 1] = {name, port_entries(cmsgpack.unpack(vals[3]))} end
    if vals[5] then gpus[#gpus + 1] = {name, cmsgpack.unpack(vals[5])} end
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
reply[1] = cmsgpack.pack({seq, names, flat, deleted, committed, ports, #reply - 1, peered, namespaces, gpus})
for _, map in ipairs(maps) do reply[#reply + 1] = map end
return reply
