-- Shared by every node-store script (prepended when the script is loaded).
-- KEYS: seq, changes, pods, units, peers, keep-away, holds, namespaces, namespace
-- changes, epoch, reserved, commit log, ReadWriteOncePod claims in use, free volumes
-- given to claims.
-- ARGV[1]: the node key prefix; ARGV[2]: the store's epoch as the caller knows it.
-- A caller whose epoch is not the store's (Redis lost the store and it was built
-- again, or is being built) changes and reads nothing: the reply is the error
-- 'EPOCH <the store's epoch>', empty if it has none.
local SEQ, CHANGES, PODS, UNITS, PEERS = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local KEEP_AWAY, HOLDS, NAMESPACES, NAMESPACE_CHANGES = KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local RESERVED, COMMIT_LOG, CLAIMS, GIVEN = KEYS[11], KEYS[12], KEYS[13], KEYS[14]
-- Versions the commit log keeps: a reader further behind reads every changed node.
local COMMIT_LOG_KEPT = 256
local NODE = ARGV[1]
local epoch = redis.call('GET', KEYS[10])
if not epoch or epoch ~= ARGV[2] then
  return redis.error_reply('EPOCH ' .. (epoch or ''))
end
local MAX_AMOUNT = 9007199254740992 -- 2^53: beyond it a Lua number is not exact

-- Integers are written as plain digits: tostring() would write 1e+15.
local function int(x)
  return string.format('%.0f', x)
end

local function is_amount(x)
  return type(x) == 'number' and x >= 0 and x <= MAX_AMOUNT and x == math.floor(x)
end

local function is_name(x)
  return type(x) == 'string' and #x > 0 and #x <= 512
end

-- Host ports in use on a node: field 'hp' holds msgpack {"TCP:8080": {ip: pods}}.
-- A port bound on 0.0.0.0 takes that protocol and port on every address.
local ANY_IP = '0.0.0.0'

local function is_port(p)
  return type(p) == 'table' and is_name(p[1]) and type(p[2]) == 'string'
    and type(p[3]) == 'number' and p[3] >= 1 and p[3] <= 65535 and p[3] == math.floor(p[3])
end

-- The first of `ports` ({protocol, ip, port}) that clashes with `used`, or nil.
local function port_clash(used, ports)
  for _, p in ipairs(ports) do
    local ips = used[p[1] .. ':' .. p[3]]
    if ips then
      if p[2] == ANY_IP then
        for _, pods in pairs(ips) do
          if pods > 0 then return p end
        end
      elseif (ips[p[2]] or 0) > 0 or (ips[ANY_IP] or 0) > 0 then
        return p
      end
    end
  end
  return nil
end

-- Add (sign 1) or remove (sign -1) ports from a node's map, dropping empty entries.
local function count_ports(used, ports, sign)
  for _, p in ipairs(ports) do
    local key = p[1] .. ':' .. p[3]
    local ips = used[key] or {}
    ips[p[2]] = (ips[p[2]] or 0) + sign
    if ips[p[2]] <= 0 then ips[p[2]] = nil end
    used[key] = next(ips) and ips or nil
  end
end

