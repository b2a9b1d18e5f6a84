package mcp

import (
	"context"
	"encoding/json"
	"slices"
	"time"
)

// Tasks across the instances of a server given WithBroadcaster. The task
// store, shared, holds every task; its handler runs on the instance that
// created it, whose taskReplica subscribes to the task's channel while it
// runs. What another instance does to the task reaches it there, and every
// change of the task is published there for the instances that wait on it
// or whose listen streams name it.

// taskChannel is the broadcaster channel of task id.
func taskChannel(id string) string { return "mcp:task:" + id }

// taskMessage is a message on a task's channel, as JSON:
//
//	{"kind":"status","status":"<status>","task":{…}}  the task changed; task is
//	    the task as 2026-07-28 tasks/get reports it, absent for 2025-11-25 tasks
//	{"kind":"cancel","owner":"<principal>"}  tasks/cancel on another instance
//	{"kind":"answer","owner":"<principal>","inputResponses":{…}}  tasks/update
//	    on another instance
//
// The store is the truth: a status message only says when to read it again.
type taskMessage struct {
	Kind           string                     `json:"kind"`
	Status         TaskStatus                 `json:"status,omitempty"`
	Task           json.RawMessage            `json:"task,omitempty"`
	Owner          string                     `json:"owner,omitempty"`
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
}

// The kinds of taskMessage.
const (
	kindTaskStatus = "status"
	kindTaskCancel = "cancel"
	kindTaskAnswer = "answer"
)

// clusterOf returns s's many-instance wing as the task side uses it, nil
// without a broadcaster. The core holds it as a clusterSeam, which names
// no task type, so that a server without tasks links none of this.
func clusterOf(s *Server) *serverCluster {
	c, _ := s.cluster.(*serverCluster)
	return c
}

// newTaskReplica returns the replica of t, which is to run here with
// lease (0: none), holding the task's channel if there is a broadcaster.
// It waits until the channel's subscription is active, so that a
// tasks/cancel or tasks/update on another instance reaches the task from
// the moment anyone knows its id, and fails if it cannot be.
func newTaskReplica(ctx context.Context, t *serverTask, lease time.Duration) (*taskReplica, error) {
	r := &taskReplica{t: t, lease: lease}
	c := clusterOf(t.srv)
	if c == nil {
		return r, nil
	}
	fd := c.holdTask(t.task.ID)
	if err := c.fan.wait(ctx, fd); err != nil {
		c.fan.release(fd)
		return nil, err
	}
	r.hold = fd
	return r, nil
}

// holdTask counts one more local user of task id's channel; see
// fanout.hold.
func (c *serverCluster) holdTask(id string) *feed {
	return c.fan.hold(taskChannel(id), func(msg []byte) { c.onTaskMessage(id, msg) })
}

// onTaskMessage is the delivery of task id's channel. It runs no handler
// and publishes nothing itself: the task's own goroutines do.
func (c *serverCluster) onTaskMessage(id string, msg []byte) {
	s := c.srv
	var m taskMessage
	if err := json.Unmarshal(msg, &m); err != nil {
		s.cfg.logger.Warn("dropped a malformed broadcast", "channel", taskChannel(id), "err", err)
		return
	}
	switch m.Kind {
	case kindTaskStatus:
		if len(m.Task) > 0 {
			c.notifyTaskHere(id, m.Task)
		}
	case kindTaskCancel:
		// The store says cancelled already; the runner stores nothing
		// over it when the handler returns.
		if t := s.tasks.find(id, m.Owner); t != nil {
			t.cancel()
		}
	case kindTaskAnswer:
		if t := s.tasks.find(id, m.Owner); t != nil {
			t.answer(m.InputResponses)
		}
	}
}

// notifyTaskHere sends notifications/tasks, params the task as tasks/get
// reports it, to this instance's listen streams that name task id.
func (c *serverCluster) notifyTaskHere(id string, params json.RawMessage) {
	c.srv.broadcast("notifications/tasks", params, "",
		func(*serverSession) bool { return false },
		func(f *SubscriptionFilter) bool { return slices.Contains(f.TaskIDs, id) })
}

// publishLocked has the task's change published, by a goroutine of the
// task's that runs while there is something to publish: never by the
// caller, which holds t.mu, nor from within a delivery. A change made while
// one is being published is published after it, once, as the task then is.
func (r *taskReplica) publishLocked() {
	r.dirty = true
	if !r.publishing {
		r.publishing = true
		go r.publish()
	}
}

// publish is the publishing goroutine of publishLocked.
func (r *taskReplica) publish() {
	t, s := r.t, r.t.srv
	c := clusterOf(s)
	for {
		t.mu.Lock()
		id := t.task.ID
		if !r.dirty {
			r.publishing = false
			t.mu.Unlock()
			return
		}
		r.dirty = false
		m := taskMessage{Kind: kindTaskStatus, Status: t.task.Status}
		modern := t.conn == nil
		t.mu.Unlock()
		if modern {
			// As tasks/get reports it, result included: what listen
			// streams on any instance send.
			ctx, cancel := storeCtx()
			rec, err := s.taskStore().Get(ctx, t.owner, id)
			cancel()
			if err != nil {
				s.cfg.logger.Debug("cannot read a task to publish it", "task", id, "err", err)
			} else if b, err := appendDetailedTask(append(messageBuffer(256), '{'), rec); err == nil {
				m.Status, m.Task = rec.Status, json.RawMessage(append(b, '}'))
			}
		}
		msg, _ := json.Marshal(m)
		ctx, cancel := storeCtx()
		err := c.b.Publish(ctx, taskChannel(id), msg)
		cancel()
		if err != nil {
			s.cfg.logger.Warn("cannot publish a task's status to the other instances; telling this one's listen streams only",
				"channel", taskChannel(id), "status", m.Status, "err", err)
			if len(m.Task) > 0 {
				c.notifyTaskHere(id, m.Task)
			}
		}
	}
}

// sendToTask passes a tasks/cancel or tasks/update to the instance that
// runs the task.
func (c *serverCluster) sendToTask(ctx context.Context, id string, m taskMessage) error {
	msg, _ := json.Marshal(m)
	if err := c.b.Publish(ctx, taskChannel(id), msg); err != nil {
		return errorf("cannot pass the %s of task %s on to the instance that runs it (broadcaster channel %s): %w", m.Kind, id, taskChannel(id), err)
	}
	return nil
}

// awaitTaskEnd waits until owner's task id, which runs on another
// instance, has ended in the store, or ctx ends. Each message on the
// task's channel wakes it to read the store again; the first read comes
// after the subscription is active, so no end is missed.
func (c *serverCluster) awaitTaskEnd(ctx context.Context, owner, id string) error {
	fd := c.holdTask(id)
	defer c.fan.release(fd)
	if err := c.fan.wait(ctx, fd); err != nil {
		return internalError(err)
	}
	for {
		changed := c.fan.changed(fd)
		rec, err := c.srv.readTask(ctx, owner, id)
		if err != nil {
			return storeError(id, err)
		}
		if rec.Status.Terminal() {
			return nil
		}
		expired, stop := leaseWait(rec)
		select {
		case <-changed:
		case <-expired:
		case <-ctx.Done():
			stop()
			return ctx.Err()
		}
		stop()
	}
}
