package mcp

// This file holds the GET that resumes, on this instance, a stream of a
// shared session that another instance wrote: read from the shared event
// store.

import (
	"context"
	"net/http"
	"strconv"
	"strings"
)

// serveResumeElsewhere serves a GET that resumes a stream of the session that
// another instance wrote, from the shared event store. The GET stream is
// taken over here, the others told, and the events after index replayed
// with their own ids before what comes live. A POST's stream is replayed
// as far as it is stored, and ends: the client resumes it again for more.
func (sr *sessionReplica) serveResumeElsewhere(w http.ResponseWriter, r *http.Request, streamID string, index int64) {
	h, sess := sr.cluster.h, sr.s
	if !strings.HasSuffix(streamID, "-"+standaloneStreamID) {
		events, ok := sr.readElsewhere(w, r, streamID, index)
		if !ok {
			return
		}
		out := &sseWriter{w: w, rc: *http.NewResponseController(w), timeout: h.cfg.writeTimeout, ids: true, streamID: streamID}
		hdr := w.Header()
		hdr.Set("Content-Type", "text/event-stream")
		hdr.Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		if len(events) > 0 {
			out.events(events)
		} else {
			out.flush()
		}
		return
	}
	st, gen, ok := h.attachStandalone(w, r, sess)
	if !ok {
		return
	}
	// Told first, so that what the others make from now on comes here
	// live, and what they made before is in the store.
	sr.hold(r.Context(), st, streamID)
	defer sr.release()
	events, ok := sr.readElsewhere(w, r, streamID, index)
	if !ok {
		st.detach(gen)
		return
	}
	sr.takeOver(st, index, events)
	h.serveStream(w, r, st, gen, streamMode{sse: true, replay: events})
}

// readElsewhere reads the events after index of another instance's stream
// from the event store; it answers the request itself and reports false
// when they cannot all be had.
func (sr *sessionReplica) readElsewhere(w http.ResponseWriter, r *http.Request, streamID string, index int64) ([]streamEvent, bool) {
	h, sess := sr.cluster.h, sr.s
	ctx, cancel := context.WithTimeout(r.Context(), sharedCallTimeout)
	data, ok, err := h.cfg.store.After(ctx, sess.id, streamID, index)
	cancel()
	last := strconv.Quote(streamID + "_" + strconv.FormatInt(index, 10))
	if err != nil {
		h.log.Warn("cannot read SSE events to resume another instance's stream", "session", sess.id, "stream", streamID, "err", err)
		writeHTTPError(w, http.StatusServiceUnavailable, CodeInternalError, ID{}, "Service Unavailable: the event store failed to read the events after "+last+": "+err.Error())
		return nil, false
	}
	if !ok {
		writeHTTPError(w, http.StatusBadRequest, CodeInvalidRequest, ID{}, "Bad Request: the events after "+last+" are no longer available")
		return nil, false
	}
	events := make([]streamEvent, len(data))
	for i, d := range data {
		id, msg := fromStored(d)
		events[i] = streamEvent{index: index + 1 + int64(i), data: msg, stream: streamID, id: id}
	}
	return events, true
}
