package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

const (
	// schemaMaxDepth bounds both how deep into a value validation goes and how many
	// $ref/combinator steps it takes at one spot, so that neither a deep value nor a
	// looping schema can exhaust the stack.
	schemaMaxDepth = 64
	// schemaMaxSteps bounds the subschema evaluations of one validation, which nested
	// anyOf/oneOf could otherwise make exponential.
	schemaMaxSteps = 1 << 22
	// schemaMaxDefaultSteps bounds the work of filling in defaults, each of which is
	// decoded afresh, so a schema whose defaults unfold recursively stays cheap.
	schemaMaxDefaultSteps = 1 << 16
	// schemaMaxProblems bounds the problems collected; schemaShownProblems are reported.
	schemaMaxProblems   = 100
	schemaShownProblems = 20
)

// Validate reports whether v satisfies s, where v is a value as encoding/json decodes
// into an any with UseNumber: nil, bool, string, json.Number, []any or map[string]any.
// float64 and the integer types are accepted as numbers too. The error lists every
// problem found (up to a limit), each with the JSON pointer of the value at fault, as in
// "/count: 150 is greater than the maximum 100; /name: required property missing".
// A nil schema accepts everything.
func (s *Schema) Validate(v any) error {
	if s == nil {
		return nil
	}
	vr := schemaValidator{root: s}
	vr.validate(s, v, 0)
	return vr.result()
}

// schemaValidationError is what Validate returns.
type schemaValidationError struct {
	problems []string
}

func (e *schemaValidationError) Error() string {
	return strings.Join(e.problems, "; ")
}

type schemaProblem struct {
	path, message string
}

type schemaValidator struct {
	root     *Schema
	problems []schemaProblem
	steps    int
	// fatal is set when a limit is hit; validation then stops.
	fatal string
	// probing is above zero inside anyOf, oneOf, not and if, where only whether the value
	// matches counts: the first problem after probeBase ends the probe.
	probing   int
	probeBase int
	// path leads from the root to the value being validated; its length is the depth.
	path []schemaSegment
}

var schemaPointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// schemaSegment is one step of the JSON pointer to the value being validated: an array
// index, or (when index is -1) an object member name.
type schemaSegment struct {
	key   string
	index int
}

// pathString renders the current JSON pointer, escaping "~" and "/" in member names.
func (vr *schemaValidator) pathString() string {
	var b strings.Builder
	for _, seg := range vr.path {
		b.WriteByte('/')
		if seg.index >= 0 {
			b.WriteString(strconv.Itoa(seg.index))
		} else {
			b.WriteString(schemaPointerEscaper.Replace(seg.key))
		}
	}
	return b.String()
}

// enter validates v, found at seg, against s.
func (vr *schemaValidator) enter(seg schemaSegment, s *Schema, v any) {
	vr.path = append(vr.path, seg)
	vr.validate(s, v, 0)
	vr.path = vr.path[:len(vr.path)-1]
}

func (vr *schemaValidator) halted() bool {
	if vr.probing > 0 {
		return vr.fatal != "" || len(vr.problems) > vr.probeBase
	}
	return vr.fatal != "" || len(vr.problems) >= schemaMaxProblems
}

func (vr *schemaValidator) report(format string, args ...any) {
	if vr.fatal != "" {
		return
	}
	if vr.probing > 0 {
		vr.problems = append(vr.problems, schemaProblem{})
		return
	}
	vr.problems = append(vr.problems, schemaProblem{path: vr.pathString(), message: fmt.Sprintf(format, args...)})
}

// matches reports whether v satisfies s, leaving no problems behind.
func (vr *schemaValidator) matches(s *Schema, v any, hops int) bool {
	base, savedBase := len(vr.problems), vr.probeBase
	vr.probing++
	vr.probeBase = base
	vr.validate(s, v, hops)
	ok := len(vr.problems) == base && vr.fatal == ""
	vr.problems = vr.problems[:base]
	vr.probing--
	vr.probeBase = savedBase
	return ok
}

