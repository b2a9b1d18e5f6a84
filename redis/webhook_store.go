package mcpredis

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/e6ac58cb/mcp"
	"github.com/redis/go-redis/v9"
)

// WebhookStore is an [mcp.WebhookStore] on Redis, so that the instances of
// a server share their Events webhook subscriptions: a subscription made
// through one instance is refreshed or removed through any, and exactly
// one instance at a time delivers it, under a lease the others take over
// when it lapses (the instance died), from the stored watermark.
//
// Each subscription is one hash; sorted sets index them by expiry (for the
// sweep and the count) and by lease end (for claiming the free ones), and
// sets list them per principal (for the per-principal bound) and per
// lease owner (for renewing). Every change is one script, so that no two
// instances see a half-made one. Times are kept to the millisecond. Server
// side.
type WebhookStore struct {
	client
	max int
}

var _ mcp.WebhookStore = (*WebhookStore)(nil)

// NewWebhookStore returns a WebhookStore on rdb that holds at most max
// subscriptions across every instance (0: mcp.DefaultWebhookStoreSize);
// past it a new one is mcp.ErrWebhookLimit. Server side.
func NewWebhookStore(rdb *redis.Client, max int, opts ...Option) *WebhookStore {
	if max <= 0 {
		max = mcp.DefaultWebhookStoreSize
	}
	return &WebhookStore{client: newClient(rdb, opts, "WebhookStore"), max: max}
}

func (s *WebhookStore) recKey(id string) string { return s.cfg.prefix + "wh:r:" + id }
func (s *WebhookStore) idsKey() string          { return s.cfg.prefix + "wh:ids" }
func (s *WebhookStore) leaseKey() string        { return s.cfg.prefix + "wh:lease" }
func (s *WebhookStore) ownerKey(owner string) string {
	return s.cfg.prefix + "wh:o:" + hashed(owner)
}
func (s *WebhookStore) principalKey(principal string) string {
	return s.cfg.prefix + "wh:p:" + hashed(principal)
}

// hashed names a principal or an owner in a key: whatever they hold, the
// key stays short and cannot reach another key's name.
func hashed(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}

// webhookLua defines what the scripts share: drop(prefix, id) removes a
// subscription and its index entries, and sweep(prefix, now) drops up to
// 256 that lapsed by now.
const webhookLua = `
local function drop(prefix, id)
  local rec = prefix .. 'wh:r:' .. id
  local f = redis.call('HMGET', rec, 'pk', 'ok')
  redis.call('DEL', rec)
  redis.call('ZREM', prefix .. 'wh:ids', id)
  redis.call('ZREM', prefix .. 'wh:lease', id)
  if f[1] then redis.call('SREM', prefix .. 'wh:p:' .. f[1], id) end
  if f[2] and f[2] ~= '' then redis.call('SREM', prefix .. 'wh:o:' .. f[2], id) end
end
local function sweep(prefix, now)
  local gone = redis.call('ZRANGEBYSCORE', prefix .. 'wh:ids', '-inf', now, 'LIMIT', 0, 256)
  for _, id in ipairs(gone) do drop(prefix, id) end
end
`

// upsertScript: KEYS rec, ids, lease, principal set; ARGV prefix, id, now,
// max per principal, max in all, then the fields (see Upsert). It returns
// {1} for a new record, {0, act, status} for a refreshed one, {-1} past a
// bound; the record follows as HGETALL's list.
var upsertScript = redis.NewScript(webhookLua + `
local prefix, id, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
sweep(prefix, now)
local rec = KEYS[1]
if redis.call('EXISTS', rec) == 1 then
  local act, status, secret = unpack(redis.call('HMGET', rec, 'act', 'status', 'secret'))
  if secret ~= ARGV[7] then
    redis.call('HSET', rec, 'prev', secret, 'prevUntil', ARGV[8], 'secret', ARGV[7])
  end
  redis.call('HSET', rec, 'exp', ARGV[9], 'floor', ARGV[10], 'act', '1')
  redis.call('ZADD', KEYS[2], ARGV[12], id)
  return {0, act, status, redis.call('HGETALL', rec)}
end
if redis.call('SCARD', KEYS[4]) >= tonumber(ARGV[4]) or redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then
  return {-1}
end
redis.call('HSET', rec, 'key', ARGV[6], 'secret', ARGV[7], 'prev', '', 'prevUntil', '0', 'exp', ARGV[9],
  'floor', ARGV[10], 'cursor', ARGV[11], 'status', '{}', 'act', '1', 'owner', '', 'ok', '', 'until', '0', 'pk', ARGV[13])
redis.call('ZADD', KEYS[2], ARGV[12], id)
redis.call('ZADD', KEYS[3], 0, id)
redis.call('SADD', KEYS[4], id)
return {1, '', '', redis.call('HGETALL', rec)}
`)

