package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// signedDelivery is a delivery as a server makes it: body signed with
// secret under msgID at ts, for subscription subID.
func signedDelivery(t testing.TB, secret, subID, msgID string, ts time.Time, body string) *http.Request {
	t.Helper()
	key, err := webhookSecretKey(secret)
	if err != nil {
		t.Fatal(err)
	}
	stamp := strconv.FormatInt(ts.Unix(), 10)
	r := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("webhook-id", msgID)
	r.Header.Set("webhook-timestamp", stamp)
	r.Header.Set("webhook-signature", "v1,"+signWebhook(key, msgID, stamp, []byte(body)))
	r.Header.Set("X-MCP-Subscription-Id", subID)
	return r
}

const testOccurrence = `{"eventId":"evt_1","name":"ticket.created","timestamp":"2026-01-01T00:00:00Z","data":{"id":1},"cursor":"c1"}`

// TestWebhookReceiver: what the receiver accepts, refuses and hands on.
// Each delivery is signed when its case runs, not when the table is made:
// under load a parallel case may run minutes later.
func TestWebhookReceiver(t *testing.T) {
	t.Parallel()
	secret, other := NewWebhookSecret(), NewWebhookSecret()
	for _, tc := range []struct {
		name   string
		req    func() *http.Request
		status int
		handed string // the message type handed on, "-" for none
	}{
		{"an occurrence", func() *http.Request {
			return signedDelivery(t, secret, "sub_1", "evt_1", time.Now(), testOccurrence)
		}, 200, "event"},
		{"a gap", func() *http.Request {
			return signedDelivery(t, secret, "sub_1", "msg_gap_1", time.Now(), `{"type":"gap","cursor":"c9"}`)
		}, 200, "gap"},
		{"a termination", func() *http.Request {
			return signedDelivery(t, secret, "sub_1", "msg_terminated_1", time.Now(), `{"type":"terminated","error":{"code":-32023,"message":"gone"}}`)
		}, 200, "terminated"},
		{"a changed body", func() *http.Request {
			r := signedDelivery(t, secret, "sub_1", "evt_1", time.Now(), testOccurrence)
			r.Body = httptestBody(strings.Replace(testOccurrence, `"id":1`, `"id":2`, 1))
			return r
		}, 401, "-"},
		{"a changed signature", func() *http.Request {
			r := signedDelivery(t, secret, "sub_1", "evt_1", time.Now(), testOccurrence)
			sig := r.Header.Get("webhook-signature")
			r.Header.Set("webhook-signature", sig[:len(sig)-4]+"AAA=")
			return r
		}, 401, "-"},
		{"another secret's signature", func() *http.Request {
			return signedDelivery(t, other, "sub_1", "evt_1", time.Now(), testOccurrence)
		}, 401, "-"},
		{"one good signature among several", func() *http.Request {
			r := signedDelivery(t, secret, "sub_1", "evt_1", time.Now(), testOccurrence)
			bad := signedDelivery(t, other, "sub_1", "evt_1", time.Now(), testOccurrence)
			r.Header.Set("webhook-signature", "v1a,xyz "+bad.Header.Get("webhook-signature")+" "+r.Header.Get("webhook-signature"))
			return r
		}, 200, "event"},
		{"a stale timestamp", func() *http.Request {
			return signedDelivery(t, secret, "sub_1", "evt_1", time.Now().Add(-6*time.Minute), testOccurrence)
		}, 400, "-"},
		{"a future timestamp", func() *http.Request {
			return signedDelivery(t, secret, "sub_1", "evt_1", time.Now().Add(6*time.Minute), testOccurrence)
		}, 400, "-"},
		{"no subscription id", func() *http.Request {
			r := signedDelivery(t, secret, "sub_1", "evt_1", time.Now(), testOccurrence)
			r.Header.Del("X-MCP-Subscription-Id")
			return r
		}, 400, "-"},
		{"an unknown subscription", func() *http.Request {
			return signedDelivery(t, other, "sub_2", "evt_1", time.Now(), testOccurrence)
		}, 503, "-"},
		{"not JSON", func() *http.Request {
			return signedDelivery(t, secret, "sub_1", "evt_1", time.Now(), `[1]`)
		}, 400, "-"},
		{"an occurrence without id", func() *http.Request {
			return signedDelivery(t, secret, "sub_1", "evt_1", time.Now(), `{"name":"x","data":{}}`)
		}, 400, "-"},
		{"too big", func() *http.Request {
			return signedDelivery(t, secret, "sub_1", "evt_1", time.Now(), `{"eventId":"e","name":"x","data":{"s":"`+strings.Repeat("a", maxWebhookBodyBytes)+`"}}`)
		}, 413, "-"},
		{"GET", func() *http.Request {
			return httptest.NewRequest(http.MethodGet, "/hook", nil)
		}, 405, "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var handed []WebhookMessage
			r := NewWebhookReceiver(func(_ context.Context, m WebhookMessage) error {
				handed = append(handed, m)
				return nil
			})
			if err := r.Bind("sub_1", secret); err != nil {
				t.Fatal(err)
			}
			w := httptest.NewRecorder()
			r.ServeHTTP(w, tc.req())
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
			switch {
			case tc.handed == "-" && len(handed) != 0:
				t.Fatalf("handed on %+v", handed)
			case tc.handed == "event" && (len(handed) != 1 || handed[0].Event == nil || handed[0].Cursor != "c1" || handed[0].SubscriptionID != "sub_1"):
				t.Fatalf("handed on %+v", handed)
			case tc.handed == "gap" && (len(handed) != 1 || handed[0].Type != "gap" || handed[0].Cursor != "c9"):
				t.Fatalf("handed on %+v", handed)
			case tc.handed == "terminated" && (len(handed) != 1 || handed[0].Error == nil || handed[0].Error.Code != CodeNotFound):
				t.Fatalf("handed on %+v", handed)
			}
		})
	}
}

