package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

const skillsTestMD = `---
name: pdf-processing
description: Extract, fill, and assemble PDF documents
license: Apache-2.0
metadata:
  author: someone
  version: "2.1.0"
---

# PDF processing

Read references/FORMS.md before filling a form.
`

func skillsTestFS() fstest.MapFS {
	return fstest.MapFS{
		"pdf-processing/SKILL.md":               {Data: []byte(skillsTestMD)},
		"pdf-processing/references/FORMS.md":    {Data: []byte("Supporting content.\n")},
		"pdf-processing/scripts/extract.py":     {Data: []byte("print('hi')\n")},
		"pdf-processing/assets/logo.bin":        {Data: []byte{0xff, 0x00, 0xfe}},
		"acme/billing/refunds/SKILL.md":         {Data: []byte("---\nname: refunds\ndescription: Process refunds\n---\nBody.\n")},
		"acme/billing/refunds/examples/mail.md": {Data: []byte("Dear customer,\n")},
		".hidden/notes.txt":                     {Data: []byte("skipped")},
	}
}

func newSkillsTestServer(t testing.TB, fsys fstest.MapFS, opts ...SkillsOption) *Server {
	t.Helper()
	srv := NewServer(Implementation{Name: "skills", Version: "1.0.0"}, WithPageSize(1))
	if err := srv.AddSkills(fsys, opts...); err != nil {
		t.Fatal(err)
	}
	return srv
}

func sha(data string) string {
	sum := sha256.Sum256([]byte(data))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// TestSkillsThroughClient lists, gets and reads skills on both eras over
// every carrier (pipe, memory, HTTP).
func TestSkillsThroughClient(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, version, carrier string) {
		ctx := context.Background()
		cl := connectOver(t, newSkillsTestServer(t, skillsTestFS()), carrier, version)
		if got := string(cl.ServerCapabilities().Extensions[SkillsExtension]); got != `{"directoryRead":true}` {
			t.Errorf("the server declares %s as %q", SkillsExtension, got)
		}
		var skills []*Skill
		for s, err := range cl.Skills(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			skills = append(skills, s)
		}
		if len(skills) != 2 || skills[0].URI != "skill://acme/billing/refunds/SKILL.md" || skills[1].URI != "skill://pdf-processing/SKILL.md" {
			t.Fatalf("skills/list (one per page): %+v", skills)
		}
		pdf := skills[1]
		if pdf.Frontmatter["license"] != "Apache-2.0" || pdf.Frontmatter["metadata"].(map[string]any)["version"] != "2.1.0" {
			t.Errorf("frontmatter: %+v", pdf.Frontmatter)
		}
		if len(pdf.Resources) != 4 || pdf.Resources[0] != (SkillFile{URI: pdf.URI, Digest: sha(skillsTestMD), Size: int64(len(skillsTestMD))}) {
			t.Errorf("resources: %+v", pdf.Resources)
		}
		got, err := cl.GetSkill(ctx, pdf.URI)
		if err != nil || len(got.Resources) != 4 {
			t.Errorf("skills/get: %+v, %v", got, err)
		}
		if _, err := cl.GetSkill(ctx, "skill://nope/SKILL.md"); rpcCode(err) != CodeInvalidParams {
			t.Errorf("skills/get of an unknown skill: %v, want -32602", err)
		}
		for _, f := range pdf.Resources {
			data, err := cl.ReadSkillFile(ctx, pdf, f.URI)
			if err != nil || int64(len(data)) != f.Size {
				t.Errorf("ReadSkillFile(%s): %d bytes, %v", f.URI, len(data), err)
			}
		}
		dir, err := cl.ReadSkillDirectory(ctx, "skill://pdf-processing", "")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range dir.Resources {
			names = append(names, r.Name+":"+r.MIMEType)
		}
		if strings.Join(names, " ") != "pdf-processing:text/markdown" || dir.NextCursor == "" {
			t.Errorf("directory read, page 1: %v (next %q)", names, dir.NextCursor)
		}
		if _, err := cl.ReadSkillDirectory(ctx, pdf.URI, ""); rpcCode(err) != CodeInvalidParams {
			t.Errorf("directory read of a file: %v, want -32602", err)
		}
		list, err := cl.ListResources(ctx, "")
		if err != nil || len(list.Resources) != 1 {
			t.Fatalf("resources/list: %+v, %v", list, err)
		}
	})
}

