-- The peers stored under these ids, read in the caller's epoch like every other read
-- (the check in common.lua): a shard that took a node's peer counts from one store
-- must not look their ids up in the next, a Redis restarted empty or built again
-- between its two reads. ARGV[3]: msgpack list of ids. Reply: one blob (or nil) an id.
local ids = cmsgpack.unpack(ARGV[3])
local found = {}
local CHUNK = 1000 -- unpack() is bounded by Lua's C stack
for first = 1, #ids, CHUNK do
  local last = math.min(first + CHUNK - 1, #ids)
  local blobs = redis.call('HMGET', PEERS, unpack(ids, first, last))
  for i = 1, #blobs do found[#found + 1] = blobs[i] end
end
return found
