package mcp

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"time"
)

// The seam of the many-instance wing's server-wide fan-out and tasks: the
// one room the single-instance files (server.go, subscriptions.go,
// tasks_server.go …) reach it through. It declares the wing's two objects,
// serverCluster (one per server, nil without WithBroadcaster) and
// taskReplica (one per task that runs here, nil when the task lives in
// this process only), and what the rest of the package may call on them,
// and the public Broadcaster, which the server's configuration holds;
// everything else of the wing is its own (cluster_*.go).
//
// The core reaches the server-wide part through clusterSeam and
// channelHold, interfaces that name no wing type: a call through them
// links none of the wing into a program whose servers have no
// broadcaster, which a nil check in front of a direct call would not
// (the linker keeps what is called, whatever the check). The task side is
// reached only from the task machinery, itself reached only through
// WithTasks's hooks, so it calls plain, nil-safe methods.

// Broadcaster carries messages between the instances of a server:
// publish/subscribe on named channels. A server that runs as several
// instances uses it for what every instance must see (a resource updated,
// a list changed, a task's status) and to route a message to the instance
// that holds a session's live part (a client's answer to an ask that a
// handler elsewhere waits on, events for a stream held elsewhere). Every
// method takes a context and may fail. Server side; see [WithBroadcaster].
type Broadcaster interface {
	// Publish sends msg to every current subscriber of channel, on every
	// instance, this one included. It does not wait for them to handle it.
	Publish(ctx context.Context, channel string, msg []byte) error
	// Subscribe calls deliver with each message published to channel
	// from now until stop is called, in the order they were published,
	// one at a time; deliver must not block for long. msg is deliver's
	// only until it returns. A delivery under way when stop is called may
	// finish after it returns; none starts after.
	Subscribe(ctx context.Context, channel string, deliver func(msg []byte)) (stop func(), err error)
}

// clusterSeam is the server-wide half of the wing as the core calls it:
// Server.cluster, nil on a single instance, on which the core does the
// single-instance thing itself.
type clusterSeam interface {
	// resourceUpdated announces that the resource at uri changed to the
	// clients of every instance.
	resourceUpdated(uri string)
	// listChanged announces that a list ("tools", "resources",
	// "prompts") changed to the clients of every instance.
	listChanged(kind string)
	// holdServer starts receiving what every instance announces, for one
	// more local user (a session, a listen stream), until it releases it.
	holdServer() channelHold
}

// channelHold is one local user's hold on a broadcaster channel; the
// subscription is shared by the channel's local users and ends with the
// last release.
type channelHold interface {
	// wait returns once the channel's subscription is active, so that
	// every message published from then on is delivered; it fails when
	// the subscription does, or ctx ends.
	wait(ctx context.Context) error
	// release ends this hold; it calls the broadcaster, so no lock may be
	// held.
	release()
}

// serverCluster is the many-instance wing of a server given
// WithBroadcaster: its broadcaster, the subscriptions it holds (fan) and
// the ids of its announcements. It implements clusterSeam.
type serverCluster struct {
	srv *Server
	b   Broadcaster
	fan *fanout
	// name and announced make the ids of this instance's announcements.
	name      string
	announced atomic.Uint64
}

// taskReplica is what a task that runs here owes the other instances: the
// renewals of its lease in the shared store, the hold on its channel and
// the publishing of its changes there. A task has one when the server has
// a broadcaster or its tasks a lease; its fields other than t, hold and
// lease are guarded by the task's mu.
//
// It names no concrete type of the wing (its channel is a channelHold, the
// cluster found through the server when needed): a task's type is
// reachable from the Server's, and a concrete type reachable so would
// keep its methods that match the core's interface calls in every program.
type taskReplica struct {
	t     *serverTask
	hold  channelHold   // the task's channel, held while it runs; nil without a broadcaster
	lease time.Duration // 0: none

	// dirty: a change waits to be published to the other instances;
	// publishing: a goroutine publishes them (publishLocked).
	dirty, publishing bool
	// renewal renews the lease in the store (keepLease); nil without one.
	renewal *time.Timer
}

