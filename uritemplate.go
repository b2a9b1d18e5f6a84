package mcp

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// URITemplate is a parsed RFC 6570 URI template (levels 1–4), as used by
// MCP resource templates such as "file:///{+path}" or
// "repo://{owner}/{repo}/issues{?state,labels*}".
//
// A URITemplate is immutable after parsing and safe for concurrent use.
// The zero value behaves like the empty template "".
type URITemplate struct {
	raw   string
	parts []tmplPart
	names []string // distinct variable names in order of first appearance

	// The matcher is compiled once by ParseURITemplate so that Match, which
	// runs for every resources/read request, does no per-call setup. Go's
	// RE2-style engine never backtracks, so matching time is linear in the
	// URI length (times the template size) whatever the input.
	re    *regexp.Regexp
	slots []tmplSlot
}

// tmplOp describes one expression operator; the fields mirror the table in
// RFC 6570 Appendix A.
type tmplOp struct {
	op            byte // 0 for simple string expansion
	first         string
	sep           string
	named         bool
	ifemp         string
	allowReserved bool
}

// tmplOps are the operators, simple string expansion first.
var tmplOps = [...]tmplOp{
	{0, "", ",", false, "", false},
	{'+', "", ",", false, "", true},
	{'#', "#", ",", false, "", true},
	{'.', ".", ".", false, "", false},
	{'/', "/", "/", false, "", false},
	{';', ";", ";", true, "", false},
	{'?', "?", "&", true, "=", false},
	{'&', "&", "&", true, "=", false},
}

type tmplVarSpec struct {
	name    string
	prefix  int // 0 means no prefix modifier
	explode bool
}

type tmplExpr struct {
	op    *tmplOp
	specs []tmplVarSpec
}

// tmplPart is either a literal run or an expression.
type tmplPart struct {
	lit  string // literal text as written in the template
	enc  string // lit with characters not allowed in a URI pct-encoded (RFC 6570 §3.1)
	expr *tmplExpr
}

// tmplSlot tells Match how to turn one capture group into variables.
type tmplSlot struct {
	group int
	name  string // positional slot: the variable captured by the group
	run   byte   // 0 for a positional slot, else the separator of a named-parameter run (';' or '&')
}

// ParseURITemplate parses an RFC 6570 URI template. It reports an error for
// malformed templates: unbalanced braces, empty expressions, reserved or
// unknown operators, invalid variable names, invalid prefix lengths
// (must be 1–9999) and malformed pct-encoding in literals.
func ParseURITemplate(s string) (*URITemplate, error) {
	t := &URITemplate{raw: s}
	litStart := 0
	flush := func(end int) {
		if end > litStart {
			lit := s[litStart:end]
			t.parts = append(t.parts, tmplPart{lit: lit, enc: tmplEncodeLiteral(lit)})
		}
	}
	for i := 0; i < len(s); {
		switch s[i] {
		case '{':
			flush(i)
			n := strings.IndexAny(s[i+1:], "{}")
			if n < 0 || s[i+1+n] == '{' {
				return nil, tmplError(s, i, "unclosed expression")
			}
			expr, err := tmplParseExpr(s, i+1, i+1+n)
			if err != nil {
				return nil, err
			}
			t.parts = append(t.parts, tmplPart{expr: expr})
			for _, spec := range expr.specs {
				if !slices.Contains(t.names, spec.name) {
					t.names = append(t.names, spec.name)
				}
			}
			i += n + 2
			litStart = i
		case '}':
			return nil, tmplError(s, i, "unmatched '}'")
		case '%':
			// RFC 6570 only allows '%' in literals as part of a pct-encoded triplet.
			if !tmplIsPctEncoded(s, i) {
				return nil, tmplError(s, i, "invalid pct-encoding in literal")
			}
			i += 3
		default:
			i++
		}
	}
	flush(len(s))
	if err := t.tmplBuildMatcher(); err != nil {
		return nil, fmt.Errorf("invalid URI template %q: %w", s, err)
	}
	return t, nil
}

func tmplError(tmpl string, off int, msg string) error {
	return fmt.Errorf("invalid URI template %q: %s at offset %d", tmpl, msg, off)
}

