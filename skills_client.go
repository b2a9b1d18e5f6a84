package mcp

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
)

// SkillCheck names what a skill file failed when a client verified it
// against its skill's entry. Client side.
type SkillCheck string

// The checks a client makes on a skill file it reads. Client side.
const (
	// SkillCheckUnlisted: the file is not in the entry's resources.
	SkillCheckUnlisted SkillCheck = "unlisted"
	// SkillCheckSize: its length differs from the entry's size, or
	// exceeds the client's bound.
	SkillCheckSize SkillCheck = "size"
	// SkillCheckDigest: its SHA-256 differs from the entry's digest.
	SkillCheckDigest SkillCheck = "digest"
	// SkillCheckFrontmatter: the SKILL.md's frontmatter does not parse,
	// or differs from the entry's.
	SkillCheckFrontmatter SkillCheck = "frontmatter"
	// SkillCheckEntry: the entry itself breaks the extension's rules
	// (a malformed digest, a file outside the skill, too many files).
	SkillCheckEntry SkillCheck = "entry"
)

// SkillVerificationError reports a skill file that is not what its skill's
// entry promised: the content must not be used. Refresh the entry with
// GetSkill and read again to recover from a stale listing. Client side.
type SkillVerificationError struct {
	Skill  string     // the URI of the skill's SKILL.md
	URI    string     // the file read
	Check  SkillCheck // what failed
	Detail string     // what differed
}

// Error says which file of which skill failed which check. Client side.
func (e *SkillVerificationError) Error() string {
	return fmt.Sprintf("mcp: skill %s: %s fails %s verification: %s", e.Skill, e.URI, e.Check, e.Detail)
}

// ListSkills calls skills/list for one page of the server's skills; an
// empty cursor asks for the first. A listing may be partial. It reads no
// skill file. Client side.
func (c *Client) ListSkills(ctx context.Context, cursor string, opts ...CallOption) (*ListSkillsResult, error) {
	res, err := requestAs[ListSkillsResult](ctx, c, "skills/list", cursorParams(cursor), opts)
	if err != nil {
		return nil, err
	}
	if res.Skills == nil {
		res.Skills = []*Skill{}
	}
	return res, nil
}

// Skills iterates over the server's skills through every page of
// skills/list; see [Client.Tools]. Client side.
func (c *Client) Skills(ctx context.Context, opts ...CallOption) iter.Seq2[*Skill, error] {
	return pages(ctx, c, opts, c.ListSkills, func(r *ListSkillsResult) ([]*Skill, string) { return r.Skills, r.NextCursor })
}

// GetSkill calls skills/get for the entry of the skill whose SKILL.md is
// at uri, listed or not. Client side.
func (c *Client) GetSkill(ctx context.Context, uri string, opts ...CallOption) (*Skill, error) {
	res, err := requestAs[GetSkillResult](ctx, c, "skills/get", map[string]string{"uri": uri}, opts)
	if err != nil {
		return nil, err
	}
	if res.Skill == nil || res.Skill.URI != uri {
		return nil, fmt.Errorf("mcp: skills/get %s: the server sent no entry for it", uri)
	}
	return res.Skill, nil
}

// ReadSkillDirectory calls resources/directory/read for one page of the
// direct children of the directory resource at uri (a skill's root, say
// skill://pdf-processing, or a folder in it). Only for a server that
// declares directoryRead. Client side.
func (c *Client) ReadSkillDirectory(ctx context.Context, uri, cursor string, opts ...CallOption) (*ReadDirectoryResult, error) {
	params := map[string]string{"uri": uri}
	if cursor != "" {
		params["cursor"] = cursor
	}
	res, err := requestAs[ReadDirectoryResult](ctx, c, "resources/directory/read", params, opts)
	if err != nil {
		return nil, err
	}
	if res.Resources == nil {
		res.Resources = []*Resource{}
	}
	return res, nil
}

