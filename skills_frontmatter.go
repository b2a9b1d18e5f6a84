package mcp

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The frontmatter of a SKILL.md is YAML. Rather than a YAML library, both
// peers read the small subset skills use: top-level "key: value" lines,
// whose value is a scalar (plain, 'single' or "double" quoted), a block of
// indented "key: scalar" lines (metadata) or of "- scalar" items. Anything
// else, and any plain scalar YAML would read as other than a string (true,
// 1.0, null, a date), is refused: the server must publish the frontmatter
// as JSON identical to what a YAML reader finds in the file, and a refusal
// is the one answer that can never differ.

// Bounds on a frontmatter block, which a client reads from untrusted bytes.
const (
	maxFrontmatterBytes = 64 << 10
	maxFrontmatterKeys  = 256
	maxSkillNameLen     = 64
	maxSkillDescLen     = 1024
)

// splitFrontmatter returns the YAML between the leading "---" lines of a
// SKILL.md, without its delimiters.
func splitFrontmatter(doc []byte) (string, error) {
	s := string(doc)
	first, rest, ok := cutLine(s)
	if !ok || strings.TrimRight(first, " \t") != "---" {
		return "", errors.New("SKILL.md does not begin with a --- line (YAML frontmatter)")
	}
	start := len(s) - len(rest)
	for pos := start; pos < len(s); {
		line, after, _ := cutLine(s[pos:])
		if strings.TrimRight(line, " \t") == "---" {
			return s[start:pos], nil
		}
		if pos-start > maxFrontmatterBytes {
			break
		}
		pos = len(s) - len(after)
	}
	if len(s)-start > maxFrontmatterBytes {
		return "", fmt.Errorf("frontmatter longer than %d bytes or not closed by a --- line", maxFrontmatterBytes)
	}
	return "", errors.New("frontmatter not closed by a --- line")
}

// cutLine splits off the first line of s (LF or CRLF), reporting whether
// there was a line break.
func cutLine(s string) (line, rest string, ok bool) {
	line, rest, ok = strings.Cut(s, "\n")
	return strings.TrimSuffix(line, "\r"), rest, ok
}

// parseFrontmatter reads the frontmatter of a SKILL.md into the JSON-shaped
// values encoding/json would decode it to (string, []any, map[string]any),
// and checks that it names and describes the skill as the Agent Skills
// specification requires.
func parseFrontmatter(doc []byte) (map[string]any, error) {
	if !utf8.Valid(doc) {
		return nil, errors.New("SKILL.md is not UTF-8")
	}
	yaml, err := splitFrontmatter(doc)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(yaml, "\n")
	out := make(map[string]any)
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSuffix(lines[i], "\r")
		if blankOrComment(line) {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			return nil, fmt.Errorf("frontmatter line %d: unexpected indentation", i+1)
		}
		key, value, err := keyValue(line, i+1)
		if err != nil {
			return nil, err
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("frontmatter line %d: key %q repeated", i+1, key)
		}
		if len(out) >= maxFrontmatterKeys {
			return nil, fmt.Errorf("frontmatter has more than %d keys", maxFrontmatterKeys)
		}
		if value != "" {
			if out[key], err = scalar(value, i+1); err != nil {
				return nil, err
			}
			continue
		}
		// An empty value opens a block of indented lines.
		j := i + 1
		for j < len(lines) && (blankOrComment(strings.TrimSuffix(lines[j], "\r")) || lines[j][0] == ' ') {
			j++
		}
		block, err := parseBlock(lines[i+1:j], i+2)
		if err != nil {
			return nil, err
		}
		if block == nil {
			return nil, fmt.Errorf("frontmatter line %d: %q has no value", i+1, key)
		}
		out[key] = block
		i = j - 1
	}
	if err := checkSkillFrontmatter(out); err != nil {
		return nil, err
	}
	return out, nil
}

// checkSkillFrontmatter checks the fields the Agent Skills specification
// requires.
func checkSkillFrontmatter(fm map[string]any) error {
	name, _ := fm["name"].(string)
	if err := checkSkillName(name); err != nil {
		return err
	}
	desc, _ := fm["description"].(string)
	if desc == "" {
		return errors.New("frontmatter has no description")
	}
	if utf8.RuneCountInString(desc) > maxSkillDescLen {
		return fmt.Errorf("frontmatter description longer than %d characters", maxSkillDescLen)
	}
	return nil
}

// checkSkillName checks a skill name against the Agent Skills naming rules:
// 1 to 64 lowercase letters, digits and hyphens, with no hyphen first, last
// or next to another.
func checkSkillName(name string) error {
	if name == "" {
		return errors.New("frontmatter has no name")
	}
	bad := len(name) > maxSkillNameLen || name[0] == '-' || name[len(name)-1] == '-' || strings.Contains(name, "--")
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			bad = true
		}
	}
	if bad {
		return fmt.Errorf("skill name %q: want 1 to 64 lowercase letters, digits and single inner hyphens", name)
	}
	return nil
}

func blankOrComment(line string) bool {
	t := strings.TrimLeft(line, " \t")
	return t == "" || t[0] == '#'
}

