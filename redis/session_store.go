package mcpredis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/e6ac58cb/mcp"
	"github.com/redis/go-redis/v9"
)

// SessionStore is an [mcp.SessionStore] on Redis: one key per session
// holding its record as JSON, expiring ttl after the last Save or Touch.
// Save is a script that reads the stored record's revision and writes the
// new one only over the revision it was based on. Server side.
type SessionStore struct{ client }

var _ mcp.SessionStore = (*SessionStore)(nil)

// NewSessionStore returns a SessionStore on rdb. Server side.
func NewSessionStore(rdb *redis.Client, opts ...Option) *SessionStore {
	return &SessionStore{newClient(rdb, opts, "SessionStore")}
}

func (s *SessionStore) key(id string) string { return s.cfg.prefix + "session:" + id }

// expiry is ttl as Redis takes it: at least a millisecond, since Redis
// counts no finer; zero or less means already gone.
func expiry(ttl time.Duration) time.Duration {
	if ttl > 0 && ttl < time.Millisecond {
		return time.Millisecond
	}
	return ttl
}

// saveScript stores a session's record if the one stored is the revision
// it was based on, or if none is and it was based on none. KEYS: the
// session. ARGV: the revision it was based on, the record at its next
// revision as JSON, the ttl in milliseconds (zero or less: gone at once).
// It returns 1 when saved, 0 when another revision is stored, -1 when the
// session it was based on is no longer stored, -2 when the key holds no
// session record.
var saveScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur then
  local ok, rec = pcall(cjson.decode, cur)
  if not ok or type(rec) ~= 'table' then return -2 end
  if tonumber(rec.revision or 0) ~= tonumber(ARGV[1]) then return 0 end
elseif ARGV[1] ~= '0' then
  return -1
end
if tonumber(ARGV[3]) <= 0 then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
return 1
`)

// Save implements mcp.SessionStore, comparing and setting in one script.
// A ttl of zero or less deletes the session, as it would have expired at
// once.
func (s *SessionStore) Save(ctx context.Context, rec *mcp.SessionRecord, ttl time.Duration) error {
	key := s.key(rec.ID)
	next := *rec
	next.Revision++
	data, err := json.Marshal(&next)
	if err != nil {
		return fail("SessionStore.Save", key, err)
	}
	ctx, cancel := s.cfg.call(ctx)
	defer cancel()
	n, err := saveScript.Run(ctx, s.rdb, []string{key}, rec.Revision, data, expiry(ttl).Milliseconds()).Int()
	switch {
	case err != nil:
		return fail("SessionStore.Save", key, err)
	case n == 0:
		return mcp.ErrSessionConflict
	case n == -1:
		return mcp.ErrSessionNotFound
	case n == -2:
		return fail("SessionStore.Save", key, errors.New("the key holds no session record"))
	}
	rec.Revision = next.Revision
	return nil
}

// Load implements mcp.SessionStore.
func (s *SessionStore) Load(ctx context.Context, id string) (*mcp.SessionRecord, error) {
	key := s.key(id)
	ctx, cancel := s.cfg.call(ctx)
	defer cancel()
	data, err := s.rdb.Get(ctx, key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, mcp.ErrSessionNotFound
	}
	if err != nil {
		return nil, fail("SessionStore.Load", key, err)
	}
	rec := new(mcp.SessionRecord)
	if err := json.Unmarshal(data, rec); err != nil {
		return nil, fail("SessionStore.Load", key, fmt.Errorf("not a session record: %w", err))
	}
	return rec, nil
}

// Touch implements mcp.SessionStore.
func (s *SessionStore) Touch(ctx context.Context, id string, ttl time.Duration) error {
	key := s.key(id)
	ctx, cancel := s.cfg.call(ctx)
	defer cancel()
	// PEXPIRE with zero or less deletes the key, as expiring at once would.
	ok, err := s.rdb.PExpire(ctx, key, expiry(ttl)).Result()
	if err != nil {
		return fail("SessionStore.Touch", key, err)
	}
	if !ok {
		return mcp.ErrSessionNotFound
	}
	return nil
}

// Delete implements mcp.SessionStore.
func (s *SessionStore) Delete(ctx context.Context, id string) error {
	key := s.key(id)
	ctx, cancel := s.cfg.call(ctx)
	defer cancel()
	return fail("SessionStore.Delete", key, s.rdb.Del(ctx, key).Err())
}