// tmplParseExpr parses the expression s[start:end] (without braces).
func tmplParseExpr(s string, start, end int) (*tmplExpr, error) {
	if start == end {
		return nil, tmplError(s, start-1, "empty expression")
	}
	c := s[start]
	e := &tmplExpr{op: &tmplOps[0]}
	for i := 1; i < len(tmplOps); i++ {
		if tmplOps[i].op == c {
			e.op = &tmplOps[i]
			start++
		}
	}
	if strings.IndexByte("=,!@|", c) >= 0 {
		// Reserved for future extensions by RFC 6570 §2.2.
		return nil, tmplError(s, start, fmt.Sprintf("reserved operator %q", c))
	}
	for off := start; ; {
		n := strings.IndexByte(s[off:end], ',')
		specEnd := end
		if n >= 0 {
			specEnd = off + n
		}
		spec, err := tmplParseVarSpec(s, off, specEnd)
		if err != nil {
			return nil, err
		}
		e.specs = append(e.specs, spec)
		if n < 0 {
			return e, nil
		}
		off = specEnd + 1
	}
}

// tmplParseVarSpec parses varname [ ":" max-length / "*" ] in s[start:end].
func tmplParseVarSpec(s string, start, end int) (tmplVarSpec, error) {
	var spec tmplVarSpec
	nameEnd := start + strings.IndexAny(s[start:end], ":*")
	if nameEnd < start {
		nameEnd = end
	}
	if err := tmplCheckVarName(s, start, nameEnd); err != nil {
		return spec, err
	}
	spec.name = s[start:nameEnd]
	switch mod := s[nameEnd:end]; {
	case mod == "":
	case mod == "*":
		spec.explode = true
	case mod[0] == ':':
		digits := mod[1:]
		// max-length = %x31-39 0*3DIGIT: 1..9999 without leading zeros.
		if len(digits) == 0 || len(digits) > 4 || digits[0] == '0' {
			return spec, tmplError(s, nameEnd, "invalid prefix length")
		}
		for i := 0; i < len(digits); i++ {
			if digits[i] < '0' || digits[i] > '9' {
				return spec, tmplError(s, nameEnd, "invalid prefix length")
			}
			spec.prefix = spec.prefix*10 + int(digits[i]-'0')
		}
	default:
		return spec, tmplError(s, nameEnd, "invalid modifier")
	}
	return spec, nil
}

// tmplCheckVarName validates varname = varchar *( ["."] varchar ) with
// varchar = ALPHA / DIGIT / "_" / pct-encoded.
func tmplCheckVarName(s string, start, end int) error {
	if start == end {
		return tmplError(s, start, "empty variable name")
	}
	prevDot := true // a name may not start with '.'
	for i := start; i < end; i++ {
		c := s[i]
		switch {
		case c == '.':
			if prevDot {
				return tmplError(s, i, "misplaced '.' in variable name")
			}
			prevDot = true
			continue
		case c == '%':
			if i+2 >= end || !tmplIsPctEncoded(s, i) {
				return tmplError(s, i, "invalid pct-encoding in variable name")
			}
			i += 2
		case c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		default:
			return tmplError(s, i, fmt.Sprintf("invalid character %q in variable name", c))
		}
		prevDot = false
	}
	if prevDot {
		return tmplError(s, end-1, "misplaced '.' in variable name")
	}
	return nil
}

// String returns the template text exactly as it was parsed.
func (t *URITemplate) String() string {
	if t == nil {
		return ""
	}
	return t.raw
}

// Variables returns the distinct variable names of the template in order of
// first appearance. Names are returned as written, including any
// pct-encoding. The caller may modify the returned slice.
func (t *URITemplate) Variables() []string {
	if t == nil {
		return nil
	}
	return slices.Clone(t.names)
}