// keyValue splits "key: value" (value may be empty).
func keyValue(line string, n int) (string, string, error) {
	key, value, ok := strings.Cut(line, ":")
	if !ok || key == "" || (value != "" && value[0] != ' ' && value[0] != '\t') {
		return "", "", fmt.Errorf("frontmatter line %d: want key: value", n)
	}
	for _, c := range []byte(key) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '/') {
			return "", "", fmt.Errorf("frontmatter line %d: unsupported key %q", n, key)
		}
	}
	return key, strings.TrimSpace(value), nil
}

// parseBlock reads the indented lines under a key: all "key: scalar"
// (a map) or all "- scalar" (a list), at one indentation. It returns nil
// for no lines.
func parseBlock(lines []string, first int) (any, error) {
	var m map[string]any
	var list []any
	indent := -1
	for k, raw := range lines {
		line := strings.TrimSuffix(raw, "\r")
		n := first + k
		if blankOrComment(line) {
			continue
		}
		d := len(line) - len(strings.TrimLeft(line, " "))
		if indent < 0 {
			indent = d
		}
		if d != indent {
			return nil, fmt.Errorf("frontmatter line %d: nested or uneven indentation is not supported", n)
		}
		item := line[d:]
		if item == "-" || strings.HasPrefix(item, "- ") {
			if m != nil {
				return nil, fmt.Errorf("frontmatter line %d: list item inside a map", n)
			}
			value := strings.TrimSpace(item[1:])
			if value == "" {
				return nil, fmt.Errorf("frontmatter line %d: an empty list item (or a nested block) is not supported", n)
			}
			v, err := scalar(value, n)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
			continue
		}
		if list != nil {
			return nil, fmt.Errorf("frontmatter line %d: map entry inside a list", n)
		}
		key, value, err := keyValue(item, n)
		if err != nil {
			return nil, err
		}
		if value == "" {
			return nil, fmt.Errorf("frontmatter line %d: nested blocks are not supported", n)
		}
		if m == nil {
			m = make(map[string]any)
		}
		if _, dup := m[key]; dup {
			return nil, fmt.Errorf("frontmatter line %d: key %q repeated", n, key)
		}
		if len(m) >= maxFrontmatterKeys {
			return nil, fmt.Errorf("frontmatter line %d: more than %d keys", n, maxFrontmatterKeys)
		}
		if m[key], err = scalar(value, n); err != nil {
			return nil, err
		}
	}
	switch {
	case m != nil:
		return m, nil
	case list != nil:
		return list, nil
	}
	return nil, nil
}

// scalar reads one scalar value as a string; v is trimmed and not empty.
func scalar(v string, n int) (string, error) {
	fail := func(why string) (string, error) {
		return "", fmt.Errorf("frontmatter line %d: %s", n, why)
	}
	switch v[0] {
	case '"':
		end := closingQuote(v)
		if end < 0 || !blankOrComment(v[end+1:]) {
			return fail("unterminated or trailing text after a double-quoted string")
		}
		s, err := strconv.Unquote(v[:end+1])
		if err != nil {
			return fail("unsupported escape in a double-quoted string")
		}
		return s, nil
	case '\'':
		var b strings.Builder
		for i := 1; i < len(v); i++ {
			if v[i] != '\'' {
				b.WriteByte(v[i])
				continue
			}
			if i+1 < len(v) && v[i+1] == '\'' {
				b.WriteByte('\'')
				i++
				continue
			}
			if !blankOrComment(v[i+1:]) {
				return fail("trailing text after a single-quoted string")
			}
			return b.String(), nil
		}
		return fail("unterminated single-quoted string")
	case '[', '{', '&', '*', '!', '|', '>', '%', '@', '`', '#', '?', ',':
		return fail(fmt.Sprintf("value %q: flow collections, anchors, tags and block scalars are not supported; quote it", v))
	case '-':
		if len(v) == 1 || v[1] == ' ' {
			return fail("a list item needs its own line")
		}
	}
	// A plain scalar: a comment ends it, and ": " may not appear in it.
	if i := strings.Index(v, " #"); i >= 0 {
		v = strings.TrimRight(v[:i], " \t")
	}
	if strings.Contains(v, ": ") || strings.HasSuffix(v, ":") || strings.Contains(v, "\t#") {
		return fail(fmt.Sprintf("value %q: quote a value holding \": \"", v))
	}
	if !plainIsString(v) {
		return fail(fmt.Sprintf("value %q would not be read as a string; quote it", v))
	}
	return v, nil
}

// closingQuote returns the index of the quote closing a double-quoted
// string that starts at v[0], or -1.
func closingQuote(v string) int {
	for i := 1; i < len(v); i++ {
		switch v[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// plainIsString reports whether YAML (1.1 or 1.2) reads the plain scalar v
// as a string: not a boolean, null, number or timestamp.
func plainIsString(v string) bool {
	switch strings.ToLower(v) {
	case "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~", ".inf", "-.inf", "+.inf", ".nan":
		return false
	}
	c := v[0]
	if !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.') {
		return true
	}
	u := strings.ReplaceAll(v, "_", "")
	if _, err := strconv.ParseInt(u, 0, 64); err == nil {
		return false
	}
	if _, err := strconv.ParseFloat(u, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		return false
	}
	// A date or a time (2026-09-13, 1:30), or a number too odd to be sure
	// of: only digits and the characters of numbers and dates.
	for _, r := range []byte(v) {
		if !(r >= '0' && r <= '9' || strings.IndexByte("+-.:_ ", r) >= 0) {
			return true
		}
	}
	return strings.Count(v, ".") > 1 && !strings.ContainsAny(v, "-:")
}
