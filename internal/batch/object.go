package batch

import "time"

// The API's objects: OpenAI's File and Batch, field for field. The batch
// events (batch.completed, …) carry the Batch object as their data.

// FileObject is OpenAI's File object.
type FileObject struct {
	ID        string `json:"id"`
	Object    string `json:"object"` // "file"
	Bytes     int64  `json:"bytes"`
	CreatedAt int64  `json:"created_at"`
	Filename  string `json:"filename"`
	Purpose   string `json:"purpose"`
	Status    string `json:"status"` // "processed"
}

// Object returns f as the API shows it.
func (f File) Object() FileObject {
	return FileObject{ID: f.ID, Object: "file", Bytes: f.Bytes, CreatedAt: f.CreatedAt.Unix(), Filename: f.Filename, Purpose: f.Purpose, Status: f.Status}
}

// ErrorList is a failed batch's errors, as OpenAI lists them.
type ErrorList struct {
	Object string      `json:"object"` // "list"
	Data   []LineError `json:"data"`
}

// RequestCounts are a batch's line counts.
type RequestCounts struct {
	Total     int `json:"total"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
}

// Usage adds up a batch's answered lines' tokens (OpenAI's batch usage).
type Usage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int64 `json:"total_tokens"`
}

// Object is OpenAI's Batch object.
type Object struct {
	ID               string            `json:"id"`
	Object           string            `json:"object"` // "batch"
	Endpoint         string            `json:"endpoint"`
	Model            *string           `json:"model,omitempty"`
	Errors           *ErrorList        `json:"errors"`
	InputFileID      string            `json:"input_file_id"`
	CompletionWindow string            `json:"completion_window"`
	Status           string            `json:"status"`
	OutputFileID     *string           `json:"output_file_id"`
	ErrorFileID      *string           `json:"error_file_id"`
	CreatedAt        int64             `json:"created_at"`
	InProgressAt     *int64            `json:"in_progress_at"`
	ExpiresAt        *int64            `json:"expires_at"`
	FinalizingAt     *int64            `json:"finalizing_at"`
	CompletedAt      *int64            `json:"completed_at"`
	FailedAt         *int64            `json:"failed_at"`
	ExpiredAt        *int64            `json:"expired_at"`
	CancellingAt     *int64            `json:"cancelling_at"`
	CancelledAt      *int64            `json:"cancelled_at"`
	RequestCounts    RequestCounts     `json:"request_counts"`
	Usage            Usage             `json:"usage"`
	Metadata         map[string]string `json:"metadata"`
}

// Object returns b as the API shows it.
func (b Batch) Object() Object {
	unix := func(t *time.Time) *int64 {
		if t == nil {
			return nil
		}
		u := t.Unix()
		return &u
	}
	str := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	o := Object{ID: b.ID, Object: "batch", Endpoint: b.Endpoint, Model: str(b.Model), InputFileID: b.InputFileID,
		CompletionWindow: b.CompletionWindow, Status: b.Status, OutputFileID: str(b.OutputFileID), ErrorFileID: str(b.ErrorFileID),
		CreatedAt: b.CreatedAt.Unix(), InProgressAt: unix(b.InProgressAt), ExpiresAt: unix(&b.ExpiresAt), FinalizingAt: unix(b.FinalizingAt),
		CompletedAt: unix(b.CompletedAt), FailedAt: unix(b.FailedAt), ExpiredAt: unix(b.ExpiredAt), CancellingAt: unix(b.CancellingAt),
		CancelledAt: unix(b.CancelledAt), RequestCounts: RequestCounts{Total: b.Total, Completed: b.Completed, Failed: b.Failed},
		Metadata: b.Metadata}
	o.Usage.InputTokens, o.Usage.OutputTokens, o.Usage.TotalTokens = b.InputTokens, b.OutputTokens, b.InputTokens+b.OutputTokens
	if len(b.Errors) > 0 {
		o.Errors = &ErrorList{Object: "list", Data: b.Errors}
	}
	if o.Metadata == nil {
		o.Metadata = map[string]string{}
	}
	return o
}
