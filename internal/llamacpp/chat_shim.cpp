// chat_shim.cpp implements chat_shim.h over llama.cpp's common/chat.h. It is
// the binding's only C++: exceptions stop here and become error strings.
#include "chat_shim.h"

#include "llama-common/chat.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

struct sov_chat {
    common_chat_templates_ptr tmpls;
};

struct sov_chat_parser {
    common_chat_parser_params params;
};

static char *sov_dup(const std::string &s) {
    char *p = (char *) malloc(s.size() + 1);
    memcpy(p, s.data(), s.size());
    p[s.size()] = 0;
    return p;
}

template <typename F> static auto sov_guard(char **err, F f) -> decltype(f()) {
    try {
        return f();
    } catch (const std::exception &e) {
        *err = sov_dup(e.what());
    } catch (...) {
        *err = sov_dup("unknown error in llama.cpp's chat code");
    }
    return nullptr;
}

extern "C" {

sov_chat *sov_chat_new(const struct llama_model *model, const char *tmpl, const char *bos, const char *eos, char **err) {
    return sov_guard(err, [&]() -> sov_chat * {
        return new sov_chat{common_chat_templates_init(model, tmpl, bos, eos)};
    });
}

void sov_chat_free(sov_chat *c) { delete c; }

char *sov_chat_source(sov_chat *c) {
    char *err = nullptr;
    char *out = sov_guard(&err, [&]() -> char * { return sov_dup(common_chat_templates_source(c->tmpls.get())); });
    free(err);
    return out ? out : sov_dup("");
}

char *sov_chat_apply(sov_chat *c, const char *request, char **err) {
    return sov_guard(err, [&]() -> char * {
        common_json body = common_json::parse(request);
        common_chat_templates_inputs in;
        in.use_jinja = true;
        in.messages  = common_chat_msgs_parse_oaicompat(body.at("messages"));
        if (body.contains("tools") && !body.at("tools").is_null()) {
            in.tools = common_chat_tools_parse_oaicompat(body.at("tools"));
        }
        if (body.contains("tool_choice")) {
            in.tool_choice = common_chat_tool_choice_parse_oaicompat(body.at("tool_choice").get<std::string>());
        }
        in.parallel_tool_calls   = body.value("parallel_tool_calls", false);
        in.add_generation_prompt = body.value("add_generation_prompt", true);
        in.enable_thinking       = body.value("enable_thinking", true);
        if (body.contains("now")) {
            in.now = std::chrono::system_clock::time_point(std::chrono::seconds(body.at("now").get<int64_t>()));
        }
        common_chat_params p = common_chat_templates_apply(c->tmpls.get(), in);

        common_json triggers = common_json::array();
        for (const auto &t : p.grammar_triggers) {
            common_json o = common_json::object();
            o["type"]     = (int) t.type;
            o["value"]    = t.value;
            o["token"]    = (int) t.token;
            triggers.push_back(o);
        }
        common_json parse = common_json::object();
        parse["format"]            = (int) p.format;
        parse["generation_prompt"] = p.generation_prompt;
        parse["parser"]            = p.parser;
        parse["parse_tool_calls"]  = !in.tools.empty() && in.tool_choice != COMMON_CHAT_TOOL_CHOICE_NONE;

        common_json out = common_json::object();
        out["prompt"]            = p.prompt;
        out["generation_prompt"] = p.generation_prompt;
        out["format"]           = std::string(common_chat_format_name(p.format));
        out["grammar"]          = p.grammar;
        out["grammar_lazy"]     = p.grammar_lazy;
        out["grammar_triggers"] = triggers;
        out["preserved_tokens"] = p.preserved_tokens;
        out["additional_stops"] = p.additional_stops;
        out["parse"]            = parse;
        return sov_dup(out.dump());
    });
}

sov_chat_parser *sov_chat_parser_new(const char *params, char **err) {
    return sov_guard(err, [&]() -> sov_chat_parser * {
        common_json j = common_json::parse(params);
        auto *p       = new sov_chat_parser{};
        p->params.format            = (common_chat_format) j.value("format", 0);
        p->params.generation_prompt = j.value("generation_prompt", std::string());
        p->params.parse_tool_calls  = j.value("parse_tool_calls", true);
        p->params.reasoning_format  = j.value("reasoning", false) ? COMMON_REASONING_FORMAT_AUTO : COMMON_REASONING_FORMAT_NONE;
        std::string arena           = j.value("parser", std::string());
        if (!arena.empty()) {
            p->params.parser.load(arena);
        }
        return p;
    });
}

void sov_chat_parser_free(sov_chat_parser *p) { delete p; }

char *sov_chat_parse(sov_chat_parser *p, const char *text, int partial, char **err) {
    return sov_guard(err, [&]() -> char * {
        common_chat_msg msg = common_chat_parse(text, partial != 0, p->params);
        return sov_dup(msg.to_json_oaicompat().dump());
    });
}

int sov_sampler_accept_safe(struct llama_sampler *s, int token) {
    try {
        llama_sampler_accept(s, (llama_token) token);
        return 1;
    } catch (...) {
        return 0;
    }
}

}  // extern "C"
