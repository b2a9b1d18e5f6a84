package mcp

import (
	"encoding/json"
	"testing"
	"time"
)

// TestTaskWire: a task is written with each revision's member names (ttl
// and pollInterval on 2025-11-25, ttlMs and pollIntervalMs on 2026-07-28),
// a TTL of no limit as null, times in UTC, and reads back the same; a task
// without its id, status or times is refused.
func TestTaskWire(t *testing.T) {
	created := time.Date(2026, 8, 1, 10, 0, 0, 0, time.FixedZone("x", 3600))
	task := Task{ID: "t_9f2c", Status: TaskWorking, StatusMessage: "half", CreatedAt: created, LastUpdatedAt: created.Add(1500 * time.Millisecond), TTL: time.Hour, PollInterval: 2 * time.Second}
	for _, tc := range []struct {
		modern bool
		want   string
	}{
		{false, `{"taskId":"t_9f2c","status":"working","statusMessage":"half","createdAt":"2026-08-01T09:00:00.000Z","lastUpdatedAt":"2026-08-01T09:00:01.500Z","ttl":3600000,"pollInterval":2000}`},
		{true, `{"taskId":"t_9f2c","status":"working","statusMessage":"half","createdAt":"2026-08-01T09:00:00.000Z","lastUpdatedAt":"2026-08-01T09:00:01.500Z","ttlMs":3600000,"pollIntervalMs":2000}`},
	} {
		got := string(append(appendTaskMembers([]byte("{"), &task, tc.modern), '}'))
		if got != tc.want {
			t.Fatalf("modern %v:\n got %s\nwant %s", tc.modern, got, tc.want)
		}
		back, err := decodeTask([]byte(got), tc.modern)
		if err != nil {
			t.Fatal(err)
		}
		if !back.CreatedAt.Equal(task.CreatedAt) || !back.LastUpdatedAt.Equal(task.LastUpdatedAt) || back.ID != task.ID || back.Status != task.Status || back.StatusMessage != task.StatusMessage || back.TTL != task.TTL || back.PollInterval != task.PollInterval {
			t.Fatalf("modern %v: read back %+v, want %+v", tc.modern, back, task)
		}
		// The other revision's names are not this one's.
		other, err := decodeTask([]byte(got), !tc.modern)
		if err != nil || other.TTL != 0 || other.PollInterval != 0 {
			t.Fatalf("modern %v read as the other revision: %+v, %v", tc.modern, other, err)
		}
	}
	unlimited := Task{ID: "a", Status: TaskCompleted, CreatedAt: created, LastUpdatedAt: created}
	raw := append(appendTaskMembers([]byte("{"), &unlimited, true), '}')
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	if v, ok := m["ttlMs"]; !ok || v != nil {
		t.Fatalf("no TTL is written as %v (present %v), want null: %s", v, ok, raw)
	}
	if _, ok := m["pollIntervalMs"]; ok {
		t.Fatalf("no poll interval is written: %s", raw)
	}
	for _, bad := range []string{`{}`, `{"taskId":"a","status":"working","createdAt":"2026-08-01T10:00:00Z"}`, `{"taskId":"a","status":"working","createdAt":"yesterday","lastUpdatedAt":"2026-08-01T10:00:00Z"}`, `[]`} {
		if _, err := decodeTask([]byte(bad), true); err == nil {
			t.Errorf("decodeTask(%s) took it", bad)
		}
	}
	if !TaskCancelled.Terminal() || !TaskFailed.Terminal() || !TaskCompleted.Terminal() || TaskWorking.Terminal() || TaskInputRequired.Terminal() {
		t.Fatal("Terminal")
	}
}
