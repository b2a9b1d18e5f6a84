// Command signin-client connects to an MCP server that requires OAuth,
// signing the user in through the browser, then lists the server's tools
// and calls "whoami" when there is one.
//
//	go run ./examples/signin-client -url http://127.0.0.1:8080/mcp
//
// Its default URL is that of examples/protected-server, which with
// -dev-issuer runs a toy authorization server that approves at once:
//
//	go run ./examples/protected-server -dev-issuer &
//	go run ./examples/signin-client -open-with-http-get
//
// The sign-in is the SDK's: on the server's 401 the transport discovers its
// authorization server, registers the client, and sends the browser to sign
// in; the browser comes back to a listener on 127.0.0.1 that the program
// runs for the purpose. -open-with-http-get replaces the browser by a plain
// GET that follows redirects, for authorization servers that approve at
// once (tests, a toy dev issuer). -token-file keeps the sign-in in a file,
// so that the next run needs no browser.
//
// Which profile to use when:
//
//   - A person at the keyboard, no enterprise identity provider in between:
//     the default, the browser sign-in.
//   - A person whose company's identity provider decides which MCP servers
//     they may use (enterprise-managed authorization): -enterprise-idp with
//     the identity provider's token endpoint, -enterprise-idp-client-id,
//     and -id-token-file, the ID token the user's single sign-on left. The
//     client trades it at the identity provider for an identity assertion
//     grant and that at the MCP server's authorization server for a token:
//     no browser. -client-id (and $SIGNIN_CLIENT_SECRET) is how the
//     authorization server knows this client; $SIGNIN_IDP_CLIENT_SECRET is
//     the identity provider's secret, if it gave one.
//   - A program with no person behind it, running where its platform hands
//     it an identity token (a Kubernetes service account token, a cloud
//     workload identity): -workload-token-file, the JWT bearer grant with
//     that token, read again whenever a new access token is needed.
//   - With any of them, when the server or its authorization server asks
//     for tokens bound to the client (or a stolen token must be useless on
//     its own): -dpop. The key is made for the run, so a token kept with
//     -token-file is not reused by the next run, which obtains its own.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/e6ac58cb/mcp"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:3001/mcp", "the MCP endpoint")
	httpGet := flag.Bool("open-with-http-get", os.Getenv("SIGNIN_OPEN_WITH_HTTP_GET") != "", "GET the authorization URL instead of starting a browser")
	timeout := flag.Duration("timeout", 5*time.Minute, "how long the whole run, sign-in included, may take")
	tokenFile := flag.String("token-file", "", "keep tokens and the client registration in this file")
	var p profile
	flag.StringVar(&p.clientID, "client-id", "", "the client's pre-registered ID at the authorization server (secret in $SIGNIN_CLIENT_SECRET)")
	flag.StringVar(&p.idpTokenEndpoint, "enterprise-idp", "", "enterprise-managed authorization: the identity provider's token endpoint")
	flag.StringVar(&p.idpClientID, "enterprise-idp-client-id", "", "enterprise-managed authorization: the client's ID at the identity provider (secret in $SIGNIN_IDP_CLIENT_SECRET)")
	flag.StringVar(&p.idTokenFile, "id-token-file", "", "enterprise-managed authorization: a file holding the user's ID token from the identity provider")
	flag.StringVar(&p.workloadTokenFile, "workload-token-file", "", "workload identity: a file holding the workload's identity token (JWT), re-read for every new token")
	flag.BoolVar(&p.dpop, "dpop", false, "bind tokens to a key made for this run (DPoP, RFC 9449)")
	flag.Parse()
	p.clientSecret = os.Getenv("SIGNIN_CLIENT_SECRET")
	p.idpClientSecret = os.Getenv("SIGNIN_IDP_CLIENT_SECRET")
	open := openBrowser
	if *httpGet {
		open = getFollowingRedirects
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var store mcp.TokenStore = mcp.NewMemoryTokenStore()
	if *tokenFile != "" {
		store = &fileStore{path: *tokenFile}
	}
	if err := run(ctx, *url, open, store, p, os.Stdout); err != nil {
		var ae *mcp.AuthError
		if errors.As(err, &ae) {
			fmt.Fprintf(os.Stderr, "signin-client: sign-in failed at step %q (URL %s, status %d, field %q): %s\n", ae.Step, ae.URL, ae.Status, ae.Field, ae.Reason)
		}
		fmt.Fprintln(os.Stderr, "signin-client:", err)
		os.Exit(1)
	}
}

// profile is how the client obtains its tokens, from the flags; the zero
// profile signs the user in through the browser.
type profile struct {
	clientID, clientSecret                         string
	idpTokenEndpoint, idpClientID, idpClientSecret string
	idTokenFile                                    string
	workloadTokenFile                              string
	dpop                                           bool
}

