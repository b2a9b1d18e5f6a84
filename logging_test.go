package mcp

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLoggingLevels(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, version, carrier string) {
		lc := newLogCollector()
		cl := connectOver(t, featureServer(), carrier, version, lc.options()...)
		ctx := context.Background()
		if cl.ServerCapabilities().Logging == nil {
			t.Error("logging not advertised")
		}
		// Before any level is set, the older revisions send everything and
		// 2026-07-28 nothing.
		want := "debug,info,warning,error"
		if isModernVersion(version) {
			want = ""
		}
		if _, err := cl.CallTool(ctx, "log", nil); err != nil {
			t.Fatal(err)
		}
		if got := levelsOf(lc.take(t)); got != want {
			t.Errorf("before SetLoggingLevel: %q, want %q", got, want)
		}
		if err := cl.SetLoggingLevel(ctx, LevelWarning); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.CallTool(ctx, "log", nil); err != nil {
			t.Fatal(err)
		}
		msgs := lc.take(t)
		if got := levelsOf(msgs); got != "warning,error" {
			t.Errorf("at warning: %q", got)
		} else if msgs[1].Logger != "test" || string(msgs[1].Data) != `"error"` {
			t.Errorf("message: %+v", msgs[1])
		}
		if err := cl.SetLoggingLevel(ctx, "loud"); err == nil {
			t.Error("an unknown level was accepted")
		}
	})
}

func TestSetLevelRejectsUnknownLevels(t *testing.T) {
	t.Parallel()
	p := rawServer(t, featureServer())
	p.initialize(Version20251125)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"loud"}}`)
	if msg := p.recv(); field(t, msg, "error.code") != float64(CodeInvalidParams) {
		t.Fatalf("got %s", msg)
	}
	p.send(`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"error"}}`)
	p.expect(`{"jsonrpc":"2.0","id":2,"result":{}}`)
}

func TestLoggingHandler(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, version, carrier string) {
		lc := newLogCollector()
		cl := connectOver(t, featureServer(), carrier, version, lc.options()...)
		ctx := context.Background()
		if err := cl.SetLoggingLevel(ctx, LevelInfo); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.CallTool(ctx, "slog", nil); err != nil {
			t.Fatal(err)
		}
		msgs := lc.take(t)
		if len(msgs) != 1 {
			t.Fatalf("got %d messages, want 1 (debug filtered out)", len(msgs))
		}
		want := `{"msg":"query done","request":7,"db":{"rows":3,"timing":{"took":"1s"}}}`
		if m := msgs[0]; m.Level != LevelInfo || m.Logger != "app" || !jsonEqual(string(m.Data), want) {
			t.Errorf("got %+v %s, want %s", m, m.Data, want)
		}
	})
}

func TestLoggingLevelOfSlogLevels(t *testing.T) {
	t.Parallel()
	tests := []struct {
		level slog.Level
		want  LoggingLevel
	}{
		{slog.LevelDebug - 4, LevelDebug}, {slog.LevelDebug, LevelDebug}, {slog.LevelInfo, LevelInfo},
		{slog.LevelInfo + 2, LevelNotice}, {slog.LevelWarn, LevelWarning}, {slog.LevelError, LevelError},
		{slog.LevelError + 4, LevelCritical}, {slog.LevelError + 8, LevelAlert}, {slog.LevelError + 12, LevelEmergency},
	}
	for _, tt := range tests {
		if got := loggingLevelOf(tt.level); got != tt.want {
			t.Errorf("loggingLevelOf(%v) = %s, want %s", tt.level, got, tt.want)
		}
	}
}

// logCollector gathers log messages and reports, through marker, each
// test/marker notification, which the test tools send after their logs.
type logCollector struct {
	mu     sync.Mutex
	msgs   []*LoggingMessageParams
	marker chan struct{}
}

func newLogCollector() *logCollector { return &logCollector{marker: make(chan struct{}, 16)} }

func (lc *logCollector) options() []ClientOption {
	return []ClientOption{
		WithLoggingMessageHandler(func(ctx context.Context, msg *LoggingMessageParams) {
			lc.mu.Lock()
			lc.msgs = append(lc.msgs, msg)
			lc.mu.Unlock()
		}),
		WithNotificationHandler("test/marker", func(context.Context, json.RawMessage) { lc.marker <- struct{}{} }),
	}
}

// take waits for the next marker and returns the messages that came
// before it: notification handlers run in arrival order.
func (lc *logCollector) take(t *testing.T) []*LoggingMessageParams {
	t.Helper()
	select {
	case <-lc.marker:
	case <-time.After(10 * time.Second):
		t.Fatal("no marker notification")
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	msgs := lc.msgs
	lc.msgs = nil
	return msgs
}

func levelsOf(msgs []*LoggingMessageParams) string {
	var levels []string
	for _, m := range msgs {
		levels = append(levels, string(m.Level))
	}
	return strings.Join(levels, ",")
}
