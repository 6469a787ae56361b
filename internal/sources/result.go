package sources

import "strconv"

// ChunkRef is the public id of a chunk: what search results name it by
// and answers cite it by.
func ChunkRef(id int64) string { return "chunk_" + strconv.FormatInt(id, 10) }

// Result is a search hit as the API gives it (POST
// /v1/collections/{id}/search, a workflow's retrieve step).
type Result struct {
	Object       string   `json:"object"`
	ChunkID      string   `json:"chunk_id"`
	DocumentID   string   `json:"document_id"`
	CollectionID string   `json:"collection_id"`
	Title        string   `json:"title"`
	URL          string   `json:"url"`
	Text         string   `json:"text"`
	Start        int      `json:"start"`
	End          int      `json:"end"`
	Score        float64  `json:"score"`
	VectorScore  *float32 `json:"vector_score"`
	KeywordScore *float64 `json:"keyword_score"`
	RerankScore  *float64 `json:"rerank_score,omitempty"`
}

// Result is the hit as the API gives it.
func (h Hit) Result() Result {
	return Result{Object: "search_result", ChunkID: ChunkRef(h.Chunk.ID), DocumentID: h.Chunk.DocumentID, CollectionID: h.Chunk.CollectionID,
		Title: h.Document.Title, URL: h.Document.URL, Text: h.Chunk.Text, Start: h.Chunk.Start, End: h.Chunk.End,
		Score: h.Score, VectorScore: h.Vector, KeywordScore: h.Keyword, RerankScore: h.Rerank}
}