// replicate returns the replica of t, which is about to run here, or nil
// when it lives in this process only; it fails, with the error to answer,
// when the task's channel cannot be subscribed to.
func (s *Server) replicate(ctx context.Context, t *serverTask) (*taskReplica, error) {
	lease := s.taskLease()
	if s.cluster == nil && lease == 0 {
		return nil, nil
	}
	r, err := newTaskReplica(ctx, t, lease)
	if err != nil {
		return nil, internalError(err)
	}
	return r, nil
}

// leaseExpires is when the task's first lease, taken at now, runs out:
// zero without one.
func (r *taskReplica) leaseExpires(now time.Time) time.Time {
	if r == nil || r.lease == 0 {
		return time.Time{}
	}
	return now.Add(r.lease)
}

// start begins renewing the task's lease, once it is in the store.
func (r *taskReplica) start() {
	if r != nil && r.lease > 0 {
		r.keepLease()
	}
}

// changedLocked tells the other instances of a change of the task, which
// the caller made and stored under the task's mu.
func (r *taskReplica) changedLocked() {
	if r != nil && r.hold != nil {
		r.publishLocked()
	}
}

// publishes reports whether the task's changes reach this instance's
// listen streams through its channel, so that they are not told directly.
func (r *taskReplica) publishes() bool { return r != nil && r.hold != nil }

// endedLocked stops the renewals of a task that ended; the caller holds
// the task's mu.
func (r *taskReplica) endedLocked() {
	if r != nil {
		r.stopLeaseLocked()
	}
}

// stop lets go of the task's channel once it no longer runs here (or
// never started); it calls the broadcaster, so no lock may be held.
func (r *taskReplica) stop() {
	if r != nil && r.hold != nil {
		r.hold.release()
	}
}

// watchTask starts receiving task id's changes for a listen stream that
// names it (taskHooks.holdTask); only called with a broadcaster.
func (s *Server) watchTask(id string) channelHold {
	return clusterOf(s).holdTask(id)
}

// readTask reads owner's task id from the store, failing it there first
// if its lease ran out (reclaim).
func (s *Server) readTask(ctx context.Context, owner, id string) (*TaskRecord, error) {
	rec, err := s.taskStore().Get(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	return s.reclaim(ctx, rec)
}

// reclaim fails rec in the store if it was abandoned by the instance that
// ran it, tells the instances that wait on it, and returns it as the store
// then holds it. Any other rec is returned as it is.
func (s *Server) reclaim(ctx context.Context, rec *TaskRecord) (*TaskRecord, error) {
	if !s.abandoned(rec) {
		return rec, nil
	}
	return s.failAbandoned(ctx, rec)
}

// answerElsewhere passes a tasks/update's answers to owner's task id,
// which does not run here, to the instance that runs it; nothing on a
// single instance.
func (s *Server) answerElsewhere(ctx context.Context, owner, id string, responses map[string]json.RawMessage) error {
	c := clusterOf(s)
	if c == nil {
		return nil
	}
	return c.sendToTask(ctx, id, taskMessage{Kind: kindTaskAnswer, Owner: owner, InputResponses: responses})
}

// cancelElsewhere tells the instance that runs owner's task id, cancelled
// in the store, to end its handler; nothing on a single instance.
func (s *Server) cancelElsewhere(ctx context.Context, owner, id string) error {
	c := clusterOf(s)
	if c == nil {
		return nil
	}
	return c.sendToTask(ctx, id, taskMessage{Kind: kindTaskCancel, Owner: owner})
}

// awaitElsewhere waits until owner's task id, which does not run here, has
// ended in the store, or ctx ends; on a single instance it returns at once,
// there being no one to wait on.
func (s *Server) awaitElsewhere(ctx context.Context, owner, id string) error {
	c := clusterOf(s)
	if c == nil {
		return nil
	}
	return c.awaitTaskEnd(ctx, owner, id)
}
