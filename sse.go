package mcp

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// sseWriter frames messages as server-sent events, each write bounded by
// the write timeout and flushed.
type sseWriter struct {
	w        http.ResponseWriter
	rc       http.ResponseController // a copy: the pointer would be an allocation
	timeout  time.Duration
	event    string
	ids      bool
	streamID string
	buf      []byte
}

func (o *sseWriter) events(evs []streamEvent) error {
	o.buf = o.buf[:0]
	for _, ev := range evs {
		if o.ids {
			stream := o.streamID
			if ev.stream != "" {
				stream = ev.stream
			}
			o.buf = appendEventID(o.buf, stream, ev.index)
		}
		if o.event != "" {
			o.buf = append(o.buf, "event: "...)
			o.buf = append(o.buf, o.event...)
			o.buf = append(o.buf, '\n')
		}
		o.buf = appendSSEData(o.buf, ev.data)
		o.buf = append(o.buf, '\n')
	}
	return o.write(o.buf)
}

func (o *sseWriter) appendID(b []byte, index int64) []byte {
	return appendEventID(b, o.streamID, index)
}

// appendEventID appends the id line of event index of a stream.
func appendEventID(b []byte, stream string, index int64) []byte {
	b = append(b, "id: "...)
	b = append(b, stream...)
	b = append(b, '_')
	b = strconv.AppendInt(b, index, 10)
	return append(b, '\n')
}

// prime writes the 2025-11-25 priming event: an id and empty data, so that
// the client can resume even before the first message.
func (o *sseWriter) prime(index int64) error {
	b := o.appendID(nil, index)
	return o.write(append(b, "data:\n\n"...))
}

func (o *sseWriter) retryHint(d time.Duration) error {
	return o.write([]byte("retry: " + strconv.FormatInt(d.Milliseconds(), 10) + "\n\n"))
}

func (o *sseWriter) comment() error { return o.write([]byte(": keep-alive\n\n")) }

func (o *sseWriter) flush() error {
	o.setDeadline()
	return o.rc.Flush()
}

func (o *sseWriter) setDeadline() {
	if o.timeout > 0 {
		// Not every ResponseWriter supports deadlines (httptest's does
		// not); the write is then bounded by http.Server's own timeouts.
		_ = o.rc.SetWriteDeadline(time.Now().Add(o.timeout))
	}
}

func (o *sseWriter) write(b []byte) error {
	o.setDeadline()
	if _, err := o.w.Write(b); err != nil {
		return err
	}
	return o.rc.Flush()
}

// appendSSEData frames data as data lines; a message with line breaks in it
// (a pretty-printed raw result) becomes several lines, which the client
// joins back with "\n".
func appendSSEData(b, data []byte) []byte {
	if bytes.IndexByte(data, '\n') < 0 && bytes.IndexByte(data, '\r') < 0 {
		// The common case, compact JSON: one line.
		b = append(b, "data: "...)
		b = append(b, data...)
		return append(b, '\n')
	}
	for {
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			break
		}
		b = append(b, "data: "...)
		b = append(b, data[:i]...)
		b = append(b, '\n')
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	b = append(b, "data: "...)
	b = append(b, data...)
	return append(b, '\n')
}

// parseEventID splits an event id written by sseWriter into its stream and
// index. The index is one the stores can add 1 to without overflow.
func parseEventID(id string) (string, int64, bool) {
	i := strings.LastIndexByte(id, '_')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.ParseInt(id[i+1:], 10, 64)
	if err != nil || n < 0 || n == math.MaxInt64 { // stores look for n+1
		return "", 0, false
	}
	return id[:i], n, true
}

// sseEvent is one event of a server-sent event stream.
type sseEvent struct {
	id       string
	hasID    bool
	event    string
	data     []byte
	retry    time.Duration
	hasRetry bool
	tooLarge bool // data exceeded the limit and was discarded
}

