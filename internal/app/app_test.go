package app

import (
	"testing"

	"github.com/sovereign-ai/sovereign/internal/catalog"
)

func TestDefaultRerankModel(t *testing.T) {
	chat := catalog.Model{ID: "gemma3-270m", Backend: catalog.BackendLocal, RerankMethod: "query-likelihood"}
	qwen := catalog.Model{ID: "qwen2.5-coder-0.5b-instruct", Backend: catalog.BackendLocal, RerankMethod: "query-likelihood"}
	other := catalog.Model{ID: "a-chat-model", Backend: catalog.BackendLocal, RerankMethod: "query-likelihood"}
	emb := catalog.Model{ID: "all-minilm-l6-v2", Backend: catalog.BackendLocal}
	ce := catalog.Model{ID: "bge-reranker", Backend: catalog.BackendLocal, RerankMethod: "cross-encoder"}
	upCE := catalog.Model{ID: "a-upstream-reranker", Backend: catalog.BackendUpstream, RerankMethod: "cross-encoder"}
	for _, c := range []struct {
		name       string
		configured string
		list       []catalog.Model
		want       string
	}{
		{"configured wins", "my-model", []catalog.Model{ce, chat}, "my-model"},
		{"installed cross-encoder", "", []catalog.Model{upCE, ce, chat, emb}, "bge-reranker"},
		{"smallest known chat model (the tests' models)", "", []catalog.Model{upCE, other, qwen, chat, emb}, "gemma3-270m"},
		{"default chat model (make run's models)", "", []catalog.Model{upCE, other, qwen, emb}, "qwen2.5-coder-0.5b-instruct"},
		{"none", "", []catalog.Model{emb, upCE, other}, ""},
	} {
		if got, why := DefaultRerankModel(c.configured, c.list); got != c.want || (got != "" && why == "") {
			t.Errorf("%s: got %q (%s), want %q", c.name, got, why, c.want)
		}
	}
}
