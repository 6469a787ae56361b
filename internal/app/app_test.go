package app

import (
	"testing"

	"github.com/sovereign-ai/sovereign/internal/catalog"
)

func TestDefaultRerankModel(t *testing.T) {
	chat := catalog.Model{ID: "gemma3-270m", Backend: catalog.BackendLocal, RerankMethod: "query-likelihood"}
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
		{"default chat model", "", []catalog.Model{upCE, chat, emb}, "gemma3-270m"},
		{"none", "", []catalog.Model{emb, upCE}, ""},
	} {
		if got, why := DefaultRerankModel(c.configured, c.list); got != c.want || (got != "" && why == "") {
			t.Errorf("%s: got %q (%s), want %q", c.name, got, why, c.want)
		}
	}
}
