package main

import (
	"errors"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/extract"
)

// extractFile reads an uploaded file.
func extractFile(name, contentType string, data []byte) (text, title, format string, err error) {
	d, err := extract.Extract(name, contentType, data)
	if err != nil {
		if errors.Is(err, extract.ErrTooLarge) {
			return "", "", "", apierr.New(apierr.BodyTooLarge, err.Error())
		}
		return "", "", "", err
	}
	return d.Text, d.Title, d.Format, nil
}
