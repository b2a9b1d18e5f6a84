package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
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
	v := reflect.ValueOf(s).Elem()
	for _, key := range schemaKeywords {
		switch {
		case key == "type" && s.Types != nil:
			w.add(key, s.Types)
		case key == "properties":
			if s.Properties != nil {
				w.addProperties(s.Properties, s.propertyOrder)
			}
		default:
			w.add(key, v.FieldByIndex(schemaFields[key]).Interface())
		}
	}
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
		putEntry(&s.Extra, key, value)
	}
	return nil
}

// schemaKeywords are the keywords with a field of their own, in the order MarshalJSON
// writes them.
var schemaKeywords = []string{"$schema", "$id", "$ref", "type", "title", "description", "format",
	"contentEncoding", "enum", "const", "default", "pattern", "minLength", "maxLength", "minimum",
	"exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf", "items", "prefixItems",
	"minItems", "maxItems", "uniqueItems", "properties", "patternProperties", "required",
	"additionalProperties", "minProperties", "maxProperties", "allOf", "anyOf", "oneOf", "not",
	"if", "then", "else", "readOnly", "deprecated", "examples", "$defs"}

// schemaFields maps each keyword to its field, by the field's json tag.
var schemaFields = func() map[string][]int {
	fields := make(map[string][]int)
	t := reflect.TypeFor[Schema]()
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			fields[name] = f.Index
		}
	}
	return fields
}()

// decodeKeyword stores the value of a known keyword in its field. It reports false for an
// unknown keyword, or for a known one whose value has the wrong shape.
func (s *Schema) decodeKeyword(key string, raw json.RawMessage) bool {
	if string(raw) == "null" && key != "const" && key != "default" {
		return false
	}
	switch key {
	case "type":
		if raw[0] == '[' {
			return schemaDecodeInto(raw, &s.Types)
		}
	case "const":
		value, err := schemaDecodeAny(raw)
		s.Const = &value
		return err == nil
	case "default":
		s.Default = raw
		return true
	case "properties":
		return s.decodeProperties(raw)
	}
	index, ok := schemaFields[key]
	if !ok {
		return false
	}
	switch field := reflect.ValueOf(s).Elem().FieldByIndex(index).Addr().Interface().(type) {
	case **int:
		return schemaDecodeCount(raw, field)
	case *[]any:
		return schemaDecodeValues(raw, field)
	default:
		value := reflect.New(reflect.TypeOf(field).Elem())
		if json.Unmarshal(raw, value.Interface()) != nil {
			return false
		}
		reflect.ValueOf(field).Elem().Set(value.Elem())
		return true
	}
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
