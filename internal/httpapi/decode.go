package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/openai"
)

// decodeStrict reads an admin request body like openai.Decode, refusing
// members the object does not declare (at any depth) with a 400 naming
// the member: a misspelt limit or rule field must not be ignored.
func decodeStrict(r io.Reader, v any) error {
	body, err := io.ReadAll(r)
	if err != nil {
		return openai.Decode(bytes.NewReader(body), v)
	}
	if err := openai.Decode(bytes.NewReader(body), v); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			name = strings.Trim(name, `"`)
			return apierr.Invalid(name, fmt.Sprintf("unknown field %q", name))
		}
		return apierr.Invalid("", err.Error())
	}
	return nil
}
