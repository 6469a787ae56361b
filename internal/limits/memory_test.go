package limits_test

import (
	"testing"

	"github.com/sovereign-ai/sovereign/internal/limits"
	"github.com/sovereign-ai/sovereign/internal/limits/limitstest"
)

func TestMemoryBackend(t *testing.T) { limitstest.Run(t, limits.NewMemory(nil)) }
