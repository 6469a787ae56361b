// Package convert turns Hugging Face model directories into GGUF files that
// llama.cpp can load.
//
// # BERT embedding models
//
// BERT converts a sentence-transformers style BERT directory, such as
// sentence-transformers/all-MiniLM-L6-v2, into a GGUF with architecture
// "bert", reproducing what llama.cpp's convert_hf_to_gguf.py (BertModel)
// writes with its default f16 output type.
//
// Input directory:
//
//	config.json              required: model_type "bert", hidden_size,
//	                         intermediate_size, num_hidden_layers,
//	                         num_attention_heads, max_position_embeddings,
//	                         vocab_size, type_vocab_size, layer_norm_eps
//	model.safetensors        required (or model.safetensors.index.json with
//	                         shards); F32, F16 or BF16 tensors
//	tokenizer.json           required: a WordPiece tokenizer
//	tokenizer_config.json    optional: cls/sep/unk/pad/mask token names
//	modules.json,            optional: sentence-transformers pooling
//	1_Pooling/config.json    (mean -> 1, cls -> 2, lasttoken -> 3)
//
// Output metadata: bert.{context_length, embedding_length,
// feed_forward_length, block_count, attention.head_count,
// attention.layer_norm_epsilon, attention.causal=false, pooling_type},
// general.file_type=1 (mostly F16), tokenizer.ggml.model="bert" with the
// WordPiece vocabulary in llama.cpp's "phantom space" form (a "##x"
// continuation becomes "x", a special token such as "[CLS]" is unchanged,
// any other token gets a "▁" prefix), token types, token_type_count, the
// cls/sep/unk/pad/mask (plus bos=cls, eos=sep) ids and the add_bos/add_eos/
// add_sep flags derived from the tokenizer's TemplateProcessing, as gguf-py's
// SpecialVocab does.
//
// Tensors are renamed to llama.cpp's names (token_embd, token_types,
// position_embd, token_embd_norm, blk.N.attn_{q,k,v}, blk.N.attn_output,
// blk.N.attn_output_norm, blk.N.ffn_{up,down}, blk.N.layer_output_norm).
// Like convert_hf_to_gguf.py, 2-D weight matrices are stored as F16 (rounded
// to nearest even) except position_embd and token_types, which stay F32
// along with every 1-D tensor. The pooler, position_ids and masked-LM /
// next-sentence heads are dropped; any other unexpected tensor is an error.
package convert

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/gguf"
)

// llama.cpp token types.
const (
	tokNormal      = 1
	tokControl     = 3
	tokUserDefined = 4
)

// llama.cpp pooling types (enum llama_pooling_type).
const (
	poolingMean = 1
	poolingCLS  = 2
	poolingLast = 3
)

type bertConfig struct {
	ModelType             string   `json:"model_type"`
	Architectures         []string `json:"architectures"`
	HiddenSize            int      `json:"hidden_size"`
	IntermediateSize      int      `json:"intermediate_size"`
	NumHiddenLayers       int      `json:"num_hidden_layers"`
	NumAttentionHeads     int      `json:"num_attention_heads"`
	MaxPositionEmbeddings int      `json:"max_position_embeddings"`
	VocabSize             int      `json:"vocab_size"`
	TypeVocabSize         *int     `json:"type_vocab_size"`
	LayerNormEps          *float64 `json:"layer_norm_eps"`
	HiddenAct             string   `json:"hidden_act"`
	PositionEmbeddingType string   `json:"position_embedding_type"`
}

