-- Set or delete namespaces' labels (what namespaceSelector matches).
-- ARGV[3]: msgpack list of [name, labels as JSON, or false to delete].
-- Every reader sees them in `changes_since`, after the version this returns.
local seq = redis.call('INCR', SEQ)
for _, entry in ipairs(cmsgpack.unpack(ARGV[3])) do
  local name, labels = entry[1], entry[2]
  if is_name(name) then
    if type(labels) == 'string' then
      redis.call('HSET', NAMESPACES, name, labels)
    else
      redis.call('HDEL', NAMESPACES, name)
    end
    redis.call('ZADD', NAMESPACE_CHANGES, seq, name)
  end
end
return seq
