package mcpredis

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/e6ac58cb/mcp"
	"github.com/redis/go-redis/v9"
)

// TaskStore is an [mcp.TaskStore] on Redis: a hash per task, expiring
// with the task's TTL; a sorted set per owner listing its tasks in the
// order they were created; one sorted set of the tasks that have a TTL by
// when it ends, which DeleteExpired (and every Create) sweeps to clean the
// owner sets once Redis expired the tasks themselves; and a hash of every
// task's size with their total, which bound the store as a whole
// ([WithMaxStoredTasks], [WithMaxTaskStoreBytes]); the owner sets bound
// how many tasks one owner holds ([WithMaxStoredTasksPerOwner]). Create, UpdateStatus
// and PutResult are scripts, so the bounds hold whatever other instances
// do at the same time, and a task that ended keeps its outcome. Server
// side.
type TaskStore struct{ client }

var _ mcp.TaskStore = (*TaskStore)(nil)

// NewTaskStore returns a TaskStore on rdb. Server side.
func NewTaskStore(rdb *redis.Client, opts ...Option) *TaskStore {
	return &TaskStore{newClient(rdb, opts, "TaskStore")}
}

func (s *TaskStore) taskKey(id string) string     { return s.cfg.prefix + "task:" + id }
func (s *TaskStore) ownerKey(owner string) string { return s.cfg.prefix + "tasks:" + owner }
func (s *TaskStore) seqKey() string               { return s.cfg.prefix + "taskseq" }
func (s *TaskStore) expiryKey() string            { return s.cfg.prefix + "taskexpiry" }
func (s *TaskStore) sizesKey() string             { return s.cfg.prefix + "tasksizes" }
func (s *TaskStore) bytesKey() string             { return s.cfg.prefix + "taskbytes" }

// taskFixed is the part of a task that never changes once created; the
// rest sits in hash fields of its own, so that the scripts change them
// without decoding anything.
type taskFixed struct {
	ID           string        `json:"id"`
	CreatedAt    time.Time     `json:"createdAt"`
	TTL          time.Duration `json:"ttl,omitempty"`
	PollInterval time.Duration `json:"pollInterval,omitempty"`
}

