package sqlstore

import (
	"database/sql/driver"
	"errors"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// Unavailable returns the apierr.Classifier of a dialect whose errors
// isDown recognises as the database being unavailable (a server that
// cannot be reached, one shutting down, a file locked beyond the busy
// timeout): those become 503 database_unavailable with Retry-After,
// wherever they surface and however they are wrapped, instead of a 500
// a client cannot tell from a bug. database/sql's own driver.ErrBadConn
// (a connection lost where database/sql could not retry) is one too.
//
// The adapters register it in init (apierr.RegisterClassifier): queries
// keep returning their errors as they are, and the classification is in
// one place per driver rather than at every return.
func Unavailable(isDown func(error) bool) apierr.Classifier {
	return func(err error) *apierr.Error {
		if errors.Is(err, driver.ErrBadConn) || isDown != nil && isDown(err) {
			return apierr.DatabaseDown(err)
		}
		return nil
	}
}
