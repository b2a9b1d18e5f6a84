package mcp

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
)

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
	case "minLength", "maxLength", "minItems", "maxItems":
		want, count := "string", &s.MinLength
		switch key {
		case "maxLength":
			count = &s.MaxLength
		case "minItems":
			want, count = "array", &s.MinItems
		case "maxItems":
			want, count = "array", &s.MaxItems
		}
		if err := schemaTagKind(kind, want); err != nil {
			return err
		}
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 {
			return fmt.Errorf("%q is not a non-negative integer", value)
		}
		*count = &n
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