func (vr *schemaValidator) result() error {
	if len(vr.problems) == 0 && vr.fatal == "" {
		return nil
	}
	slices.SortFunc(vr.problems, func(a, b schemaProblem) int {
		if c := strings.Compare(a.path, b.path); c != 0 {
			return c
		}
		return strings.Compare(a.message, b.message)
	})
	var parts []string
	for i, p := range vr.problems {
		if i == schemaShownProblems {
			if len(vr.problems) >= schemaMaxProblems {
				parts = append(parts, fmt.Sprintf("and more than %d other problems", len(vr.problems)-i))
			} else {
				parts = append(parts, fmt.Sprintf("and %d other problems", len(vr.problems)-i))
			}
			break
		}
		if p.path == "" {
			parts = append(parts, p.message)
		} else {
			parts = append(parts, p.path+": "+p.message)
		}
	}
	if vr.fatal != "" {
		parts = append(parts, vr.fatal)
	}
	return &schemaValidationError{problems: parts}
}

// validate checks v against s. hops counts the $ref and combinator steps taken since
// entering v.
func (vr *schemaValidator) validate(s *Schema, v any, hops int) {
	if s == nil || vr.halted() {
		return
	}
	vr.steps++
	switch {
	case vr.steps > schemaMaxSteps:
		vr.fatal = fmt.Sprintf("validation stopped after %d steps: the schema is too complex", schemaMaxSteps)
		return
	case len(vr.path) > schemaMaxDepth:
		vr.fatal = fmt.Sprintf("validation stopped: the value nests deeper than %d levels", schemaMaxDepth)
		return
	case hops > schemaMaxDepth:
		vr.fatal = fmt.Sprintf("validation stopped: the schema nests $ref or combinators deeper than %d levels", schemaMaxDepth)
		return
	}
	if s.isFalse() {
		vr.report("no value is allowed here")
		return
	}
	if s.Ref != "" {
		if target, ok := schemaResolveRef(vr.root, s.Ref); ok {
			vr.validate(target, v, hops+1)
		} else {
			vr.report("cannot resolve $ref %q", s.Ref)
		}
	}
	if s.Type != "" && !schemaHasType(v, s.Type) {
		vr.report("got %s, want %s", schemaTypeName(v), s.Type)
	}
	if len(s.Types) > 0 && !slices.ContainsFunc(s.Types, func(t string) bool { return schemaHasType(v, t) }) {
		vr.report("got %s, want one of %s", schemaTypeName(v), strings.Join(s.Types, ", "))
	}
	if s.Enum != nil && !slices.ContainsFunc(s.Enum, func(e any) bool { return schemaEqual(v, e, 0) }) {
		vr.report("%s is not one of the allowed values %s", schemaShow(v), schemaShowList(s.Enum))
	}
	if s.Const != nil && !schemaEqual(v, *s.Const, 0) {
		vr.report("%s is not the allowed value %s", schemaShow(v), schemaShow(*s.Const))
	}
	if vr.halted() {
		return
	}
	switch x := v.(type) {
	case string:
		vr.validateString(s, x)
	case map[string]any:
		vr.validateObject(s, x)
	case []any:
		vr.validateArray(s, x)
	case nil, bool:
	default:
		if f, ok := schemaNumber(v); ok {
			vr.validateNumber(s, v, f)
		}
	}
	vr.validateCombinators(s, v, hops)
}

func (vr *schemaValidator) validateString(s *Schema, x string) {
	if s.MinLength != nil || s.MaxLength != nil {
		n := utf8.RuneCountInString(x)
		if s.MinLength != nil && n < *s.MinLength {
			vr.report("%s is shorter than %d characters", schemaShow(x), *s.MinLength)
		}
		if s.MaxLength != nil && n > *s.MaxLength {
			vr.report("%s is longer than %d characters", schemaShow(x), *s.MaxLength)
		}
	}
	if s.Pattern != "" {
		c := s.compiled()
		switch {
		case c.patternErr != nil:
			vr.report("the schema's pattern %q is not a supported regular expression: %v", s.Pattern, c.patternErr)
		case !c.pattern.MatchString(x):
			vr.report("%s does not match the pattern %q", schemaShow(x), s.Pattern)
		}
	}
	if s.Format != "" && !schemaFormatValid(s.Format, x) {
		vr.report("%s is not a valid %s", schemaShow(x), s.Format)
	}
}

