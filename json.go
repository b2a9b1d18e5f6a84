package mcp

import (
	"encoding/json"
	"fmt"
)

// Values the API takes as `any` for JSON (params, arguments, a requested
// schema, log data, error data) are encoded here. A json.RawMessage and a
// []byte are taken as the JSON they hold: encoding/json would send a []byte
// as a base64 string, which no peer expects where JSON was meant.

// rawJSONOf returns v itself when it is JSON already: a json.RawMessage or
// a []byte. It reports false for any other value.
func rawJSONOf(v any) (json.RawMessage, bool) {
	switch raw := v.(type) {
	case json.RawMessage:
		return raw, true
	case []byte:
		return raw, true
	}
	return nil, false
}

// marshalValue encodes v as one JSON value: raw JSON as it is (checked, since
// it is written to the wire unchanged), anything else with encoding/json. A
// nil v, or empty raw JSON, encodes to nothing.
func marshalValue(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	raw, ok := rawJSONOf(v)
	if !ok {
		return json.Marshal(v)
	}
	if len(raw) == 0 {
		return nil, nil
	}
	if !validJSON(raw) {
		return nil, fmt.Errorf("the %T given does not hold valid JSON (%s)", v, jsonSyntaxError(raw))
	}
	return raw, nil
}

// marshalObject is marshalValue for a place where the protocol requires a
// JSON object (params, tool arguments, a requested schema). JSON null counts
// as absent and encodes to nothing.
func marshalObject(v any) (json.RawMessage, error) {
	raw, err := marshalValue(v)
	if err != nil || len(raw) == 0 {
		return raw, err
	}
	if err := checkObject(v, raw); err != nil {
		return nil, err
	}
	if string(trimJSONSpace(raw)) == "null" {
		return nil, nil
	}
	return raw, nil
}

// checkObject reports an error unless raw, v's valid JSON encoding, is an
// object or null.
func checkObject(v any, raw []byte) error {
	t := trimJSONSpace(raw)
	if len(t) == 0 || t[0] == '{' || string(t) == "null" {
		return nil
	}
	return fmt.Errorf("a JSON object is required, but the %T given encodes to a JSON %s", v, jsonKind(t))
}

// jsonKind names the kind of the valid JSON value that starts data.
func jsonKind(data []byte) string {
	switch data[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// jsonSyntaxError says what is wrong with invalid JSON and where, as
// encoding/json finds it: "at byte 23" counts from 1 at the start of data.
func jsonSyntaxError(data []byte) string {
	var v any
	err := json.Unmarshal(data, &v)
	if se, ok := err.(*json.SyntaxError); ok {
		if se.Offset >= int64(len(data)) {
			return fmt.Sprintf("%s after %d bytes", se.Error(), len(data))
		}
		return fmt.Sprintf("%s at byte %d", se.Error(), se.Offset)
	}
	if err != nil {
		return err.Error()
	}
	if len(data) == 0 || len(trimJSONSpace(data)) == 0 {
		return "no JSON value"
	}
	return "invalid JSON (nesting too deep)"
}

// jsonData is v ready for a struct field of type any that is encoded with
// encoding/json: raw JSON becomes a json.RawMessage, so that a []byte holding
// JSON is not sent as base64.
func jsonData(v any) (any, error) {
	if _, ok := rawJSONOf(v); !ok {
		return v, nil
	}
	raw, err := marshalValue(v)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw, nil
}

// describeJSON names what a valid JSON value is for an error text: "a
// string", "an array", or "nothing" when it is absent.
func describeJSON(data []byte) string {
	if len(data) == 0 {
		return "nothing"
	}
	if k := jsonKind(data); k == "object" || k == "array" {
		return "an " + k
	}
	return "a " + jsonKind(data)
}
