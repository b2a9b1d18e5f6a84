package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
)

// A VersionError reports, on the client, that Connect found no protocol
// revision that both it and the server speak, and which revisions each side
// offered. It wraps the server's answer, if the server gave one.
type VersionError struct {
	// Offered are the revisions the client offered: the one it is pinned
	// to, or the ones it speaks.
	Offered []string
	// ServerOffered are the revisions the server said it speaks; nil when
	// it did not say.
	ServerOffered []string
	// Detail says what the server's answer means, when it named no
	// revision ("" otherwise).
	Detail string
	// Err is the server's error answer, if it answered with one.
	Err error
}

// Error reads like "mcp: no protocol revision in common: the client
// offered 2026-07-28; the server offered 2025-06-18, 2025-11-25".
func (e *VersionError) Error() string {
	msg := "mcp: no protocol revision in common: the client offered " + strings.Join(e.Offered, ", ") + "; "
	if e.ServerOffered != nil {
		msg += "the server offered " + strings.Join(e.ServerOffered, ", ")
	} else {
		msg += "the server named none"
	}
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	if e.Err != nil {
		msg += ": " + untitledText(e.Err)
	}
	return msg
}

// Unwrap returns the server's error answer, if any.
func (e *VersionError) Unwrap() error { return e.Err }

// legacyVersions are the revisions this package speaks with initialize,
// newest first.
func legacyVersions() []string {
	return slices.DeleteFunc(slices.Clone(SupportedVersions), isModernVersion)
}

// supportedIn reads the "supported" list of a version error's data.
func supportedIn(data json.RawMessage) []string {
	var d struct {
		Supported []string `json:"supported"`
	}
	if json.Unmarshal(data, &d) != nil {
		return nil
	}
	return d.Supported
}

func (c *Client) negotiate(ctx context.Context) error {
	pinned := c.cfg.protocolVersion
	if pinned != "" && !isSupportedVersion(pinned) {
		return errorf("protocol version %q is not one this package speaks", pinned)
	}
	if pinned == "" || isModernVersion(pinned) {
		version := pinned
		if version == "" {
			version = LatestVersion
		}
		ok, err := c.discover(ctx, version, pinned != "")
		var authErr *AuthError
		if ok || pinned != "" || ctx.Err() != nil || errors.As(err, &authErr) {
			return err
		}
	}
	legacy := pinned
	if legacy == "" {
		legacy = LatestLegacyVersion
	}
	return c.initialize(ctx, legacy, pinned != "")
}

// discover probes server/discover. It reports true when the server speaks
// the modern era; false (with a nil error) means "fall back". A server that
// answers -32022 names the versions it supports: the probe is sent once
// more with the newest one both sides speak, as SEP-2575 asks.
func (c *Client) discover(ctx context.Context, version string, pinned bool) (bool, error) {
	var raw json.RawMessage
	var envelope []metaEntry
	for attempt := 1; ; attempt++ {
		envelope = c.modernEnvelope(version)
		o := &callOptions{meta: envelope}
		if !pinned {
			o.timeout, o.timeoutSet = c.cfg.client.discoverTimeout, true
		}
		var err error
		if raw, err = c.conn.call(ctx, "server/discover", nil, o); err == nil {
			break
		}
		var rpcErr *Error
		if errors.As(err, &rpcErr) && rpcErr.Code == CodeUnsupportedProtocolVersion {
			if next, ok := sharedModernVersion(rpcErr.Data, c.cfg.protocolVersion); ok && attempt == 1 {
				version = next
				continue
			}
			if pinned {
				return false, &VersionError{Offered: []string{version}, ServerOffered: supportedIn(rpcErr.Data), Err: err}
			}
		}
		if pinned && rpcErr != nil {
			ve := &VersionError{Offered: []string{version}, Err: err}
			if rpcErr.Code == CodeMethodNotFound {
				ve.Detail = "it does not know server/discover, so it speaks only revisions before " + Version20260728 + ", which begin with initialize"
			}
			return false, ve
		}
		var authErr *AuthError
		if pinned || errors.Is(err, ErrClosed) || errors.As(err, &authErr) {
			return false, err // an OAuth failure would only repeat on initialize
		}
		c.cfg.logger.Debug("server/discover failed; falling back to initialize", "err", err)
		return false, nil
	}
	var res DiscoverResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return false, errorf("malformed server/discover result: %w", err)
	}
	if !slices.Contains(res.SupportedVersions, version) {
		if pinned {
			return false, &VersionError{Offered: []string{version}, ServerOffered: res.SupportedVersions}
		}
		return false, nil
	}
	var info Implementation
	if si, ok := res.Meta[metaServerInfo]; ok {
		b, _ := json.Marshal(si)
		_ = json.Unmarshal(b, &info)
	}
	c.mu.Lock()
	c.version, c.modern = version, true
	c.serverCaps, c.serverInfo, c.instructions = res.Capabilities, info, res.Instructions
	c.envelope, c.taskEnv = envelope, nil
	_, c.tasks.toolCalls = res.Capabilities.Extensions[TasksExtension]
	c.mu.Unlock()
	return true, nil
}

// sharedModernVersion returns the newest 2026-07-28-era revision that
// both this package and the data of a -32022 error list as supported, and
// that a pinned revision, if any, allows.
func sharedModernVersion(data json.RawMessage, pinned string) (string, bool) {
	supported := supportedIn(data)
	for _, v := range SupportedVersions {
		if isModernVersion(v) && slices.Contains(supported, v) && (pinned == "" || v == pinned) {
			return v, true
		}
	}
	return "", false
}

func (c *Client) initialize(ctx context.Context, version string, pinned bool) error {
	params, _ := json.Marshal(initializeParams{ProtocolVersion: version, Capabilities: c.capabilitiesJSON(false), ClientInfo: c.info})
	offered := legacyVersions()
	if pinned {
		offered = []string{version}
	}
	raw, err := c.conn.call(ctx, "initialize", params, &callOptions{})
	if err != nil {
		var rpcErr *Error
		if errors.As(err, &rpcErr) {
			if supported := supportedIn(rpcErr.Data); supported != nil {
				return &VersionError{Offered: offered, ServerOffered: supported, Err: err}
			}
		}
		return errorf("initialize: %w", err)
	}
	var res InitializeResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return errorf("malformed initialize result: %w", err)
	}
	if !slices.Contains(offered, res.ProtocolVersion) {
		return &VersionError{Offered: offered, ServerOffered: []string{res.ProtocolVersion}, Detail: "its answer to initialize"}
	}
	c.mu.Lock()
	c.version, c.modern = res.ProtocolVersion, false
	c.serverCaps, c.serverInfo, c.instructions = res.Capabilities, res.ServerInfo, res.Instructions
	c.envelope, c.taskEnv = nil, nil
	c.tasks = legacyServerTasks(raw)
	c.mu.Unlock()
	c.conn.batchOK.Store(res.ProtocolVersion == Version20250326)
	return c.conn.notify("notifications/initialized", nil, ID{}, nil)
}