func (vr *schemaValidator) validateNumber(s *Schema, v any, f float64) {
	if s.Minimum != nil && f < *s.Minimum {
		vr.report("%s is less than the minimum %s", schemaShow(v), schemaShowFloat(*s.Minimum))
	}
	if s.Maximum != nil && f > *s.Maximum {
		vr.report("%s is greater than the maximum %s", schemaShow(v), schemaShowFloat(*s.Maximum))
	}
	if s.ExclusiveMinimum != nil && f <= *s.ExclusiveMinimum {
		vr.report("%s is not greater than the exclusive minimum %s", schemaShow(v), schemaShowFloat(*s.ExclusiveMinimum))
	}
	if s.ExclusiveMaximum != nil && f >= *s.ExclusiveMaximum {
		vr.report("%s is not less than the exclusive maximum %s", schemaShow(v), schemaShowFloat(*s.ExclusiveMaximum))
	}
	if s.MultipleOf != nil && !schemaIsMultiple(v, f, *s.MultipleOf) {
		vr.report("%s is not a multiple of %s", schemaShow(v), schemaShowFloat(*s.MultipleOf))
	}
}

func (vr *schemaValidator) validateArray(s *Schema, x []any) {
	if s.MinItems != nil && len(x) < *s.MinItems {
		vr.report("array length %d is less than the minimum %d", len(x), *s.MinItems)
	}
	if s.MaxItems != nil && len(x) > *s.MaxItems {
		vr.report("array length %d is greater than the maximum %d", len(x), *s.MaxItems)
	}
	if s.UniqueItems && len(x) > 1 {
		vr.validateUnique(x)
	}
	for i, item := range x {
		sub := s.Items
		if i < len(s.PrefixItems) {
			sub = s.PrefixItems[i]
		} else if sub == nil {
			break
		}
		vr.enter(schemaSegment{index: i}, sub, item)
		if vr.halted() {
			return
		}
	}
}

// validateUnique compares items by a canonical encoding, which takes linear rather than
// quadratic time in the array's length.
func (vr *schemaValidator) validateUnique(x []any) {
	vr.steps += len(x)
	seen := make(map[string]int, len(x))
	var b strings.Builder
	for i, item := range x {
		b.Reset()
		if !schemaCanonical(&b, item, 0) {
			vr.report("item %d cannot be compared: it nests deeper than %d levels or holds a non-JSON value", i, schemaMaxDepth)
			return
		}
		if j, dup := seen[b.String()]; dup {
			vr.report("items %d and %d are equal, but items must be unique", j, i)
			return
		}
		seen[b.String()] = i
	}
}

func (vr *schemaValidator) validateObject(s *Schema, x map[string]any) {
	if s.MinProperties != nil && len(x) < *s.MinProperties {
		vr.report("object has %d properties, fewer than the minimum %d", len(x), *s.MinProperties)
	}
	if s.MaxProperties != nil && len(x) > *s.MaxProperties {
		vr.report("object has %d properties, more than the maximum %d", len(x), *s.MaxProperties)
	}
	for _, name := range s.Required {
		if _, ok := x[name]; !ok {
			vr.path = append(vr.path, schemaSegment{key: name, index: -1})
			vr.report("required property missing")
			vr.path = vr.path[:len(vr.path)-1]
		}
	}
	for name, sub := range s.Properties {
		value, ok := x[name]
		if !ok || sub == nil {
			continue
		}
		vr.enter(schemaSegment{key: name, index: -1}, sub, value)
		if vr.halted() {
			return
		}
	}
	if s.AdditionalProperties == nil && len(s.PatternProperties) == 0 {
		return
	}
	var patterns []schemaPatternProperty
	if len(s.PatternProperties) > 0 {
		patterns = s.compiled().patternProperties
		for _, p := range patterns {
			if p.err != nil {
				vr.report("the schema's patternProperties key %q is not a supported regular expression: %v", p.pattern, p.err)
				return
			}
		}
	}
	for name, value := range x {
		_, known := s.Properties[name]
		seg := schemaSegment{key: name, index: -1}
		for _, p := range patterns {
			if p.re.MatchString(name) {
				known = true
				vr.enter(seg, p.schema, value)
			}
		}
		switch {
		case known || s.AdditionalProperties == nil:
		case s.AdditionalProperties.isFalse():
			vr.path = append(vr.path, seg)
			vr.report("property is not allowed")
			vr.path = vr.path[:len(vr.path)-1]
		default:
			vr.enter(seg, s.AdditionalProperties, value)
		}
		if vr.halted() {
			return
		}
	}
}

