package mcp

import (
	"encoding/json"
	"testing"
)

// TestListenReplacedDeliversEachAnnouncementOnce: while a 2026-07-28
// client's listen stream is being replaced, each announced change is
// delivered once, whichever stream brings it first; what the old stream
// alone carries is delivered if the new stream wants it, and dropped if the
// client no longer subscribes to it; a notification that names no
// announcement (another server's) is taken from the newest stream only.
func TestListenReplacedDeliversEachAnnouncementOnce(t *testing.T) {
	cl := NewClient(Implementation{Name: "c", Version: "1"})
	meta := func(sub, ann string) string {
		m := `"_meta":{"` + metaSubscriptionID + `":"` + sub + `"`
		if ann != "" {
			m += `,"` + metaAnnouncement + `":"` + ann + `"`
		}
		return m + "}"
	}
	ack := func(sub string, uris ...string) {
		b, _ := json.Marshal(uris)
		params := `{"notifications":{"toolsListChanged":true,"resourceSubscriptions":` + string(b) + `},` + meta(sub, "") + `}`
		if !cl.acceptNotification("notifications/subscriptions/acknowledged", json.RawMessage(params)) {
			t.Fatal("an acknowledgement was dropped")
		}
	}
	updated := func(sub, ann, uri string) bool {
		return cl.acceptNotification("notifications/resources/updated", json.RawMessage(`{"uri":"`+uri+`",`+meta(sub, ann)+`}`))
	}
	ack("old", "test://a", "test://gone")
	if !updated("old", "1", "test://a") {
		t.Fatal("the open stream's update was dropped")
	}
	ack("new", "test://a", "test://b")
	for _, tc := range []struct {
		name          string
		sub, ann, uri string
		want          bool
	}{
		{"on the old stream alone, still wanted", "old", "2", "test://a", true},
		{"the same on the new stream", "new", "2", "test://a", false},
		{"on the new stream first", "new", "3", "test://a", true},
		{"the same on the old stream", "old", "3", "test://a", false},
		{"on the old stream, unsubscribed since", "old", "4", "test://gone", false},
		{"on the new stream, a new subscription", "new", "5", "test://b", true},
		{"the same again: a repeat", "new", "5", "test://b", false},
		{"no announcement, old stream", "old", "", "test://a", false},
		{"no announcement, new stream", "new", "", "test://a", true},
	} {
		if got := updated(tc.sub, tc.ann, tc.uri); got != tc.want {
			t.Errorf("%s: delivered %v, want %v", tc.name, got, tc.want)
		}
	}
	if !cl.acceptNotification("notifications/tools/list_changed", json.RawMessage(`{`+meta("old", "6")+`}`)) {
		t.Error("a list change on the old stream alone, still wanted, was dropped")
	}
}
