// chat_shim.h: a C interface to llama.cpp's chat code (common/chat.h):
// Jinja chat templates, tool-call grammars and output parsers. Requests and
// results cross as JSON text; strings returned are malloc'd and freed by
// the caller with free().
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

struct llama_model;
typedef struct sov_chat sov_chat;
typedef struct sov_chat_parser sov_chat_parser;

// sov_chat_new loads the chat templates of model, or tmpl when it is not
// empty (model may then be NULL; bos and eos name the special tokens).
sov_chat *sov_chat_new(const struct llama_model *model, const char *tmpl, const char *bos, const char *eos, char **err);
void sov_chat_free(sov_chat *c);

// sov_chat_source returns the template's source ("" when none).
char *sov_chat_source(sov_chat *c);

// sov_chat_apply renders a request (JSON: messages, tools, tool_choice,
// parallel_tool_calls, add_generation_prompt, enable_thinking, now) and
// returns the prompt and how to constrain and parse the output (JSON).
char *sov_chat_apply(sov_chat *c, const char *request, char **err);

// sov_chat_parser_new prepares a parser from the "parse" object of an
// apply result.
sov_chat_parser *sov_chat_parser_new(const char *params, char **err);
void sov_chat_parser_free(sov_chat_parser *p);

// sov_chat_parse parses generated text into an OpenAI assistant message
// (JSON: content, reasoning_content, tool_calls). partial: more text follows.
char *sov_chat_parse(sov_chat_parser *p, const char *text, int partial, char **err);

// sov_sampler_accept_safe feeds token to sampler s (a grammar, for
// prefilling it with text the template already placed in the prompt); it
// returns 0 when the sampler rejects the token instead of throwing.
struct llama_sampler;
int sov_sampler_accept_safe(struct llama_sampler *s, int token);

#ifdef __cplusplus
}
#endif
