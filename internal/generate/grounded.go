package generate

import (
	"context"

	"github.com/sovereign-ai/sovereign/internal/answers"
	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/citation"
	"github.com/sovereign-ai/sovereign/internal/inference"
)

// Answer runs an answer with sources' generation, its text settled by the
// answer (markers, held guesses, one retry; see answers.Answer.Settle),
// unless retrieval found nothing relevant: then an empty generation,
// which the answer settles into its abstain text, and the model is not
// asked. The settled answer is what the output policies govern (as the
// client will read it, markers and all). HTTP handlers and workflow steps
// both call it; the caller closes the generation.
func (s *Service) Answer(ctx context.Context, c *Call, m catalog.Resolved, ans *answers.Answer, req inference.CompletionRequest) (*Generation, error) {
	if ans.Abstains() {
		return s.Output(c, []inference.Stream{ans.Settle(inference.StreamOf(inference.Event{Done: true, FinishReason: inference.FinishStop, Usage: &inference.Usage{}}), nil)}), nil
	}
	sts, err := s.Start(ctx, c, m, req, 1)
	if err != nil {
		return nil, err
	}
	again := func(r inference.CompletionRequest) (inference.Stream, error) {
		r.Model, r.Stream = req.Model, req.Stream
		sts, err := s.Start(ctx, c, m, r, 1)
		if err != nil {
			return nil, err
		}
		return sts[0], nil
	}
	return s.Output(c, []inference.Stream{ans.Settle(sts[0], again)}), nil
}

// RedactCitations applies the output redact rules to the sentences the
// citations and unsupported spans quote from the answer.
func (g *Generation) RedactCitations(cits []citation.Citation, unsupported []citation.Span) {
	for i := range cits {
		cits[i].Text = g.Redact(cits[i].Text)
	}
	for i := range unsupported {
		unsupported[i].Text = g.Redact(unsupported[i].Text)
	}
}
