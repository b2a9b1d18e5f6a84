package mcp

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/big"
	"net/mail"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// Schema is a JSON Schema (draft 2020-12) document or subschema: the inputSchema and
// outputSchema of a tool. SchemaFor infers one from a Go type; one can also be written by
// hand or decoded from JSON.
//
// The boolean schemas are Schema values too: true is the empty schema &Schema{}, and false
// is FalseSchema(). Decoding the literal true or false gives a schema that encodes back to
// the same literal.
//
// Keywords without a field of their own (such as "x-mcp-header" or "$comment") are kept in
// Extra, and so is a known keyword whose value does not have the 2020-12 shape (such as
// draft-04's boolean exclusiveMinimum, or a null), so that decoding and encoding again gives
// an equivalent document. Validate ignores what is in Extra.
//
// Validation caches derived data (compiled patterns) in the Schema, so a Schema must not be
// modified once it has been used; it is then safe for concurrent use. The json tags name
// each field's keyword; MarshalJSON and UnmarshalJSON do the encoding.
type Schema struct {
	// Schema is the dialect URI; empty means draft 2020-12.
	Schema string `json:"$schema,omitempty"`
	// ID is the schema's URI. It does not change how Ref is resolved.
	ID string `json:"$id,omitempty"`
	// Ref is resolved against the root schema being validated; "#" and "#/$defs/Name" are
	// supported, any other reference fails validation as unresolvable.
	Ref string `json:"$ref,omitempty"`
	// Defs holds subschemas for Ref to name.
	Defs map[string]*Schema `json:"$defs,omitempty"`

	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`

	// Type is a single type name: "null", "boolean", "object", "array", "number", "integer"
	// or "string". Types is the array form ("type": ["string", "null"]), which encodes as an
	// array even with one element. Set at most one of the two.
	Type  string   `json:"type,omitempty"`
	Types []string `json:"-"`

	Enum []any `json:"enum,omitempty"`
	// Const is nil when the keyword is absent; a pointer to a nil any is "const": null.
	Const *any `json:"const,omitempty"`
	// Default is the JSON of the value a missing property takes; tool arguments get it
	// filled in before validation.
	Default  json.RawMessage `json:"default,omitempty"`
	Examples []any           `json:"examples,omitempty"`

	// Format is checked for "date-time" (RFC 3339), "date", "uri" (absolute) and "email"
	// (a bare address); other formats are annotations only.
	Format          string `json:"format,omitempty"`
	ContentEncoding string `json:"contentEncoding,omitempty"`
	// Pattern is a Go regexp (RE2), unanchored as in JSON Schema. ECMA-262 features RE2
	// lacks, such as lookahead, make validation fail with an explanation.
	Pattern   string `json:"pattern,omitempty"`
	MinLength *int   `json:"minLength,omitempty"`
	MaxLength *int   `json:"maxLength,omitempty"`

	Minimum          *float64 `json:"minimum,omitempty"`
	ExclusiveMinimum *float64 `json:"exclusiveMinimum,omitempty"`
	Maximum          *float64 `json:"maximum,omitempty"`
	ExclusiveMaximum *float64 `json:"exclusiveMaximum,omitempty"`
	MultipleOf       *float64 `json:"multipleOf,omitempty"`

	Items       *Schema   `json:"items,omitempty"`
	PrefixItems []*Schema `json:"prefixItems,omitempty"`
	MinItems    *int      `json:"minItems,omitempty"`
	MaxItems    *int      `json:"maxItems,omitempty"`
	UniqueItems bool      `json:"uniqueItems,omitempty"`

	// Properties encode in the order they were decoded or inferred (struct field order);
	// properties added by hand encode after those, sorted by name.
	Properties        map[string]*Schema `json:"properties,omitempty"`
	PatternProperties map[string]*Schema `json:"patternProperties,omitempty"`
	Required          []string           `json:"required,omitempty"`
	// AdditionalProperties applies to members matched by neither Properties nor
	// PatternProperties; FalseSchema() forbids them.
	AdditionalProperties *Schema `json:"additionalProperties,omitempty"`
	MinProperties        *int    `json:"minProperties,omitempty"`
	MaxProperties        *int    `json:"maxProperties,omitempty"`

	AllOf []*Schema `json:"allOf,omitempty"`
	AnyOf []*Schema `json:"anyOf,omitempty"`
	OneOf []*Schema `json:"oneOf,omitempty"`
	Not   *Schema   `json:"not,omitempty"`
	If    *Schema   `json:"if,omitempty"`
	Then  *Schema   `json:"then,omitempty"`
	Else  *Schema   `json:"else,omitempty"`

	ReadOnly   bool `json:"readOnly,omitempty"`
	Deprecated bool `json:"deprecated,omitempty"`

	// Extra holds every other keyword, encoded after the known ones in name order.
	Extra map[string]any `json:"-"`

	propertyOrder []string
	// fromBool marks a schema decoded from (or made as) the literal true or false, so that
	// it encodes back as that literal while it stays unchanged.
	fromBool      bool
	compiledCache atomic.Value // *schemaCompiled, built on first validation
	defaultsCache atomic.Value // bool: whether any property chain carries a default
}

// FalseSchema returns a new schema that no value satisfies. It encodes as the JSON literal
// false, as in "additionalProperties": false.
func FalseSchema() *Schema {
	return &Schema{Not: &Schema{}, fromBool: true}
}

// isFalse reports whether s is the false schema, which gets its own error message.
func (s *Schema) isFalse() bool {
	return s.fromBool && s.Not != nil
}

// MarshalJSON encodes s with its keywords in a fixed order, properties in declaration
// order and Extra last. It fails if Type and Types are both set, or if Extra repeats a
// keyword that a field already sets.
func (s *Schema) MarshalJSON() ([]byte, error) {
	if s.Type != "" && len(s.Types) > 0 {
		return nil, errors.New("schema sets both Type and Types")
	}
	var w schemaObjectWriter
	w.add("$schema", s.Schema)
	w.add("$id", s.ID)
	w.add("$ref", s.Ref)
	if s.Types != nil {
		w.add("type", s.Types)
	} else {
		w.add("type", s.Type)
	}
	w.add("title", s.Title)
	w.add("description", s.Description)
	w.add("format", s.Format)
	w.add("contentEncoding", s.ContentEncoding)
	w.add("enum", s.Enum)
	w.add("const", s.Const)
	w.add("default", s.Default)
	w.add("pattern", s.Pattern)
	w.add("minLength", s.MinLength)
	w.add("maxLength", s.MaxLength)
	w.add("minimum", s.Minimum)
	w.add("exclusiveMinimum", s.ExclusiveMinimum)
	w.add("maximum", s.Maximum)
	w.add("exclusiveMaximum", s.ExclusiveMaximum)
	w.add("multipleOf", s.MultipleOf)
	w.add("items", s.Items)
	w.add("prefixItems", s.PrefixItems)
	w.add("minItems", s.MinItems)
	w.add("maxItems", s.MaxItems)
	w.add("uniqueItems", s.UniqueItems)
	if s.Properties != nil {
		w.addProperties(s.Properties, s.propertyOrder)
	}
	w.add("patternProperties", s.PatternProperties)
	w.add("required", s.Required)
	w.add("additionalProperties", s.AdditionalProperties)
	w.add("minProperties", s.MinProperties)
	w.add("maxProperties", s.MaxProperties)
	w.add("allOf", s.AllOf)
	w.add("anyOf", s.AnyOf)
	w.add("oneOf", s.OneOf)
	w.add("not", s.Not)
	w.add("if", s.If)
	w.add("then", s.Then)
	w.add("else", s.Else)
	w.add("readOnly", s.ReadOnly)
	w.add("deprecated", s.Deprecated)
	w.add("examples", s.Examples)
	w.add("$defs", s.Defs)
	for _, key := range slices.Sorted(maps.Keys(s.Extra)) {
		if slices.Contains(w.keys, key) {
			return nil, fmt.Errorf("schema Extra repeats the keyword %q, which a field already sets", key)
		}
		data, err := schemaMarshal(s.Extra[key])
		if err != nil {
			return nil, fmt.Errorf("schema keyword %q: %w", key, err)
		}
		w.member(key, data)
	}
	out, err := w.finish()
	if err != nil {
		return nil, err
	}
	if s.fromBool {
		switch string(out) {
		case "{}":
			return []byte("true"), nil
		case `{"not":{}}`:
			return []byte("false"), nil
		}
	}
	return out, nil
}

// schemaObjectWriter builds a JSON object member by member, so that keyword order is ours
// and not encoding/json's.
type schemaObjectWriter struct {
	buf  bytes.Buffer
	keys []string
	err  error
}

// add writes key unless value is nil or zero; a non-nil empty slice or map is written, so
// that "enum": [] and "properties": {} survive a round trip.
func (w *schemaObjectWriter) add(key string, value any) {
	if w.err != nil || value == nil || reflect.ValueOf(value).IsZero() {
		return
	}
	data, err := schemaMarshal(value)
	if err != nil {
		w.err = fmt.Errorf("schema keyword %q: %w", key, err)
		return
	}
	w.member(key, data)
}

func (w *schemaObjectWriter) addProperties(props map[string]*Schema, order []string) {
	var inner schemaObjectWriter
	write := func(name string) {
		if inner.err != nil || slices.Contains(inner.keys, name) {
			return
		}
		data, err := schemaMarshal(props[name])
		if err != nil {
			inner.err = fmt.Errorf("property %q: %w", name, err)
			return
		}
		inner.member(name, data)
	}
	for _, name := range order {
		if _, ok := props[name]; ok {
			write(name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		write(name)
	}
	data, err := inner.finish()
	if err != nil {
		w.err = err
		return
	}
	w.member("properties", data)
}

func (w *schemaObjectWriter) member(key string, data []byte) {
	if w.buf.Len() == 0 {
		w.buf.WriteByte('{')
	} else {
		w.buf.WriteByte(',')
	}
	name, _ := schemaMarshal(key) // a string always encodes
	w.buf.Write(name)
	w.buf.WriteByte(':')
	w.buf.Write(data)
	w.keys = append(w.keys, key)
}

func (w *schemaObjectWriter) finish() ([]byte, error) {
	if w.err != nil {
		return nil, w.err
	}
	if w.buf.Len() == 0 {
		return []byte("{}"), nil
	}
	w.buf.WriteByte('}')
	return w.buf.Bytes(), nil
}

// UnmarshalJSON decodes a schema object or a boolean schema. Unknown keywords, and known
// ones whose value has another shape than 2020-12 gives them, are kept in Extra rather
// than rejected, because a client must be able to list tools whose schemas use older
// dialects. Numbers in enum, const, examples and Extra decode as json.Number.
func (s *Schema) UnmarshalJSON(data []byte) error {
	switch string(bytes.TrimSpace(data)) {
	case "true":
		*s = Schema{fromBool: true}
		return nil
	case "false":
		*s = Schema{Not: &Schema{}, fromBool: true}
		return nil
	case "null":
		return nil
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		return fmt.Errorf("a JSON Schema must be an object or a boolean: %w", err)
	}
	*s = Schema{}
	for key, raw := range members {
		if s.decodeKeyword(key, raw) {
			continue
		}
		value, err := schemaDecodeAny(raw)
		if err != nil {
			return fmt.Errorf("schema keyword %q: %w", key, err)
		}
		if s.Extra == nil {
			s.Extra = make(map[string]any)
		}
		s.Extra[key] = value
	}
	return nil
}

// decodeKeyword stores the value of a known keyword in its field. It reports false for an
// unknown keyword, or for a known one whose value has the wrong shape.
func (s *Schema) decodeKeyword(key string, raw json.RawMessage) bool {
	if string(raw) == "null" && key != "const" && key != "default" {
		return false
	}
	switch key {
	case "$schema":
		return schemaDecodeInto(raw, &s.Schema)
	case "$id":
		return schemaDecodeInto(raw, &s.ID)
	case "$ref":
		return schemaDecodeInto(raw, &s.Ref)
	case "$defs":
		return schemaDecodeInto(raw, &s.Defs)
	case "title":
		return schemaDecodeInto(raw, &s.Title)
	case "description":
		return schemaDecodeInto(raw, &s.Description)
	case "type":
		if raw[0] == '[' {
			return schemaDecodeInto(raw, &s.Types)
		}
		return schemaDecodeInto(raw, &s.Type)
	case "enum":
		return schemaDecodeValues(raw, &s.Enum)
	case "const":
		value, err := schemaDecodeAny(raw)
		s.Const = &value
		return err == nil
	case "default":
		s.Default = raw
		return true
	case "examples":
		return schemaDecodeValues(raw, &s.Examples)
	case "format":
		return schemaDecodeInto(raw, &s.Format)
	case "contentEncoding":
		return schemaDecodeInto(raw, &s.ContentEncoding)
	case "pattern":
		return schemaDecodeInto(raw, &s.Pattern)
	case "minLength":
		return schemaDecodeCount(raw, &s.MinLength)
	case "maxLength":
		return schemaDecodeCount(raw, &s.MaxLength)
	case "minimum":
		return schemaDecodeInto(raw, &s.Minimum)
	case "exclusiveMinimum":
		return schemaDecodeInto(raw, &s.ExclusiveMinimum)
	case "maximum":
		return schemaDecodeInto(raw, &s.Maximum)
	case "exclusiveMaximum":
		return schemaDecodeInto(raw, &s.ExclusiveMaximum)
	case "multipleOf":
		return schemaDecodeInto(raw, &s.MultipleOf)
	case "items":
		return schemaDecodeInto(raw, &s.Items)
	case "prefixItems":
		return schemaDecodeInto(raw, &s.PrefixItems)
	case "minItems":
		return schemaDecodeCount(raw, &s.MinItems)
	case "maxItems":
		return schemaDecodeCount(raw, &s.MaxItems)
	case "uniqueItems":
		return schemaDecodeInto(raw, &s.UniqueItems)
	case "properties":
		return s.decodeProperties(raw)
	case "patternProperties":
		return schemaDecodeInto(raw, &s.PatternProperties)
	case "required":
		return schemaDecodeInto(raw, &s.Required)
	case "additionalProperties":
		return schemaDecodeInto(raw, &s.AdditionalProperties)
	case "minProperties":
		return schemaDecodeCount(raw, &s.MinProperties)
	case "maxProperties":
		return schemaDecodeCount(raw, &s.MaxProperties)
	case "allOf":
		return schemaDecodeInto(raw, &s.AllOf)
	case "anyOf":
		return schemaDecodeInto(raw, &s.AnyOf)
	case "oneOf":
		return schemaDecodeInto(raw, &s.OneOf)
	case "not":
		return schemaDecodeInto(raw, &s.Not)
	case "if":
		return schemaDecodeInto(raw, &s.If)
	case "then":
		return schemaDecodeInto(raw, &s.Then)
	case "else":
		return schemaDecodeInto(raw, &s.Else)
	case "readOnly":
		return schemaDecodeInto(raw, &s.ReadOnly)
	case "deprecated":
		return schemaDecodeInto(raw, &s.Deprecated)
	}
	return false
}

// decodeProperties decodes the properties object keeping its member order, which a map
// alone would lose.
func (s *Schema) decodeProperties(raw json.RawMessage) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	props := make(map[string]*Schema)
	var order []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		name, _ := tok.(string) // object keys are always strings
		var sub *Schema
		if err := dec.Decode(&sub); err != nil {
			return false
		}
		if _, dup := props[name]; !dup {
			order = append(order, name)
		}
		props[name] = sub
	}
	s.Properties, s.propertyOrder = props, order
	return true
}

// schemaDecodeInto decodes raw into a fresh T and stores it only on success, so that a
// failed keyword leaves no half-decoded value behind.
func schemaDecodeInto[T any](raw json.RawMessage, dst *T) bool {
	var value T
	if err := json.Unmarshal(raw, &value); err != nil {
		return false
	}
	*dst = value
	return true
}

// schemaDecodeCount decodes a non-negative integer keyword such as minLength.
func schemaDecodeCount(raw json.RawMessage, dst **int) bool {
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n < 0 || n > math.MaxInt32 {
		return false
	}
	count := int(n)
	*dst = &count
	return true
}

// schemaDecodeValues decodes an array of arbitrary JSON values, such as enum.
func schemaDecodeValues(raw json.RawMessage, dst *[]any) bool {
	value, err := schemaDecodeAny(raw)
	values, ok := value.([]any)
	if err != nil || !ok {
		return false
	}
	*dst = values
	return true
}

// schemaDecodeAny decodes one JSON value with numbers as json.Number, which keeps their
// exact text; it rejects data after the value.
func schemaDecodeAny(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var value any
	if err := dec.Decode(&value); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return value, nil
}

var (
	schemaCache sync.Map // reflect.Type → schemaCacheEntry

	schemaTimeType            = reflect.TypeFor[time.Time]()
	schemaMarshalerType       = reflect.TypeFor[json.Marshaler]()
	schemaUnmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	schemaTextMarshalerType   = reflect.TypeFor[encoding.TextMarshaler]()
	schemaTextUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

type schemaCacheEntry struct {
	schema *Schema
	err    error
}

// SchemaFor returns the JSON Schema of T's JSON form, as encoding/json writes and reads it.
// The result is cached per type and shared by every caller, so it must not be modified.
//
// A struct becomes an object with "additionalProperties": false whose properties are the
// fields encoding/json uses, in field order: exported fields, named by their json tag,
// with embedded structs flattened. A field is required unless it is a pointer, is promoted
// through an embedded pointer, has the omitempty or omitzero option, or has a default.
// The ",string" option makes the field a string. Other types map as follows: bool →
// boolean; signed integers → integer; unsigned integers → integer with minimum 0; floats →
// number; string → string; []byte → string with contentEncoding base64; slices → array;
// arrays → array with minItems and maxItems equal to the length; maps → object whose
// additionalProperties is the value's schema; time.Time → string with format date-time;
// json.RawMessage, interfaces and types with their own MarshalJSON or UnmarshalJSON → {}
// (any value); other types with MarshalText → string; pointers → the schema of what they
// point to (null is not added). Channels, functions and complex numbers are errors.
//
// A named type that contains itself, directly or through other types, is emitted once in
// $defs under its Go name and referred to as {"$ref": "#/$defs/Name"}; the root type
// stays inline and is referred to as {"$ref": "#"}. Other named types are inlined.
//
// Two struct tags refine a field's schema. description:"text" sets the description.
// schema:"key=value,key=value" sets keywords:
//
//	title=Text                  the title
//	enum=a|b|c                  allowed values, parsed as the field's type: text for
//	                            strings, numbers for numbers, true/false for bools,
//	                            JSON (or else text) for interface fields
//	minimum=N, maximum=N,
//	exclusiveMinimum=N,
//	exclusiveMaximum=N          bounds, for number and integer fields
//	minLength=N, maxLength=N    length in characters, for string fields
//	pattern=RE                  a Go regexp, for string fields
//	format=F                    such as date, email or uri, for string fields
//	minItems=N, maxItems=N      for slice and array fields
//	default=V                   a JSON value; for a string field, text not starting
//	                            with a quote is the string itself
//	required, optional          whether the field is required, overriding the rules above
//
// Values cannot contain commas, except that pattern= and default= take the rest of the
// tag, commas included, so whichever is used must come last. Enum values cannot contain
// '|'. Spaces around keys and values are ignored, except in pattern=. Enum values and
// defaults must satisfy the field's own schema. A malformed tag makes SchemaFor return
// an error naming the field. For example:
//
//	type SearchArgs struct {
//		Query string   `json:"query" description:"What to look for." schema:"minLength=1"`
//		Limit int      `json:"limit" schema:"minimum=1,maximum=100,default=10"`
//		Sort  string   `json:"sort,omitempty" schema:"enum=relevance|date"`
//		Since string   `json:"since,omitempty" schema:"format=date"`
//		Tags  []string `json:"tags,omitempty" schema:"maxItems=5"`
//	}
func SchemaFor[T any]() (*Schema, error) {
	return schemaForType(reflect.TypeFor[T]())
}

// schemaForType is SchemaFor for a reflect.Type. Results, errors included, are cached so
// that a repeated lookup costs one sync.Map load and no allocation.
func schemaForType(t reflect.Type) (*Schema, error) {
	if entry, ok := schemaCache.Load(t); ok {
		e := entry.(schemaCacheEntry)
		return e.schema, e.err
	}
	s, err := schemaInfer(t)
	entry, _ := schemaCache.LoadOrStore(t, schemaCacheEntry{schema: s, err: err})
	e := entry.(schemaCacheEntry)
	return e.schema, e.err
}

// toolInputSchema returns the schema of a tool's input type, which MCP requires to be an
// object: a struct or a map.
func toolInputSchema(t reflect.Type) (*Schema, error) {
	s, err := schemaForType(t)
	if err != nil {
		return nil, err
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("tool input type %v is not a JSON object; use a struct or a map with string keys", t)
	}
	return s, nil
}

// schemaInferrer builds the schema of one root type. Every occurrence of a type gets a
// fresh subschema, so struct tags can change it without touching other occurrences.
type schemaInferrer struct {
	root      reflect.Type
	recursive map[reflect.Type]bool
	defNames  map[reflect.Type]string
	usedNames map[string]bool
	defs      map[string]*Schema
	checks    []schemaTagCheck
}

// schemaTagCheck is an enum value or default from a tag, checked once the whole schema
// exists so that references inside the field's schema resolve.
type schemaTagCheck struct {
	schema *Schema
	value  any
	what   string
}

func schemaInfer(t reflect.Type) (*Schema, error) {
	root := t
	for root.Kind() == reflect.Pointer && root.Name() == "" {
		root = root.Elem()
	}
	inf := &schemaInferrer{root: root, recursive: schemaRecursiveTypes(root)}
	s, err := inf.body(root)
	if err != nil {
		return nil, fmt.Errorf("schema for %v: %w", t, err)
	}
	if len(inf.defs) > 0 {
		s.Defs = inf.defs
	}
	for _, check := range inf.checks {
		vr := schemaValidator{root: s}
		vr.validate(check.schema, check.value, 0)
		if err := vr.result(); err != nil {
			return nil, fmt.Errorf("schema for %v: %s does not satisfy the field's schema: %w", t, check.what, err)
		}
	}
	return s, nil
}

// schemaOf returns the schema of t where t is used: a reference for recursive types, the
// full schema otherwise.
func (inf *schemaInferrer) schemaOf(t reflect.Type) (*Schema, error) {
	switch {
	case t == inf.root:
		return &Schema{Ref: "#"}, nil
	case inf.recursive[t]:
		return inf.ref(t)
	}
	return inf.body(t)
}

// ref returns a reference to t's entry in $defs, building the entry on first use.
func (inf *schemaInferrer) ref(t reflect.Type) (*Schema, error) {
	name, ok := inf.defNames[t]
	if !ok {
		if inf.defNames == nil {
			inf.defNames, inf.usedNames, inf.defs = map[reflect.Type]string{}, map[string]bool{}, map[string]*Schema{}
		}
		base := schemaDefName(t)
		name = base
		for i := 2; inf.usedNames[name]; i++ {
			name = base + "_" + strconv.Itoa(i)
		}
		inf.defNames[t], inf.usedNames[name] = name, true
		body, err := inf.body(t)
		if err != nil {
			return nil, err
		}
		inf.defs[name] = body
	}
	return &Schema{Ref: "#/$defs/" + name}, nil
}

// schemaDefName turns a Go type name into a $defs key that needs no escaping in a JSON
// pointer or URI fragment (generic instantiations carry brackets, dots and slashes).
func schemaDefName(t reflect.Type) string {
	name := []byte(strings.TrimSuffix(t.Name(), "]"))
	for i, c := range name {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			name[i] = '_'
		}
	}
	return string(name)
}

// body builds the full schema of t.
func (inf *schemaInferrer) body(t reflect.Type) (*Schema, error) {
	switch {
	case t.Kind() == reflect.Pointer:
		return inf.schemaOf(t.Elem()) // before the method checks: *time.Time has MarshalJSON too
	case t == schemaTimeType:
		return &Schema{Type: "string", Format: "date-time"}, nil
	case schemaHasJSONMethods(t):
		return &Schema{}, nil
	case schemaHasTextMarshaler(t):
		return &Schema{Type: "string"}, nil
	}
	switch t.Kind() {
	case reflect.Interface:
		return &Schema{}, nil
	case reflect.Bool:
		return &Schema{Type: "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return &Schema{Type: "integer"}, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		zero := 0.0
		return &Schema{Type: "integer", Minimum: &zero}, nil
	case reflect.Float32, reflect.Float64:
		return &Schema{Type: "number"}, nil
	case reflect.String:
		return &Schema{Type: "string"}, nil
	case reflect.Slice:
		if schemaIsByteSlice(t) {
			return &Schema{Type: "string", ContentEncoding: "base64"}, nil
		}
		items, err := inf.schemaOf(t.Elem())
		if err != nil {
			return nil, err
		}
		return &Schema{Type: "array", Items: items}, nil
	case reflect.Array:
		items, err := inf.schemaOf(t.Elem())
		if err != nil {
			return nil, err
		}
		minItems, maxItems := t.Len(), t.Len()
		return &Schema{Type: "array", Items: items, MinItems: &minItems, MaxItems: &maxItems}, nil
	case reflect.Map:
		if !schemaIsMapKey(t.Key()) {
			return nil, fmt.Errorf("unsupported map key type %v", t.Key())
		}
		values, err := inf.schemaOf(t.Elem())
		if err != nil {
			return nil, err
		}
		return &Schema{Type: "object", AdditionalProperties: values}, nil
	case reflect.Struct:
		return inf.structSchema(t)
	}
	return nil, fmt.Errorf("unsupported type %v", t)
}

func (inf *schemaInferrer) structSchema(t reflect.Type) (*Schema, error) {
	s := &Schema{Type: "object", Properties: map[string]*Schema{}, AdditionalProperties: FalseSchema()}
	owner := t.Name()
	if owner == "" {
		owner = "struct"
	}
	for _, f := range schemaStructFields(t) {
		prop, required, err := inf.fieldSchema(f)
		if err != nil {
			return nil, fmt.Errorf("field %s.%s: %w", owner, f.goName, err)
		}
		s.Properties[f.name] = prop
		s.propertyOrder = append(s.propertyOrder, f.name)
		if required {
			s.Required = append(s.Required, f.name)
		}
	}
	return s, nil
}

func (inf *schemaInferrer) fieldSchema(f schemaField) (*Schema, bool, error) {
	var prop *Schema
	if f.quoted {
		prop = &Schema{Type: "string"}
	} else {
		var err error
		if prop, err = inf.schemaOf(f.typ); err != nil {
			return nil, false, err
		}
	}
	required := !f.omit && !f.viaPointer && f.typ.Kind() != reflect.Pointer
	if text, ok := f.tag.Lookup("description"); ok {
		prop.Description = text
	}
	if tag, ok := f.tag.Lookup("schema"); ok {
		var err error
		if required, err = inf.applyTag(prop, tag, required, f.goName); err != nil {
			return nil, false, fmt.Errorf("schema tag: %w", err)
		}
	}
	return prop, required, nil
}

// applyTag applies a schema:"..." tag to the field schema s and returns whether the field
// is required.
func (inf *schemaInferrer) applyTag(s *Schema, tag string, required bool, field string) (bool, error) {
	kind := s.Type
	seen := map[string]bool{}
	for rest := tag; rest != ""; {
		item, after, more := strings.Cut(rest, ",")
		rest = after
		key, value, hasValue := strings.Cut(item, "=")
		key = strings.TrimSpace(key)
		if key == "" && !hasValue {
			continue
		}
		if (key == "pattern" || key == "default") && more {
			value += "," + rest
			rest = ""
		}
		if key != "pattern" {
			value = strings.TrimSpace(value)
		}
		if seen[key] {
			return false, fmt.Errorf("%s appears twice", key)
		}
		seen[key] = true
		if key == "required" || key == "optional" {
			if hasValue {
				return false, fmt.Errorf("%s takes no value", key)
			}
			continue
		}
		if !hasValue || (value == "" && key != "default") {
			return false, fmt.Errorf("%s needs a value, as in %s=...", key, key)
		}
		if err := inf.applyKeyword(s, kind, key, value, field); err != nil {
			return false, fmt.Errorf("%s: %w", key, err)
		}
	}
	switch {
	case seen["required"] && seen["optional"]:
		return false, errors.New("both required and optional")
	case seen["required"]:
		return true, nil
	case seen["optional"], seen["default"]:
		return false, nil
	}
	return required, nil
}

func (inf *schemaInferrer) applyKeyword(s *Schema, kind, key, value, field string) error {
	switch key {
	case "title":
		s.Title = value
	case "format":
		if err := schemaTagKind(kind, "string"); err != nil {
			return err
		}
		s.Format = value
	case "pattern":
		if err := schemaTagKind(kind, "string"); err != nil {
			return err
		}
		if _, err := regexp.Compile(value); err != nil {
			return err
		}
		s.Pattern = value
	case "minLength", "maxLength":
		if err := schemaTagKind(kind, "string"); err != nil {
			return err
		}
		n, err := schemaParseTagCount(value)
		if err != nil {
			return err
		}
		if key == "minLength" {
			s.MinLength = &n
		} else {
			s.MaxLength = &n
		}
	case "minItems", "maxItems":
		if err := schemaTagKind(kind, "array"); err != nil {
			return err
		}
		n, err := schemaParseTagCount(value)
		if err != nil {
			return err
		}
		if key == "minItems" {
			s.MinItems = &n
		} else {
			s.MaxItems = &n
		}
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
		if err := schemaTagKind(kind, "number", "integer"); err != nil {
			return err
		}
		f, err := strconv.ParseFloat(value, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("%q is not a number", value)
		}
		switch key {
		case "minimum":
			s.Minimum = &f
		case "maximum":
			s.Maximum = &f
		case "exclusiveMinimum":
			s.ExclusiveMinimum = &f
		default:
			s.ExclusiveMaximum = &f
		}
	case "enum":
		if kind == "object" || kind == "array" {
			return fmt.Errorf("applies to scalar fields, not %s", kind)
		}
		for text := range strings.SplitSeq(value, "|") {
			text = strings.TrimSpace(text)
			v, err := schemaParseTagValue(kind, text)
			if err != nil {
				return err
			}
			s.Enum = append(s.Enum, v)
			inf.checks = append(inf.checks, schemaTagCheck{s, v, fmt.Sprintf("field %s: enum value %s", field, text)})
		}
	case "default":
		raw, v, err := schemaParseTagDefault(kind, value)
		if err != nil {
			return err
		}
		s.Default = raw
		inf.checks = append(inf.checks, schemaTagCheck{s, v, fmt.Sprintf("field %s: default %s", field, raw)})
	default:
		return errors.New("unknown keyword")
	}
	return nil
}

// schemaTagKind checks that a tag keyword suits the field's schema type. An untyped field
// (an interface, or a reference to a recursive type) accepts every keyword.
func schemaTagKind(kind string, want ...string) error {
	if kind == "" || slices.Contains(want, kind) {
		return nil
	}
	return fmt.Errorf("applies to %s fields, not %s", strings.Join(want, " or "), kind)
}

func schemaParseTagCount(text string) (int, error) {
	n, err := strconv.Atoi(text)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a non-negative integer", text)
	}
	return n, nil
}

// schemaParseTagValue parses one enum value as the field's type. Numbers become
// json.Number so that they encode exactly as written.
func schemaParseTagValue(kind, text string) (any, error) {
	switch kind {
	case "string":
		return text, nil
	case "boolean":
		switch text {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, fmt.Errorf("%q is not a boolean", text)
	case "integer":
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			return json.Number(strconv.FormatInt(n, 10)), nil
		}
		if n, err := strconv.ParseUint(text, 10, 64); err == nil {
			return json.Number(strconv.FormatUint(n, 10)), nil
		}
		return nil, fmt.Errorf("%q is not an integer", text)
	case "number":
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("%q is not a number", text)
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
	}
	if value, err := schemaDecodeAny([]byte(text)); err == nil {
		return value, nil
	}
	return text, nil
}

// schemaParseTagDefault parses a default= value into its JSON and its decoded value.
func schemaParseTagDefault(kind, text string) (json.RawMessage, any, error) {
	if kind == "string" && !strings.HasPrefix(text, `"`) {
		raw, err := schemaMarshal(text)
		return raw, text, err
	}
	value, err := schemaDecodeAny([]byte(text))
	if err != nil {
		return nil, nil, fmt.Errorf("%q is not a JSON value", text)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(text)); err != nil {
		return nil, nil, err
	}
	return compact.Bytes(), value, nil
}

