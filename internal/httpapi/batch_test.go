package httpapi

import (
	"errors"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/batch"
)

// TestBatchFileTooLarge: a batch input file over its limit is a 413 that
// names the limit (it was a 400 about the line the limit cut).
func TestBatchFileTooLarge(t *testing.T) {
	var e *apierr.Error
	err := batchError(&batch.TooLargeError{Limit: batch.MaxFileBytes}, "file", "")
	if !errors.As(err, &e) || e.Status() != 413 || e.Param != "file" || !strings.Contains(e.Message, "209715200 bytes") {
		t.Fatalf("%#v", err)
	}
}
