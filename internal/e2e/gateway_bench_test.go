package e2e

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/engine"
	"github.com/sovereign-ai/sovereign/internal/upstream/upstreamtest"
)

// BenchmarkGatewayChat measures one non-streamed chat request through the
// whole API (auth on SQLite, catalog, upstream client, metrics) to a mock
// upstream, sequentially. bench/gateway compares the same path with other
// gateways; this is for profiling (-cpuprofile).
func BenchmarkGatewayChat(b *testing.B) {
	for _, stream := range []bool{false, true} {
		name := "whole"
		if stream {
			name = "stream"
		}
		b.Run(name, func(b *testing.B) {
			up := upstreamtest.New(b, "a")
			e := newEnvSpecs(b, tinyStore(b), engine.Config{}, []catalog.Spec{upstreamSpec("remote", up.BaseURL())})
			body := []byte(`{"model":"remote","messages":[{"role":"user","content":"hi"}],"max_tokens":8}`)
			if stream {
				body = []byte(`{"model":"remote","messages":[{"role":"user","content":"hi"}],"max_tokens":8,"stream":true}`)
			}
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				req, _ := http.NewRequest(http.MethodPost, e.url+"/v1/chat/completions", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+e.key)
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatal(resp.StatusCode)
				}
			}
		})
	}
}