// schemaHasJSONMethods reports whether encoding/json hands t's JSON to t's own methods, so
// that its fields say nothing about its shape.
func schemaHasJSONMethods(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(schemaMarshalerType) || p.Implements(schemaMarshalerType) ||
		t.Implements(schemaUnmarshalerType) || p.Implements(schemaUnmarshalerType)
}

// schemaHasTextMarshaler reports whether encoding/json writes t as a string via MarshalText.
func schemaHasTextMarshaler(t reflect.Type) bool {
	return t.Implements(schemaTextMarshalerType) || reflect.PointerTo(t).Implements(schemaTextMarshalerType)
}

// schemaIsByteSlice mirrors encoding/json: a []byte is base64 text unless its element type
// marshals itself.
func schemaIsByteSlice(t reflect.Type) bool {
	if t.Kind() != reflect.Slice || t.Elem().Kind() != reflect.Uint8 {
		return false
	}
	p := reflect.PointerTo(t.Elem())
	return !p.Implements(schemaMarshalerType) && !p.Implements(schemaTextMarshalerType)
}

// schemaIsMapKey reports whether encoding/json can use t as an object key.
func schemaIsMapKey(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return t.Implements(schemaTextMarshalerType) || reflect.PointerTo(t).Implements(schemaTextUnmarshalerType)
}

