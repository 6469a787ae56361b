package redis_test

import (
	"context"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/limits/limitstest"
	"github.com/sovereign-ai/sovereign/internal/redis"
)

// TestLimitsBackend runs the limits backend suite on a real redis-server
// (make test starts one: scripts/redis-test.sh).
func TestLimitsBackend(t *testing.T) {
	l, err := redis.Open(context.Background(), limitstest.RequireRedis(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	limitstest.Run(t, l)
}