// BERT converts the Hugging Face BERT model in srcDir to a GGUF file at
// outPath (written atomically). progress, if not nil, is called with
// (0, total) before the first tensor and (i, total) after the i-th of total
// tensors is written. Errors name the offending file: a missing or invalid
// config.json, tokenizer.json or safetensors file, a model that is not BERT
// (model_type, non-absolute position embeddings, non-GELU activation), a
// tokenizer that is not WordPiece, a missing tensor, a tensor whose shape
// disagrees with config.json, an unexpected tensor, or an I/O failure.
func BERT(srcDir, outPath string, progress func(done, total int)) error {
	if progress == nil {
		progress = func(int, int) {}
	}
	cfgPath := filepath.Join(srcDir, "config.json")
	var cfg bertConfig
	if err := readJSON(cfgPath, &cfg); err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	if err := cfg.validate(); err != nil {
		return fmt.Errorf("convert: %s: %w", cfgPath, err)
	}
	pooling, err := readPooling(srcDir)
	if err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	vocab, err := readWordPiece(srcDir, cfg.VocabSize)
	if err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	st, err := openModelSafetensors(srcDir)
	if err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	defer st.Close()
	plan, err := planBERTTensors(st, &cfg)
	if err != nil {
		return fmt.Errorf("convert: %s: %w", srcDir, err)
	}

	w := gguf.NewWriter()
	name := filepath.Base(filepath.Clean(srcDir))
	w.SetString("general.architecture", "bert")
	w.SetString("general.type", "model")
	w.SetString("general.name", name)
	w.SetUint32("bert.block_count", uint32(cfg.NumHiddenLayers))
	w.SetUint32("bert.context_length", uint32(cfg.MaxPositionEmbeddings))
	w.SetUint32("bert.embedding_length", uint32(cfg.HiddenSize))
	w.SetUint32("bert.feed_forward_length", uint32(cfg.IntermediateSize))
	w.SetUint32("bert.attention.head_count", uint32(cfg.NumAttentionHeads))
	eps := 1e-12
	if cfg.LayerNormEps != nil {
		eps = *cfg.LayerNormEps
	}
	w.SetFloat32("bert.attention.layer_norm_epsilon", float32(eps))
	w.SetUint32("general.file_type", gguf.FileTypeMostlyF16)
	w.SetBool("bert.attention.causal", false)
	if pooling != 0 {
		w.SetUint32("bert.pooling_type", uint32(pooling))
	}
	typeVocab := 1
	if cfg.TypeVocabSize != nil {
		typeVocab = *cfg.TypeVocabSize
	}
	w.SetUint32("tokenizer.ggml.token_type_count", uint32(typeVocab))
	w.SetString("tokenizer.ggml.model", "bert")
	// llama.cpp ignores the pre-tokenizer name for WordPiece vocabularies.
	w.SetString("tokenizer.ggml.pre", "default")
	w.SetStrings("tokenizer.ggml.tokens", vocab.tokens)
	w.SetInt32s("tokenizer.ggml.token_type", vocab.types)
	for _, sp := range vocab.special {
		w.SetUint32("tokenizer.ggml."+sp.key, uint32(sp.id))
	}
	if vocab.addBOS != nil {
		w.SetBool("tokenizer.ggml.add_bos_token", *vocab.addBOS)
	}
	if vocab.addEOS != nil {
		w.SetBool("tokenizer.ggml.add_eos_token", *vocab.addEOS)
	}
	if vocab.addSEP != nil {
		w.SetBool("tokenizer.ggml.add_sep_token", *vocab.addSEP)
	}
	w.SetUint32("general.quantization_version", 2)

	total := len(plan)
	done := 0
	for _, p := range plan {
		dims := make([]uint64, len(p.src.shape))
		for i, d := range p.src.shape { // ggml order is reversed
			dims[len(dims)-1-i] = d
		}
		err := w.AddTensor(p.name, p.typ, dims, func(out io.Writer) error {
			if err := p.src.writeAs(out, p.typ); err != nil {
				return err
			}
			done++
			progress(done, total)
			return nil
		})
		if err != nil {
			return fmt.Errorf("convert: %w", err)
		}
	}
	progress(0, total)
	if err := w.WriteFile(outPath); err != nil {
		return fmt.Errorf("convert: writing %s: %w", outPath, err)
	}
	return nil
}

