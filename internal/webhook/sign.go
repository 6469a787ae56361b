package webhook

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// The Standard Webhooks headers (https://www.standardwebhooks.com).
const (
	HeaderID        = standardwebhooks.HeaderWebhookID
	HeaderTimestamp = standardwebhooks.HeaderWebhookTimestamp
	HeaderSignature = standardwebhooks.HeaderWebhookSignature
)

// Sign returns the webhook-signature header of a message: "v1,<base64
// HMAC-SHA256 of msgID.timestamp.body>" for each secret, separated by
// spaces (the specification's form for several signatures, which a
// receiver tries in turn). The signing is the Standard Webhooks library's.
// Errors: a secret that is not "whsec_" and base64.
func Sign(secrets []string, msgID string, ts time.Time, body []byte) (string, error) {
	sigs := make([]string, 0, len(secrets))
	for _, s := range secrets {
		wh, err := standardwebhooks.NewWebhook(s)
		if err != nil {
			return "", fmt.Errorf("webhook: signing secret: %w", err)
		}
		sig, err := wh.Sign(msgID, ts, body)
		if err != nil {
			return "", fmt.Errorf("webhook: signing: %w", err)
		}
		sigs = append(sigs, sig)
	}
	return strings.Join(sigs, " "), nil
}

// Headers returns the headers of a message sent at ts: webhook-id,
// webhook-timestamp (Unix seconds), webhook-signature (one signature per
// secret), and the content type. Errors: as Sign's.
func Headers(secrets []string, msgID string, ts time.Time, body []byte) (http.Header, error) {
	sig, err := Sign(secrets, msgID, ts, body)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set(HeaderID, msgID)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, sig)
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "Sovereign-Webhooks/1")
	return h, nil
}
