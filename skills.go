package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"unicode/utf8"
)

// SkillsExtension is the id of the Skills extension (SEP-2640) under
// capabilities.extensions: a server that declares it serves agent skills
// as skill:// resources and answers skills/list, skills/get and
// resources/directory/read. Both sides.
const SkillsExtension = "io.modelcontextprotocol/skills"

// SkillDirectoryMIMEType is the MIME type of a directory resource, as
// resources/directory/read lists a subdirectory. Both sides.
const SkillDirectoryMIMEType = "inode/directory"

// The bounds on one skill: AddSkills refuses a skill beyond them (options
// change them), and a client refuses an entry or file beyond them. Both
// sides.
const (
	// DefaultMaxSkillFiles is how many files a skill may hold, SKILL.md
	// included (the SEP's ceiling).
	DefaultMaxSkillFiles = 512
	// DefaultMaxSkillBytes is the total size of a skill's files (the
	// SEP's ceiling, 16 MiB).
	DefaultMaxSkillBytes = 16 << 20
	// DefaultMaxSkillFileBytes is the size of any one file of a skill.
	DefaultMaxSkillFileBytes = 4 << 20
)

// Skill is a skill's entry in skills/list and skills/get: the URI of its
// SKILL.md, the SKILL.md frontmatter rendered as JSON, and every file of
// the skill with its digest and size. Both sides.
type Skill struct {
	URI         string         `json:"uri"`
	Frontmatter map[string]any `json:"frontmatter"`
	// Resources lists every file of the skill, SKILL.md included, each
	// once. It is empty when Dynamic is set.
	Resources []SkillFile `json:"-"`
	// Dynamic: the server generates the skill's content and publishes no
	// digests ("resources": "dynamic"), so nothing can be verified.
	Dynamic bool `json:"-"`
}

