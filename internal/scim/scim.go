// Package scim is SCIM 2.0 provisioning (RFC 7643, RFC 7644) of
// Sovereign's users and groups by an identity provider (Okta, Microsoft
// Entra ID): the domain logic (Service: users, groups, what a group
// membership does through auth.Service.SyncGroups and the configured group
// rules), the store interface it needs (Store, implemented by
// internal/sqlstore), the small filter and PATCH-path parser for what those
// providers send, and a thin HTTP handler for /scim/v2 (docs/scim.md).
//
// A SCIM user is a Sovereign user (auth.User, same user_… id) that the
// provider manages: a link row keeps what SCIM alone knows (userName,
// externalId, the parts of the name). Users made otherwise (the API, the
// CLI) are invisible to SCIM until a POST for their e-mail address takes
// them over (Service.CreateUser). A SCIM group is a name the group rules
// (config group_rules) turn into roles in teams.
package scim

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
)

// User is a Sovereign user as SCIM sees it: the link's fields and, read
// with them (a join), the account's own.
type User struct {
	// ID is the Sovereign user's id ("user_…"), SCIM's id too.
	ID string
	// UserName is the provider's userName as it sent it (unique,
	// compared case-insensitively).
	UserName string
	// ExternalID is the provider's own id for the user ("" when none).
	ExternalID string
	// The name's parts and displayName as sent; the account's Name is made
	// of them (displayName, else name.formatted, else given and family).
	GivenName, FamilyName, Formatted, DisplayName string
	CreatedAt, UpdatedAt                          time.Time

	// Read from the account (users), never written through the link.
	Email  string
	Name   string
	Active bool
}

// Group is a SCIM group.
type Group struct {
	ID          string // "grp_" + 22 base62 characters
	DisplayName string // unique, compared case-insensitively
	ExternalID  string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Member is one member of a group, with the e-mail address shown as its
// display.
type Member struct {
	UserID string
	Email  string
}

// UserFilter selects users by one field (the empty filter: all).
type UserFilter struct {
	// UserName is compared case-insensitively.
	UserName   string
	ExternalID string
	// Email is the account's e-mail address (compared lower-cased).
	Email string
	ID    string
}

// GroupFilter selects groups by one field (the empty filter: all).
type GroupFilter struct {
	// DisplayName is compared case-insensitively.
	DisplayName string
	ExternalID  string
	ID          string
}

// Store is what Service needs from a database (internal/sqlstore).
// Errors: auth.ErrNotFound for a missing row, auth.ErrConflict for a
// userName or displayName in use (or a user linked already).
type Store interface {
	// CreateSCIMUser links user u.ID (which must exist) to SCIM.
	CreateSCIMUser(ctx context.Context, u User) error
	// GetSCIMUser returns a linked user. Errors: auth.ErrNotFound (no
	// user, or not linked).
	GetSCIMUser(ctx context.Context, userID string) (User, error)
	// UpdateSCIMUser writes u's link fields (UserName, ExternalID, the
	// name's parts, UpdatedAt).
	UpdateSCIMUser(ctx context.Context, u User) error
	// DeleteSCIMUser unlinks a user (and takes them out of every group).
	DeleteSCIMUser(ctx context.Context, userID string) error
	// ListSCIMUsers returns a page of the linked users f selects, oldest
	// first, and how many it selects in all.
	ListSCIMUsers(ctx context.Context, f UserFilter, offset, limit int) ([]User, int, error)
	// LinkedSCIMUsers returns those of ids that are linked users.
	LinkedSCIMUsers(ctx context.Context, ids []string) (map[string]bool, error)

	// CreateSCIMGroup stores g with members (linked users' ids).
	CreateSCIMGroup(ctx context.Context, g Group, members []string) error
	GetSCIMGroup(ctx context.Context, id string) (Group, error)
	// UpdateSCIMGroup writes g's DisplayName, ExternalID and UpdatedAt.
	UpdateSCIMGroup(ctx context.Context, g Group) error
	// DeleteSCIMGroup removes a group and its memberships.
	DeleteSCIMGroup(ctx context.Context, id string) error
	// ListSCIMGroups returns a page of the groups f selects, oldest
	// first, and how many it selects in all.
	ListSCIMGroups(ctx context.Context, f GroupFilter, offset, limit int) ([]Group, int, error)
	// AddSCIMMembers and RemoveSCIMMembers change a group's members (ones
	// present or absent already are skipped) and stamp its UpdatedAt.
	AddSCIMMembers(ctx context.Context, groupID string, userIDs []string, at time.Time) error
	RemoveSCIMMembers(ctx context.Context, groupID string, userIDs []string, at time.Time) error
	// ListSCIMMembers returns a group's members, oldest first.
	ListSCIMMembers(ctx context.Context, groupID string) ([]Member, error)
	// SCIMGroupsOfUser returns the groups a user is a member of.
	SCIMGroupsOfUser(ctx context.Context, userID string) ([]Group, error)
	// RemoveSCIMUserFromGroups takes a user out of every group and
	// returns the groups' ids.
	RemoveSCIMUserFromGroups(ctx context.Context, userID string, at time.Time) ([]string, error)
}

// The SCIM error types (RFC 7644 §3.12) this package answers with.
const (
	TypeInvalidFilter = "invalidFilter"
	TypeInvalidSyntax = "invalidSyntax"
	TypeInvalidPath   = "invalidPath"
	TypeInvalidValue  = "invalidValue"
	TypeUniqueness    = "uniqueness"
	TypeMutability    = "mutability"
	TypeNoTarget      = "noTarget"
)

// Error is a SCIM error answer: an HTTP status, a scimType (may be
// empty) and a detail shown to the client. Err, the cause, is logged,
// never shown.
type Error struct {
	Status int
	Type   string
	Detail string
	// RetryAfter is set on a 503 (the database is unavailable).
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string { return e.Detail }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

func errorf(status int, typ, format string, args ...any) *Error {
	return &Error{Status: status, Type: typ, Detail: fmt.Sprintf(format, args...)}
}

func invalidValue(format string, args ...any) *Error {
	return errorf(http.StatusBadRequest, TypeInvalidValue, format, args...)
}

func notFound(format string, args ...any) *Error {
	return errorf(http.StatusNotFound, "", format, args...)
}

func conflict(format string, args ...any) *Error {
	return errorf(http.StatusConflict, TypeUniqueness, format, args...)
}

// AsError classifies any error as the SCIM answer it is: an *Error as it
// is; auth.ErrNotFound a 404, auth.ErrConflict a 409 uniqueness; another
// API error with a 4xx status its own message (a 400 is invalidValue); a
// database outage 503; anything else a 500 whose detail is hidden.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	switch {
	case errors.Is(err, auth.ErrNotFound):
		return &Error{Status: http.StatusNotFound, Detail: apierr.From(err).Message, Err: err}
	case errors.Is(err, auth.ErrConflict):
		return &Error{Status: http.StatusConflict, Type: TypeUniqueness, Detail: apierr.From(err).Message, Err: err}
	}
	a := apierr.From(err)
	st := a.Status()
	switch {
	case st == http.StatusBadRequest:
		return &Error{Status: st, Type: TypeInvalidValue, Detail: a.Message, Err: err}
	case st >= 400 && st < 500:
		return &Error{Status: st, Detail: a.Message, Err: err}
	case st == http.StatusServiceUnavailable:
		return &Error{Status: st, Detail: a.Message, RetryAfter: a.RetryAfter, Err: err}
	}
	return &Error{Status: http.StatusInternalServerError, Detail: "internal server error", Err: err}
}