// Expand expands the template with vars following RFC 6570 §3.2.
//
// Supported values are string (and []byte), bool, integer and
// floating-point numbers (formatted with fmt), []string, map[string]string,
// and more generally any slice, array or string-keyed map whose elements are
// such scalars (for example []any or map[string]any). A missing key, a nil
// value, an empty list or an empty map is undefined and expands to nothing;
// nil list elements and map values are skipped. Because Go maps are
// unordered, associative values are expanded in ascending key order, so
// "{keys}" gives "comma,%2C,dot,.,semi,%3B" where RFC 6570 shows the
// pairs in insertion order.
//
// Expand reports an error for a value of unsupported type and for a prefix
// modifier (":n") applied to a list or map, which RFC 6570 §2.4.1 forbids.
func (t *URITemplate) Expand(vars map[string]any) (string, error) {
	if t == nil {
		return "", nil
	}
	var b strings.Builder
	b.Grow(len(t.raw))
	for _, p := range t.parts {
		if p.expr == nil {
			b.WriteString(p.enc)
			continue
		}
		if err := tmplExpandExpr(&b, p.expr, vars); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

func tmplExpandExpr(b *strings.Builder, e *tmplExpr, vars map[string]any) error {
	op := e.op
	first := true
	for _, spec := range e.specs {
		v, err := tmplValueOf(vars[spec.name])
		if err != nil {
			return fmt.Errorf("expanding URI template variable %q: %w", spec.name, err)
		}
		if v.kind == tmplUndefined {
			continue
		}
		if first {
			b.WriteString(op.first)
			first = false
		} else {
			b.WriteString(op.sep)
		}
		if v.kind == tmplScalar {
			if op.named {
				b.WriteString(spec.name)
				if v.str == "" {
					b.WriteString(op.ifemp)
					continue
				}
				b.WriteByte('=')
			}
			s := v.str
			if spec.prefix > 0 {
				s = tmplTruncate(s, spec.prefix, op.allowReserved)
			}
			tmplEncode(b, s, op.allowReserved)
			continue
		}
		if spec.prefix > 0 {
			return fmt.Errorf("expanding URI template variable %q: prefix modifier applied to a composite value", spec.name)
		}
		if !spec.explode {
			if op.named {
				b.WriteString(spec.name)
				b.WriteByte('=')
			}
			for i, item := range v.items {
				if i > 0 {
					b.WriteByte(',')
				}
				if v.kind == tmplAssoc {
					tmplEncode(b, v.keys[i], op.allowReserved)
					b.WriteByte(',')
				}
				tmplEncode(b, item, op.allowReserved)
			}
			continue
		}
		for i, item := range v.items {
			if i > 0 {
				b.WriteString(op.sep)
			}
			switch {
			case v.kind == tmplAssoc:
				tmplEncode(b, v.keys[i], op.allowReserved)
			case op.named:
				b.WriteString(spec.name)
			default:
				tmplEncode(b, item, op.allowReserved)
				continue
			}
			if op.named && item == "" {
				b.WriteString(op.ifemp)
				continue
			}
			b.WriteByte('=')
			tmplEncode(b, item, op.allowReserved)
		}
	}
	return nil
}

const (
	tmplUndefined = iota
	tmplScalar
	tmplList
	tmplAssoc
)

// tmplValue is a variable value normalised for expansion.
type tmplValue struct {
	kind  int
	str   string   // tmplScalar
	items []string // tmplList members or tmplAssoc values
	keys  []string // tmplAssoc keys, sorted, parallel to items
}

func tmplValueOf(v any) (tmplValue, error) {
	// A []byte is text, not a list of numbers; everything else goes through
	// reflect.
	switch x := v.(type) {
	case nil:
		return tmplValue{}, nil
	case string:
		return tmplValue{kind: tmplScalar, str: x}, nil
	case []byte:
		return tmplValue{kind: tmplScalar, str: string(x)}, nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return tmplValue{}, nil
		}
		var items []string
		for i := 0; i < rv.Len(); i++ {
			s, ok, err := tmplScalarOf(rv.Index(i))
			if err != nil {
				return tmplValue{}, err
			}
			if ok {
				items = append(items, s)
			}
		}
		if len(items) == 0 {
			return tmplValue{}, nil
		}
		return tmplValue{kind: tmplList, items: items}, nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return tmplValue{}, fmt.Errorf("unsupported map key type %s", rv.Type().Key())
		}
		keys := rv.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		var val tmplValue
		for _, k := range keys {
			s, ok, err := tmplScalarOf(rv.MapIndex(k))
			if err != nil {
				return tmplValue{}, err
			}
			if ok {
				val.keys = append(val.keys, k.String())
				val.items = append(val.items, s)
			}
		}
		if len(val.keys) > 0 {
			val.kind = tmplAssoc
		}
		return val, nil
	}
	s, ok, err := tmplScalarOf(rv)
	if err != nil || !ok {
		return tmplValue{}, err
	}
	return tmplValue{kind: tmplScalar, str: s}, nil
}

