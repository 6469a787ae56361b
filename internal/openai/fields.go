package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// A field a client sends is honoured or refused with a 400 naming it, never
// silently dropped. DecodeRequest enforces that for the inference requests:
// a top-level field that the request type does not declare is accepted only
// when ignoring it changes nothing for the answer (harmlessFields), and
// refused otherwise: with a reason for the OpenAI fields Sovereign does not
// serve (refusedFields), as unknown for anything else. The table of every
// field is docs/openai-compat.md.

// harmlessFields are OpenAI request fields about the caller's own
// bookkeeping or OpenAI's platform, which do not change an answer here.
var harmlessFields = map[string]string{
	"metadata":               "kept by OpenAI for its dashboard",
	"service_tier":           "OpenAI's processing tier",
	"safety_identifier":      "an end-user id for OpenAI's abuse checks",
	"prompt_cache_key":       "a hint for OpenAI's prompt cache",
	"prompt_cache_retention": "a hint for OpenAI's prompt cache",
}

// refusedFields are OpenAI request fields that would change the answer and
// that Sovereign does not serve yet, with the reason given.
var refusedFields = map[string]string{
	"audio":              "audio output is not supported",
	"modalities":         "only text output is supported (omit 'modalities' or send [\"text\"])",
	"prediction":         "predicted outputs are not supported",
	"web_search_options": "web search is not supported",
	"reasoning_effort":   "reasoning effort is not supported by this server's models",
	"verbosity":          "'verbosity' is not supported",
	"best_of":            "'best_of' is not supported",
}

// DecodeRequest reads one JSON object into v like Decode, then checks its
// top-level fields as described above.
func DecodeRequest(r io.Reader, v any) error {
	body, err := io.ReadAll(r)
	if err != nil {
		return decodeError(err)
	}
	decodes.Add(1)
	if err := decode(bytes.NewReader(body), v); err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return nil // Decode accepted it, so it is an object; unreachable
	}
	known := jsonFields(reflect.TypeOf(v))
	for name, raw := range fields {
		if known[name] {
			continue
		}
		if _, ok := harmlessFields[name]; ok {
			continue
		}
		if err := specialField(name, raw); err != errNotSpecial {
			if err != nil {
				return err
			}
			continue
		}
		if why, ok := refusedFields[name]; ok {
			return apierr.Invalid(name, why)
		}
		return apierr.Invalid(name, fmt.Sprintf("unknown field '%s': this server does not support it", name))
	}
	return nil
}

var errNotSpecial = fmt.Errorf("not special")

// specialField accepts the fields that are harmless only with one value.
func specialField(name string, raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	switch name {
	case "store":
		if bytes.Equal(raw, []byte("false")) || bytes.Equal(raw, []byte("null")) {
			return nil
		}
		return apierr.Invalid("store", "stored completions are not supported; 'store' must be false")
	case "modalities":
		var m []string
		if json.Unmarshal(raw, &m) == nil && (len(m) == 0 || len(m) == 1 && m[0] == "text") {
			return nil
		}
		return apierr.Invalid("modalities", refusedFields["modalities"])
	}
	return errNotSpecial
}

// jsonFields lists the JSON names of a struct type's fields, embedded
// structs included.
func jsonFields(t reflect.Type) map[string]bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	out := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			for k := range jsonFields(f.Type) {
				out[k] = true
			}
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out[name] = true
		}
	}
	return out
}