-- A node's host ports as readers take them: {{protocol, port, ip, pods}, ...}.
local function port_entries(used)
  local entries = {}
  for key, ips in pairs(used) do
    local sep = string.find(key, ':', 1, true)
    for ip, pods in pairs(ips) do
      entries[#entries + 1] = {string.sub(key, 1, sep - 1), tonumber(string.sub(key, sep + 1)), ip, pods}
    end
  end
  return entries
end

-- Volumes attached to a node, for its attach limits (upstream's NodeVolumeLimits):
-- field 'av' holds msgpack {limit key: {volume: pods}}, 'vl' its limits {limit key:
-- volumes} and 'mp' the in-tree plugins migrated to CSI there (put_nodes.lua).
local function is_attachable(a)
  return type(a) == 'table' and is_name(a[1]) and is_name(a[2]) and type(a[3]) == 'string'
end

-- Add (sign 1) or remove (sign -1) a pod's volumes ({key, volume}) from a node's
-- map, dropping empty entries.
local function count_volumes(used, volumes, sign)
  for _, a in ipairs(volumes) do
    local pods = used[a[1]] or {}
    pods[a[2]] = (pods[a[2]] or 0) + sign
    if pods[a[2]] <= 0 then pods[a[2]] = nil end
    used[a[1]] = next(pods) and pods or nil
  end
end

-- A node's attached volumes as readers take them: {{key, volume, pods}, ...}.
local function volume_entries(used)
  local entries = {}
  for key, pods in pairs(used) do
    for volume, count in pairs(pods) do entries[#entries + 1] = {key, volume, count} end
  end
  return entries
end

-- A node's maps (counted: 'hp' host ports, 'pp' peers, 'av' attached volumes; and
-- 'vl', 'mp') are written whole, or dropped when empty.
local function write_map(key, field, map)
  if next(map) then
    redis.call('HSET', key, field, cmsgpack.pack(map))
  else
    redis.call('HDEL', key, field)
  end
end

-- Pods on a node by peer id (who they are, for other pods' affinity and spreading).
local function count_peer(peers, id, sign)
  peers[id] = (peers[id] or 0) + sign
  if peers[id] <= 0 then peers[id] = nil end
end

-- Which of `keys` the hash holds, as a set, read in calls of at most 1,000 keys.
local function present(hash, keys)
  local found = {}
  for i = 1, #keys, 1000 do
    local last = math.min(i + 999, #keys)
    local values = redis.call('HMGET', hash, unpack(keys, i, last))
    for j = i, last do
      if values[j - i + 1] then found[keys[j]] = true end
    end
  end
  return found
end

-- Record that the given nodes changed at a new global version.
local function bump(dirty)
  local seq = redis.call('INCR', SEQ)
  for name, _ in pairs(dirty) do
    if redis.call('EXISTS', NODE .. name) == 1 then
      redis.call('HSET', NODE .. name, 'v', seq)
    end
    redis.call('ZADD', CHANGES, seq, name)
  end
  return seq
end

-- Take amounts off a node's usage, if the node still exists (it says whether).
local function give_back(key, names, amounts)
  if redis.call('EXISTS', key) == 0 then return false end
  for i, name in ipairs(names) do
    redis.call('HINCRBY', key, 'u:' .. name, int(-amounts[i]))
  end
  return true
end

-- GPUs per device (cluster/gpus.py): a node's field 'g' holds msgpack [milli used
-- on GPU 0, on GPU 1, ...] (absent: none used); it has alloc['nvidia.com/gpu'] GPUs.
local GPU, GPU_MILLI, MILLI_PER_GPU = 'nvidia.com/gpu', 'optimist.io/gpu-milli', 1000

-- What a pod with these requests takes: how many GPUs, and the milli on each
-- (whole GPUs take all 1000 of each; a share, its milli of one GPU).
local function gpu_demand(names, amounts)
  local whole, share = 0, 0
  for i, r in ipairs(names) do
    if r == GPU then whole = amounts[i] elseif r == GPU_MILLI then share = amounts[i] end
  end
  if whole > 0 then return whole, MILLI_PER_GPU end
  if share > 0 then return 1, share end
  return 0, 0
end

local function gpu_free(used, extra, i)
  return MILLI_PER_GPU - (used[i + 1] or 0) - (extra[i + 1] or 0)
end

-- `wanted` if it names `devices` distinct GPUs among a node's `count`, each of which
-- `ok` accepts (called in order); nil otherwise.
local function given_gpus(wanted, count, devices, ok)
  if type(wanted) ~= 'table' or #wanted ~= devices then return nil end
  local taken = {}
  for _, i in ipairs(wanted) do
    if type(i) ~= 'number' or i ~= math.floor(i) or i < 0 or i >= count or taken[i]
        or not ok(i) then
      return nil
    end
    taken[i] = true
  end
  return wanted
end

-- The first `devices` of `gpus` by free milli (the least free first, or the most free
-- if `most`; ties: the lower index), in index order.
local function by_free(gpus, used, extra, devices, most)
  table.sort(gpus, function(a, b)
    local fa, fb = gpu_free(used, extra, a), gpu_free(used, extra, b)
    if fa ~= fb then return (fa < fb) ~= most end
    return a < b
  end)
  local out = {}
  for k = 1, math.min(devices, #gpus) do out[k] = gpus[k] end
  table.sort(out)
  return out
end

-- The GPUs (0-based) a pod taking `devices` GPUs of `per` milli each gets among a
-- node's `count`: `wanted` (the shard's choice) if each still has `per` free, else
-- those with the least free that have it (ties: the lower index); nil if too few have.
-- With `groups` (per GPU, from 1, its NVLink island or NUMA node; -1: none) they must
-- all be of one group: the one that holds them with the fewest to spare.
local function choose_gpus(used, extra, count, devices, per, wanted, groups)
  local function group_of(i) return groups and (groups[i + 1] or -1) or 0 end
  local first = nil -- the group of the first wanted GPU: the others must share it
  local given = given_gpus(wanted, count, devices, function(i)
    first = first or group_of(i)
    return gpu_free(used, extra, i) >= per and group_of(i) >= 0 and group_of(i) == first
  end)
  if given then return given end
  local fits, in_group = {}, {}
  for i = 0, count - 1 do
    local g = group_of(i)
    if gpu_free(used, extra, i) >= per and g >= 0 then
      fits[#fits + 1] = i
      in_group[g] = (in_group[g] or 0) + 1
    end
  end
  if groups then
    local best = nil
    for g, n in pairs(in_group) do
      if n >= devices and (best == nil or n < in_group[best] or (n == in_group[best] and g < best)) then
        best = g
      end
    end
    if best == nil then return nil end
    local kept = {}
    for _, i in ipairs(fits) do
      if group_of(i) == best then kept[#kept + 1] = i end
    end
    fits = kept
  end
  if #fits < devices then return nil end
  return by_free(fits, used, extra, devices, false)
end

-- The GPUs of a pod the cluster runs already: those it was given (`wanted`) if they
-- are GPUs of the node, room or not; else the least used, for want of knowing.
local function observed_gpus(used, extra, count, devices, wanted)
  local given = given_gpus(wanted, count, devices, function() return true end)
  if given then return given end
  local all = {}
  for i = 0, count - 1 do all[#all + 1] = i end
  return by_free(all, used, extra, devices, true)
end

-- Add (sign 1) or take back (-1) a pod's `per` milli on each of its GPUs; the
-- list stays dense, so that msgpack writes it as an array.
local function count_gpus(used, indices, per, sign)
  local last = 0
  for k, _ in pairs(used) do last = math.max(last, k) end
  for _, i in ipairs(indices) do
    used[i + 1] = (used[i + 1] or 0) + sign * per
    last = math.max(last, i + 1)
  end
  for k = 1, last do used[k] = used[k] or 0 end
end

-- Take what a pod held (`held`, as `count` counts it: count_ports, count_volumes,
-- count_peer) out of a node's counted map `field`, written back whole.
local function give_back_map(key, field, count, held)
  local blob = redis.call('HGET', key, field)
  local map = blob and cmsgpack.unpack(blob) or {}
  count(map, held, -1)
  write_map(key, field, map)
end

-- Give back what a committed pod holds (requests, ports, peer, GPUs, attached
-- volumes: its record in PODS, commit.lua) and forget it.
-- Marks its node in `dirty`; returns whether the pod was committed.
local function release_pod(pod, dirty)
  local rec = redis.call('HGET', PODS, pod)
  if not rec then return false end
  local r = cmsgpack.unpack(rec)
  local node, names, amounts, ports, peer, gpus, volumes = r[1], r[3], r[4], r[5], r[6], r[7], r[8]
  local key = NODE .. node
  if give_back(key, names, amounts) then
    if gpus and #gpus > 0 then
      local blob = redis.call('HGET', key, 'g')
      local used = blob and cmsgpack.unpack(blob) or {}
      local _, per = gpu_demand(names, amounts)
      count_gpus(used, gpus, per, -1)
      redis.call('HSET', key, 'g', cmsgpack.pack(used))
    end
    if #ports > 0 then give_back_map(key, 'hp', count_ports, ports) end
    if volumes and #volumes > 0 then give_back_map(key, 'av', count_volumes, volumes) end
    give_back_map(key, 'pp', count_peer, peer)
  end
  for _, claim in ipairs(r[9] or {}) do -- its ReadWriteOncePod claims are free again
    if redis.call('HGET', CLAIMS, claim) == pod then redis.call('HDEL', CLAIMS, claim) end
  end
  for _, pick in ipairs(r[10] or {}) do -- and the free volumes its claims were given
    if redis.call('HGET', GIVEN, pick[2]) == pick[1] then redis.call('HDEL', GIVEN, pick[2]) end
  end
  dirty[node] = true
  redis.call('HDEL', PODS, pod)
  -- its unit forgets it; a unit with no pod left is forgotten too, so that a pod
  -- made again under the same name is not taken for a duplicate
  local members = redis.call('HGET', UNITS, r[2])
  if members then
    local left = {}
    for _, p in ipairs(cmsgpack.unpack(members)) do
      if p ~= pod then left[#left + 1] = p end
    end
    if #left > 0 then
      redis.call('HSET', UNITS, r[2], cmsgpack.pack(left))
    else
      redis.call('HDEL', UNITS, r[2])
    end
  end
  return true
end

-- Room held on a node for one pod (a preemptor's, a reservation's): HOLDS
-- maps the pod key to msgpack [node, resource names, amounts, expires at (unix s)],
-- and the amounts count in the node's usage, so everybody else sees them as used.
-- Give one back; marks its node in `dirty`; returns whether there was one.
local function release_hold(pod, dirty)
  local rec = redis.call('HGET', HOLDS, pod)
  if not rec then return false end
  local r = cmsgpack.unpack(rec)
  give_back(NODE .. r[1], r[2], r[3])
  dirty[r[1]] = true
  redis.call('HDEL', HOLDS, pod)
  return true
end