// tmplScalarOf formats a scalar value; ok is false for nil.
func tmplScalarOf(rv reflect.Value) (s string, ok bool, err error) {
	for rv.Kind() == reflect.Interface {
		if rv.IsNil() {
			return "", false, nil
		}
		rv = rv.Elem()
	}
	switch rv.Kind() {
	case reflect.String:
		return rv.String(), true, nil
	case reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return fmt.Sprint(rv.Interface()), true, nil
	case reflect.Invalid:
		return "", false, nil
	}
	return "", false, fmt.Errorf("unsupported value type %s", rv.Type())
}

// tmplTruncate returns the first n characters of s. Characters are Unicode
// code points (RFC 6570 §2.4.1), and when reserved characters are allowed a
// pct-encoded triplet counts as one character so that it is never split.
func tmplTruncate(s string, n int, allowReserved bool) string {
	i := 0
	for ; n > 0 && i < len(s); n-- {
		if allowReserved && tmplIsPctEncoded(s, i) {
			i += 3
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}

const tmplUpperHex = "0123456789ABCDEF"

// Character classes used by encoding and decoding.
const (
	tmplUnreserved = 1 << iota
	tmplReserved
	tmplHex
)

var tmplCharClass = func() (c [256]uint8) {
	for i := range c {
		b := byte(i)
		if b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || strings.IndexByte("-._~", b) >= 0 {
			c[i] |= tmplUnreserved
		}
		if strings.IndexByte(":/?#[]@!$&'()*+,;=", b) >= 0 {
			c[i] |= tmplReserved
		}
		if b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F' {
			c[i] |= tmplHex
		}
	}
	return c
}()

// tmplIsPctEncoded reports whether s[i:] starts with a pct-encoded triplet.
func tmplIsPctEncoded(s string, i int) bool {
	return i+2 < len(s) && s[i] == '%' && tmplCharClass[s[i+1]]&tmplHex != 0 && tmplCharClass[s[i+2]]&tmplHex != 0
}

// tmplEncode appends s pct-encoded as RFC 6570 §3.2.1 requires: unreserved
// characters are kept; with allowReserved, reserved characters and existing
// pct-encoded triplets are kept too. Everything else is encoded octet by
// octet from its UTF-8 form.
func tmplEncode(b *strings.Builder, s string, allowReserved bool) {
	keep := uint8(tmplUnreserved)
	if allowReserved {
		keep |= tmplReserved
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case tmplCharClass[c]&keep != 0:
			b.WriteByte(c)
		case allowReserved && tmplIsPctEncoded(s, i):
			b.WriteString(s[i : i+3])
			i += 2
		default:
			b.WriteByte('%')
			b.WriteByte(tmplUpperHex[c>>4])
			b.WriteByte(tmplUpperHex[c&15])
		}
	}
}

// tmplEncodeLiteral applies RFC 6570 §3.1 to literal text: characters
// allowed in a URI are copied, everything else is pct-encoded. The parser
// has already rejected a '%' that does not start a triplet.
func tmplEncodeLiteral(s string) string {
	var b strings.Builder
	tmplEncode(&b, s, true)
	return b.String()
}

