package mcp

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Progress is one notifications/progress the peer sent about a call.
type Progress struct {
	// Progress is the amount done so far; it increases with every
	// notification.
	Progress float64 `json:"progress"`
	// Total is the amount to do, or 0 when the peer did not say.
	Total float64 `json:"total,omitempty"`
	// Message describes the current step, or is empty.
	Message string `json:"message,omitempty"`
}

// A CallOption configures one outgoing call.
type CallOption func(*callOptions)

type callOptions struct {
	progress   func(Progress)
	timeout    time.Duration
	timeoutSet bool

	// Set by the package, not by users.
	meta    []metaEntry // _meta members to add to the request
	related ID          // the inbound request this call is made for
	route   msgRoute
	dl      *deadline // a deadline spanning several sends (MRTR rounds)
	task    *taskAsk  // WithTask, or a tool that requires a task
	// id, when valid, is the id of the next send, taken before the
	// outbound middleware or the log saw it; the send clears it.
	id ID
	// wrapped: the outbound middleware runs around this call already.
	wrapped bool
	// drain: an abandoned call's exchange (HTTP stream) is still read
	// this long, what it carries handled, unless the peer ends it first.
	drain time.Duration

	// The client's result cache (client_cache.go): WithoutCache,
	// WithCachePrincipal, and whether the call answered the server's input.
	noCache   bool
	principal string
	answered  *bool
}

// WithProgress asks the peer to report progress on this call and delivers
// each report to fn. Reports for one call are delivered in order, one at a
// time, never on the connection's reader; every report the peer sent before
// its response has been delivered when the call returns, and none after.
// Each report also restarts the call's idle timeout ([WithRequestTimeout]).
func WithProgress(fn func(Progress)) CallOption {
	return func(o *callOptions) { o.progress = fn }
}

// pendingCall is an outgoing request waiting for its response.
type pendingCall struct {
	id     ID // also its progress token, when it asked for progress
	method string
	done   chan struct{}
	result json.RawMessage
	err    error

	deadline *deadline
	progress *callProgress // nil when the call asked for no progress
	// logsBefore is how many log messages were queued when the response
	// came: the caller waits for them (conn_logs.go).
	logsBefore uint64
}

// callProgress is the progress a call's caller has not yet seen: the reader
// queues it, the caller's goroutine runs the callback.
type callProgress struct {
	fn       func(Progress)
	mu       sync.Mutex
	queue    []Progress
	received int // reports queued in all, for a timeout's error
	signal   chan struct{}
}

// finish records the outcome. The engine calls it exactly once, after
// removing the call from the pending table.
func (p *pendingCall) finish(result json.RawMessage, err error) {
	p.result, p.err = result, err
	close(p.done)
}

func (p *pendingCall) pushProgress(pr Progress) {
	cp := p.progress
	cp.mu.Lock()
	cp.queue = append(cp.queue, pr)
	cp.received++
	cp.mu.Unlock()
	select {
	case cp.signal <- struct{}{}:
	default:
	}
}

// progressReports counts the progress reports the call received.
func (p *pendingCall) progressReports() int {
	cp := p.progress
	if cp == nil {
		return 0
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.received
}

// progressSignal fires when progress is queued; nil without a callback.
func (p *pendingCall) progressSignal() <-chan struct{} {
	if p.progress == nil {
		return nil
	}
	return p.progress.signal
}

// runProgress runs the callback for everything queued, in order, on the
// waiting caller's goroutine.
func (p *pendingCall) runProgress() {
	cp := p.progress
	if cp == nil {
		return
	}
	for {
		cp.mu.Lock()
		queue := cp.queue
		cp.queue = nil
		cp.mu.Unlock()
		if len(queue) == 0 {
			return
		}
		for _, pr := range queue {
			cp.fn(pr)
		}
	}
}

// progressParams is the wire shape of notifications/progress.
type progressParams struct {
	Token json.RawMessage `json:"progressToken"`
	Progress
}

// routeProgress hands a progress notification to the call that asked for it
// and restarts that call's idle bound. It reports false when no call waits
// on the token, so the notification goes to a user handler, if any. It never
// takes a dispatch slot: progress is never shed.
func (c *conn) routeProgress(params json.RawMessage) bool {
	var p progressParams
	if !decodeProgressParams(params, &p) {
		return false
	}
	token, ok := parseID(p.Token)
	if !ok {
		return false
	}
	c.mu.Lock()
	call := c.progress[token]
	c.mu.Unlock()
	if call == nil {
		return false
	}
	call.deadline.extend()
	call.pushProgress(p.Progress)
	return true
}

// decodeProgressParams decodes notifications/progress params, which the
// engine has already checked are JSON, walking them with eachMember: a
// stream of progress is mostly this decode. Anything unusual (a key in
// another case, an escaped message, a number encoding/json would refuse)
// falls back to encoding/json, so the result is always what it decodes.
func decodeProgressParams(params []byte, p *progressParams) bool {
	simple := eachMember(params, func(key, value []byte) bool {
		null := string(value) == "null"
		switch string(key) {
		case "progressToken":
			p.Token = value
			return true
		case "progress":
			return null || jsonFloat(value, &p.Progress.Progress)
		case "total":
			return null || jsonFloat(value, &p.Total)
		case "message":
			if null {
				return true
			}
			s, ok := jsonString(value)
			p.Message = s
			return ok
		}
		// encoding/json matches keys in any case.
		return !strings.EqualFold(string(key), "progressToken") && !strings.EqualFold(string(key), "progress") &&
			!strings.EqualFold(string(key), "total") && !strings.EqualFold(string(key), "message")
	})
	if simple {
		return true
	}
	*p = progressParams{}
	return json.Unmarshal(params, p) == nil
}

// jsonFloat decodes the JSON number raw into f as encoding/json would; false
// for anything else, or a number a float64 cannot hold.
func jsonFloat(raw []byte, f *float64) bool {
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return false
	}
	for _, c := range raw {
		if !(c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
			return false
		}
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return false
	}
	*f = v
	return true
}
