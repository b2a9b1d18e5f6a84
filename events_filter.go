package mcp

import (
	"encoding/json"
	"runtime/debug"
)

// An event type's Filter decides, per subscription, which occurrences it
// gets and in what form (EventType.Filter); polls, streams and webhook
// delivery pass what they read of the log through filter.

// filter returns what a subscription of name with args gets of events:
// events itself when the type has no Filter, else a new slice (events may
// be the log's own).
func (ev *serverEvents) filter(name string, args json.RawMessage, events []EventOccurrence) []EventOccurrence {
	if len(events) == 0 {
		return events
	}
	ev.mu.RLock()
	t := ev.types[name]
	ev.mu.RUnlock()
	if t == nil || t.desc.Filter == nil {
		return events
	}
	if a := trimJSONSpace(args); len(a) == 0 || string(a) == "null" {
		args = json.RawMessage("{}")
	}
	out := make([]EventOccurrence, 0, len(events))
	for _, e := range events {
		if got, ok := ev.applyFilter(t.desc.Filter, args, e); ok {
			out = append(out, got)
		}
	}
	return out
}

// applyFilter runs f on e and keeps of what it returns only Data and Meta;
// a panic, or Data that is not JSON, skips e, logged.
func (ev *serverEvents) applyFilter(f func(json.RawMessage, EventOccurrence) (EventOccurrence, bool), args json.RawMessage, e EventOccurrence) (out EventOccurrence, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			ev.logger.Error("an event type's Filter panicked; the occurrence is skipped", "event", e.Name, "id", e.EventID, "panic", p, "stack", string(debug.Stack()))
			out, ok = EventOccurrence{}, false
		}
	}()
	got, ok := f(args, e)
	if !ok {
		return EventOccurrence{}, false
	}
	if len(got.Data) == 0 {
		got.Data = json.RawMessage("{}")
	}
	if !json.Valid(got.Data) {
		ev.logger.Error("an event type's Filter returned data that is not JSON; the occurrence is skipped", "event", e.Name, "id", e.EventID)
		return EventOccurrence{}, false
	}
	e.Data, e.Meta = got.Data, got.Meta
	return e, true
}

// Filter sets the type's Filter (see EventType.Filter) from a function of
// the typed payload: f gets the occurrence's data as a T and returns the
// data the subscription gets, or false to skip it. An occurrence whose
// data is not a T is skipped. Server only.
func (t *EventTopic[T]) Filter(f func(args json.RawMessage, data T) (T, bool)) {
	ev := t.srv.eventsOn()
	ev.mu.Lock()
	defer ev.mu.Unlock()
	old := ev.types[t.name]
	if old == nil {
		return
	}
	entry := *old // readers hold the old entry without the lock
	entry.desc.Filter = func(args json.RawMessage, e EventOccurrence) (EventOccurrence, bool) {
		var data T
		if json.Unmarshal(e.Data, &data) != nil {
			return e, false
		}
		data, ok := f(args, data)
		if !ok {
			return e, false
		}
		raw, err := json.Marshal(data)
		if err != nil {
			return e, false
		}
		e.Data = raw
		return e, true
	}
	ev.types[t.name] = &entry
}