func (c *bertConfig) validate() error {
	if c.ModelType != "" && c.ModelType != "bert" {
		return fmt.Errorf("model_type is %q; only \"bert\" is supported", c.ModelType)
	}
	if c.PositionEmbeddingType != "" && c.PositionEmbeddingType != "absolute" {
		return fmt.Errorf("position_embedding_type %q is not supported (want absolute)", c.PositionEmbeddingType)
	}
	if c.HiddenAct != "" && !strings.HasPrefix(c.HiddenAct, "gelu") {
		return fmt.Errorf("hidden_act %q is not supported (llama.cpp's BERT uses GELU)", c.HiddenAct)
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"hidden_size", c.HiddenSize}, {"intermediate_size", c.IntermediateSize},
		{"num_hidden_layers", c.NumHiddenLayers}, {"num_attention_heads", c.NumAttentionHeads},
		{"max_position_embeddings", c.MaxPositionEmbeddings}, {"vocab_size", c.VocabSize},
	} {
		if f.v <= 0 {
			return fmt.Errorf("%s is missing or not positive", f.name)
		}
	}
	if c.HiddenSize%c.NumAttentionHeads != 0 {
		return fmt.Errorf("hidden_size %d is not a multiple of num_attention_heads %d", c.HiddenSize, c.NumAttentionHeads)
	}
	if c.TypeVocabSize != nil && *c.TypeVocabSize <= 0 {
		return fmt.Errorf("type_vocab_size %d is not positive", *c.TypeVocabSize)
	}
	return nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: invalid JSON: %w", path, err)
	}
	return nil
}