// TestSkillsDirectoryPages: every child of a directory comes back once
// across its pages.
func TestSkillsDirectoryPages(t *testing.T) {
	t.Parallel()
	cl := pair(t, newSkillsTestServer(t, skillsTestFS()))
	var all []string
	cursor := ""
	for range 10 {
		res, err := cl.ReadSkillDirectory(context.Background(), "skill://pdf-processing", cursor)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Resources {
			all = append(all, r.URI)
		}
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	want := "skill://pdf-processing/SKILL.md skill://pdf-processing/assets skill://pdf-processing/references skill://pdf-processing/scripts"
	if strings.Join(all, " ") != want {
		t.Errorf("children: %v\nwant %s", all, want)
	}
}

func TestAddSkillsRefuses(t *testing.T) {
	t.Parallel()
	md := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	cases := []struct {
		name string
		fsys fstest.MapFS
		opts []SkillsOption
		want string
	}{
		{"no SKILL.md", fstest.MapFS{"a/notes.md": md("x")}, nil, "no SKILL.md"},
		{"file outside skills", fstest.MapFS{"a/SKILL.md": md("---\nname: a\ndescription: d\n---\n"), "b/x.md": md("x")}, nil, "lies in no skill"},
		{"root SKILL.md", fstest.MapFS{"SKILL.md": md("---\nname: a\ndescription: d\n---\n")}, nil, "at the root"},
		{"no frontmatter", fstest.MapFS{"a/SKILL.md": md("# A\n")}, nil, "does not begin"},
		{"unclosed", fstest.MapFS{"a/SKILL.md": md("---\nname: a\ndescription: d\n")}, nil, "not closed"},
		{"no description", fstest.MapFS{"a/SKILL.md": md("---\nname: a\n---\n")}, nil, "no description"},
		{"name differs", fstest.MapFS{"a/SKILL.md": md("---\nname: b\ndescription: d\n---\n")}, nil, "differs from its directory"},
		{"bad name", fstest.MapFS{"A/SKILL.md": md("---\nname: A\ndescription: d\n---\n")}, nil, "lowercase"},
		{"typed scalar", fstest.MapFS{"a/SKILL.md": md("---\nname: a\ndescription: d\nversion: 1.0\n---\n")}, nil, "quote it"},
		{"flow map", fstest.MapFS{"a/SKILL.md": md("---\nname: a\ndescription: {x: y}\n---\n")}, nil, "not supported"},
		{"block scalar", fstest.MapFS{"a/SKILL.md": md("---\nname: a\ndescription: >\n  folded\n---\n")}, nil, "not supported"},
		{"duplicate key", fstest.MapFS{"a/SKILL.md": md("---\nname: a\nname: a\ndescription: d\n---\n")}, nil, "repeated"},
		{"colon in plain", fstest.MapFS{"a/SKILL.md": md("---\nname: a\ndescription: a: b\n---\n")}, nil, "quote a value"},
		{"space in a name", fstest.MapFS{"a/SKILL.md": md("---\nname: a\ndescription: d\n---\n"), "a/my file.md": md("x")}, nil, "can be served"},
		{"file too big", fstest.MapFS{"a/SKILL.md": md("---\nname: a\ndescription: d\n---\n"), "a/big.bin": md(strings.Repeat("x", 101))}, []SkillsOption{WithMaxSkillFileSize(100)}, "larger than 100"},
		{"skill too big", fstest.MapFS{"a/SKILL.md": md("---\nname: a\ndescription: d\n---\n"), "a/x": md(strings.Repeat("x", 90)), "a/y": md(strings.Repeat("y", 90))}, []SkillsOption{WithMaxSkillSize(150)}, "more than 150 bytes"},
		{"too many files", fstest.MapFS{"a/SKILL.md": md("---\nname: a\ndescription: d\n---\n"), "a/x": md("x"), "a/y": md("y")}, []SkillsOption{WithMaxSkillFiles(2)}, "more than 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := NewServer(Implementation{Name: "s", Version: "1"})
			err := srv.AddSkills(tc.fsys, tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("AddSkills: %v, want an error with %q", err, tc.want)
			}
			if srv.skills != nil || srv.offersResources {
				t.Error("a refused AddSkills registered something")
			}
		})
	}
}

