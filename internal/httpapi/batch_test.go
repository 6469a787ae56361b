package httpapi

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/batch"
)

// TestBatchFileTooLarge: a batch input file over its limit is a 413 that
// names the limit (it was a 400 about the line the limit cut), and so is
// an upload cut off at the request body's limit.
func TestBatchFileTooLarge(t *testing.T) {
	e := apierr.From(fmt.Errorf("upload: %w", &batch.TooLargeError{Limit: batch.MaxFileBytes}))
	if e.Status() != 413 || e.Param != "file" || !strings.Contains(e.Message, "209715200 bytes") {
		t.Fatalf("%#v", e)
	}
	e = apierr.From(uploadError(fmt.Errorf("read: %w", &http.MaxBytesError{Limit: 1234})))
	if e.Status() != 413 || !strings.Contains(e.Message, "1234 bytes") {
		t.Fatalf("%#v", e)
	}
}