// readPooling returns the llama.cpp pooling type from the sentence-transformers
// pooling module, or 0 when the directory has none.
func readPooling(dir string) (int, error) {
	poolDir := ""
	modPath := filepath.Join(dir, "modules.json")
	var mods []struct {
		Path string `json:"path"`
		Type string `json:"type"`
	}
	if err := readJSON(modPath, &mods); err == nil {
		for _, m := range mods {
			if m.Type == "sentence_transformers.models.Pooling" {
				poolDir = filepath.Join(dir, filepath.Clean("/" + m.Path)[1:])
			}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return 0, err
	} else if _, err := os.Stat(filepath.Join(dir, "1_Pooling", "config.json")); err == nil {
		poolDir = filepath.Join(dir, "1_Pooling")
	}
	if poolDir == "" {
		return 0, nil
	}
	path := filepath.Join(poolDir, "config.json")
	var pc struct {
		Mean     bool `json:"pooling_mode_mean_tokens"`
		CLS      bool `json:"pooling_mode_cls_token"`
		Last     bool `json:"pooling_mode_lasttoken"`
		Max      bool `json:"pooling_mode_max_tokens"`
		MeanSqrt bool `json:"pooling_mode_mean_sqrt_len_tokens"`
		Weighted bool `json:"pooling_mode_weightedmean_tokens"`
	}
	if err := readJSON(path, &pc); err != nil {
		return 0, err
	}
	switch {
	case pc.Mean:
		return poolingMean, nil
	case pc.CLS:
		return poolingCLS, nil
	case pc.Last:
		return poolingLast, nil
	}
	return 0, fmt.Errorf("%s: unsupported pooling mode (llama.cpp supports mean, cls and lasttoken)", path)
}

type specialID struct {
	key string // suffix after "tokenizer.ggml."
	id  int
}

type wordPiece struct {
	tokens                 []string
	types                  []int32
	special                []specialID
	addBOS, addEOS, addSEP *bool // nil: not specified
}

// templatePiece is one element of a tokenizers TemplateProcessing template.
type templatePiece struct {
	SpecialToken *struct {
		ID string `json:"id"`
	} `json:"SpecialToken"`
	Sequence *struct {
		ID string `json:"id"`
	} `json:"Sequence"`
}

func (p templatePiece) special() string {
	if p.SpecialToken == nil {
		return ""
	}
	return p.SpecialToken.ID
}

// pairAddsSep decides add_sep_token from the pair template the way gguf-py
// does: strip the leading/trailing specials shared with the single template,
// then look at what separates sequence A from sequence B. It returns nil
// when the template does not have that shape.
func pairAddsSep(pair []templatePiece, first, last, sep, eos string) *bool {
	if len(pair) == 0 {
		return nil
	}
	if first != "" && pair[0].special() == first {
		pair = pair[1:]
	}
	if last != "" && len(pair) > 0 && pair[len(pair)-1].special() == last {
		pair = pair[:len(pair)-1]
	}
	if len(pair) < 3 || pair[0].Sequence == nil || pair[0].Sequence.ID != "A" ||
		pair[len(pair)-1].Sequence == nil || pair[len(pair)-1].Sequence.ID != "B" {
		return nil
	}
	mid := pair[1 : len(pair)-1]
	isSep := func(s string) bool { return s != "" && (s == sep || s == eos) }
	add := isSep(mid[0].special()) && last == ""
	if len(mid) == 2 && isSep(mid[1].special()) {
		add = true
	}
	return &add
}

// readWordPiece builds the llama.cpp vocabulary from tokenizer.json (and
// tokenizer_config.json), padded to vocabSize like convert_hf_to_gguf.py.
func readWordPiece(dir string, vocabSize int) (*wordPiece, error) {
	tokPath := filepath.Join(dir, "tokenizer.json")
	var tj struct {
		Model struct {
			Type  string         `json:"type"`
			Vocab map[string]int `json:"vocab"`
		} `json:"model"`
		AddedTokens []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
			Special bool   `json:"special"`
		} `json:"added_tokens"`
		PostProcessor json.RawMessage `json:"post_processor"`
	}
	if err := readJSON(tokPath, &tj); err != nil {
		return nil, err
	}
	if tj.Model.Type != "WordPiece" {
		return nil, fmt.Errorf("%s: tokenizer model is %q, want WordPiece", tokPath, tj.Model.Type)
	}
	if len(tj.Model.Vocab) == 0 {
		return nil, fmt.Errorf("%s: empty vocabulary", tokPath)
	}
	byID := map[int]string{}
	add := func(tok string, id int) error {
		if id < 0 || id >= vocabSize {
			return fmt.Errorf("%s: token %q has id %d outside the model's vocab_size %d", tokPath, tok, id, vocabSize)
		}
		if prev, ok := byID[id]; ok && prev != tok {
			return fmt.Errorf("%s: tokens %q and %q share id %d", tokPath, prev, tok, id)
		}
		byID[id] = tok
		return nil
	}
	for tok, id := range tj.Model.Vocab {
		if err := add(tok, id); err != nil {
			return nil, err
		}
	}
	added := map[int]bool{} // id -> special
	addedByContent := map[string]int{}
	for _, at := range tj.AddedTokens {
		if err := add(at.Content, at.ID); err != nil {
			return nil, err
		}
		added[at.ID] = at.Special
		addedByContent[at.Content] = at.ID
	}

	v := &wordPiece{tokens: make([]string, vocabSize), types: make([]int32, vocabSize)}
	for id := range vocabSize {
		tok, ok := byID[id]
		typ := int32(tokNormal)
		switch {
		case !ok:
			tok, typ = fmt.Sprintf("[PAD%d]", id), tokUserDefined
		case added[id]:
			typ = tokControl
		default:
			if _, isAdded := added[id]; isAdded {
				typ = tokUserDefined
			}
		}
		v.tokens[id] = phantomSpace(tok, typ)
		v.types[id] = typ
	}

	// Special tokens, as gguf-py's SpecialVocab finds them.
	cfgPath := filepath.Join(dir, "tokenizer_config.json")
	var tc map[string]json.RawMessage
	if err := readJSON(cfgPath, &tc); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	names := map[string]string{"cls": "[CLS]", "sep": "[SEP]", "unk": "[UNK]", "pad": "[PAD]", "mask": "[MASK]"}
	for typ := range names {
		if s := configToken(tc[typ+"_token"]); s != "" {
			names[typ] = s
		}
	}
	names["bos"], names["eos"] = names["cls"], names["sep"]
	if s := configToken(tc["bos_token"]); s != "" {
		names["bos"] = s
	}
	if s := configToken(tc["eos_token"]); s != "" {
		names["eos"] = s
	}
	keys := map[string]string{"bos": "bos_token_id", "eos": "eos_token_id", "unk": "unknown_token_id",
		"sep": "seperator_token_id", "pad": "padding_token_id", "cls": "cls_token_id", "mask": "mask_token_id"}
	for _, typ := range []string{"bos", "eos", "unk", "sep", "pad", "cls", "mask"} {
		id, ok := addedByContent[names[typ]]
		if !ok {
			id, ok = tj.Model.Vocab[names[typ]]
		}
		if ok {
			v.special = append(v.special, specialID{keys[typ], id})
		}
	}
	if !hasSpecial(v.special, "cls_token_id") || !hasSpecial(v.special, "seperator_token_id") {
		return nil, fmt.Errorf("%s: vocabulary lacks the CLS token %q or SEP token %q", tokPath, names["cls"], names["sep"])
	}

	// add_bos/add_eos from a TemplateProcessing post-processor such as
	// "[CLS] $A [SEP]"; explicit tokenizer_config flags win.
	var pp struct {
		Type   string          `json:"type"`
		Single []templatePiece `json:"single"`
		Pair   []templatePiece `json:"pair"`
	}
	if len(tj.PostProcessor) > 0 && json.Unmarshal(tj.PostProcessor, &pp) == nil && pp.Type == "TemplateProcessing" && len(pp.Single) > 1 {
		first, last := pp.Single[0].special(), pp.Single[len(pp.Single)-1].special()
		if first != "" {
			b := first == names["bos"] || first == names["cls"]
			v.addBOS = &b
		}
		if last != "" {
			b := last == names["eos"]
			v.addEOS = &b
		}
		v.addSEP = pairAddsSep(pp.Pair, first, last, names["sep"], names["eos"])
	}
	for key, dst := range map[string]**bool{"add_bos_token": &v.addBOS, "add_eos_token": &v.addEOS, "add_sep_token": &v.addSEP} {
		var b bool
		if raw, ok := tc[key]; ok && json.Unmarshal(raw, &b) == nil {
			*dst = &b
		}
	}
	return v, nil
}