func httptestBody(s string) *readCloser { return &readCloser{strings.NewReader(s)} }

type readCloser struct{ *strings.Reader }

func (readCloser) Close() error { return nil }

// TestWebhookReceiverDedupAndVerification: a delivery id seen before is
// acknowledged without being handed on again; a callback error answers
// 500 and the retry is handed on; a verification challenge is echoed when
// a pending secret verifies it, which ties the secret to the id.
func TestWebhookReceiverDedupAndVerification(t *testing.T) {
	t.Parallel()
	secret := NewWebhookSecret()
	fail := true
	n := 0
	r := NewWebhookReceiver(func(context.Context, WebhookMessage) error {
		n++
		if fail {
			fail = false
			return errorf("not now")
		}
		return nil
	})
	now := time.Now()
	w := httptest.NewRecorder()
	r.ServeHTTP(w, signedDelivery(t, secret, "sub_9", "msg_verification_1", now, `{"type":"verification","challenge":"abc"}`))
	if w.Code != 503 {
		t.Fatalf("a challenge no secret verifies: %d", w.Code)
	}
	r.AddSecret(secret)
	w = httptest.NewRecorder()
	r.ServeHTTP(w, signedDelivery(t, secret, "sub_9", "msg_verification_2", now, `{"type":"verification","challenge":"abc"}`))
	if w.Code != 200 || !bytes.Contains(w.Body.Bytes(), []byte(`"challenge":"abc"`)) || n != 0 {
		t.Fatalf("challenge: %d %s, handed on %d", w.Code, w.Body, n)
	}
	for i, want := range []int{500, 200, 200} {
		w = httptest.NewRecorder()
		r.ServeHTTP(w, signedDelivery(t, secret, "sub_9", "evt_1", now, testOccurrence))
		if w.Code != want {
			t.Fatalf("delivery %d: %d, want %d", i, w.Code, want)
		}
	}
	if n != 2 {
		t.Fatalf("handed on %d times, want the failed one and its retry", n)
	}
	r.Remove("sub_9")
	r.pending = nil
	w = httptest.NewRecorder()
	r.ServeHTTP(w, signedDelivery(t, secret, "sub_9", "evt_2", now, testOccurrence))
	if w.Code != 503 {
		t.Fatalf("after Remove: %d", w.Code)
	}
}

// FuzzWebhookSignature: whatever the headers and body, the receiver does
// not panic, and it hands on only what the subscription's secret signed.
func FuzzWebhookSignature(f *testing.F) {
	secret := "whsec_" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	key, _ := webhookSecretKey(secret)
	now := time.Now()
	stamp := strconv.FormatInt(now.Unix(), 10)
	good := "v1," + signWebhook(key, "evt_1", stamp, []byte(testOccurrence))
	f.Add("evt_1", stamp, good, testOccurrence)
	f.Add("evt_1", stamp, "v1a,abc "+good, testOccurrence)
	f.Add("evt_1", stamp, "v1,"+strings.Repeat("A", 44), testOccurrence)
	f.Add("msg_gap_1", "0", "v1,", `{"type":"gap"}`)
	f.Add("", "-1", "  v1,=== v2,x", `{"type":"verification","challenge":"c"}`)
	f.Add("evt_1", "99999999999999999999", good, "")
	f.Fuzz(func(t *testing.T, msgID, ts, sig, body string) {
		handed := false
		r := NewWebhookReceiver(func(context.Context, WebhookMessage) error {
			handed = true
			return nil
		})
		r.now = func() time.Time { return now }
		r.Bind("sub_1", secret)
		req := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader(body))
		req.Header.Set("webhook-id", msgID)
		req.Header.Set("webhook-timestamp", ts)
		req.Header.Set("webhook-signature", sig)
		req.Header.Set("X-MCP-Subscription-Id", "sub_1")
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		signed := false
		for _, f := range strings.Fields(sig) {
			b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(f, "v1,"))
			signed = signed || (strings.HasPrefix(f, "v1,") && err == nil && bytes.Equal(b, webhookMAC(key, msgID, ts, []byte(body))))
		}
		if (handed || w.Code == 200) && !signed {
			t.Fatalf("accepted (%d) a delivery the secret did not sign: id %q ts %q sig %q", w.Code, msgID, ts, sig)
		}
	})
}