func TestParseFrontmatter(t *testing.T) {
	t.Parallel()
	doc := "\ufeff---\r\nname: x-y\r\ndescription: 'It''s # fine'   # a comment\r\n" +
		"allowed-tools: \"Bash(git:*) Read\"\r\ntags:\r\n  - one\r\n  - \"two\"\r\nversion: 2.1.0\r\n---\r\nbody"
	if _, err := parseFrontmatter([]byte(doc)); err == nil {
		t.Error("a byte-order mark before --- was accepted")
	}
	fm, err := parseFrontmatter([]byte(doc[3:]))
	if err != nil {
		t.Fatal(err)
	}
	tags := fm["tags"].([]any)
	if fm["description"] != "It's # fine" || fm["allowed-tools"] != "Bash(git:*) Read" || len(tags) != 2 || tags[1] != "two" || fm["version"] != "2.1.0" {
		t.Errorf("parsed: %#v", fm)
	}
	for _, v := range []string{"true", "No", "null", "~", "12", "0x1f", "1e3", "2026-09-13", "1:30", "-1.5", ".inf"} {
		if _, err := parseFrontmatter([]byte("---\nname: a\ndescription: " + v + "\n---\n")); err == nil {
			t.Errorf("plain %q accepted as a string", v)
		}
	}
	// An empty list item is refused, not a panic (a server's manifest is
	// a hostile peer's input to the client that verifies it).
	for _, v := range []string{"-", "-   ", "- # a comment"} {
		if _, err := parseFrontmatter([]byte("---\nname: a\ntags:\n  " + v + "\n---\n")); err == nil {
			t.Errorf("list item %q accepted", v)
		}
	}
}

// TestReadSkillFileRefuses: each way a file can differ from its entry is
// a *SkillVerificationError naming the check, and the bytes are withheld.
func TestReadSkillFileRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	good := "---\nname: s\ndescription: d\n---\nBody.\n"
	cases := []struct {
		name   string
		served string                    // what the server sends for SKILL.md
		edit   func(k *Skill, md string) // how the entry is made to differ
		read   string                    // the file read; "" for SKILL.md
		want   SkillCheck
	}{
		{"digest", strings.Replace(good, "Body", "Evil", 1), nil, "", SkillCheckDigest},
		{"size", good + "extra\n", nil, "", SkillCheckSize},
		{"frontmatter", strings.Replace(good, "description: d", "description: e", 1), func(k *Skill, md string) {
			k.Resources[0].Digest, k.Resources[0].Size = sha(md), int64(len(md))
		}, "", SkillCheckFrontmatter},
		{"unparsable frontmatter", "no frontmatter\n", func(k *Skill, md string) {
			k.Resources[0].Digest, k.Resources[0].Size = sha(md), int64(len(md))
		}, "", SkillCheckFrontmatter},
		{"unlisted", good, nil, "skill://s/other.md", SkillCheckUnlisted},
		{"bad digest format", good, func(k *Skill, _ string) { k.Resources[0].Digest = "md5:00" }, "", SkillCheckEntry},
		{"outside the skill", good, func(k *Skill, _ string) {
			k.Resources = append(k.Resources, SkillFile{URI: "skill://t/x.md", Digest: sha(""), Size: 0})
		}, "", SkillCheckEntry},
		{"huge size", good, func(k *Skill, _ string) { k.Resources[0].Size = DefaultMaxSkillFileBytes + 1 }, "", SkillCheckSize},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := NewServer(Implementation{Name: "hostile", Version: "1"})
			served := tc.served
			srv.AddResource(Resource{URI: "skill://s/SKILL.md", Name: "s"}, func(context.Context, *ReadResourceRequest) (*ReadResourceResult, error) {
				return &ReadResourceResult{Contents: []ResourceContents{{URI: "skill://s/SKILL.md", Text: served}}}, nil
			})
			cl := pair(t, srv)
			entry := &Skill{URI: "skill://s/SKILL.md", Frontmatter: map[string]any{"name": "s", "description": "d"},
				Resources: []SkillFile{{URI: "skill://s/SKILL.md", Digest: sha(good), Size: int64(len(good))}}}
			if tc.edit != nil {
				tc.edit(entry, served)
			}
			uri := tc.read
			if uri == "" {
				uri = entry.URI
			}
			data, err := cl.ReadSkillFile(ctx, entry, uri)
			var bad *SkillVerificationError
			if !errors.As(err, &bad) || bad.Check != tc.want || data != nil {
				t.Fatalf("ReadSkillFile: %d bytes, %v; want a %s verification error", len(data), err, tc.want)
			}
		})
	}
}

