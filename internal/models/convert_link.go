package models

import "github.com/sovereign-ai/sovereign/internal/convert"

// convertBERT converts a Hugging Face BERT directory to GGUF; a variable so
// tests can stand in for it.
var convertBERT = convert.BERT