// apply puts the profile into cfg.
func (p profile) apply(cfg *mcp.OAuthConfig) error {
	cfg.ClientID, cfg.ClientSecret, cfg.DPoP = p.clientID, p.clientSecret, p.dpop
	switch {
	case p.idpTokenEndpoint != "" && p.workloadTokenFile != "":
		return errors.New("-enterprise-idp and -workload-token-file are two profiles: pick one")
	case p.idpTokenEndpoint != "":
		if p.idTokenFile == "" {
			return errors.New("-enterprise-idp needs -id-token-file, the user's ID token")
		}
		cfg.Enterprise = &mcp.EnterpriseAuthorization{
			TokenEndpoint: p.idpTokenEndpoint, ClientID: p.idpClientID, ClientSecret: p.idpClientSecret,
			Identity: mcp.AssertionFile(p.idTokenFile),
		}
	case p.workloadTokenFile != "":
		cfg.Assertion = mcp.AssertionFile(p.workloadTokenFile)
	}
	return nil
}

// run signs in to the server at url, lists its tools and calls whoami.
func run(ctx context.Context, url string, open func(string) error, store mcp.TokenStore, p profile, out io.Writer) error {
	redirect, err := mcp.NewLoopbackRedirect(func(authURL string) error {
		fmt.Fprintln(out, "Sign in at:", authURL)
		return open(authURL)
	})
	if err != nil {
		return err
	}
	defer redirect.Close()
	// The first request waits for the user to sign in: give it (and the
	// server/discover probe it may be) as long as the whole run.
	wait := time.Until(deadlineOf(ctx))
	client := mcp.NewClient(mcp.Implementation{Name: "signin-client", Version: "1.0.0"},
		mcp.WithDiscoverTimeout(wait), mcp.WithRequestTimeout(wait))
	cfg := mcp.OAuthConfig{Handler: redirect, ClientName: "MCP signin-client", Store: store}
	if err := p.apply(&cfg); err != nil {
		return err
	}
	transport := mcp.NewHTTPTransport(url, mcp.WithOAuth(cfg))
	if err := client.Connect(ctx, transport); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer client.Close()
	var names []string
	for tool, err := range client.Tools(ctx) {
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		names = append(names, tool.Name)
	}
	fmt.Fprintln(out, "Tools:", names)
	if !slices.Contains(names, "whoami") {
		return nil
	}
	res, err := client.CallTool(ctx, "whoami", nil)
	if err != nil {
		return fmt.Errorf("whoami: %w", err)
	}
	for _, c := range res.Content {
		fmt.Fprintln(out, "whoami:", c.Text)
	}
	return nil
}

// deadlineOf is ctx's deadline, or an hour from now.
func deadlineOf(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(time.Hour)
}

// openBrowser starts the system's browser on u.
func openBrowser(u string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", u)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", u)
	default:
		cmd = exec.Command("xdg-open", u)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting a browser (open the URL yourself): %w", err)
	}
	go cmd.Wait()
	return nil
}

// getFollowingRedirects GETs u and follows its redirects, into the
// loopback listener: the browser of an authorization server that approves
// without asking.
func getFollowingRedirects(u string) error {
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s ended with %s", u, resp.Status)
	}
	return nil
}

// fileStore is a TokenStore in a JSON file, readable by its owner only.
type fileStore struct {
	path string
	mu   sync.Mutex
}

type fileContents struct {
	Tokens  map[string]*mcp.Token              `json:"tokens"`
	Clients map[string]*mcp.ClientRegistration `json:"clients"`
}

func (f *fileStore) read() (*fileContents, error) {
	c := &fileContents{Tokens: map[string]*mcp.Token{}, Clients: map[string]*mcp.ClientRegistration{}}
	data, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err == nil {
		err = json.Unmarshal(data, c)
	}
	return c, err
}

// update reads the file, applies change and writes it back.
func (f *fileStore) update(change func(*fileContents)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.read()
	if err != nil {
		return err
	}
	change(c)
	data, _ := json.MarshalIndent(c, "", "  ")
	return os.WriteFile(f.path, data, 0o600)
}

func (f *fileStore) LoadToken(_ context.Context, key string) (*mcp.Token, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.read()
	if err == nil && c.Tokens[key] == nil {
		err = mcp.ErrNoToken
	}
	return c.Tokens[key], err
}

func (f *fileStore) StoreToken(_ context.Context, key string, t *mcp.Token) error {
	return f.update(func(c *fileContents) { c.Tokens[key] = t })
}

func (f *fileStore) LoadClient(_ context.Context, issuer string) (*mcp.ClientRegistration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.read()
	if err == nil && c.Clients[issuer] == nil {
		err = mcp.ErrNoToken
	}
	return c.Clients[issuer], err
}

func (f *fileStore) StoreClient(_ context.Context, issuer string, reg *mcp.ClientRegistration) error {
	return f.update(func(c *fileContents) { c.Clients[issuer] = reg })
}