func (vr *schemaValidator) validateCombinators(s *Schema, v any, hops int) {
	if vr.halted() {
		return
	}
	for _, sub := range s.AllOf {
		vr.validate(sub, v, hops+1)
	}
	if len(s.AnyOf) > 0 && !slices.ContainsFunc(s.AnyOf, func(sub *Schema) bool { return vr.matches(sub, v, hops+1) }) {
		vr.report("does not match any schema in anyOf")
	}
	if len(s.OneOf) > 0 {
		matched := 0
		for _, sub := range s.OneOf {
			if vr.matches(sub, v, hops+1) {
				if matched++; matched > 1 {
					break
				}
			}
		}
		switch matched {
		case 0:
			vr.report("does not match any schema in oneOf")
		case 2:
			vr.report("matches more than one schema in oneOf")
		}
	}
	if s.Not != nil && vr.matches(s.Not, v, hops+1) {
		vr.report("must not match the schema in not")
	}
	if s.If != nil && (s.Then != nil || s.Else != nil) {
		if vr.matches(s.If, v, hops+1) {
			vr.validate(s.Then, v, hops+1)
		} else {
			vr.validate(s.Else, v, hops+1)
		}
	}
}

// schemaCompiled is what validation derives from one schema node, once.
type schemaCompiled struct {
	pattern           *regexp.Regexp
	patternErr        error
	patternProperties []schemaPatternProperty
}

type schemaPatternProperty struct {
	pattern string
	re      *regexp.Regexp
	err     error
	schema  *Schema
}

// compiled returns s's compiled patterns, compiling them on first use. Concurrent first
// uses may both compile; either result is the same.
func (s *Schema) compiled() *schemaCompiled {
	if c, ok := s.compiledCache.Load().(*schemaCompiled); ok {
		return c
	}
	c := &schemaCompiled{}
	if s.Pattern != "" {
		c.pattern, c.patternErr = regexp.Compile(s.Pattern)
	}
	for _, pattern := range slices.Sorted(maps.Keys(s.PatternProperties)) {
		re, err := regexp.Compile(pattern)
		c.patternProperties = append(c.patternProperties, schemaPatternProperty{pattern, re, err, s.PatternProperties[pattern]})
	}
	s.compiledCache.Store(c)
	return c
}

// schemaResolveRef resolves "#" and "#/$defs/Name" (a JSON pointer, possibly
// percent-encoded as URI fragments may be) against root.
func schemaResolveRef(root *Schema, ref string) (*Schema, bool) {
	if ref == "#" {
		return root, true
	}
	name, ok := strings.CutPrefix(ref, "#/$defs/")
	if !ok {
		return nil, false
	}
	if strings.Contains(name, "%") {
		unescaped, err := url.PathUnescape(name)
		if err != nil {
			return nil, false
		}
		name = unescaped
	}
	if strings.Contains(name, "/") {
		return nil, false
	}
	if strings.Contains(name, "~") {
		name = strings.NewReplacer("~1", "/", "~0", "~").Replace(name)
	}
	s, ok := root.Defs[name]
	return s, ok
}

// schemaHasType reports whether v is of the JSON Schema type t. A number whose fraction
// is zero, such as 1.0, is an integer.
func schemaHasType(v any, t string) bool {
	switch t {
	case "null":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "number":
		_, ok := schemaNumber(v)
		return ok
	case "integer":
		f, ok := schemaNumber(v)
		return ok && (math.IsInf(f, 0) || f == math.Trunc(f))
	}
	return false
}

func schemaTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	if _, ok := schemaNumber(v); ok {
		return "number"
	}
	return fmt.Sprintf("unsupported Go type %T", v)
}

// schemaNumber returns v as a float64 if it is a number. A json.Number too large for a
// float64 becomes an infinity, which still compares correctly with finite bounds.
func schemaNumber(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return 0, false
		}
		return f, true
	case float64:
		return n, !math.IsNaN(n)
	case float32:
		return float64(n), !math.IsNaN(float64(n))
	case uint:
		return float64(n), true
	case uint64:
		return float64(n), true
	}
	i, ok := schemaInt64(v) // the other integer types
	return float64(i), ok
}

