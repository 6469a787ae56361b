// Package inferencetest holds test helpers for code that calls an
// inference backend.
package inferencetest

import (
	"hash/fnv"
	"math"
	"strings"
)

// WordVectors embeds each text as a normalised bag of hashed words in dims
// dimensions (words lower-cased, trimmed of . , ? ! and :): texts that
// share words are close, as a real embedding model would have them, with
// no model to load.
func WordVectors(texts []string, dims int) [][]float32 {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, dims)
		for _, w := range strings.Fields(strings.ToLower(t)) {
			f := fnv.New32a()
			f.Write([]byte(strings.Trim(w, ".,?!:")))
			v[f.Sum32()%uint32(dims)]++
		}
		var n float64
		for _, x := range v {
			n += float64(x * x)
		}
		if n > 0 {
			for j := range v {
				v[j] /= float32(math.Sqrt(n))
			}
		}
		out[i] = v
	}
	return out
}