func hasSpecial(s []specialID, key string) bool {
	for _, sp := range s {
		if sp.key == key {
			return true
		}
	}
	return false
}

// configToken reads a token from tokenizer_config.json, which may be a
// string or an AddedToken object with a "content" field.
func configToken(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		return obj.Content
	}
	return ""
}

// phantomSpace maps a WordPiece token to llama.cpp's WPM form: continuation
// pieces lose "##", word-initial pieces gain "▁", and special (control)
// tokens such as [CLS] stay as they are. Like current convert_hf_to_gguf.py,
// bracketed tokens that are not special ("[unused0]") get the prefix too;
// WPM never produces them from text either way.
func phantomSpace(tok string, typ int32) string {
	switch {
	case typ == tokControl:
		return tok
	case strings.HasPrefix(tok, "##"):
		return tok[2:]
	}
	return "\u2581" + tok
}

type plannedTensor struct {
	name string
	typ  gguf.GGMLType
	src  *stTensor
}

var (
	layerRe = regexp.MustCompile(`^encoder\.layer\.(\d+)\.(.+)\.(weight|bias)$`)

	layerNames = map[string]string{
		"attention.self.query":       "attn_q",
		"attention.self.key":         "attn_k",
		"attention.self.value":       "attn_v",
		"attention.output.dense":     "attn_output",
		"attention.output.LayerNorm": "attn_output_norm",
		"intermediate.dense":         "ffn_up",
		"output.dense":               "ffn_down",
		"output.LayerNorm":           "layer_output_norm",
	}
	globalNames = map[string]string{
		"embeddings.word_embeddings.weight":       "token_embd.weight",
		"embeddings.token_type_embeddings.weight": "token_types.weight",
		"embeddings.position_embeddings.weight":   "position_embd.weight",
		"embeddings.LayerNorm.weight":             "token_embd_norm.weight",
		"embeddings.LayerNorm.bias":               "token_embd_norm.bias",
	}
)

// skipTensor reports tensors convert_hf_to_gguf.py drops for BERT.
func skipTensor(name string) bool {
	return name == "embeddings.position_ids" || strings.HasPrefix(name, "pooler.") ||
		strings.HasPrefix(name, "cls.predictions") || strings.HasPrefix(name, "cls.seq_relationship")
}