// schemaInt64 returns v exactly as an int64 when it is an integer that fits, so that
// equality of large integers does not suffer from float64 rounding.
func schemaInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case json.Number:
		i, err := strconv.ParseInt(string(n), 10, 64)
		return i, err == nil
	case int:
		return int64(n), true
	case int8:
		return int64(n), true
	case int16:
		return int64(n), true
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case uint8:
		return int64(n), true
	case uint16:
		return int64(n), true
	case uint32:
		return int64(n), true
	}
	return 0, false
}

// schemaIsMultiple reports whether v (whose float value is f) is a multiple of m. Decimal
// literals are divided exactly, because in binary 0.3 is not a multiple of 0.1.
func schemaIsMultiple(v any, f, m float64) bool {
	if m <= 0 || math.IsInf(m, 0) || math.IsNaN(m) {
		return true
	}
	text := ""
	if n, ok := v.(json.Number); ok {
		text = string(n)
	} else if i, ok := schemaInt64(v); ok {
		text = strconv.FormatInt(i, 10)
	} else {
		text = strconv.FormatFloat(f, 'g', -1, 64)
	}
	x, okX := schemaDecimal(text)
	y, okY := schemaDecimal(strconv.FormatFloat(m, 'g', -1, 64))
	if okX && okY {
		return new(big.Rat).Quo(x, y).IsInt()
	}
	q := f / m
	return math.IsInf(q, 0) || math.Abs(q-math.Round(q)) < 1e-9
}

// schemaDecimal parses a decimal literal exactly, refusing exponents so large that the
// exact value would be enormous to compute.
func schemaDecimal(text string) (*big.Rat, bool) {
	if len(text) > 100 {
		return nil, false
	}
	if i := strings.IndexAny(text, "eE"); i >= 0 {
		exp, err := strconv.Atoi(text[i+1:])
		if err != nil || exp > 1000 || exp < -1000 {
			return nil, false
		}
	}
	return new(big.Rat).SetString(text)
}

// schemaEqual is JSON equality: numbers compare by value, objects by members.
func schemaEqual(a, b any, depth int) bool {
	if depth > schemaMaxDepth {
		return false
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !schemaEqual(x[i], y[i], depth+1) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !schemaEqual(xv, yv, depth+1) {
				return false
			}
		}
		return true
	}
	if i, ok := schemaInt64(a); ok {
		if j, ok := schemaInt64(b); ok {
			return i == j
		}
	}
	fa, okA := schemaNumber(a)
	fb, okB := schemaNumber(b)
	return okA && okB && fa == fb
}

// schemaCanonical writes a key for v under which JSON-equal values coincide. It reports
// false for values nested too deeply or holding non-JSON types.
func schemaCanonical(b *strings.Builder, v any, depth int) bool {
	if depth > schemaMaxDepth {
		return false
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("n")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		b.WriteString(strconv.Quote(x))
	case []any:
		b.WriteByte('[')
		for _, item := range x {
			if !schemaCanonical(b, item, depth+1) {
				return false
			}
			b.WriteByte(',')
		}
		b.WriteByte(']')
	case map[string]any:
		b.WriteByte('{')
		for _, k := range slices.Sorted(maps.Keys(x)) {
			b.WriteString(strconv.Quote(k))
			b.WriteByte(':')
			if !schemaCanonical(b, x[k], depth+1) {
				return false
			}
			b.WriteByte(',')
		}
		b.WriteByte('}')
	default:
		if i, ok := schemaInt64(v); ok {
			b.WriteString(strconv.FormatInt(i, 10))
		} else if f, ok := schemaNumber(v); ok {
			b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
		} else {
			return false
		}
	}
	return true
}

// schemaFormatValid checks the formats MCP tools commonly rely on; others pass, as
// annotations.
func schemaFormatValid(format, s string) bool {
	switch format {
	case "date-time":
		_, err := time.Parse(time.RFC3339, strings.ToUpper(s)) // RFC 3339 allows a lowercase t and z
		return err == nil
	case "date":
		_, err := time.Parse(time.DateOnly, s)
		return err == nil
	case "uri":
		u, err := url.Parse(s)
		return err == nil && u.Scheme != ""
	case "email":
		addr, err := mail.ParseAddress(s)
		return err == nil && addr.Name == "" && addr.Address == s
	}
	return true
}