// SkillFile is one file of a skill as its entry promises it: the file's
// URI, the SHA-256 of its raw bytes ("sha256:" and 64 lowercase hex
// digits) and its length in bytes. Both sides.
type SkillFile struct {
	URI    string `json:"uri"`
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// MarshalJSON writes the entry with "resources" as the array of files, or
// as "dynamic". Both sides.
func (s Skill) MarshalJSON() ([]byte, error) {
	type plain Skill
	var res any = s.Resources
	if s.Dynamic {
		res = "dynamic"
	} else if s.Resources == nil {
		res = []SkillFile{}
	}
	fm := s.Frontmatter
	if fm == nil {
		fm = map[string]any{}
	}
	return json.Marshal(struct {
		URI         string         `json:"uri"`
		Frontmatter map[string]any `json:"frontmatter"`
		Resources   any            `json:"resources"`
	}{s.URI, fm, res})
}

// UnmarshalJSON reads an entry whose "resources" is an array of files or
// "dynamic"; an entry with neither is an error. Both sides.
func (s *Skill) UnmarshalJSON(data []byte) error {
	var raw struct {
		URI         string          `json:"uri"`
		Frontmatter map[string]any  `json:"frontmatter"`
		Resources   json.RawMessage `json:"resources"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*s = Skill{URI: raw.URI, Frontmatter: raw.Frontmatter}
	if string(raw.Resources) == `"dynamic"` {
		s.Dynamic = true
		return nil
	}
	if len(raw.Resources) == 0 || raw.Resources[0] != '[' {
		return fmt.Errorf("skill %q: resources is neither an array nor \"dynamic\"", raw.URI)
	}
	return json.Unmarshal(raw.Resources, &s.Resources)
}

// ListSkillsResult is the result of skills/list. Both sides.
type ListSkillsResult struct {
	Skills     []*Skill `json:"skills"`
	NextCursor string   `json:"nextCursor,omitempty"`
}

// GetSkillResult is the result of skills/get. Both sides.
type GetSkillResult struct {
	Skill *Skill `json:"skill"`
}

// ReadDirectoryResult is the result of resources/directory/read: the
// direct children of a directory resource, subdirectories with MIME type
// SkillDirectoryMIMEType. Both sides.
type ReadDirectoryResult struct {
	Resources  []*Resource `json:"resources"`
	NextCursor string      `json:"nextCursor,omitempty"`
}

func (*ListSkillsResult) cacheable() {}
func (*GetSkillResult) cacheable()   {}

// SkillsOption configures AddSkills. Server side.
type SkillsOption func(*skillsConfig)

type skillsConfig struct {
	maxFiles     int
	maxBytes     int64
	maxFileBytes int64
}

// WithMaxSkillFiles bounds how many files one skill may hold, SKILL.md
// included (default DefaultMaxSkillFiles). Server side (AddSkills).
func WithMaxSkillFiles(n int) SkillsOption {
	return func(c *skillsConfig) {
		if n > 0 {
			c.maxFiles = n
		}
	}
}

// WithMaxSkillSize bounds the total size of one skill's files (default
// DefaultMaxSkillBytes). Server side (AddSkills).
func WithMaxSkillSize(n int64) SkillsOption {
	return func(c *skillsConfig) {
		if n > 0 {
			c.maxBytes = n
		}
	}
}

// WithMaxSkillFileSize bounds the size of any one file of a skill (default
// DefaultMaxSkillFileBytes). Server side (AddSkills).
func WithMaxSkillFileSize(n int64) SkillsOption {
	return func(c *skillsConfig) {
		if n > 0 {
			c.maxFileBytes = n
		}
	}
}

// skillSet is what AddSkills serves: the entries, in the order skills/list
// lists them, and the directories resources/directory/read answers for.
// Server.mu guards it.
type skillSet struct {
	skills registry[*servedSkill]
	dirs   map[string][]*Resource // directory URI -> its direct children
}

type servedSkill struct{ entry *Skill }

func (k *servedSkill) listing() any { return k.entry }

// skillFileData is a file read at registration.
type skillFileData struct {
	path string // in the file system
	data []byte
	res  Resource
}

// AddSkills serves the agent skills in fsys (a directory through os.DirFS,
// or an embed.FS) by the Skills extension, and declares the extension in
// the server's capabilities (with directoryRead). Every directory holding
// a SKILL.md is a skill, at skill://<its path>/SKILL.md; every file in a
// skill directory is a resource under the same path, read once here, its
// digest and size computed once. A skill inside another is also served on
// its own, its files listed in both. Names starting with a dot are
// skipped. Register skills before serving: capabilities, once sent, are
// not sent again. Server side.
//
// The frontmatter is read as the subset of YAML skills use: "key: value"
// lines whose values are plain, 'single' or "double" quoted strings, and
// under a key with no value one level of indented "key: value" lines or
// "- item" lines. A plain value YAML would read as other than a string
// (true, 1.0, null, a date) must be quoted; block scalars (| and >), flow
// collections, anchors and tags are refused.
//
// AddSkills returns an error, and registers nothing, when fsys holds no
// SKILL.md, a file lies in no skill directory, a SKILL.md's frontmatter is
// missing or outside that subset, or lacks a description or a valid name
// equal to its directory's name, a path has characters other than letters,
// digits and -._~+,=@ (which a URI would need to escape), a file is not
// regular, or a skill exceeds the bounds the options set.
func (s *Server) AddSkills(fsys fs.FS, opts ...SkillsOption) error {
	cfg := skillsConfig{maxFiles: DefaultMaxSkillFiles, maxBytes: DefaultMaxSkillBytes, maxFileBytes: DefaultMaxSkillFileBytes}
	for _, o := range opts {
		o(&cfg)
	}
	set, files, err := loadSkills(fsys, &cfg)
	if err != nil {
		return fmt.Errorf("mcp: AddSkills: %w", err)
	}
	s.mu.Lock()
	served, _ := s.skills.(*skillSet)
	if served == nil {
		served = &skillSet{dirs: make(map[string][]*Resource)}
		s.skills = served
	}
	for _, k := range set.skills.order {
		served.skills.add(k.key, set.skills.items[k.key])
	}
	for uri, children := range set.dirs {
		served.dirs[uri] = children
	}
	s.mu.Unlock()
	for _, f := range files {
		contents := skillContents(f)
		s.AddResource(f.res, func(context.Context, *ReadResourceRequest) (*ReadResourceResult, error) {
			return &ReadResourceResult{Contents: []ResourceContents{contents}}, nil
		})
	}
	return nil
}

// skillContents is a file as resources/read answers it: text when it is
// UTF-8, else a base64 blob.
func skillContents(f *skillFileData) ResourceContents {
	c := ResourceContents{URI: f.res.URI, MIMEType: f.res.MIMEType}
	if utf8.Valid(f.data) {
		c.Text = string(f.data)
	} else {
		c.Blob = base64.StdEncoding.EncodeToString(f.data)
	}
	return c
}

// loadSkills reads and checks the skills in fsys.
func loadSkills(fsys fs.FS, cfg *skillsConfig) (*skillSet, []*skillFileData, error) {
	var paths, roots []string
	dirs := map[string]bool{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if p != "." {
			if err := checkSkillPathSegment(d.Name()); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
		}
		switch {
		case d.IsDir():
			dirs[p] = true
		case !d.Type().IsRegular():
			return fmt.Errorf("%s: not a regular file", p)
		default:
			if len(paths) >= 64*cfg.maxFiles {
				return fmt.Errorf("more than %d files", 64*cfg.maxFiles)
			}
			paths = append(paths, p)
			if d.Name() == "SKILL.md" {
				if p == "SKILL.md" {
					return errors.New("SKILL.md at the root: a skill is a directory, whose name is the skill's")
				}
				roots = append(roots, path.Dir(p))
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if len(roots) == 0 {
		return nil, nil, errors.New("no SKILL.md: a skill is a directory holding one")
	}
	// Every file belongs to each skill whose directory holds it.
	members := make(map[string][]string, len(roots))
	for _, p := range paths {
		in := false
		for _, r := range roots {
			if strings.HasPrefix(p, r+"/") {
				members[r] = append(members[r], p)
				in = true
			}
		}
		if !in {
			return nil, nil, fmt.Errorf("%s lies in no skill directory (no SKILL.md beside it or above it)", p)
		}
	}
	data := make(map[string]*skillFileData)
	set := &skillSet{dirs: make(map[string][]*Resource)}
	slices.Sort(roots)
	for _, root := range roots {
		entry, err := loadSkill(fsys, root, members[root], data, cfg)
		if err != nil {
			return nil, nil, err
		}
		set.skills.add(entry.URI, &servedSkill{entry: entry})
	}
	// The directories at and below each skill's root, with their children.
	for d := range dirs {
		for _, r := range roots {
			if d == r || strings.HasPrefix(d, r+"/") {
				set.dirs[skillURI(d)] = []*Resource{}
				break
			}
		}
	}
	files := make([]*skillFileData, 0, len(data))
	for _, f := range data {
		files = append(files, f)
	}
	slices.SortFunc(files, func(a, b *skillFileData) int { return strings.Compare(a.path, b.path) })
	for _, f := range files {
		parent := skillURI(path.Dir(f.path))
		if children, ok := set.dirs[parent]; ok {
			res := f.res
			set.dirs[parent] = append(children, &res)
		}
	}
	for uri := range set.dirs {
		if parent, name, ok := cutLastSegment(uri); ok {
			if children, ok := set.dirs[parent]; ok {
				set.dirs[parent] = append(children, &Resource{URI: uri, Name: name, MIMEType: SkillDirectoryMIMEType})
			}
		}
	}
	for _, children := range set.dirs {
		slices.SortFunc(children, func(a, b *Resource) int { return strings.Compare(a.URI, b.URI) })
	}
	return set, files, nil
}

// loadSkill reads and checks the skill at root, whose files are paths.
func loadSkill(fsys fs.FS, root string, paths []string, data map[string]*skillFileData, cfg *skillsConfig) (*Skill, error) {
	if len(paths) > cfg.maxFiles {
		return nil, fmt.Errorf("skill %s: %d files, more than %d", root, len(paths), cfg.maxFiles)
	}
	var total int64
	entry := &Skill{URI: skillURI(root + "/SKILL.md")}
	for _, p := range paths {
		f, err := readSkillFile(fsys, p, data, cfg)
		if err != nil {
			return nil, err
		}
		total += int64(len(f.data))
		if total > cfg.maxBytes {
			return nil, fmt.Errorf("skill %s: its files hold more than %d bytes", root, cfg.maxBytes)
		}
		sum := sha256.Sum256(f.data)
		entry.Resources = append(entry.Resources, SkillFile{URI: f.res.URI, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(f.data))})
	}
	// SKILL.md first, then the rest by URI.
	slices.SortFunc(entry.Resources, func(a, b SkillFile) int {
		switch {
		case a.URI == entry.URI:
			return -1
		case b.URI == entry.URI:
			return 1
		}
		return strings.Compare(a.URI, b.URI)
	})
	fm, err := parseFrontmatter(data[root+"/SKILL.md"].data)
	if err != nil {
		return nil, fmt.Errorf("%s/SKILL.md: %w", root, err)
	}
	if name := path.Base(root); fm["name"] != name {
		return nil, fmt.Errorf("%s/SKILL.md: name %q differs from its directory's name %q", root, fm["name"], name)
	}
	entry.Frontmatter = fm
	md := data[root+"/SKILL.md"]
	md.res.Name, md.res.Description = fm["name"].(string), fm["description"].(string)
	return entry, nil
}

// readSkillFile reads the file at p once, bounded.
func readSkillFile(fsys fs.FS, p string, data map[string]*skillFileData, cfg *skillsConfig) (*skillFileData, error) {
	if f, ok := data[p]; ok {
		return f, nil
	}
	file, err := fsys.Open(p)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	b, err := io.ReadAll(io.LimitReader(file, cfg.maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if int64(len(b)) > cfg.maxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", p, cfg.maxFileBytes)
	}
	size := int64(len(b))
	f := &skillFileData{path: p, data: b, res: Resource{URI: skillURI(p), Name: p, MIMEType: skillMIMEType(p, b), Size: &size}}
	data[p] = f
	return f, nil
}

// skillURI is the skill:// URI of a path in the skills' file system.
func skillURI(p string) string { return "skill://" + p }

// cutLastSegment splits a skill:// URI into its parent and last segment;
// ok is false for a URI with one segment.
func cutLastSegment(uri string) (parent, name string, ok bool) {
	rest := strings.TrimPrefix(uri, "skill://")
	i := strings.LastIndexByte(rest, '/')
	if i < 0 {
		return "", "", false
	}
	return skillURI(rest[:i]), rest[i+1:], true
}

// checkSkillPathSegment refuses a file or directory name that a URI would
// need to escape: only letters, digits and -._~+,=@ are served.
func checkSkillPathSegment(name string) error {
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~+,=@", c) >= 0) {
			return fmt.Errorf("name %q: only letters, digits and -._~+,=@ can be served in a skill:// URI", name)
		}
	}
	return nil
}

// skillMIMEType names a skill file's type from its extension.
func skillMIMEType(p string, data []byte) string {
	switch strings.ToLower(path.Ext(p)) {
	case ".md", ".markdown":
		return "text/markdown"
	case ".txt":
		return "text/plain"
	case ".py":
		return "text/x-python"
	case ".sh":
		return "text/x-shellscript"
	case ".js", ".mjs":
		return "text/javascript"
	case ".json":
		return "application/json"
	case ".yaml", ".yml":
		return "application/yaml"
	case ".html", ".htm":
		return "text/html"
	case ".csv":
		return "text/csv"
	case ".png":
		return "image/png"
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".pdf":
		return "application/pdf"
	}
	if utf8.Valid(data) {
		return "text/plain"
	}
	return "application/octet-stream"
}

// serve serves the methods of the Skills extension; s.mu guards set.
func (set *skillSet) serve(s *Server, method string, params json.RawMessage, _ *RequestInfo) (any, error) {
	switch method {
	case "skills/list":
		return listPage(s, &set.skills, "skills", params, nil, func(k *servedSkill) *Skill { return k.entry },
			func(items []*Skill, next string) any { return &ListSkillsResult{Skills: items, NextCursor: next} })
	case "skills/get":
		var p struct {
			URI string `json:"uri"`
		}
		if err := decodeParams(params, &p); err != nil {
			return nil, err
		}
		s.mu.RLock()
		k, ok := set.skills.get(p.URI)
		s.mu.RUnlock()
		if !ok {
			return nil, NewError(CodeInvalidParams, "Invalid params: no skill at "+p.URI, map[string]string{"uri": p.URI})
		}
		return &GetSkillResult{Skill: k.entry}, nil
	}
	// resources/directory/read
	var p struct {
		URI    string `json:"uri"`
		Cursor string `json:"cursor"`
	}
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	s.mu.RLock()
	children, ok := set.dirs[p.URI]
	s.mu.RUnlock()
	if !ok {
		return nil, NewError(CodeInvalidParams, "Invalid params: not a directory: "+p.URI, map[string]string{"uri": p.URI})
	}
	return directoryPage(children, p.Cursor, s.cfg.server.pageSize)
}

// directoryPage is one page of a directory's children; its cursor is the
// URI of the last child it holds, and the children are sorted by URI.
func directoryPage(children []*Resource, cursor string, size int) (*ReadDirectoryResult, error) {
	start := 0
	if cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil {
			return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: invalid cursor"}
		}
		start, _ = slices.BinarySearchFunc(children, string(raw), func(r *Resource, last string) int {
			if r.URI <= last {
				return -1
			}
			return 1
		})
	}
	end := min(start+size, len(children))
	res := &ReadDirectoryResult{Resources: children[start:end]}
	if end < len(children) {
		res.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(children[end-1].URI))
	}
	return res, nil
}