// webhookKey is the part of a record that never changes.
type webhookKey struct {
	ID        string          `json:"id"`
	Principal string          `json:"principal"`
	URL       string          `json:"url"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Upsert implements mcp.WebhookStore.
func (s *WebhookStore) Upsert(ctx context.Context, rec mcp.WebhookRecord, max int) (mcp.WebhookRecord, mcp.WebhookStatus, bool, error) {
	key, err := json.Marshal(webhookKey{rec.ID, rec.Principal, rec.URL, rec.Name, rec.Arguments})
	if err != nil {
		return mcp.WebhookRecord{}, mcp.WebhookStatus{}, false, err
	}
	ctx, cancel := s.cfg.call(ctx)
	defer cancel()
	now := time.Now()
	k := s.recKey(rec.ID)
	res, err := upsertScript.Run(ctx, s.rdb,
		[]string{k, s.idsKey(), s.leaseKey(), s.principalKey(rec.Principal)},
		s.cfg.prefix, rec.ID, now.UnixMilli(), max, s.max,
		key, rec.Secret, millis(rec.PreviousUntil), millis(rec.Expires), millis(rec.Floor), rec.Cursor,
		expiryScore(rec.Expires), hashed(rec.Principal)).Slice()
	if err != nil {
		return mcp.WebhookRecord{}, mcp.WebhookStatus{}, false, fail("WebhookStore.Upsert", k, err)
	}
	if code, _ := res[0].(int64); code < 0 {
		return mcp.WebhookRecord{}, mcp.WebhookStatus{}, false, mcp.ErrWebhookLimit
	}
	if len(res) < 4 {
		return mcp.WebhookRecord{}, mcp.WebhookStatus{}, false, fail("WebhookStore.Upsert", k, errors.New("unexpected reply"))
	}
	stored, err := decodeWebhook(res[3])
	if err != nil {
		return mcp.WebhookRecord{}, mcp.WebhookStatus{}, false, fail("WebhookStore.Upsert", k, err)
	}
	if code, _ := res[0].(int64); code == 1 {
		return stored, mcp.WebhookStatus{}, true, nil
	}
	act, _ := res[1].(string)
	status, _ := res[2].(string)
	return stored, webhookStatus(act, status), false, nil
}

// deleteScript: ARGV prefix, id. It returns 1 if there was a record.
var deleteScript = redis.NewScript(webhookLua + `
if redis.call('EXISTS', ARGV[1] .. 'wh:r:' .. ARGV[2]) == 0 then return 0 end
drop(ARGV[1], ARGV[2])
return 1
`)

// Delete implements mcp.WebhookStore.
func (s *WebhookStore) Delete(ctx context.Context, id string) (bool, error) {
	ctx, cancel := s.cfg.call(ctx)
	defer cancel()
	n, err := deleteScript.Run(ctx, s.rdb, []string{s.recKey(id)}, s.cfg.prefix, id).Int()
	if err != nil {
		return false, fail("WebhookStore.Delete", s.recKey(id), err)
	}
	return n == 1, nil
}

// claimScript: KEYS ids, lease, owner set; ARGV prefix, now, until, max,
// owner's hashed name, owner. It renews owner's live leases, leases free
// ones up to max held, and returns the count of records, then the ids
// held.
var claimScript = redis.NewScript(webhookLua + `
local prefix, now, untl, max, ok, owner = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4]), ARGV[5], ARGV[6]
sweep(prefix, now)
local held = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  local rec = prefix .. 'wh:r:' .. id
  local f = redis.call('HMGET', rec, 'owner', 'until')
  if f[1] == owner and tonumber(f[2]) > now then
    redis.call('HSET', rec, 'until', untl)
    redis.call('ZADD', KEYS[2], untl, id)
    held[#held + 1] = id
  else
    redis.call('SREM', KEYS[3], id)
  end
end
if #held < max then
  local free = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, max - #held)
  for _, id in ipairs(free) do
    local rec = prefix .. 'wh:r:' .. id
    local prev = redis.call('HGET', rec, 'ok')
    if prev and prev ~= '' then redis.call('SREM', prefix .. 'wh:o:' .. prev, id) end
    redis.call('HSET', rec, 'owner', owner, 'ok', ok, 'until', untl)
    redis.call('ZADD', KEYS[2], untl, id)
    redis.call('SADD', KEYS[3], id)
    held[#held + 1] = id
  end
end
local out = {redis.call('ZCARD', KEYS[1])}
for _, id in ipairs(held) do out[#out + 1] = id end
return out
`)

// Claim implements mcp.WebhookStore.
func (s *WebhookStore) Claim(ctx context.Context, owner string, now, until time.Time, max int) ([]mcp.WebhookRecord, int, error) {
	ctx, cancel := s.cfg.call(ctx)
	defer cancel()
	ok := s.ownerKey(owner)
	res, err := claimScript.Run(ctx, s.rdb, []string{s.idsKey(), s.leaseKey(), ok},
		s.cfg.prefix, now.UnixMilli(), until.UnixMilli(), max, hashed(owner), owner).Slice()
	if err != nil {
		return nil, 0, fail("WebhookStore.Claim", ok, err)
	}
	total, _ := res[0].(int64)
	if len(res) == 1 {
		return nil, int(total), nil
	}
	return s.fetch(ctx, res[1:], int(total))
}

// fetch reads the records of the ids a claim returned; one removed
// meanwhile is left out.
func (s *WebhookStore) fetch(ctx context.Context, ids []any, total int) ([]mcp.WebhookRecord, int, error) {
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(ids))
	for i, v := range ids {
		id, _ := v.(string)
		cmds[i] = pipe.Do(ctx, "HGETALL", s.recKey(id))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, 0, fail("WebhookStore.Claim", s.idsKey(), err)
	}
	out := make([]mcp.WebhookRecord, 0, len(ids))
	for _, c := range cmds {
		fields, err := c.Result()
		if err != nil {
			return nil, 0, fail("WebhookStore.Claim", s.idsKey(), err)
		}
		if r, err := decodeWebhook(fields); err == nil {
			out = append(out, r)
		}
	}
	return out, total, nil
}

// progressScript: KEYS rec; ARGV owner, cursor, status, active ('0' or
// '1'). It returns 0 when owner does not hold the record.
var progressScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'cursor', ARGV[2], 'status', ARGV[3])
if ARGV[4] == '0' then redis.call('HSET', KEYS[1], 'act', '0') end
return 1
`)

// Progress implements mcp.WebhookStore.
func (s *WebhookStore) Progress(ctx context.Context, id, owner, cursor string, status mcp.WebhookStatus) error {
	active := "1"
	if !status.Active {
		active = "0"
	}
	status.Active = false // kept in its own field
	st, err := json.Marshal(status)
	if err != nil {
		return err
	}
	ctx, cancel := s.cfg.call(ctx)
	defer cancel()
	k := s.recKey(id)
	n, err := progressScript.Run(ctx, s.rdb, []string{k}, owner, cursor, st, active).Int()
	if err != nil {
		return fail("WebhookStore.Progress", k, err)
	}
	if n == 0 {
		return mcp.ErrWebhookLeaseLost
	}
	return nil
}

// releaseScript: KEYS rec, lease, owner set; ARGV owner, id.
var releaseScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'owner', '', 'ok', '', 'until', '0')
redis.call('ZADD', KEYS[2], 0, ARGV[2])
redis.call('SREM', KEYS[3], ARGV[2])
return 1
`)

// Release implements mcp.WebhookStore.
func (s *WebhookStore) Release(ctx context.Context, id, owner string) error {
	ctx, cancel := s.cfg.call(ctx)
	defer cancel()
	k := s.recKey(id)
	err := releaseScript.Run(ctx, s.rdb, []string{k, s.leaseKey(), s.ownerKey(owner)}, owner, id).Err()
	return fail("WebhookStore.Release", k, err)
}

// decodeWebhook makes a record of HGETALL's reply (a flat list of fields
// and values, as a script returns it, or a map).
func decodeWebhook(reply any) (mcp.WebhookRecord, error) {
	f := map[string]string{}
	switch v := reply.(type) {
	case []any:
		for i := 0; i+1 < len(v); i += 2 {
			k, _ := v[i].(string)
			f[k], _ = v[i+1].(string)
		}
	case map[any]any:
		for k, val := range v {
			ks, _ := k.(string)
			f[ks], _ = val.(string)
		}
	}
	var key webhookKey
	if err := json.Unmarshal([]byte(f["key"]), &key); err != nil {
		return mcp.WebhookRecord{}, errors.New("a webhook record without its key")
	}
	return mcp.WebhookRecord{
		ID: key.ID, Principal: key.Principal, URL: key.URL, Name: key.Name, Arguments: key.Arguments,
		Secret: f["secret"], PreviousSecret: f["prev"], PreviousUntil: fromMillis(f["prevUntil"]),
		Expires: fromMillis(f["exp"]), Floor: fromMillis(f["floor"]),
		Cursor: f["cursor"], Status: webhookStatus(f["act"], f["status"]),
		LeaseOwner: f["owner"], LeaseUntil: fromMillis(f["until"]),
	}, nil
}

// webhookStatus joins the stored status and its active flag.
func webhookStatus(act, status string) mcp.WebhookStatus {
	var st mcp.WebhookStatus
	json.Unmarshal([]byte(status), &st)
	st.Active = act == "1"
	return st
}

// millis is t in Unix milliseconds, 0 for the zero time.
func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// expiryScore is a record's score in the expiry index: its expiry, or
// never.
func expiryScore(t time.Time) string {
	if t.IsZero() {
		return "+inf"
	}
	return strconv.FormatInt(t.UnixMilli(), 10)
}

func fromMillis(s string) time.Time {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n == 0 {
		return time.Time{}
	}
	return time.UnixMilli(n)
}