// schemaRecursiveTypes finds the named types that contain themselves, directly or
// through other types: the named members of the strongly connected components (Tarjan)
// of the graph of types that inference visits.
func schemaRecursiveTypes(root reflect.Type) map[reflect.Type]bool {
	type state struct {
		index, low int
		onStack    bool
	}
	states := map[reflect.Type]*state{}
	var stack []reflect.Type
	recursive := map[reflect.Type]bool{}
	var visit func(t reflect.Type)
	visit = func(t reflect.Type) {
		st := &state{index: len(states), low: len(states), onStack: true}
		states[t] = st
		stack = append(stack, t)
		selfLoop := false
		for _, next := range schemaTypeEdges(t) {
			selfLoop = selfLoop || next == t
			if ns, seen := states[next]; !seen {
				visit(next)
				st.low = min(st.low, states[next].low)
			} else if ns.onStack {
				st.low = min(st.low, ns.index)
			}
		}
		if st.low != st.index {
			return
		}
		var component []reflect.Type
		for {
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			states[top].onStack = false
			component = append(component, top)
			if top == t {
				break
			}
		}
		if len(component) > 1 || selfLoop {
			for _, c := range component {
				if c.Name() != "" {
					recursive[c] = true
				}
			}
		}
	}
	visit(root)
	return recursive
}

