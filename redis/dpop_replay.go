package mcpredis

import (
	"context"
	"errors"
	"time"

	"github.com/e6ac58cb/mcp"
	"github.com/redis/go-redis/v9"
)

// DPoPReplayStore is an [mcp.DPoPReplayStore] on Redis, so that the
// instances of a resource server refuse a DPoP proof any of them
// accepted: one key per proof, set only if absent (SET NX), expiring
// when the proof would be too old anyway (PX). Redis's own memory limit
// bounds it; a write it refuses refuses the proof. Server side.
type DPoPReplayStore struct{ client }

var _ mcp.DPoPReplayStore = (*DPoPReplayStore)(nil)

// NewDPoPReplayStore returns a DPoPReplayStore on rdb. Server side.
func NewDPoPReplayStore(rdb *redis.Client, opts ...Option) *DPoPReplayStore {
	return &DPoPReplayStore{newClient(rdb, opts, "DPoPReplayStore")}
}

func (s *DPoPReplayStore) key(id string) string { return s.cfg.prefix + "dpop:" + id }

// FirstUse implements mcp.DPoPReplayStore.
func (s *DPoPReplayStore) FirstUse(ctx context.Context, id string, until time.Time) (bool, error) {
	ttl := time.Until(until)
	if ttl <= 0 {
		return true, nil // expired already: nothing to remember
	}
	ctx, cancel := s.cfg.call(ctx)
	defer cancel()
	key := s.key(id)
	err := s.rdb.SetArgs(ctx, key, "1", redis.SetArgs{Mode: "NX", TTL: expiry(ttl)}).Err()
	switch {
	case errors.Is(err, redis.Nil):
		return false, nil
	case err != nil:
		return false, fail("DPoPReplayStore.FirstUse", key, err)
	}
	return true, nil
}