// ReadSkillFile reads one file of skill with resources/read, when it is
// needed (a client never reads a skill's files ahead of need), and
// verifies it against the entry: uri must be listed in skill.Resources,
// and the bytes must have the listed size and digest. Reading skill.URI,
// the SKILL.md, loads the skill: its frontmatter must also equal the
// entry's, field by field. The file must not exceed
// DefaultMaxSkillFileBytes (the connection's WithMaxMessageSize bounds
// what arrives at all). A file that fails is returned as a
// *SkillVerificationError and its bytes are not returned. For a dynamic
// skill, which publishes no digests, only the frontmatter and the bound
// are checked. Client side.
func (c *Client) ReadSkillFile(ctx context.Context, skill *Skill, uri string, opts ...CallOption) ([]byte, error) {
	fail := func(check SkillCheck, format string, args ...any) ([]byte, error) {
		return nil, &SkillVerificationError{Skill: skill.URI, URI: uri, Check: check, Detail: fmt.Sprintf(format, args...)}
	}
	var want *SkillFile
	if !skill.Dynamic {
		if err := checkSkillEntry(skill); err != nil {
			return nil, err
		}
		for i := range skill.Resources {
			if skill.Resources[i].URI == uri {
				want = &skill.Resources[i]
				break
			}
		}
		if want == nil {
			return fail(SkillCheckUnlisted, "the entry's resources do not list it")
		}
	} else if uri != skill.URI && !strings.HasPrefix(uri, skillRoot(skill.URI)+"/") {
		return fail(SkillCheckUnlisted, "it lies outside the skill's directory")
	}
	limit := int64(DefaultMaxSkillFileBytes)
	if want != nil {
		if want.Size > limit {
			return fail(SkillCheckSize, "the entry says %d bytes, more than the client's bound of %d", want.Size, limit)
		}
		limit = want.Size
	}
	res, err := c.ReadResource(ctx, uri, opts...)
	if err != nil {
		return nil, fmt.Errorf("mcp: skill %s: reading %s: %w", skill.URI, uri, err)
	}
	var rc *ResourceContents
	for i := range res.Contents {
		if res.Contents[i].URI == uri {
			rc = &res.Contents[i]
			break
		}
	}
	if rc == nil {
		return nil, fmt.Errorf("mcp: skill %s: the server sent no contents for %s", skill.URI, uri)
	}
	var data []byte
	if rc.Blob != "" {
		if int64(base64.StdEncoding.DecodedLen(len(rc.Blob))) > limit+2 {
			return fail(SkillCheckSize, "a blob of %d base64 characters, more than %d bytes", len(rc.Blob), limit)
		}
		if data, err = base64.StdEncoding.DecodeString(rc.Blob); err != nil {
			return nil, fmt.Errorf("mcp: skill %s: %s: the blob is not base64: %w", skill.URI, uri, err)
		}
	} else {
		data = []byte(rc.Text)
	}
	if want == nil && int64(len(data)) > limit {
		return fail(SkillCheckSize, "%d bytes, more than the client's bound of %d", len(data), limit)
	}
	if want != nil {
		if int64(len(data)) != want.Size {
			return fail(SkillCheckSize, "%d bytes, the entry says %d", len(data), want.Size)
		}
		sum := sha256.Sum256(data)
		got := "sha256:" + hex.EncodeToString(sum[:])
		if subtle.ConstantTimeCompare([]byte(got), []byte(want.Digest)) != 1 {
			return fail(SkillCheckDigest, "%s, the entry says %s", got, want.Digest)
		}
	}
	if uri == skill.URI {
		fm, err := parseFrontmatter(data)
		if err != nil {
			return fail(SkillCheckFrontmatter, "%v", err)
		}
		if field, ok := sameFrontmatter(fm, skill.Frontmatter); !ok {
			return fail(SkillCheckFrontmatter, "field %q differs from the entry's", field)
		}
	}
	return data, nil
}

// checkSkillEntry checks an entry before any of its files is trusted: its
// SKILL.md is listed, every file lies in the skill's directory, and the
// digests, sizes and count are well formed and bounded.
func checkSkillEntry(skill *Skill) error {
	fail := func(format string, args ...any) error {
		return &SkillVerificationError{Skill: skill.URI, URI: skill.URI, Check: SkillCheckEntry, Detail: fmt.Sprintf(format, args...)}
	}
	if !strings.HasSuffix(skill.URI, "/SKILL.md") {
		return fail("the skill's URI does not end in /SKILL.md")
	}
	if len(skill.Resources) > DefaultMaxSkillFiles {
		return fail("%d files, more than %d", len(skill.Resources), DefaultMaxSkillFiles)
	}
	root := skillRoot(skill.URI)
	var total int64
	listed := false
	for _, f := range skill.Resources {
		switch {
		case f.URI == skill.URI:
			listed = true
		case !strings.HasPrefix(f.URI, root+"/"):
			return fail("%s lies outside the skill's directory", f.URI)
		}
		if !validDigest(f.Digest) {
			return fail("%s: digest %q is not sha256: and 64 lowercase hex digits", f.URI, f.Digest)
		}
		if f.Size < 0 {
			return fail("%s: negative size", f.URI)
		}
		total += min(f.Size, DefaultMaxSkillBytes+1)
	}
	if !listed {
		return fail("the entry's resources do not list its SKILL.md")
	}
	if total > DefaultMaxSkillBytes {
		return fail("its files hold more than %d bytes", DefaultMaxSkillBytes)
	}
	return nil
}

// skillRoot is the directory URI of a skill whose SKILL.md is at uri.
func skillRoot(uri string) string { return strings.TrimSuffix(uri, "/SKILL.md") }

func validDigest(d string) bool {
	hexPart, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hexPart) != 64 {
		return false
	}
	for _, c := range []byte(hexPart) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// sameFrontmatter compares a parsed frontmatter with an entry's, field by
// field, as JSON; it returns the first field that differs.
func sameFrontmatter(file, entry map[string]any) (string, bool) {
	keys := make(map[string]bool, len(file)+len(entry))
	for k := range file {
		keys[k] = true
	}
	for k := range entry {
		keys[k] = true
	}
	for k := range keys {
		a, errA := json.Marshal(file[k])
		b, errB := json.Marshal(entry[k])
		if errA != nil || errB != nil || string(a) != string(b) {
			return k, false
		}
	}
	return "", true
}
