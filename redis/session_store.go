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
// Server side.
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

// Save implements mcp.SessionStore. A ttl of zero or less deletes the
// session, as it would have expired at once.
func (s *SessionStore) Save(ctx context.Context, rec *mcp.SessionRecord, ttl time.Duration) error {
	key := s.key(rec.ID)
	data, err := json.Marshal(rec)
	if err != nil {
		return fail("SessionStore.Save", key, err)
	}
	ctx, cancel := s.cfg.call(ctx)
	defer cancel()
	if ttl = expiry(ttl); ttl <= 0 {
		return fail("SessionStore.Save", key, s.rdb.Del(ctx, key).Err())
	}
	return fail("SessionStore.Save", key, s.rdb.Set(ctx, key, data, ttl).Err())
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