// planBERTTensors maps, validates and orders the tensors to write.
func planBERTTensors(st *safetensors, cfg *bertConfig) ([]plannedTensor, error) {
	n, ff := uint64(cfg.HiddenSize), uint64(cfg.IntermediateSize)
	typeVocab := uint64(1)
	if cfg.TypeVocabSize != nil {
		typeVocab = uint64(*cfg.TypeVocabSize)
	}
	// Expected GGUF name -> HF-order shape; optional marks those llama.cpp
	// can do without.
	type want struct {
		shape    []uint64
		optional bool
	}
	expect := map[string]want{
		"token_embd.weight":      {[]uint64{uint64(cfg.VocabSize), n}, false},
		"token_types.weight":     {[]uint64{typeVocab, n}, true},
		"position_embd.weight":   {[]uint64{uint64(cfg.MaxPositionEmbeddings), n}, false},
		"token_embd_norm.weight": {[]uint64{n}, false},
		"token_embd_norm.bias":   {[]uint64{n}, false},
	}
	var order []string
	order = append(order, "token_embd.weight", "token_types.weight", "position_embd.weight", "token_embd_norm.weight", "token_embd_norm.bias")
	for i := 0; i < cfg.NumHiddenLayers; i++ {
		p := "blk." + strconv.Itoa(i) + "."
		for _, e := range []struct {
			name     string
			shape    []uint64
			optional bool
		}{
			{"attn_q.weight", []uint64{n, n}, false}, {"attn_q.bias", []uint64{n}, false},
			{"attn_k.weight", []uint64{n, n}, false}, {"attn_k.bias", []uint64{n}, false},
			{"attn_v.weight", []uint64{n, n}, false}, {"attn_v.bias", []uint64{n}, false},
			{"attn_output.weight", []uint64{n, n}, false}, {"attn_output.bias", []uint64{n}, true},
			{"attn_output_norm.weight", []uint64{n}, false}, {"attn_output_norm.bias", []uint64{n}, false},
			{"ffn_up.weight", []uint64{ff, n}, false}, {"ffn_up.bias", []uint64{ff}, true},
			{"ffn_down.weight", []uint64{n, ff}, false}, {"ffn_down.bias", []uint64{n}, true},
			{"layer_output_norm.weight", []uint64{n}, false}, {"layer_output_norm.bias", []uint64{n}, false},
		} {
			expect[p+e.name] = want{e.shape, e.optional}
			order = append(order, p+e.name)
		}
	}

	found := map[string]*stTensor{}
	for _, hf := range st.names() {
		name := strings.TrimPrefix(hf, "bert.")
		if strings.HasSuffix(name, ".gamma") {
			name = strings.TrimSuffix(name, ".gamma") + ".weight"
		} else if strings.HasSuffix(name, ".beta") {
			name = strings.TrimSuffix(name, ".beta") + ".bias"
		}
		if skipTensor(name) {
			continue
		}
		gg, ok := globalNames[name]
		if m := layerRe.FindStringSubmatch(name); !ok && m != nil {
			if short, ok2 := layerNames[m[2]]; ok2 {
				gg, ok = "blk."+m[1]+"."+short+"."+m[3], true
			}
		}
		w, known := expect[gg]
		if !ok || !known {
			return nil, fmt.Errorf("unexpected tensor %q in %s", hf, st.tensors[hf].file.path)
		}
		t := st.tensors[hf]
		if dtypeSize(t.dtype) == 0 {
			return nil, fmt.Errorf("tensor %q has unsupported dtype %s (want F32, F16 or BF16)", hf, t.dtype)
		}
		if !equalShape(t.shape, w.shape) {
			return nil, fmt.Errorf("tensor %q has shape %v, config.json implies %v", hf, t.shape, w.shape)
		}
		if _, dup := found[gg]; dup {
			return nil, fmt.Errorf("tensor %q appears twice (with and without a \"bert.\" prefix?)", gg)
		}
		found[gg] = t
	}
	var missing []string
	var plan []plannedTensor
	for _, gg := range order {
		t, ok := found[gg]
		if !ok {
			if !expect[gg].optional {
				missing = append(missing, gg)
			}
			continue
		}
		typ := gguf.TypeF32
		if len(t.shape) == 2 && gg != "position_embd.weight" && gg != "token_types.weight" {
			typ = gguf.TypeF16
		}
		plan = append(plan, plannedTensor{name: gg, typ: typ, src: t})
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		if len(missing) > 5 {
			missing = append(missing[:5], fmt.Sprintf("and %d more", len(missing)-5))
		}
		return nil, fmt.Errorf("missing tensors (llama.cpp names): %s", strings.Join(missing, ", "))
	}
	return plan, nil
}

func equalShape(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