// sseParser reads server-sent events as the HTML standard defines them:
// lines end with CRLF, LF or CR; "data" lines are joined with LF; lines
// starting with a colon are comments; a blank line ends an event; a
// leading byte order mark is ignored.
type sseParser struct {
	r      io.Reader
	max    int
	buf    []byte // read and not consumed: buf[pos:]
	pos    int
	nextCR int    // index in buf of the next CR at or after pos, or len(buf)
	nextLF int    // likewise for LF
	err    error  // the reader's error, once it came
	line   []byte // a line that spans reads, assembled (at most max+64 bytes kept)
	// skipLF: the last line ended with a CR, so a LF that follows is the
	// rest of its terminator.
	skipLF  bool
	started bool // the first line (and its BOM) went by
}

func newSSEParser(r io.Reader, max int) *sseParser {
	return &sseParser{r: r, max: max, buf: make([]byte, 0, 32<<10)}
}

// next returns the next event that carries data, an id or a retry hint.
// An event cut short by the end of the stream is discarded.
func (p *sseParser) next() (sseEvent, error) {
	var ev sseEvent
	hasData := false
	for {
		line, err := p.readLine()
		if err != nil {
			return sseEvent{}, err
		}
		if len(line) == 0 {
			if hasData || ev.hasID || ev.hasRetry {
				return ev, nil
			}
			ev = sseEvent{}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if ev.tooLarge || len(ev.data)+len(value)+1 > p.max {
				ev.tooLarge, ev.data = true, nil
				hasData = true
				continue
			}
			if hasData {
				ev.data = append(ev.data, '\n')
			}
			hasData = true
			ev.data = append(ev.data, value...)
		case "event":
			ev.event = string(value)
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				ev.id, ev.hasID = string(value), true
			}
		case "retry":
			if n, err := strconv.ParseUint(string(value), 10, 31); err == nil && len(value) > 0 && value[0] != '+' {
				ev.retry, ev.hasRetry = time.Duration(n)*time.Millisecond, true
			}
		}
	}
}

// readLine returns the next line without its terminator; the slice is
// valid until the next call. A line is returned as soon as its terminator
// arrives, a lone CR included; a last line without one ends no event and
// is dropped.
func (p *sseParser) readLine() ([]byte, error) {
	line, err := p.scanLine()
	if err == nil && !p.started {
		p.started = true
		line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
	}
	return line, err
}

func (p *sseParser) scanLine() ([]byte, error) {
	p.line = p.line[:0]
	for {
		if p.skipLF && p.pos < len(p.buf) {
			p.skipLF = false
			if p.buf[p.pos] == '\n' {
				p.pos++
			}
		}
		if p.nextCR < p.pos {
			p.nextCR = indexFrom(p.buf, p.pos, '\r')
		}
		if p.nextLF < p.pos {
			p.nextLF = indexFrom(p.buf, p.pos, '\n')
		}
		if end := min(p.nextCR, p.nextLF); end < len(p.buf) {
			line := p.buf[p.pos:end]
			p.skipLF = p.buf[end] == '\r'
			p.pos = end + 1
			if len(p.line) > 0 {
				p.line = p.appendCapped(p.line, line)
				line = p.line
			}
			return line, nil
		}
		if p.err != nil {
			return nil, p.err
		}
		// No terminator yet: keep what there is and read on.
		p.line = p.appendCapped(p.line, p.buf[p.pos:])
		n, err := p.r.Read(p.buf[:cap(p.buf)])
		p.buf, p.pos, p.nextCR, p.nextLF = p.buf[:n], 0, -1, -1
		if err != nil {
			p.err = err
		}
	}
}

// appendCapped appends b to line, keeping only a prefix past max+64 bytes:
// such a field is over the limit anyway.
func (p *sseParser) appendCapped(line, b []byte) []byte {
	if room := p.max + 64 - len(line); len(b) > room {
		b = b[:max(room, 0)]
	}
	return append(line, b...)
}

// indexFrom returns the index of c in b at or after from, or len(b).
func indexFrom(b []byte, from int, c byte) int {
	if i := bytes.IndexByte(b[from:], c); i >= 0 {
		return from + i
	}
	return len(b)
}
