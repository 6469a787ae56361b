package models

import (
	"slices"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/gguf"
)

// Pooling types as stored in <arch>.pooling_type (enum llama_pooling_type).
const (
	poolingNone = 0
	poolingRank = 4
)

// encoderArchs are GGUF architectures of encoder-only models, which serve
// embeddings and cannot generate text.
var encoderArchs = map[string]bool{
	"bert":           true,
	"nomic-bert":     true,
	"nomic-bert-moe": true,
	"neo-bert":       true,
	"modern-bert":    true,
	"t5encoder":      true,
}

// readMeta reads the GGUF at p in full and fills the manifest fields that
// come from the file. Its error is the GGUF reader's, which names the file.
func readMeta(p string) (Manifest, error) {
	f, err := gguf.Open(p)
	if err != nil {
		return Manifest{}, err
	}
	arch := f.Arch()
	m := Manifest{
		Family:        arch,
		ContextLength: f.ContextLength(),
		Parameters:    f.ParameterCount(),
		Quantization:  f.FileType(),
		ChatTemplate:  f.ChatTemplate(),
	}
	m.HasChatTemplate = m.ChatTemplate != ""
	m.EmbeddingLength, _ = f.Uint(arch + ".embedding_length")
	pooling, hasPooling := f.Uint(arch + ".pooling_type")
	m.Capabilities = capabilities(arch, pooling, hasPooling)
	m.RerankMethod = rerankMethod(m.Capabilities, hasPooling && pooling == poolingRank)
	return m, nil
}

// Rerank methods, as in [Manifest.RerankMethod].
const (
	// RerankCrossEncoder: a model with rank pooling scores each (query,
	// document) pair directly.
	RerankCrossEncoder = "cross-encoder"
	// RerankChatLogits: a chat model scores a pair by the probability that
	// it answers "yes" to whether the document is relevant. Earlier
	// versions derived it for chat models; upgrade turns it into
	// RerankQueryLikelihood.
	RerankChatLogits = "chat-logits"
	// RerankQueryLikelihood: a causal language model scores a pair by how
	// likely it finds the query after the document.
	RerankQueryLikelihood = "query-likelihood"
)

// rerankMethod is how a model with caps reranks: cross-encoder for rank
// pooling, query-likelihood for a causal language model, "" otherwise.
func rerankMethod(caps []string, rank bool) string {
	switch {
	case rank:
		return RerankCrossEncoder
	case slices.Contains(caps, CapChat) && slices.Contains(caps, CapRerank):
		return RerankQueryLikelihood
	}
	return ""
}

// upgrade fills what a manifest written by an older Sovereign lacks or got
// differently: chat models rerank with the query-likelihood method (older
// versions wrote chat-logits), and rank-pooling models are cross-encoders. It is applied when manifests are read.
func (m *Manifest) upgrade() {
	if m.Has(CapChat) && !m.Has(CapRerank) {
		m.Capabilities = append(slices.Clone(m.Capabilities), CapRerank)
	}
	if m.Has(CapChat) && !m.Has(CapTools) {
		m.Capabilities = append(slices.Clone(m.Capabilities), CapTools) // every local chat model calls tools (docs/engine.md)
	}
	if m.RerankMethod == RerankChatLogits {
		m.RerankMethod = "" // derived by an earlier version; chat models now rerank by query likelihood
	}
	if m.RerankMethod == "" && m.Has(CapRerank) {
		m.RerankMethod = rerankMethod(m.Capabilities, !m.Has(CapChat))
	}
}

// capabilities decides what a model serves from its architecture and
// pooling type: rank pooling means a reranker, an encoder architecture or
// any other pooling means an embedding model, and everything else is a
// causal language model serving chat and completions with tool calls, and
// reranking by the likelihood of the query after the document (the
// query-likelihood method).
func capabilities(arch string, pooling uint64, hasPooling bool) []string {
	switch {
	case hasPooling && pooling == poolingRank:
		return []string{CapRerank}
	case encoderArchs[arch] || strings.HasPrefix(arch, "jina-bert"),
		hasPooling && pooling != poolingNone:
		return []string{CapEmbeddings}
	default:
		return []string{CapChat, CapCompletions, CapRerank, CapTools}
	}
}

// Inspect describes the GGUF file at path as a manifest (without id,
// source, checksum or dates): family, capabilities, context length,
// parameters, quantization and chat template. Its error names the file.
func Inspect(path string) (Manifest, error) { return readMeta(path) }
