package mcp_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	"github.com/e6ac58cb/mcp"
)

// A WebhookReceiver sits at the callback URL of webhook subscriptions. It
// checks each POST's Standard Webhooks signature with the secret of the
// subscription the X-MCP-Subscription-Id header names, and hands what
// verifies to its callback; anything else is refused. Here a delivery is
// signed by hand, as a server signs it.
func ExampleWebhookReceiver() {
	receiver := mcp.NewWebhookReceiver(func(_ context.Context, m mcp.WebhookMessage) error {
		fmt.Printf("%s: %s %s, cursor %s\n", m.SubscriptionID, m.Event.Name, m.Event.Data, m.Cursor)
		return nil
	})
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("a secret of at least 24 bytes"))
	if err := receiver.Bind("sub_1", secret); err != nil {
		log.Fatal(err)
	}

	deliver := func(body, signedBody string) int {
		key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
		id, ts := "evt_1", strconv.FormatInt(time.Now().Unix(), 10)
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id + "." + ts + "." + signedBody))
		r := httptest.NewRequest(http.MethodPost, "/hooks", strings.NewReader(body))
		r.Header.Set("webhook-id", id)
		r.Header.Set("webhook-timestamp", ts)
		r.Header.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
		r.Header.Set("X-MCP-Subscription-Id", "sub_1")
		w := httptest.NewRecorder()
		receiver.ServeHTTP(w, r)
		return w.Code
	}
	body := `{"eventId":"evt_1","name":"deploy.finished","timestamp":"2026-01-01T00:00:00Z","data":{"service":"api"},"cursor":"c42"}`
	fmt.Println("signed:", deliver(body, body))
	fmt.Println("tampered:", deliver(strings.Replace(body, "api", "web", 1), body))
	// Output:
	// sub_1: deploy.finished {"service":"api"}, cursor c42
	// signed: 200
	// tampered: 401
}