// tmplUnescape decodes pct-encoded triplets. Malformed '%' sequences are
// kept verbatim, and '+' is not treated as a space (that is an HTML form
// convention, not RFC 3986).
func tmplUnescape(s string) string {
	i := strings.IndexByte(s, '%')
	if i < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	b = append(b, s[:i]...)
	for ; i < len(s); i++ {
		if tmplIsPctEncoded(s, i) {
			c, _ := strconv.ParseUint(s[i+1:i+3], 16, 8)
			b = append(b, byte(c))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

// Regexp fragments for one captured item, by operator. Positional items
// are lazy so a variable stops at the first place where the rest of the
// template can match ("stop at the next literal"); the last item of an
// expression may contain the separator so that {list} matches "a,b,c".
// Parameter values are greedy instead: they are delimited by their own
// separators, so this only matters when another expression follows
// directly, as in {?a}{b}, where "?a=1" should give a=1 rather than b=1.
// If that expression starts with a character of its own, as in
// {?a}{/b}, values stop at that character (see tmplBuildMatcher).
const (
	tmplReSimpleItem   = `(?:[^/?#,%]|` + tmplRePct + `)*?`
	tmplReSimpleLast   = `(?:[^/?#%]|` + tmplRePct + `)*?`
	tmplReReservedItem = `(?:[^,%]|` + tmplRePct + `)*?`
	tmplReReservedLast = `(?:[^%]|` + tmplRePct + `)*?`
	tmplReLabelItem    = `(?:[^/?#.%]|` + tmplRePct + `)*?`
	tmplReLabelLast    = `(?:[^/?#%]|` + tmplRePct + `)*?`
	tmplRePathSegment  = `(?:[^/?#%]|` + tmplRePct + `)*?`
	tmplRePathExplode  = `(?:[^?#%]|` + tmplRePct + `)*?`
	// tmplRePct is a '%' in a variable's text: a whole pct-encoded octet
	// first, as Expand writes it, and only failing that a '%' alone (a
	// malformed escape, kept as it is). Go's regexps prefer the earlier
	// alternative, so a value does not end inside an octet when the rest
	// of the template matches otherwise: "{owner}A{repo}" reads
	// "repo%3A%3F%2FAo" as owner "repo:?/", not "repo%3" before the "A"
	// of "%3A".
	tmplRePct        = `%[0-9A-Fa-f]{2}|%`
	tmplReParamStops = `;/?#` // characters a parameter value cannot contain
	tmplReQueryStops = `&#`
)

// tmplBuildMatcher compiles the regexp used by Match.
//
// Positional operators (simple, +, #, ., /) get one capture group per
// variable, assigned in order. Named operators (;, ?, &) get one group per
// run of adjacent expressions that share a separator; the group's regexp
// only admits the run's own names, in any order and any number of times,
// and Match splits the captured text afterwards. Doing the name check in
// the regexp rather than afterwards keeps the engine free to choose a
// different split when a name is unknown.
func (t *URITemplate) tmplBuildMatcher() error {
	var b strings.Builder
	b.WriteString(`(?s)\A`)
	group := 0
	for i := 0; i < len(t.parts); {
		p := t.parts[i]
		if p.expr == nil {
			lit := regexp.QuoteMeta(p.enc)
			if p.enc != p.lit && utf8.ValidString(p.lit) {
				// Accept the literal both as Expand writes it and as written.
				lit = "(?:" + lit + "|" + regexp.QuoteMeta(p.lit) + ")"
			}
			b.WriteString(lit)
			i++
			continue
		}
		op := p.expr.op
		if !op.named {
			b.WriteString("(?:")
			b.WriteString(regexp.QuoteMeta(op.first))
			for k, spec := range p.expr.specs {
				last := k == len(p.expr.specs)-1
				if k > 0 {
					b.WriteString("(?:")
					b.WriteString(regexp.QuoteMeta(op.sep))
				}
				group++
				t.slots = append(t.slots, tmplSlot{group: group, name: spec.name})
				b.WriteByte('(')
				b.WriteString(tmplItemPattern(op.op, spec.explode, last))
				b.WriteByte(')')
				if k > 0 {
					b.WriteString(")?")
				}
			}
			b.WriteString(")?")
			i++
			continue
		}
		// Gather the run: ';' continues ';', and '&' continues '?' or '&'.
		var names []string
		j := i
		for ; j < len(t.parts) && t.parts[j].expr != nil; j++ {
			if j > i && !tmplContinuesRun(op.op, t.parts[j].expr.op.op) {
				break
			}
			for _, spec := range t.parts[j].expr.specs {
				q := regexp.QuoteMeta(spec.name)
				if !slices.Contains(names, q) {
					names = append(names, q)
				}
			}
		}
		name := "(?:" + strings.Join(names, "|") + ")"
		// Without this, {?a}{/b} would read "?a=1/x" as a="1/x" and
		// never fill b, although Expand writes exactly that for a=1, b=x.
		stop := ""
		if j < len(t.parts) && t.parts[j].expr != nil {
			stop = regexp.QuoteMeta(t.parts[j].expr.op.first)
		}
		group++
		if op.op == ';' {
			t.slots = append(t.slots, tmplSlot{group: group, run: ';'})
			b.WriteString("((?:;" + name + "(?:=[^" + tmplReParamStops + stop + "]*)?)*)")
		} else {
			t.slots = append(t.slots, tmplSlot{group: group, run: '&'})
			first := regexp.QuoteMeta(op.first)
			if j-i > 1 {
				// "{?a}{&b}" expands to "&b=1" when a is undefined.
				first = `[?&]`
			}
			piece := name + "(?:=[^" + tmplReQueryStops + stop + "]*)?"
			b.WriteString("((?:" + first + piece + "(?:&" + piece + ")*)?)")
		}
		i = j
	}
	b.WriteString(`\z`)
	re, err := regexp.Compile(b.String())
	if err != nil {
		return err
	}
	t.re = re
	return nil
}

// tmplContinuesRun reports whether an expression with operator next,
// directly after a named-parameter expression led by lead, belongs to the
// same run: its parameters then share one separator and may interleave.
func tmplContinuesRun(lead, next byte) bool {
	if lead == ';' {
		return next == ';'
	}
	return next == '&'
}

func tmplItemPattern(op byte, explode, last bool) string {
	switch op {
	case '+', '#':
		if last {
			return tmplReReservedLast
		}
		return tmplReReservedItem
	case '.':
		if last {
			return tmplReLabelLast
		}
		return tmplReLabelItem
	case '/':
		// Only an exploded path variable may span several segments.
		if explode {
			return tmplRePathExplode
		}
		return tmplRePathSegment
	}
	if last {
		return tmplReSimpleLast
	}
	return tmplReSimpleItem
}

// Match reports whether uri is an expansion of the template and, if so,
// returns the variables extracted from it. It is the practical inverse of
// Expand used to route resources/read requests:
//
//   - Literal text must match exactly (either pct-encoded as Expand writes
//     it or as written in the template).
//   - {var} matches up to the next '/', '?', '#' or following literal;
//     {+var} and {#var} may also span '/', '?' and '#'. In a list such as
//     {x,y} values are split on ',' in order; missing trailing values are
//     absent and the last variable takes any remainder.
//   - {/var} matches exactly one "/segment"; {/var*} matches one or more
//     segments and yields them joined with '/', for example "a/b".
//     {.var} is similar with '.', the last variable taking any further labels.
//   - {;a,b}, {?a,b} and {&a,b} (and runs such as {?a}{&b}) accept their
//     parameters in any order; parameters may be missing, and unknown
//     parameter names make the match fail. A repeated parameter, as written
//     by an exploded list like {?list*}, yields its values joined with ','.
//     A parameter without '=' yields "".
//   - Values are pct-decoded ('+' stays '+'). Prefix modifiers (":n") are
//     not enforced, and exploded associative arrays cannot be recovered.
//   - A variable used more than once must capture the same value each time.
//
// Match is deterministic, runs in time linear in len(uri), and never panics.
// A variable that does not appear in the URI is absent from the map; one
// that appears empty maps to "".
func (t *URITemplate) Match(uri string) (map[string]string, bool) {
	if t == nil || t.re == nil {
		if uri == "" {
			return map[string]string{}, true
		}
		return nil, false
	}
	loc := t.re.FindStringSubmatchIndex(uri)
	if loc == nil {
		return nil, false
	}
	vars := make(map[string]string, len(t.names))
	for _, sl := range t.slots {
		start, end := loc[2*sl.group], loc[2*sl.group+1]
		if start < 0 {
			continue
		}
		text := uri[start:end]
		if sl.run == 0 {
			if !tmplSetVar(vars, sl.name, tmplUnescape(text)) {
				return nil, false
			}
			continue
		}
		if text == "" {
			continue
		}
		// The regexp guarantees text is first-char, then name[=value]
		// pieces separated by sl.run, with no separator inside a value.
		var runNames, runValues []string
		for piece := range strings.SplitSeq(text[1:], string(sl.run)) {
			name, value, _ := strings.Cut(piece, "=")
			value = tmplUnescape(value)
			if k := slices.Index(runNames, name); k >= 0 {
				runValues[k] += "," + value
				continue
			}
			runNames = append(runNames, name)
			runValues = append(runValues, value)
		}
		for k, name := range runNames {
			if !tmplSetVar(vars, name, runValues[k]) {
				return nil, false
			}
		}
	}
	return vars, true
}

// tmplSetVar records a matched value, failing if a variable that occurs
// more than once in the template matched different values.
func tmplSetVar(vars map[string]string, name, value string) bool {
	if old, ok := vars[name]; ok && old != value {
		return false
	}
	vars[name] = value
	return true
}