// TestReadSkillFileHostileSize: a server that sends a file far larger than
// its entry promised is cut at the bound: the message limit stops it on
// the wire, and the size check stops what fits.
func TestReadSkillFileHostileSize(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	huge := strings.Repeat("x", 4<<20)
	srv := NewServer(Implementation{Name: "hostile", Version: "1"})
	srv.AddResource(Resource{URI: "skill://s/big.md", Name: "big"}, func(context.Context, *ReadResourceRequest) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []ResourceContents{{URI: "skill://s/big.md", Text: huge}}}, nil
	})
	good := "---\nname: s\ndescription: d\n---\n"
	entry := &Skill{URI: "skill://s/SKILL.md", Frontmatter: map[string]any{"name": "s", "description": "d"},
		Resources: []SkillFile{{URI: "skill://s/SKILL.md", Digest: sha(good), Size: int64(len(good))}, {URI: "skill://s/big.md", Digest: sha("small"), Size: 5}}}

	cl := pair(t, srv)
	_, err := cl.ReadSkillFile(ctx, entry, "skill://s/big.md")
	var bad *SkillVerificationError
	if !errors.As(err, &bad) || bad.Check != SkillCheckSize {
		t.Errorf("a 4 MiB answer for a 5-byte file: %v, want a size verification error", err)
	}
	// The engine drops the oversized answer; the call ends at its timeout.
	small := pair(t, srv, WithMaxMessageSize(1<<20))
	if _, err := small.ReadSkillFile(ctx, entry, "skill://s/big.md", WithTimeout(300*time.Millisecond)); err == nil {
		t.Error("a 4 MiB answer over a 1 MiB message limit was read")
	}
}

// FuzzParseFrontmatter: any bytes are refused or parsed into a frontmatter
// that names and describes a skill, and the server's JSON of it reads back
// the same.
func FuzzParseFrontmatter(f *testing.F) {
	f.Add([]byte(skillsTestMD))
	f.Add([]byte("---\nname: a\ndescription: \"x\\u00e9\"\ntags:\n  - 'a''b'\n---\n"))
	f.Add([]byte("---\nname: a\ndescription: d # c\nmetadata:\n  k: v\n\n  j: w\n---"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		fm, err := parseFrontmatter(doc)
		if err != nil {
			return
		}
		if checkSkillFrontmatter(fm) != nil {
			t.Fatalf("accepted %q without a valid name and description", doc)
		}
		raw, err := json.Marshal(Skill{URI: "skill://a/SKILL.md", Frontmatter: fm})
		if err != nil {
			t.Fatal(err)
		}
		var back Skill
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		if field, ok := sameFrontmatter(fm, back.Frontmatter); !ok {
			t.Fatalf("field %q changed through JSON", field)
		}
	})
}