// schemaTypeEdges lists the types whose schemas t's schema contains, following the same
// rules as schemaInferrer.body.
func schemaTypeEdges(t reflect.Type) []reflect.Type {
	if t.Kind() != reflect.Pointer && (t == schemaTimeType || schemaHasJSONMethods(t) || schemaHasTextMarshaler(t)) {
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Array, reflect.Map:
		return []reflect.Type{t.Elem()}
	case reflect.Slice:
		if schemaIsByteSlice(t) {
			return nil
		}
		return []reflect.Type{t.Elem()}
	case reflect.Struct:
		var edges []reflect.Type
		for _, f := range schemaStructFields(t) {
			if !f.quoted {
				edges = append(edges, f.typ)
			}
		}
		return edges
	}
	return nil
}

// schemaField is one member of a struct's JSON object.
type schemaField struct {
	name       string
	goName     string
	index      []int
	typ        reflect.Type
	tag        reflect.StructTag
	tagged     bool // the name comes from a json tag
	omit       bool // omitempty or omitzero
	quoted     bool // the ",string" option, on a type it applies to
	viaPointer bool // promoted through an embedded pointer, so absent when that is nil
}

// schemaStructFields lists the JSON members of struct type t in field order, with the
// rules of encoding/json: json tags, embedded structs flattened breadth first, and a name
// claimed by several fields going to the shallowest (then the tagged) one, or to none.
func schemaStructFields(t reflect.Type) []schemaField {
	type embedded struct {
		typ        reflect.Type
		index      []int
		viaPointer bool
	}
	var fields []schemaField
	next := []embedded{{typ: t}}
	var count, nextCount map[reflect.Type]int
	visited := map[reflect.Type]bool{}
	for len(next) > 0 {
		current := next
		next = nil
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, e := range current {
			if visited[e.typ] {
				continue
			}
			visited[e.typ] = true
			for i := range e.typ.NumField() {
				sf := e.typ.Field(i)
				if sf.Anonymous {
					ft := sf.Type
					if ft.Kind() == reflect.Pointer {
						ft = ft.Elem()
					}
					if !sf.IsExported() && ft.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				jsonTag := sf.Tag.Get("json")
				if jsonTag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(jsonTag, ",")
				if !schemaIsJSONName(name) {
					name = ""
				}
				index := append(slices.Clone(e.index), i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
					nextCount[ft]++
					if nextCount[ft] == 1 {
						next = append(next, embedded{ft, index, e.viaPointer || sf.Type.Kind() == reflect.Pointer})
					}
					continue
				}
				f := schemaField{
					name:       name,
					goName:     sf.Name,
					index:      index,
					typ:        sf.Type,
					tag:        sf.Tag,
					tagged:     name != "",
					viaPointer: e.viaPointer,
				}
				if f.name == "" {
					f.name = sf.Name
				}
				for opt := range strings.SplitSeq(opts, ",") {
					switch opt {
					case "omitempty", "omitzero":
						f.omit = true
					case "string":
						switch ft.Kind() {
						case reflect.Bool,
							reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
							reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
							reflect.Float32, reflect.Float64, reflect.String:
							f.quoted = true
						}
					}
				}
				fields = append(fields, f)
				if count[e.typ] > 1 {
					// Two embeddings of one type at this depth: the duplicate makes the
					// name ambiguous below, as in encoding/json.
					fields = append(fields, f)
				}
			}
		}
	}
	slices.SortStableFunc(fields, func(a, b schemaField) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := len(a.index) - len(b.index); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(a.index, b.index)
	})
	var kept []schemaField
	for i := 0; i < len(fields); {
		j := i + 1
		for j < len(fields) && fields[j].name == fields[i].name {
			j++
		}
		if j-i == 1 || len(fields[i].index) < len(fields[i+1].index) || fields[i].tagged != fields[i+1].tagged {
			kept = append(kept, fields[i])
		}
		i = j
	}
	slices.SortFunc(kept, func(a, b schemaField) int { return slices.Compare(a.index, b.index) })
	return kept
}

// schemaIsJSONName reports whether encoding/json accepts name from a json tag.
func schemaIsJSONName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

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
	case int:
		return float64(n), true
	case int8:
		return float64(n), true
	case int16:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint:
		return float64(n), true
	case uint8:
		return float64(n), true
	case uint16:
		return float64(n), true
	case uint32:
		return float64(n), true
	case uint64:
		return float64(n), true
	}
	return 0, false
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

// schemaMarshal encodes v without escaping <, > and &, which is for HTML and would make
// schemas, defaults and messages harder to read.
func schemaMarshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// applyDefaults fills in, recursively through properties, the default of every property
// missing from an object, and returns v. Objects are changed in place.
func (s *Schema) applyDefaults(v any) any {
	if obj, ok := v.(map[string]any); ok {
		filler := schemaDefaultsFiller{root: s}
		filler.fill(s, obj, 0, 0)
	}
	return v
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