// schemaShow renders a value for an error message, shortened so that a huge argument
// cannot make a huge error.
func schemaShow(v any) string {
	const limit = 64
	switch x := v.(type) {
	case string:
		if utf8.RuneCountInString(x) > limit {
			x = string([]rune(x)[:limit]) + "…"
		}
		return strconv.Quote(x)
	case json.Number:
		if len(x) > limit {
			return string(x[:limit]) + "…"
		}
		return string(x)
	}
	data, err := schemaMarshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	if text := string(data); utf8.RuneCountInString(text) > limit {
		return string([]rune(text)[:limit]) + "…"
	}
	return string(data)
}

func schemaShowList(values []any) string {
	const limit = 10
	shown := make([]string, 0, min(len(values), limit+1))
	for i, v := range values {
		if i == limit {
			shown = append(shown, "…")
			break
		}
		shown = append(shown, schemaShow(v))
	}
	return "[" + strings.Join(shown, ", ") + "]"
}

func schemaShowFloat(f float64) string {
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// schemaDefaultsFiller carries the root for $ref and a step budget, because defaults that
// are themselves objects could otherwise unfold a recursive schema exponentially.
type schemaDefaultsFiller struct {
	root  *Schema
	steps int
}

// fill applies defaults to obj and reports whether it added anything.
func (f *schemaDefaultsFiller) fill(s *Schema, obj map[string]any, depth, hops int) bool {
	f.steps++
	if s == nil || depth > schemaMaxDepth || hops > schemaMaxDepth || f.steps > schemaMaxDefaultSteps {
		return false
	}
	changed := false
	if s.Ref != "" {
		if target, ok := schemaResolveRef(f.root, s.Ref); ok {
			changed = f.fill(target, obj, depth, hops+1)
		}
	}
	for name, sub := range s.Properties {
		if f.steps++; sub == nil || f.steps > schemaMaxDefaultSteps {
			continue
		}
		if _, present := obj[name]; !present {
			value, ok := f.defaultOf(sub)
			if !ok {
				continue
			}
			obj[name] = value
			changed = true
		}
		if child, ok := obj[name].(map[string]any); ok && f.fill(sub, child, depth+1, 0) {
			changed = true
		}
	}
	return changed
}

// defaultOf returns a fresh copy of s's default, following $ref when s has none of its own.
func (f *schemaDefaultsFiller) defaultOf(s *Schema) (any, bool) {
	for hops := 0; s != nil && hops <= schemaMaxDepth; hops++ {
		if s.Default != nil {
			value, err := schemaDecodeAny(s.Default)
			return value, err == nil
		}
		if s.Ref == "" {
			break
		}
		s, _ = schemaResolveRef(f.root, s.Ref)
	}
	return nil, false
}

// hasDefaults reports whether a default is reachable through property chains, so that
// arguments need decoding and re-encoding; it is computed once per schema.
func (s *Schema) hasDefaults() bool {
	if known, ok := s.defaultsCache.Load().(bool); ok {
		return known
	}
	found := schemaReachesDefault(s, s, map[*Schema]bool{})
	s.defaultsCache.Store(found)
	return found
}

func schemaReachesDefault(root, s *Schema, seen map[*Schema]bool) bool {
	if s == nil || seen[s] {
		return false
	}
	seen[s] = true
	if s.Ref != "" {
		if target, ok := schemaResolveRef(root, s.Ref); ok && target != nil &&
			(target.Default != nil || schemaReachesDefault(root, target, seen)) {
			return true
		}
	}
	for _, sub := range s.Properties {
		if sub != nil && (sub.Default != nil || schemaReachesDefault(root, sub, seen)) {
			return true
		}
	}
	return false
}

// validateArguments checks a tool call's arguments against the tool's input schema after
// filling in defaults. Absent or null arguments count as {}. It returns the arguments to
// hand to the tool: raw itself unless defaults were added. The error starts with
// "arguments: " and wraps what Validate returned.
func validateArguments(s *Schema, raw json.RawMessage) (json.RawMessage, error) {
	if trimmed := bytes.TrimSpace(raw); len(trimmed) == 0 || string(trimmed) == "null" {
		raw = json.RawMessage("{}")
	}
	if s == nil {
		return raw, nil
	}
	args, err := schemaDecodeAny(raw)
	if err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	filled := false
	if obj, ok := args.(map[string]any); ok && s.hasDefaults() {
		filler := schemaDefaultsFiller{root: s}
		filled = filler.fill(s, obj, 0, 0)
	}
	if err := s.Validate(args); err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	if !filled {
		return raw, nil
	}
	return schemaMarshal(args)
}

// conformOutput makes the JSON that encoding/json wrote for a typed tool's output satisfy
// the schema inferred from the output's type, which it does not quite do by itself: a nil
// slice, map or pointer is written as null, which the inferred schema does not allow. An
// optional property that is null is dropped; a required one, an array item or a map value
// that is null becomes [] or {} when the schema wants an array, or an object that {}
// satisfies. Anything else, member order included, is left alone. raw comes back as it
// is when it has no null.
func conformOutput(s *Schema, raw []byte) []byte {
	if !bytes.Contains(raw, []byte("null")) {
		return raw
	}
	c := schemaConformer{root: s}
	if out, changed := c.conform(s, raw, 0); changed {
		return out
	}
	return raw
}

// schemaConformer carries the root schema, for $ref.
type schemaConformer struct {
	root *Schema
}

// resolve follows s's $ref chain; it returns nil where a reference does not resolve.
func (c *schemaConformer) resolve(s *Schema) *Schema {
	for hops := 0; s != nil && s.Ref != ""; hops++ {
		if hops > schemaMaxDepth {
			return nil
		}
		s, _ = schemaResolveRef(c.root, s.Ref)
	}
	return s
}

// empty returns the empty value that satisfies s in place of null, if there is one.
func (c *schemaConformer) empty(s *Schema) ([]byte, bool) {
	switch s = c.resolve(s); {
	case s == nil:
		return nil, false
	case s.Type == "array" && s.MinItems == nil:
		return []byte("[]"), true
	case s.Type == "object" && len(s.Required) == 0 && s.MinProperties == nil:
		return []byte("{}"), true
	}
	return nil, false
}

// conform returns raw with the nulls inside it fixed, and whether it changed anything.
func (c *schemaConformer) conform(s *Schema, raw []byte, depth int) ([]byte, bool) {
	s = c.resolve(s)
	raw = bytes.TrimSpace(raw)
	if s == nil || depth > schemaMaxDepth || len(raw) == 0 || !bytes.Contains(raw, []byte("null")) {
		return raw, false
	}
	switch raw[0] {
	case 'n':
		return c.empty(s)
	case '[':
		var items []json.RawMessage
		if s.Items == nil || json.Unmarshal(raw, &items) != nil {
			return raw, false
		}
		changed := false
		for i, item := range items {
			if fixed, ok := c.conform(s.Items, item, depth+1); ok {
				items[i], changed = fixed, true
			}
		}
		if !changed {
			return raw, false
		}
		out := []byte{'['}
		for i, item := range items {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, item...)
		}
		return append(out, ']'), true
	case '{':
		return c.conformObject(s, raw, depth)
	}
	return raw, false
}

// conformObject is conform for an object, whose members keep their order.
func (c *schemaConformer) conformObject(s *Schema, raw []byte, depth int) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return raw, false
	}
	var out bytes.Buffer
	out.WriteByte('{')
	changed := false
	for dec.More() {
		token, err := dec.Token()
		name, ok := token.(string)
		var value json.RawMessage
		if err != nil || !ok || dec.Decode(&value) != nil {
			return raw, false
		}
		sub, declared := s.Properties[name]
		if !declared {
			sub = s.AdditionalProperties
		}
		if sub != nil {
			if string(value) == "null" && declared && !slices.Contains(s.Required, name) {
				changed = true
				continue
			}
			if fixed, ok := c.conform(sub, value, depth+1); ok {
				value, changed = fixed, true
			}
		}
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		key, _ := schemaMarshal(name)
		out.Write(key)
		out.WriteByte(':')
		out.Write(value)
	}
	out.WriteByte('}')
	return out.Bytes(), changed
}