// encodeJSON returns v as JSON, or "" for nil.
func encodeJSON[T any](v *T) (string, error) {
	if v == nil {
		return "", nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}

func encodeInputs(m map[string]mcp.InputRequest) (string, error) {
	if len(m) == 0 {
		return "", nil
	}
	b, err := json.Marshal(m)
	return string(b), err
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// expiryMember names a task in the expiry set: the owner's length, then
// the owner and the id, so that neither needs escaping.
func expiryMember(owner, id string) string {
	return strconv.Itoa(len(owner)) + ":" + owner + id
}

// taskOverhead is what every task counts against the byte bound beside
// its variable parts, as the memory store counts it.
const taskOverhead = 256

// sweepLua defines sweep(expiry, prefix, sizes, bytes, now, batch): it
// deletes up to batch tasks whose TTL ended by now, with their place in
// their owner's set and their size in the totals, and returns how many.
const sweepLua = `
local function sweep(expiry, prefix, sizes, bytes, now, batch)
  local m = redis.call('ZRANGEBYSCORE', expiry, '-inf', now, 'LIMIT', 0, batch)
  for _, member in ipairs(m) do
    local colon = string.find(member, ':', 1, true)
    local n = tonumber(string.sub(member, 1, colon - 1))
    local owner = string.sub(member, colon + 1, colon + n)
    local id = string.sub(member, colon + n + 1)
    redis.call('DEL', prefix .. 'task:' .. id)
    redis.call('ZREM', prefix .. 'tasks:' .. owner, id)
    redis.call('ZREM', expiry, member)
    local size = redis.call('HGET', sizes, id)
    if size then
      redis.call('HDEL', sizes, id)
      redis.call('DECRBY', bytes, size)
    end
  end
  return #m
end
`

// resizeLua defines resize(sizes, bytes, id, size, max): it counts the
// task id as size bytes from now on, unless the store's total would pass
// max; false then.
const resizeLua = `
local function resize(sizes, bytes, id, size, max)
  local old = tonumber(redis.call('HGET', sizes, id) or '0')
  local total = tonumber(redis.call('GET', bytes) or '0')
  if size > old and total - old + size > max then return false end
  redis.call('HSET', sizes, id, size)
  redis.call('INCRBY', bytes, size - old)
  return true
end
`

// createSweep is how many expired tasks Create sweeps before it counts.
const createSweep = 1000

// createScript stores a new task, after sweeping tasks whose TTL ended,
// unless the store holds as many tasks or bytes as it may. KEYS: the
// task, its owner's set, the sequence counter, the expiry set, the sizes
// hash, the byte total. ARGV: owner, fixed part, status, message, updated,
// inputs, result, error, ended, when the TTL ends in milliseconds and
// microseconds (0: never), task id, expiry member, when the lease ends in
// microseconds ("": no lease), now in microseconds, the key prefix, the
// task bound, the byte bound, the bound of one owner's tasks. It returns
// the task's creation number, -1 when the store is full, or -2 when the
// owner holds as many tasks as one may.
var createScript = redis.NewScript(sweepLua + resizeLua + `
sweep(KEYS[4], ARGV[16], KEYS[5], KEYS[6], ARGV[15], ` + strconv.Itoa(createSweep) + `)
if redis.call('HEXISTS', KEYS[5], ARGV[12]) == 0 and redis.call('HLEN', KEYS[5]) >= tonumber(ARGV[17]) then
  return -1
end
if not redis.call('ZSCORE', KEYS[2], ARGV[12]) and redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[19]) then
  return -2
end
local size = ` + strconv.Itoa(taskOverhead) + ` + #ARGV[1] + #ARGV[2] + #ARGV[4] + #ARGV[6] + #ARGV[7] + #ARGV[8]
if not resize(KEYS[5], KEYS[6], ARGV[12], size, tonumber(ARGV[18])) then return -1 end
local seq = redis.call('INCR', KEYS[3])
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'task', ARGV[2], 'status', ARGV[3], 'message', ARGV[4],
  'updated', ARGV[5], 'inputs', ARGV[6], 'result', ARGV[7], 'error', ARGV[8], 'ended', ARGV[9], 'lease', ARGV[14])
if ARGV[10] ~= '0' then
  redis.call('PEXPIREAT', KEYS[1], ARGV[10])
  redis.call('ZADD', KEYS[4], ARGV[11], ARGV[13])
end
redis.call('ZADD', KEYS[2], seq, ARGV[12])
return seq
`)

// Create implements mcp.TaskStore; mcp.ErrTaskStoreFull when the record
// is larger than [WithMaxTaskBytes] allows, or the store already holds as
// many tasks or bytes as [WithMaxStoredTasks] and [WithMaxTaskStoreBytes]
// allow; mcp.ErrTaskQuotaExceeded when the record's owner holds as many
// tasks as [WithMaxStoredTasksPerOwner] allows.
func (s *TaskStore) Create(ctx context.Context, rec *mcp.TaskRecord) error {
	key := s.taskKey(rec.ID)
	fixed, err := encodeJSON(&taskFixed{ID: rec.ID, CreatedAt: rec.CreatedAt, TTL: rec.TTL, PollInterval: rec.PollInterval})
	if err != nil {
		return fail("TaskStore.Create", key, err)
	}
	inputs, err := encodeInputs(rec.InputRequests)
	if err != nil {
		return fail("TaskStore.Create", key, err)
	}
	errJSON, err := encodeJSON(rec.Error)
	if err != nil {
		return fail("TaskStore.Create", key, err)
	}
	if len(fixed)+len(rec.StatusMessage)+len(inputs)+len(rec.Result)+len(errJSON) > s.cfg.maxTaskBytes {
		return mcp.ErrTaskStoreFull
	}
	var atMs, atUs int64
	if rec.TTL > 0 {
		end := rec.CreatedAt.Add(rec.TTL)
		atMs, atUs = max(end.UnixMilli(), 1), max(end.UnixMicro(), 1)
	}
	ctx, cancel := s.cfg.call(ctx)
	defer cancel()
	seq, err := createScript.Run(ctx, s.rdb, []string{key, s.ownerKey(rec.Owner), s.seqKey(), s.expiryKey(), s.sizesKey(), s.bytesKey()},
		rec.Owner, fixed, string(rec.Status), rec.StatusMessage, rec.LastUpdatedAt.Format(time.RFC3339Nano),
		inputs, string(rec.Result), errJSON, flag(rec.Status.Terminal()), atMs, atUs, rec.ID, expiryMember(rec.Owner, rec.ID),
		encodeLease(rec.LeaseExpires), time.Now().UnixMicro(), s.cfg.prefix, s.cfg.maxTasks, s.cfg.maxStoreBytes, s.cfg.maxPerOwner).Int64()
	switch {
	case err == nil && seq == -2:
		return mcp.ErrTaskQuotaExceeded
	case err == nil && seq < 0:
		return mcp.ErrTaskStoreFull
	}
	return fail("TaskStore.Create", key, err)
}

// Get implements mcp.TaskStore.
func (s *TaskStore) Get(ctx context.Context, owner, id string) (*mcp.TaskRecord, error) {
	key := s.taskKey(id)
	ctx, cancel := s.cfg.call(ctx)
	defer cancel()
	h, err := s.rdb.HGetAll(ctx, key).Result()
	if err != nil {
		return nil, fail("TaskStore.Get", key, err)
	}
	rec, err := decodeTask(h, owner)
	if err != nil {
		return nil, fail("TaskStore.Get", key, err)
	}
	if rec == nil {
		return nil, mcp.ErrTaskNotFound
	}
	return rec, nil
}

// decodeTask makes a record of a task's hash; nil when the hash is gone or
// another owner's.
func decodeTask(h map[string]string, owner string) (*mcp.TaskRecord, error) {
	if o, ok := h["owner"]; !ok || o != owner {
		return nil, nil
	}
	var fixed taskFixed
	if err := json.Unmarshal([]byte(h["task"]), &fixed); err != nil {
		return nil, fmt.Errorf("not a task this store made: %w", err)
	}
	rec := &mcp.TaskRecord{Owner: owner}
	rec.ID, rec.CreatedAt, rec.TTL, rec.PollInterval = fixed.ID, fixed.CreatedAt, fixed.TTL, fixed.PollInterval
	rec.Status, rec.StatusMessage = mcp.TaskStatus(h["status"]), h["message"]
	var err error
	if rec.LastUpdatedAt, err = time.Parse(time.RFC3339Nano, h["updated"]); err != nil {
		return nil, fmt.Errorf("the task's update time: %w", err)
	}
	if in := h["inputs"]; in != "" {
		if err := json.Unmarshal([]byte(in), &rec.InputRequests); err != nil {
			return nil, fmt.Errorf("the task's input requests: %w", err)
		}
	}
	if r := h["result"]; r != "" {
		rec.Result = json.RawMessage(r)
	}
	if l := h["lease"]; l != "" {
		us, err := strconv.ParseInt(l, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("the task's lease: %w", err)
		}
		rec.LeaseExpires = time.UnixMicro(us)
	}
	if e := h["error"]; e != "" {
		rec.Error = new(mcp.Error)
		if err := json.Unmarshal([]byte(e), rec.Error); err != nil {
			return nil, fmt.Errorf("the task's error: %w", err)
		}
	}
	return rec, nil
}

// updateScript sets a live task's status. KEYS: the task, the sizes
// hash, the byte total. ARGV: owner, status, message, updated, inputs,
// whether the status is terminal, the byte bound of a task, the task's
// id, the byte bound of the store. It returns 0 for a task not found, 2
// when a bound is passed, 1 otherwise.
var updateScript = redis.NewScript(resizeLua + `
local f = redis.call('HMGET', KEYS[1], 'owner', 'ended', 'task', 'result', 'error')
if f[1] ~= ARGV[1] then return 0 end
if f[2] == '1' or ARGV[6] == '1' then return 1 end
local own = #f[3] + #ARGV[3] + #ARGV[5] + #(f[4] or '') + #(f[5] or '')
if own > tonumber(ARGV[7]) then return 2 end
if not resize(KEYS[2], KEYS[3], ARGV[8], ` + strconv.Itoa(taskOverhead) + ` + #ARGV[1] + own, tonumber(ARGV[9])) then return 2 end
redis.call('HSET', KEYS[1], 'status', ARGV[2], 'message', ARGV[3], 'updated', ARGV[4], 'inputs', ARGV[5])
return 1
`)

// UpdateStatus implements mcp.TaskStore.
func (s *TaskStore) UpdateStatus(ctx context.Context, owner, id string, status mcp.TaskStatus, message string, inputRequests map[string]mcp.InputRequest) error {
	key := s.taskKey(id)
	inputs, err := encodeInputs(inputRequests)
	if err != nil {
		return fail("TaskStore.UpdateStatus", key, err)
	}
	ctx, cancel := s.cfg.call(ctx)
	defer cancel()
	n, err := updateScript.Run(ctx, s.rdb, []string{key, s.sizesKey(), s.bytesKey()}, owner, string(status), message,
		time.Now().Format(time.RFC3339Nano), inputs, flag(status.Terminal()), s.cfg.maxTaskBytes, id, s.cfg.maxStoreBytes).Int()
	return scriptOutcome("TaskStore.UpdateStatus", key, n, err)
}

func scriptOutcome(op, key string, n int, err error) error {
	switch {
	case err != nil:
		return fail(op, key, err)
	case n == 0:
		return mcp.ErrTaskNotFound
	case n == 2:
		return mcp.ErrTaskStoreFull
	}
	return nil
}

// encodeLease is a lease's end as the hash keeps it: microseconds since
// the epoch, "" for none.
func encodeLease(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatInt(t.UnixMicro(), 10)
}

// leaseScript renews a live task's lease. KEYS: the task. ARGV: owner,
// the lease's new end. It returns as updateScript does.
var leaseScript = redis.NewScript(`
local f = redis.call('HMGET', KEYS[1], 'owner', 'ended')
if f[1] ~= ARGV[1] then return 0 end
if f[2] ~= '1' then redis.call('HSET', KEYS[1], 'lease', ARGV[2]) end
return 1
`)

// RenewLease implements mcp.TaskStore.
func (s *TaskStore) RenewLease(ctx context.Context, owner, id string, until time.Time) error {
	key := s.taskKey(id)
	ctx, cancel := s.cfg.call(ctx)
	defer cancel()
	n, err := leaseScript.Run(ctx, s.rdb, []string{key}, owner, encodeLease(until)).Int()
	return scriptOutcome("TaskStore.RenewLease", key, n, err)
}

// resultScript ends a live task. KEYS: the task, the sizes hash, the
// byte total. ARGV: owner, status, updated, result, error, whether the
// status is terminal, the byte bound of a task, the task's id, the byte
// bound of the store. It returns as updateScript does.
var resultScript = redis.NewScript(resizeLua + `
local f = redis.call('HMGET', KEYS[1], 'owner', 'ended', 'task', 'message')
if f[1] ~= ARGV[1] then return 0 end
if f[2] == '1' then return 1 end
local own = #f[3] + #(f[4] or '') + #ARGV[4] + #ARGV[5]
if own > tonumber(ARGV[7]) then return 2 end
if not resize(KEYS[2], KEYS[3], ARGV[8], ` + strconv.Itoa(taskOverhead) + ` + #ARGV[1] + own, tonumber(ARGV[9])) then return 2 end
redis.call('HSET', KEYS[1], 'status', ARGV[2], 'updated', ARGV[3], 'inputs', '', 'result', ARGV[4],
  'error', ARGV[5], 'ended', ARGV[6])
return 1
`)

// PutResult implements mcp.TaskStore; mcp.ErrTaskStoreFull when the task
// with its outcome would be larger than [WithMaxTaskBytes] allows.
func (s *TaskStore) PutResult(ctx context.Context, owner, id string, status mcp.TaskStatus, result json.RawMessage, taskErr *mcp.Error) error {
	key := s.taskKey(id)
	errJSON, err := encodeJSON(taskErr)
	if err != nil {
		return fail("TaskStore.PutResult", key, err)
	}
	ctx, cancel := s.cfg.call(ctx)
	defer cancel()
	n, err := resultScript.Run(ctx, s.rdb, []string{key, s.sizesKey(), s.bytesKey()}, owner, string(status),
		time.Now().Format(time.RFC3339Nano), string(result), errJSON, flag(status.Terminal()), s.cfg.maxTaskBytes, id, s.cfg.maxStoreBytes).Int()
	return scriptOutcome("TaskStore.PutResult", key, n, err)
}

// listBatch is how many of an owner's tasks List reads per round trip.
const listBatch = 100

// List implements mcp.TaskStore. The cursor is the creation number of
// the previous page's last task. Tasks found gone on the way are dropped
// from the owner's set.
func (s *TaskStore) List(ctx context.Context, owner, cursor string, limit int) ([]*mcp.TaskRecord, string, error) {
	key := s.ownerKey(owner)
	var after int64
	if cursor != "" {
		var err error
		if after, err = strconv.ParseInt(cursor, 10, 64); err != nil || after < 0 {
			return nil, "", fail("TaskStore.List", key, fmt.Errorf("invalid task list cursor %q", cursor))
		}
	}
	ctx, cancel := s.cfg.call(ctx)
	defer cancel()
	var out []*mcp.TaskRecord
	var seqs []int64
	for limit <= 0 || len(out) <= limit {
		zs, err := s.rdb.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: key, ByScore: true,
			Start: "(" + strconv.FormatInt(after, 10), Stop: "+inf", Count: listBatch}).Result()
		if err != nil {
			return nil, "", fail("TaskStore.List", key, err)
		}
		if len(zs) == 0 {
			break
		}
		cmds := make([]*redis.MapStringStringCmd, len(zs))
		if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, z := range zs {
				cmds[i] = p.HGetAll(ctx, s.taskKey(z.Member.(string)))
			}
			return nil
		}); err != nil {
			return nil, "", fail("TaskStore.List", key, err)
		}
		var gone []any
		for i, cmd := range cmds {
			id := zs[i].Member.(string)
			after = int64(zs[i].Score)
			rec, err := decodeTask(cmd.Val(), owner)
			if err != nil {
				return nil, "", fail("TaskStore.List", s.taskKey(id), err)
			}
			if rec == nil {
				gone = append(gone, id)
				continue
			}
			out, seqs = append(out, rec), append(seqs, after)
		}
		if len(gone) > 0 {
			if err := s.rdb.ZRem(ctx, key, gone...).Err(); err != nil {
				return nil, "", fail("TaskStore.List", key, err)
			}
		}
		if len(zs) < listBatch {
			break
		}
	}
	next := ""
	if limit > 0 && len(out) > limit {
		out = out[:limit]
		next = strconv.FormatInt(seqs[limit-1], 10)
	}
	return out, next, nil
}

// expiredBatch is how many expired tasks one sweep script deletes.
const expiredBatch = 500

// sweepScript deletes up to a batch of tasks whose TTL ended, with their
// place in their owner's set and their size. KEYS: the expiry set, the
// sizes hash, the byte total. ARGV: now in microseconds, the key prefix,
// the batch size.
var sweepScript = redis.NewScript(sweepLua + `
return sweep(KEYS[1], ARGV[2], KEYS[2], KEYS[3], ARGV[1], ARGV[3])
`)

// DeleteExpired implements mcp.TaskStore. Redis deletes a task when its
// TTL ends; this cleans what points at it.
func (s *TaskStore) DeleteExpired(ctx context.Context, now time.Time) (int, error) {
	key := s.expiryKey()
	ctx, cancel := s.cfg.call(ctx)
	defer cancel()
	total := 0
	for {
		n, err := sweepScript.Run(ctx, s.rdb, []string{key, s.sizesKey(), s.bytesKey()}, now.UnixMicro(), s.cfg.prefix, expiredBatch).Int()
		if err != nil {
			return total, fail("TaskStore.DeleteExpired", key, err)
		}
		total += n
		if n < expiredBatch {
			return total, nil
		}
	}
}
