package mcp

import (
	"context"
	"encoding/json"
	"time"
)

// Leases tell the instances that share a TaskStore that a task's runner is
// gone. The instance that runs a task renews its lease in the store while
// it runs (its taskReplica does); an instance that reads a task whose
// lease ran out, and that it does not run itself, fails it in the store,
// so that a client polling it learns that its task ended with the instance
// that ran it instead of seeing "working" until the task's TTL.

// leaseRenewals is how many times a lease is renewed within its length:
// a renewal that fails or comes late still leaves time for the next.
const leaseRenewals = 3

// taskLease is the lease of the server's tasks, 0 when they have none.
func (s *Server) taskLease() time.Duration {
	if s.cfg.server.taskStore == nil {
		return 0 // the tasks live and die with this process
	}
	return s.cfg.server.taskLease
}

// keepLease renews the lease of the task, which runs here, until it ends.
// A renewal that fails is logged; the next one may still come in time.
func (r *taskReplica) keepLease() {
	t, lease := r.t, r.lease
	every := lease / leaseRenewals
	var renew func()
	renew = func() {
		select {
		case <-t.done:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), every)
		err := t.srv.taskStore().RenewLease(ctx, t.owner, t.task.ID, time.Now().Add(lease))
		cancel()
		if err != nil {
			t.srv.cfg.logger.Warn("cannot renew a task's lease in the task store", "task", t.task.ID, "err", err)
		}
		t.mu.Lock()
		if !t.task.Status.Terminal() {
			r.renewal = time.AfterFunc(every, renew)
		}
		t.mu.Unlock()
	}
	t.mu.Lock()
	r.renewal = time.AfterFunc(every, renew)
	t.mu.Unlock()
}

// stopLeaseLocked stops the renewals of a task that ended.
func (r *taskReplica) stopLeaseLocked() {
	if r.renewal != nil {
		r.renewal.Stop()
	}
}

// errTaskAbandoned is the error of a task whose runner stopped renewing it.
func errTaskAbandoned(id string) *Error {
	return &Error{Code: CodeInternalError, Message: "Internal error: the server instance that ran task " + id + " stopped before the task ended"}
}

// abandoned reports whether rec is a task whose runner is gone: its lease
// ran out, and it does not run here.
func (s *Server) abandoned(rec *TaskRecord) bool {
	return !rec.Status.Terminal() && !rec.LeaseExpires.IsZero() && !time.Now().Before(rec.LeaseExpires) &&
		s.tasks.find(rec.ID, rec.Owner) == nil
}

// failAbandoned fails rec, an abandoned task, in the store, tells the
// instances that wait on it, and returns it as the store then holds it
// (another outcome may have come first).
func (s *Server) failAbandoned(ctx context.Context, rec *TaskRecord) (*TaskRecord, error) {
	s.cfg.logger.Warn("failing a task whose instance stopped renewing it", "task", rec.ID, "lease_expired", rec.LeaseExpires)
	if err := s.taskStore().PutResult(ctx, rec.Owner, rec.ID, TaskFailed, nil, errTaskAbandoned(rec.ID)); err != nil {
		return nil, err
	}
	now, err := s.taskStore().Get(ctx, rec.Owner, rec.ID)
	if err != nil {
		return nil, err
	}
	if c := clusterOf(s); c != nil {
		c.publishTask(ctx, now)
	}
	return now, nil
}

// publishTask publishes rec's status on its channel, as the instance that
// runs a task does for each change (taskReplica.publish).
func (c *serverCluster) publishTask(ctx context.Context, rec *TaskRecord) {
	m := taskMessage{Kind: kindTaskStatus, Status: rec.Status}
	if b, err := appendDetailedTask(append(messageBuffer(256), '{'), rec); err == nil {
		m.Task = json.RawMessage(append(b, '}'))
	}
	msg, _ := json.Marshal(m)
	if err := c.b.Publish(ctx, taskChannel(rec.ID), msg); err != nil {
		c.srv.cfg.logger.Warn("cannot publish a task's status to the other instances", "channel", taskChannel(rec.ID), "status", rec.Status, "err", err)
	}
}

// leaseWait returns a channel that is ready when rec's lease runs out, or
// nil when there is nothing to wait for (no lease, or one that ran out
// already); stop releases its timer.
func leaseWait(rec *TaskRecord) (wait <-chan time.Time, stop func()) {
	left := time.Until(rec.LeaseExpires)
	if rec.Status.Terminal() || rec.LeaseExpires.IsZero() || left <= 0 {
		return nil, func() {}
	}
	t := time.NewTimer(left)
	return t.C, func() { t.Stop() }
}
