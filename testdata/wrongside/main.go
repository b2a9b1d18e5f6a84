// This program must not compile: every option marked ERROR is given to the
// side it does not configure. TestOptionsAreTypedBySide builds it and
// checks that the compiler refuses exactly those lines.
package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/e6ac58cb/mcp"
)

func main() {
	info := mcp.Implementation{Name: "x", Version: "1"}
	noop := func(context.Context) {}

	// Server options given to a client.
	mcp.NewClient(info, mcp.WithInstructions("x"))                             // ERROR
	mcp.NewClient(info, mcp.WithCacheHints(time.Minute, mcp.CacheScopePublic)) // ERROR
	mcp.NewClient(info, mcp.WithCompletionHandler(nil))                        // ERROR
	mcp.NewClient(info, mcp.WithStateKey(make([]byte, 32)))                    // ERROR
	mcp.NewClient(info, mcp.WithStateTTL(time.Minute))                         // ERROR
	mcp.NewClient(info, mcp.WithTasks(mcp.TaskOptions{}))                      // ERROR
	mcp.NewClient(info, mcp.WithPageSize(7))                                   // ERROR
	mcp.NewClient(info, mcp.WithEvents(mcp.EventOptions{}))                    // ERROR
	mcp.NewClient(info, mcp.WithWebhooks(mcp.WebhookOptions{}))                // ERROR
	mcp.NewClient(info, mcp.WithMaxListenStreams(1))                           // ERROR
	mcp.NewClient(info, mcp.WithBroadcaster(nil))                              // ERROR

	// Client options given to a server.
	mcp.NewServer(info, mcp.WithElicitationHandler(nil))                // ERROR
	mcp.NewServer(info, mcp.WithURLElicitation())                       // ERROR
	mcp.NewServer(info, mcp.WithSamplingHandler(nil))                   // ERROR
	mcp.NewServer(info, mcp.WithSamplingTools())                        // ERROR
	mcp.NewServer(info, mcp.WithSamplingContext())                      // ERROR
	mcp.NewServer(info, mcp.WithRoots())                                // ERROR
	mcp.NewServer(info, mcp.WithRootsHandler(nil))                      // ERROR
	mcp.NewServer(info, mcp.WithDiscoverTimeout(time.Second))           // ERROR
	mcp.NewServer(info, mcp.WithMaxInputRounds(3))                      // ERROR
	mcp.NewServer(info, mcp.WithMaxBarrenPages(3))                      // ERROR
	mcp.NewServer(info, mcp.WithResultCache(1<<20))                     // ERROR
	mcp.NewServer(info, mcp.WithApps())                                 // ERROR
	mcp.NewServer(info, mcp.WithMaxAppViewSize(4096))                   // ERROR
	mcp.NewServer(info, mcp.WithListenGapHandler(nil))                  // ERROR
	mcp.NewServer(info, mcp.WithListenResumeAttempts(3))                // ERROR
	mcp.NewServer(info, mcp.WithTaskPolling(time.Second, 0))            // ERROR
	mcp.NewServer(info, mcp.WithTaskRequests(mcp.TaskRequestOptions{})) // ERROR
	mcp.NewServer(info, mcp.WithToolListChangedHandler(noop))           // ERROR
	mcp.NewServer(info, mcp.WithPromptListChangedHandler(noop))         // ERROR
	mcp.NewServer(info, mcp.WithResourceListChangedHandler(noop))       // ERROR
	mcp.NewServer(info, mcp.WithResourceUpdatedHandler(nil))            // ERROR
	mcp.NewServer(info, mcp.WithLoggingMessageHandler(nil))             // ERROR
	var clientOnly mcp.ClientOption = mcp.WithRequestTimeout(time.Second)
	mcp.NewServer(info, clientOnly) // ERROR

	// Handler options given to a client transport, and the other way round.
	srv := mcp.NewServer(info)
	const url = "http://127.0.0.1:1/mcp"
	mcp.NewHTTPTransport(url, mcp.WithSessionTimeout(time.Minute))         // ERROR
	mcp.NewHTTPTransport(url, mcp.WithEventStore(nil))                     // ERROR
	mcp.NewHTTPTransport(url, mcp.WithAllowedOrigins("https://a.example")) // ERROR
	mcp.NewHTTPTransport(url, mcp.WithAllowedHosts("a.example"))           // ERROR
	mcp.NewHTTPTransport(url, mcp.WithMaxBodyBytes(1))                     // ERROR
	mcp.NewHTTPTransport(url, mcp.WithAuthorizer(nil))                     // ERROR
	mcp.NewHTTPTransport(url, mcp.WithMaxSessions(1))                      // ERROR
	mcp.NewHTTPTransport(url, mcp.WithMaxSessionsPerPrincipal(1))          // ERROR
	mcp.NewHTTPTransport(url, mcp.WithWriteTimeout(time.Second))           // ERROR
	mcp.NewHTTPTransport(url, mcp.WithSessionBacklog(1, 1))                // ERROR
	mcp.NewHTTPTransport(url, mcp.WithSessionBacklogBudget(1))             // ERROR
	mcp.NewHTTPTransport(url, mcp.WithSessionStore(nil))                   // ERROR
	mcp.NewHTTPTransport(url, mcp.WithSessionSaveRetries(1))               // ERROR
	mcp.NewHTTPTransport(url, mcp.WithEventStoreDelay(time.Second))        // ERROR
	mcp.NewSSETransport(url, mcp.WithKeepAlive(time.Second))               // ERROR
	mcp.NewSSETransport(url, mcp.WithContext(context.Background()))        // ERROR
	mcp.NewHTTPHandler(srv, mcp.WithHTTPClient(nil))                       // ERROR
	mcp.NewHTTPHandler(srv, mcp.WithHeader("Authorization", "Bearer x"))   // ERROR
	mcp.NewSSEHandler(srv, mcp.WithCloseTimeout(time.Second))              // ERROR
	mcp.NewSSEHandler(srv, mcp.WithReconnectAttempts(1))                   // ERROR
	mcp.NewHTTPHandler(srv, mcp.WithMaxAnswerPosts(1))                     // ERROR
	mcp.NewHTTPHandler(srv, mcp.WithOAuth(mcp.OAuthConfig{}))              // ERROR
	mcp.NewHTTPHandler(srv, mcp.WithoutStandaloneStream())
	mcp.NewHTTPTransport(url, mcp.WithoutStandaloneStream())

	// Options of both peers compile on either.
	both := []mcp.Option{
		mcp.WithLogger(slog.Default()),
		mcp.WithMaxInFlight(8),
		mcp.WithMaxMessageSize(1 << 20),
		mcp.WithNotificationHandler("notifications/x", nil),
		mcp.WithProtocolVersion(mcp.Version20251125),
		mcp.WithRequestTimeout(time.Second),
		mcp.WithMaxRequestTimeout(time.Minute),
		mcp.WithExtension("com.example/x", nil),
	}
	for _, o := range both {
		mcp.NewClient(info, o)
		mcp.NewServer(info, o)
	}
}
