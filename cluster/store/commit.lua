-- Commit a batch of units, each all-or-nothing against the committed state.
-- ARGV[3]: msgpack [classes, units]
--   classes: list of [names, amounts, host ports, peer id, peer, keeps away,
--            GPU locality ('' or the group kind its GPUs must share: 'nvlink', 'numa')]
--            (a pod's requests; names starting with '~' are score-only
--            accounting and never checked for fit; host ports as [protocol,
--            ip, port], ip 0.0.0.0 for any; the peer is what other pods'
--            affinity and spreading see of the pod, stored once under its id;
--            keeps away: the pod has required anti-affinity)
--   units:   list of [unit key, pods], pods a list of [pod key, class index
--            (0-based), candidate nodes best first, the node versions seen,
--            the GPUs the shard chose on the first candidate (optional), the
--            volumes it attaches (optional: [limit key, volume, in-tree plugin
--            or ''], one with a plugin counting only on nodes where that plugin
--            is migrated; a pod's own, not its class's, as each names its own),
--            its ReadWriteOncePod claims (optional: namespace/name each, which
--            no other committed pod may be using), per candidate the free volumes
--            its claims are given there (optional: [claim, volume] each, volume
--            '' where none is left; each volume no other claim's)]
--            A pod that asks for GPUs gets the GPUs chosen if each still has
--            room, else those that fit best (common.lua's choose_gpus). A pod
--            whose volumes not yet attached to a node would take more of a limit
--            key than the node's limit for it does not fit there (keys it has no
--            limit for are not checked).
-- ARGV[4]: 'fine' (a pod still fits the committed state: accept) or 'coarse'
--          (a candidate that changed since the shard saw it is a conflict,
--          Omega's sequence-number check), or 'observed': pods the cluster
--          already runs (bound by another scheduler), recorded whether they
--          fit or not, since they are there all the same
-- ARGV[5]: optional ('' for none), when several binders commit (binder/fences.py): msgpack
--   [fence prefix, keep-away seen (-1: no check), count namespaces (boolean),
--    fences per unit (a list of [namespace, count seen], '*' for any)]
--   A batch routed while fewer keeping-away peers were known than now, or a
--   unit whose namespaces got pods from another binder since its cross-pod
--   check, is a conflict. Counting namespaces bumps the fence of each
--   namespace this batch committed pods in, and '*'.
-- ARGV[6]: optional: msgpack [expires at, home partition of each unit]: the units are
--   parts of units that span partitions (partitioned.py), committed as reservations
--   until settle.lua confirms or gives them back.
-- Every pod goes on its first candidate that still fits, counting the pods
-- of the same unit placed before it and the room reserved for any of them;
-- if one pod fits none, nothing of the unit is applied. Returns msgpack [seq, results, keep-away count], one result per unit:
--   {'committed', nodes, GPUs per pod} | {'conflict', detail, kind} | {'duplicate', detail} | {'invalid', detail}
--   (statuses and conflict kinds are the values of cluster/messages.py's Status and Conflict)
local req = cmsgpack.unpack(ARGV[3])
local coarse = ARGV[4] == 'coarse'
local observed = ARGV[4] == 'observed'
local classes, units = req[1], req[2]
if type(classes) ~= 'table' or type(units) ~= 'table' then
  return redis.error_reply('commit: expected [classes, units]')
end
local fences = ARGV[5] and ARGV[5] ~= '' and cmsgpack.unpack(ARGV[5]) or nil
local reservation = ARGV[6] and cmsgpack.unpack(ARGV[6])
if reservation ~= nil and not (type(reservation) == 'table' and type(reservation[1]) == 'number'
    and type(reservation[2]) == 'table' and #reservation[2] == #units) then
  return redis.error_reply('commit: expected a reservation [expires at, a home per unit]')
end
if fences ~= nil and not (type(fences) == 'table' and is_name(fences[1])
    and type(fences[2]) == 'number' and type(fences[3]) == 'boolean' and type(fences[4]) == 'table') then
  return redis.error_reply('commit: expected fences [prefix, keep-away seen, count namespaces, per unit]')
end
local keep_away = tonumber(redis.call('GET', KEEP_AWAY) or '0')
local routed_blind = fences and fences[2] >= 0 and fences[2] ~= keep_away

-- Why a unit's cross-pod check no longer holds and its conflict kind, or nil.
local function fenced(ui)
  if routed_blind then
    return 'a pod with required anti-affinity was committed after this unit was routed', 'cross-pod'
  end
  local mine = fences and fences[4][ui]
  if type(mine) ~= 'table' then return nil end
  for _, f in ipairs(mine) do
    if type(f) ~= 'table' or not is_name(f[1]) or tonumber(redis.call('GET', fences[1] .. f[1]) or '0') ~= f[2] then
      return 'pods in namespace ' .. tostring(f[1]) .. ' were committed by another binder after the cross-pod check', 'fence'
    end
  end
  return nil
end

local valid_class = {}
for i, c in ipairs(classes) do
  local ok = type(c) == 'table' and type(c[1]) == 'table' and type(c[2]) == 'table'
    and #c[1] == #c[2] and type(c[3]) == 'table' and is_name(c[4]) and type(c[5]) == 'string'
    and type(c[6]) == 'boolean' and (c[7] == '' or c[7] == 'nvlink' or c[7] == 'numa')
  if ok then
    for j, name in ipairs(c[1]) do
      ok = ok and is_name(name) and is_amount(c[2][j])
    end
    for _, p in ipairs(c[3]) do
      ok = ok and is_port(p)
    end
  end
  valid_class[i] = ok
end

local nodes = {} -- name -> {alloc, used} as read once, or false if absent
local function load(name)
  local n = nodes[name]
  if n ~= nil then return n end
  local flat = redis.call('HGETALL', NODE .. name)
  if #flat == 0 then
    nodes[name] = false
    return false
  end
  n = {alloc = {}, used = {}, ports = {}, peers = {}, gpus = {},
    limits = {}, migrated = {}, attached = {}}
  for i = 1, #flat, 2 do
    local kind = string.sub(flat[i], 1, 2)
    if kind == 'a:' then
      n.alloc[string.sub(flat[i], 3)] = tonumber(flat[i + 1])
    elseif kind == 'u:' then
      n.used[string.sub(flat[i], 3)] = tonumber(flat[i + 1])
    elseif kind == 'hp' then
      n.ports = cmsgpack.unpack(flat[i + 1])
    elseif kind == 'pp' then
      n.peers = cmsgpack.unpack(flat[i + 1])
    elseif flat[i] == 'g' then
      n.gpus = cmsgpack.unpack(flat[i + 1])
    elseif flat[i] == 'gt' then
      n.topology = cmsgpack.unpack(flat[i + 1])
    elseif flat[i] == 'vl' then
      n.limits = cmsgpack.unpack(flat[i + 1])
    elseif flat[i] == 'mp' then
      for _, plugin in ipairs(cmsgpack.unpack(flat[i + 1])) do n.migrated[plugin] = true end
    elseif flat[i] == 'av' then
      n.attached = cmsgpack.unpack(flat[i + 1])
    elseif flat[i] == 'v' then
      n.version = tonumber(flat[i + 1])
    end
  end
  nodes[name] = n
  return n
end

-- The first checked resource the pod does not fit in, with what is free.
local function shortfall(n, extra, cls)
  local names, amounts = cls[1], cls[2]
  for i, r in ipairs(names) do
    local amount = amounts[i]
    if amount > 0 and string.sub(r, 1, 1) ~= '~' then
      local free = (n.alloc[r] or 0) - (n.used[r] or 0) - (extra[r] or 0)
      if free < amount then return r, free, amount end
    end
  end
  return nil
end

-- Whether `list` is a list each of whose items `valid` takes.
local function all_valid(list, valid)
  if type(list) ~= 'table' then return false end
  for _, x in ipairs(list) do
    if not valid(x) then return false end
  end
  return true
end

-- ReadWriteOncePod claims by the pod using them: committed before (read once each), or
-- by an earlier unit of this batch
local claimed = {}
local function holder(claim)
  if claimed[claim] == nil then claimed[claim] = redis.call('HGET', CLAIMS, claim) or false end
  return claimed[claim]
end

-- The first of a pod's claims another pod is using (committed, or earlier in its own
-- unit, `extra`), and that pod; nil if none.
local function claim_taken(pod, claims, extra)
  for _, claim in ipairs(claims) do
    local by = extra[claim] or holder(claim)
    if by and by ~= pod then return claim, by end
  end
  return nil
end

-- Free volumes by the claim they were given to: committed before (read once each), or
-- in an earlier unit of this batch
local given = {}
local function given_to(volume)
  if given[volume] == nil then given[volume] = redis.call('HGET', GIVEN, volume) or false end
  return given[volume]
end

local function is_pick(x)
  return type(x) == 'table' and is_name(x[1]) and (x[2] == '' or is_name(x[2]))
end

-- Why a pod cannot have the volumes picked for its claims on node `name`: none was left
-- for a claim, or one is another claim's (committed, or earlier in its unit: `extra`).
-- Pods of one claim share its volume.
local function picks_refused(name, picks, extra)
  for _, pick in ipairs(picks) do
    local claim, volume = pick[1], pick[2]
    if volume == '' then
      return string.format('node %s: no free volume it reaches is left for claim %s', name, claim)
    end
    local to = extra[volume] or given_to(volume)
    if to and to ~= claim then
      return string.format('node %s: volume %s, picked for claim %s, is given to claim %s',
        name, volume, claim, to)
    end
  end
  return nil
end

local function valid_pod(p)
  return type(p) == 'table' and is_name(p[1]) and type(p[2]) == 'number'
    and valid_class[p[2] + 1] and type(p[3]) == 'table' and #p[3] > 0
    and (p[5] == nil or type(p[5]) == 'table') and (p[6] == nil or all_valid(p[6], is_attachable))
    and (p[7] == nil or all_valid(p[7], is_name))
    and (p[8] == nil or (#p[8] == #p[3] and all_valid(p[8], function(c) return all_valid(c, is_pick) end)))
end

-- The GPUs a pod of class `cls` takes on node `n` (its `name`), counting `extra`, the
-- milli per GPU that earlier pods of the unit took there; an empty list if it asks for
-- none; nil and why if too few GPUs have room. Pods the cluster runs already
-- (`observed`) get the GPUs they were given, or the least used, room or not.
local function gpus_for(n, name, extra, cls, wanted)
  local devices, per = gpu_demand(cls[1], cls[2])
  if devices == 0 then return {} end
  local count = n.alloc[GPU] or 0
  if observed then return observed_gpus(n.gpus, extra, count, devices, wanted) end
  local locality = cls[7] ~= '' and cls[7] or nil
  local groups = locality and ((n.topology or {})[locality] or {})
  local chosen = choose_gpus(n.gpus, extra, count, devices, per, wanted, groups)
  if chosen then return chosen end
  if locality then
    return nil, string.format('node %s: no %s group of its GPUs has %d with %d milli free',
      name, locality, devices, per)
  end
  return nil, string.format('node %s: fewer than %d of its %d GPUs have %d milli free',
    name, devices, count, per)
end

-- The volumes of `attach` (a pod's) that count on node `n`: {key, volume}, each once.
local function volumes_on(n, attach)
  local out, taken = {}, {} -- taken: key -> volume -> true
  for _, a in ipairs(attach) do
    local of_key = taken[a[1]] or {}
    taken[a[1]] = of_key
    if (a[3] == '' or n.migrated[a[3]]) and not of_key[a[2]] then
      of_key[a[2]] = true
      out[#out + 1] = {a[1], a[2]}
    end
  end
  return out
end

-- The first limit key whose limit on node `n` a pod's `volumes` (`volumes_on`) would
-- pass, with how many it attaches anew, the total then and the limit; `extra` holds
-- the volumes earlier pods of the unit attach there. Nil if none.
local function volume_excess(n, extra, volumes)
  local new, keys = {}, {}
  for _, a in ipairs(volumes) do
    local key = a[1]
    if not (n.attached[key] or {})[a[2]] and not (extra[key] or {})[a[2]] then
      if not new[key] then keys[#keys + 1] = key end
      new[key] = (new[key] or 0) + 1
    end
  end
  for _, key in ipairs(keys) do
    local limit = n.limits[key]
    if limit then
      local attached, total = n.attached[key] or {}, new[key]
      for _, _ in pairs(attached) do total = total + 1 end
      for v, _ in pairs(extra[key] or {}) do
        if not attached[v] then total = total + 1 end
      end
      if total > limit then return key, new[key], total, limit end
    end
  end
  return nil
end

-- Which units and pods are committed already: read once for the whole batch.
local unit_keys, pod_keys = {}, {}
for _, unit in ipairs(units) do
  if type(unit) == 'table' and is_name(unit[1]) then
    unit_keys[#unit_keys + 1] = unit[1]
    if type(unit[2]) == 'table' then
      for _, p in ipairs(unit[2]) do
        if type(p) == 'table' and is_name(p[1]) then pod_keys[#pod_keys + 1] = p[1] end
      end
    end
  end
end
local units_before, pods_before = present(UNITS, unit_keys), present(PODS, pod_keys)

-- Room reserved for pods of the batch (common.lua's release_hold): a pod
-- that commits consumes its reservation, on whichever node it goes to.
local held = {} -- pod key -> [node, resource names, amounts, expires at]
if #pod_keys > 0 and redis.call('HLEN', HOLDS) > 0 then
  for i = 1, #pod_keys, 1000 do
    local last = math.min(i + 999, #pod_keys)
    local values = redis.call('HMGET', HOLDS, unpack(pod_keys, i, last))
    for j = i, last do
      if values[j - i + 1] then held[pod_keys[j]] = cmsgpack.unpack(values[j - i + 1]) end
    end
  end
end
local consumed = {} -- reservations of committed pods, to delete

local seen = {}
local dirty = {}
local ports_dirty = {}
local gpus_dirty = {}
local volumes_dirty = {}
local new_peers = {} -- peer id -> class
local namespaces = {} -- of the committed pods
local records = {} -- pod key, record, ... for PODS
local claim_records = {} -- ReadWriteOncePod claim, pod key, ... for CLAIMS
local given_records = {} -- free volume, claim, ... for GIVEN
local unit_records = {} -- unit key, its pods, ... for UNITS
local results = {}
for ui, unit in ipairs(units) do
  local result = nil
  if type(unit) ~= 'table' or not is_name(unit[1]) or type(unit[2]) ~= 'table' or #unit[2] == 0 then
    result = {'invalid', 'malformed unit'}
  elseif units_before[unit[1]] then
    result = {'duplicate', 'unit ' .. unit[1] .. ' is already committed'}
  else
    local why, kind = fenced(ui)
    if why then result = {'conflict', why, kind} end
  end
  local extra = {} -- node -> resource -> amount placed by earlier pods of this unit
  local extra_ports = {} -- node -> host ports taken by earlier pods of this unit
  local extra_gpus = {} -- node -> milli per GPU taken by earlier pods of this unit
  local extra_volumes = {} -- node -> volumes attached by earlier pods of this unit
  local extra_claims = {} -- ReadWriteOncePod claim -> the earlier pod of this unit using it
  local extra_given = {} -- free volume -> the claim of an earlier pod of this unit given it
  local chosen = {}
  local chosen_gpus = {}
  local chosen_volumes = {}
  local chosen_picks = {} -- per pod, the free volumes its claims take on its node
  if not result then
    for pi, p in ipairs(unit[2]) do
      if not valid_pod(p) then
        result = {'invalid', 'malformed pod in unit ' .. unit[1]}
        break
      end
      local pod, cls = p[1], classes[p[2] + 1]
      if seen[pod] or pods_before[pod] then
        result = {'duplicate', 'pod ' .. pod .. ' is already committed'}
        break
      end
      local claim, by = nil, nil
      if not observed then claim, by = claim_taken(pod, p[7] or {}, extra_claims) end
      if claim then
        result = {'conflict', string.format('pod %s: its ReadWriteOncePod claim %s is in use by pod %s',
          pod, claim, by), 'volume-in-use'}
        break
      end
      for _, c in ipairs(p[7] or {}) do extra_claims[c] = pod end
      local h = held[pod]
      if h and load(h[1]) then
        -- its reserved room is free for the unit: given back wherever the pod goes
        local credit = extra[h[1]] or {}
        extra[h[1]] = credit
        extra_ports[h[1]] = extra_ports[h[1]] or {}
        for i, r in ipairs(h[2]) do credit[r] = (credit[r] or 0) - h[3][i] end
      end
      local why, kind = nil, nil -- the first candidate's reason counts
      for c, name in ipairs(p[3]) do
        local n = is_name(name) and load(name)
        local seen_version = type(p[4]) == 'table' and p[4][c]
        if not n then
          if not why then why, kind = 'node ' .. tostring(name) .. ' does not exist', 'node-gone' end
        elseif coarse and (n.touched or n.version ~= seen_version) then
          if not why then
            why, kind = string.format('node %s changed since version %s', name, tostring(seen_version)), 'changed'
          end
        else
          extra[name] = extra[name] or {}
          extra_ports[name] = extra_ports[name] or {}
          extra_gpus[name] = extra_gpus[name] or {}
          extra_volumes[name] = extra_volumes[name] or {}
          local r, free, amount = nil, nil, nil
          if not observed then r, free, amount = shortfall(n, extra[name], cls) end
          local clash = not r and not observed
            and (port_clash(n.ports, cls[3]) or port_clash(extra_ports[name], cls[3]))
          local volumes = volumes_on(n, p[6] or {})
          local over, more, total, limit = nil, nil, nil, nil
          if not r and not clash and not observed then
            over, more, total, limit = volume_excess(n, extra_volumes[name], volumes)
          end
          local picks = p[8] and p[8][c] or {}
          local taken = nil
          if not r and not clash and not over and not observed then
            taken = picks_refused(name, picks, extra_given)
          end
          local gpus, short = nil, nil
          if not r and not clash and not over and not taken then
            gpus, short = gpus_for(n, name, extra_gpus[name], cls, c == 1 and p[5] or nil)
          end
          if gpus then
            chosen[#chosen + 1] = name
            chosen_gpus[#chosen_gpus + 1] = gpus
            chosen_volumes[#chosen_volumes + 1] = volumes
            chosen_picks[#chosen_picks + 1] = picks
            for _, pick in ipairs(picks) do extra_given[pick[2]] = pick[1] end
            for i, rn in ipairs(cls[1]) do
              extra[name][rn] = (extra[name][rn] or 0) + cls[2][i]
            end
            count_ports(extra_ports[name], cls[3], 1)
            local _, per = gpu_demand(cls[1], cls[2])
            count_gpus(extra_gpus[name], gpus, per, 1)
            count_volumes(extra_volumes[name], volumes, 1)
            break
          end
          if why then -- an earlier candidate's reason is kept
          elseif r then
            why, kind = string.format('node %s: insufficient %s (free %s, requested %s)', name, r, int(free), int(amount)), 'resources'
          elseif clash then
            why, kind = string.format('node %s: host port %s/%s:%d is in use', name, clash[1], clash[2], clash[3]), 'host-port'
          elseif over then
            why, kind = string.format('node %s: attaching %d more volumes of %s would make %d, over its limit %d',
              name, more, over, total, limit), 'volume-limit'
          elseif taken then
            why, kind = taken, 'volume-taken'
          else
            why, kind = short, 'gpus'
          end
        end
      end
      if #chosen < pi then
        result = {'conflict', 'pod ' .. pod .. ': ' .. why, kind}
        break
      end
    end
  end
  if not result then
    for name, add in pairs(extra) do
      if next(add) then -- a candidate only tried is left as it was
        local n = nodes[name]
        for r, amount in pairs(add) do
          n.used[r] = (n.used[r] or 0) + amount
        end
        dirty[name] = true
        n.touched = true -- in coarse mode a later unit of the batch sees it changed
      end
    end
    for name, add in pairs(extra_gpus) do
      if next(add) then
        for i, milli in pairs(add) do count_gpus(nodes[name].gpus, {i - 1}, milli, 1) end
        gpus_dirty[name] = true
      end
    end
    for i, p in ipairs(unit[2]) do
      seen[p[1]] = true
      if held[p[1]] then consumed[#consumed + 1] = p[1] end
      local cls = classes[p[2] + 1]
      if #cls[3] > 0 then
        count_ports(nodes[chosen[i]].ports, cls[3], 1)
        ports_dirty[chosen[i]] = true
      end
      if #chosen_volumes[i] > 0 then
        count_volumes(nodes[chosen[i]].attached, chosen_volumes[i], 1)
        volumes_dirty[chosen[i]] = true
      end
      count_peer(nodes[chosen[i]].peers, cls[4], 1)
      new_peers[cls[4]] = cls
      namespaces[string.match(p[1], '^[^/]*')] = true
      for _, c in ipairs(p[7] or {}) do
        claimed[c] = p[1]
        claim_records[#claim_records + 1] = c
        claim_records[#claim_records + 1] = p[1]
      end
      for _, pick in ipairs(chosen_picks[i]) do
        given[pick[2]] = pick[1]
        given_records[#given_records + 1] = pick[2]
        given_records[#given_records + 1] = pick[1]
      end
      -- what common.lua's release_pod gives back: [node, unit, resource names, amounts,
      -- host ports, peer id, GPUs, attached volumes as [limit key, volume], claims,
      -- free volumes given as [claim, volume]]
      records[#records + 1] = p[1]
      records[#records + 1] = cmsgpack.pack({chosen[i], unit[1], cls[1], cls[2], cls[3], cls[4],
        chosen_gpus[i], chosen_volumes[i], p[7] or {}, chosen_picks[i]})
    end
    local pods = {}
    for i, p in ipairs(unit[2]) do pods[i] = p[1] end
    unit_records[#unit_records + 1] = unit[1]
    unit_records[#unit_records + 1] = cmsgpack.pack(pods)
    result = {'committed', chosen, chosen_gpus}
  end
  results[ui] = result
end

-- Field/value (or score/member) pairs, written in calls of at most 500 pairs.
local function write_pairs(command, key, flat)
  for i = 1, #flat, 1000 do
    redis.call(command, key, unpack(flat, i, math.min(i + 999, #flat)))
  end
end

-- The commit log's record of this commit (changes_since.lua reads it): msgpack [seq,
-- resources, names, usage (per name, its amount of each resource, 0 where none), peers
-- (per name, peer id -> pods), [name, `port_entries`] for names with host ports in use,
-- [name, milli used per GPU] for names with GPUs in use, [name, `volume_entries`] for
-- names with volumes attached]: each changed node as its hash now holds it, so that a
-- reader needs no read of its own.
local function log_changes(seq, changed)
  local resources, column = {}, {}
  for name, _ in pairs(changed) do
    for r, _ in pairs(nodes[name].used) do
      if not column[r] then
        resources[#resources + 1] = r
        column[r] = #resources
      end
    end
  end
  local names, usage, peers, ports, gpus, attached = {}, {}, {}, {}, {}, {}
  for name, _ in pairs(changed) do
    local n, base = nodes[name], #usage
    names[#names + 1] = name
    for j = 1, #resources do usage[base + j] = 0 end
    for r, amount in pairs(n.used) do usage[base + column[r]] = amount end
    peers[#peers + 1] = n.peers
    if next(n.ports) then ports[#ports + 1] = {name, port_entries(n.ports)} end
    if next(n.gpus) then gpus[#gpus + 1] = {name, n.gpus} end
    if next(n.attached) then attached[#attached + 1] = {name, volume_entries(n.attached)} end
  end
  redis.call('ZADD', COMMIT_LOG, seq,
    cmsgpack.pack({seq, resources, names, usage, peers, ports, gpus, attached}))
  redis.call('ZREMRANGEBYSCORE', COMMIT_LOG, '-inf', seq - COMMIT_LOG_KEPT)
end

local seq = tonumber(redis.call('GET', SEQ) or '0')
if next(dirty) then
  -- Every changed node in one write: its usage, its pods by peer (it holds one at
  -- least now) and its version; `bump` of common.lua, in fewer calls.
  seq = redis.call('INCR', SEQ)
  local changes = {}
  for name, _ in pairs(dirty) do
    local n = nodes[name]
    local args = {'v', seq, 'pp', cmsgpack.pack(n.peers)}
    for r, amount in pairs(n.used) do
      args[#args + 1] = 'u:' .. r
      args[#args + 1] = int(amount)
    end
    redis.call('HSET', NODE .. name, unpack(args))
    if ports_dirty[name] then write_map(NODE .. name, 'hp', n.ports) end
    if gpus_dirty[name] then redis.call('HSET', NODE .. name, 'g', cmsgpack.pack(n.gpus)) end
    if volumes_dirty[name] then write_map(NODE .. name, 'av', n.attached) end
    changes[#changes + 1] = seq
    changes[#changes + 1] = name
  end
  write_pairs('ZADD', CHANGES, changes)
  log_changes(seq, dirty)
  write_pairs('HSET', PODS, records)
  write_pairs('HSET', CLAIMS, claim_records)
  write_pairs('HSET', GIVEN, given_records)
  write_pairs('HSET', UNITS, unit_records)
  if reservation ~= nil then
    local reserved = {}
    for ui, unit in ipairs(units) do
      if results[ui][1] == 'committed' then
        reserved[#reserved + 1] = unit[1]
        reserved[#reserved + 1] = cmsgpack.pack({reservation[1], reservation[2][ui]})
      end
    end
    write_pairs('HSET', RESERVED, reserved)
  end
  for i = 1, #consumed, 1000 do
    redis.call('HDEL', HOLDS, unpack(consumed, i, math.min(i + 999, #consumed)))
  end
  for id, cls in pairs(new_peers) do
    if redis.call('HSETNX', PEERS, id, cls[5]) == 1 and cls[6] then
      keep_away = redis.call('INCR', KEEP_AWAY)
    end
  end
  if fences and fences[3] then
    for ns, _ in pairs(namespaces) do redis.call('INCR', fences[1] .. ns) end
    redis.call('INCR', fences[1] .. '*')
  end
end
return cmsgpack.pack({seq, results, keep_away})
