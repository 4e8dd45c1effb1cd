-- The second step of a commit that spans partitions (partitioned.py): the parts of
-- units reserved here (commit.lua with a reservation) are confirmed or given back.
-- ARGV[3]: msgpack list of [unit key, its decision key if this is its home partition,
--          else '']; ARGV[4]: 'confirm' | 'abort' | 'resolve';
-- ARGV[5]: seconds a decision is kept (longer than any reservation lives).
-- confirm: the reservation is a commit from now on: 'confirmed'; at home the
--   decision 'committed' is written with it, in the same step. 'committed' if it
--   was confirmed already (by a sweeper), 'gone' if it was given back.
-- abort: the reservation is given back: 'released' ('committed' if confirmed
--   already: left as it is; 'gone' if there is none). At home, 'aborted' is decided.
-- resolve (at home, for a sweeper that holds an expired part): 'committed' if home
--   decided so; else the unit is aborted at home: 'aborted'.
-- Returns [seq, one answer per unit].
local entries, action, keep = cmsgpack.unpack(ARGV[3]), ARGV[4], tonumber(ARGV[5])
if type(entries) ~= 'table' or not (keep and keep > 0) then
  return redis.error_reply('settle: expected a list of [unit, decision key] and a keep time')
end
if action ~= 'confirm' and action ~= 'abort' and action ~= 'resolve' then
  return redis.error_reply('settle: action must be confirm, abort or resolve')
end
local dirty = {}

local function give_back(unit)
  local blob = redis.call('HGET', UNITS, unit)
  if blob then
    for _, pod in ipairs(cmsgpack.unpack(blob)) do release_pod(pod, dirty) end
    redis.call('HDEL', UNITS, unit)
  end
  redis.call('HDEL', RESERVED, unit)
end

local function settle(unit, decided)
  local function decide(decision)
    if decided ~= '' then redis.call('SET', decided, decision, 'EX', keep) end
  end
  local reserved = redis.call('HEXISTS', RESERVED, unit) == 1
  local committed = not reserved and redis.call('HEXISTS', UNITS, unit) == 1
  if action == 'confirm' then
    if not reserved then return committed and 'committed' or 'gone' end
    redis.call('HDEL', RESERVED, unit)
    decide('committed')
    return 'confirmed'
  elseif action == 'abort' then
    if reserved then give_back(unit) end
    if not committed then decide('aborted') end
    return reserved and 'released' or (committed and 'committed' or 'gone')
  end
  if decided == '' then return redis.error_reply('settle: resolve is asked at home') end
  if redis.call('GET', decided) == 'committed' then return 'committed' end
  if reserved then give_back(unit) end
  decide('aborted')
  return 'aborted'
end

local answers = {}
for i, entry in ipairs(entries) do
  if type(entry) ~= 'table' or not is_name(entry[1]) or type(entry[2]) ~= 'string' then
    return redis.error_reply('settle: entry ' .. i .. ': expected [unit key, decision key]')
  end
  answers[i] = settle(entry[1], entry[2])
  if type(answers[i]) == 'table' then return answers[i] end -- an error reply
end
local seq = tonumber(redis.call('GET', SEQ) or '0')
if next(dirty) then seq = bump(dirty) end
return {seq, answers}
