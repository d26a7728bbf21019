// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Chat templates against the models' own Jinja templates.
//
// The reference data below is generated (tools/chat_template/gen_test_data.py rewrites it):
// - each template is the "chat_template" of the named model's tokenizer_config.json (or the
//   tokenizer.chat_template of a GGUF file), copied verbatim as test data;
// - each expected string is that template rendered by Python jinja2 3.1.6 set up as
//   transformers' apply_chat_template does (trim_blocks, lstrip_blocks, raise_exception), with
//   the model's real BOS / EOS texts. @huggingface/jinja 0.5.11 renders the same bytes, except
//   for Llama 2 with an empty system message, where it drops the <<SYS>> block that Python
//   (and so transformers) keeps.

#include <gtest/gtest.h>
#include <opencv2/core.hpp>
#include <opencv2/dnn/chat_template.hpp>
#include <opencv2/dnn/gguf.hpp>

#include <functional>
#include <string>
#include <vector>

#include "test_common.hpp"
#include "../../modules/dnn/src/llm/generation/chat_template.hpp"

using cv::dnn::llm::ChatMessage;
using cv::dnn::llm::ChatTemplate;
using cv::dnn::llm::ChatTemplateFamily;

namespace {

enum class Conversation { WithSystem, NoSystem, EndsWithAssistant, EmptySystem };

const char* conversationName(Conversation which)
{
    switch (which)
    {
    case Conversation::WithSystem: return "system, user, assistant, user";
    case Conversation::NoSystem: return "user, assistant, user";
    case Conversation::EndsWithAssistant: return "system, user, assistant";
    case Conversation::EmptySystem: return "empty system, user, assistant, user";
    }
    return "?";
}

// The assistant's reply has spaces around it: families that trim content and families that
// keep it differ there.
std::vector<ChatMessage> conversation(Conversation which)
{
    const ChatMessage system{"system", "You are a helpful assistant."};
    const ChatMessage user1{"user", "Hello! Gr\xC3\xBC\xC3\x9F dich \xF0\x9F\x91\x8B"};  // "Grüß dich 👋"
    const ChatMessage assistant1{"assistant", "  Hi there, how can I help?  "};
    const ChatMessage user2{"user", "What is 2+2?"};
    switch (which)
    {
    case Conversation::WithSystem: return {system, user1, assistant1, user2};
    case Conversation::NoSystem: return {user1, assistant1, user2};
    case Conversation::EndsWithAssistant: return {system, user1, assistant1};
    case Conversation::EmptySystem: return {ChatMessage{"system", ""}, user1, assistant1, user2};
    }
    return {};
}

struct ReferenceTemplate
{
    const char* source;      // where the Jinja text comes from
    const char* familyName;  // the family fromJinja() must find
    const char* bosToken;    // the model's BOS text, as bos_token when rendering
    const char* eosToken;    // the model's EOS text, as eos_token when rendering
    const char* jinja;
};

struct ReferenceRendering
{
    const ReferenceTemplate* reference;
    Conversation conversation;
    bool addGenerationPrompt;
    const char* expected;    // the template's output
};

// ---- generated reference data: begin ----
// meta-llama/Llama-2-7b-chat-hf tokenizer_config.json
const ReferenceTemplate kLlama2Chat = {
    "meta-llama/Llama-2-7b-chat-hf tokenizer_config.json", "llama2", "<s>", "</s>",
    R"jinja({% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %})jinja"
    R"jinja({% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %})jinja"
    R"jinja({% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }})jinja"
    R"jinja({% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\n' + system_message + '\n<</SYS>>\n\n' + message['content'] %})jinja"
    R"jinja({% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %})jinja"
    R"jinja({{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %})jinja"
    R"jinja({{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %})jinja"};

// meta-llama/Meta-Llama-3-8B-Instruct tokenizer_config.json
const ReferenceTemplate kLlama3Instruct = {
    "meta-llama/Meta-Llama-3-8B-Instruct tokenizer_config.json", "llama3", "<|begin_of_text|>", "<|eot_id|>",
    R"jinja({% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>
)jinja"
    R"jinja(
)jinja"
    R"jinja('+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %})jinja"
    R"jinja({% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>
)jinja"
    R"jinja(
)jinja"
    R"jinja(' }}{% endif %})jinja"};

// teknium/OpenHermes-2.5-Mistral-7B tokenizer_config.json
const ReferenceTemplate kOpenHermesChatML = {
    "teknium/OpenHermes-2.5-Mistral-7B tokenizer_config.json", "chatml", "<s>", "<|im_end|>",
    R"jinja({% for message in messages %}{{'<|im_start|>' + message['role'] + '
)jinja"
    R"jinja(' + message['content'] + '<|im_end|>' + '
)jinja"
    R"jinja('}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant
)jinja"
    R"jinja(' }}{% endif %})jinja"};

// Qwen/Qwen2-7B-Instruct tokenizer_config.json
const ReferenceTemplate kQwen2Instruct = {
    "Qwen/Qwen2-7B-Instruct tokenizer_config.json", "chatml", "", "<|im_end|>",
    R"jinja({% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system
)jinja"
    R"jinja(You are a helpful assistant.<|im_end|>
)jinja"
    R"jinja(' }}{% endif %}{{'<|im_start|>' + message['role'] + '
)jinja"
    R"jinja(' + message['content'] + '<|im_end|>' + '
)jinja"
    R"jinja('}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant
)jinja"
    R"jinja(' }}{% endif %})jinja"};

// mistralai/Mistral-7B-Instruct-v0.2 tokenizer_config.json (2024 revision with system message)
const ReferenceTemplate kMistral7BInstructV02 = {
    "mistralai/Mistral-7B-Instruct-v0.2 tokenizer_config.json (2024 revision with system message)", "mistral", "<s>", "</s>",
    R"jinja({%- if messages[0]['role'] == 'system' %}
)jinja"
    R"jinja(    {%- set system_message = messages[0]['content'] %}
)jinja"
    R"jinja(    {%- set loop_messages = messages[1:] %}
)jinja"
    R"jinja({%- else %}
)jinja"
    R"jinja(    {%- set loop_messages = messages %}
)jinja"
    R"jinja({%- endif %}
)jinja"
    R"jinja(
)jinja"
    R"jinja({{- bos_token }}
)jinja"
    R"jinja({%- for message in loop_messages %}
)jinja"
    R"jinja(    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
)jinja"
    R"jinja(        {{- raise_exception('After the optional system message, conversation roles must alternate user/assistant/user/assistant/...') }}
)jinja"
    R"jinja(    {%- endif %}
)jinja"
    R"jinja(    {%- if message['role'] == 'user' %}
)jinja"
    R"jinja(        {%- if loop.first and system_message is defined %}
)jinja"
    R"jinja(            {{- ' [INST] ' + system_message + '\n\n' + message['content'] + ' [/INST]' }}
)jinja"
    R"jinja(        {%- else %}
)jinja"
    R"jinja(            {{- ' [INST] ' + message['content'] + ' [/INST]' }}
)jinja"
    R"jinja(        {%- endif %}
)jinja"
    R"jinja(    {%- elif message['role'] == 'assistant' %}
)jinja"
    R"jinja(        {{- ' ' + message['content'] + eos_token}}
)jinja"
    R"jinja(    {%- else %}
)jinja"
    R"jinja(        {{- raise_exception('Only user and assistant roles are supported, with the exception of an initial optional system message!') }}
)jinja"
    R"jinja(    {%- endif %}
)jinja"
    R"jinja({%- endfor %}
)jinja"};

// mistralai/Mistral-7B-Instruct-v0.2 tokenizer_config.json (original 2023 revision, no system message)
const ReferenceTemplate kMistral7BInstructV02Original = {
    "mistralai/Mistral-7B-Instruct-v0.2 tokenizer_config.json (original 2023 revision, no system message)", "mistral", "<s>", "</s>",
    R"jinja({{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %})jinja"
    R"jinja({{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }})jinja"
    R"jinja({% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }})jinja"
    R"jinja({% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant roles are supported!') }})jinja"
    R"jinja({% endif %}{% endfor %})jinja"};

// microsoft/Phi-3.5-mini-instruct tokenizer_config.json
const ReferenceTemplate kPhi35MiniInstruct = {
    "microsoft/Phi-3.5-mini-instruct tokenizer_config.json", "phi3", "<s>", "<|endoftext|>",
    R"jinja({% for message in messages %}{% if message['role'] == 'system' and message['content'] %}{{'<|system|>
)jinja"
    R"jinja(' + message['content'] + '<|end|>
)jinja"
    R"jinja('}}{% elif message['role'] == 'user' %}{{'<|user|>
)jinja"
    R"jinja(' + message['content'] + '<|end|>
)jinja"
    R"jinja('}}{% elif message['role'] == 'assistant' %}{{'<|assistant|>
)jinja"
    R"jinja(' + message['content'] + '<|end|>
)jinja"
    R"jinja('}}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>
)jinja"
    R"jinja(' }}{% else %}{{ eos_token }}{% endif %})jinja"};

// tokenizer.chat_template of /work/shared/testdata/llama.cpp-vocab/ggml-vocab-phi-3.gguf (Phi-3-mini-4k-instruct, 2024-04)
const ReferenceTemplate kPhi3MiniGGUF = {
    "tokenizer.chat_template of /work/shared/testdata/llama.cpp-vocab/ggml-vocab-phi-3.gguf (Phi-3-mini-4k-instruct, 2024-04)", "phi3", "<s>", "<|endoftext|>",
    R"jinja({{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') %}{{'<|user|>' + '
)jinja"
    R"jinja(' + message['content'] + '<|end|>' + '
)jinja"
    R"jinja(' + '<|assistant|>' + '
)jinja"
    R"jinja('}}{% elif (message['role'] == 'assistant') %}{{message['content'] + '<|end|>' + '
)jinja"
    R"jinja('}}{% endif %}{% endfor %})jinja"};

// google/gemma-7b-it tokenizer_config.json (also gemma-2-*-it)
const ReferenceTemplate kGemma7BIt = {
    "google/gemma-7b-it tokenizer_config.json (also gemma-2-*-it)", "gemma", "<bos>", "<eos>",
    R"jinja({{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }})jinja"
    R"jinja({% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %})jinja"
    R"jinja({{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }})jinja"
    R"jinja({% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %})jinja"
    R"jinja({% endif %}{{ '<start_of_turn>' + role + '
)jinja"
    R"jinja(' + message['content'] | trim + '<end_of_turn>
)jinja"
    R"jinja(' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model
)jinja"
    R"jinja('}}{% endif %})jinja"};

// google/gemma-3-12b-it, as tokenizer.chat_template of ggml-org/gemma-3-12b-it-GGUF
const ReferenceTemplate kGemma3It = {
    "google/gemma-3-12b-it, as tokenizer.chat_template of ggml-org/gemma-3-12b-it-GGUF", "gemma", "<bos>", "<eos>",
    R"jinja({{ bos_token }}
)jinja"
    R"jinja({%- if messages[0]['role'] == 'system' -%}
)jinja"
    R"jinja(    {%- if messages[0]['content'] is string -%}
)jinja"
    R"jinja(        {%- set first_user_prefix = messages[0]['content'] + '
)jinja"
    R"jinja(
)jinja"
    R"jinja(' -%}
)jinja"
    R"jinja(    {%- else -%}
)jinja"
    R"jinja(        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '
)jinja"
    R"jinja(
)jinja"
    R"jinja(' -%}
)jinja"
    R"jinja(    {%- endif -%}
)jinja"
    R"jinja(    {%- set loop_messages = messages[1:] -%}
)jinja"
    R"jinja({%- else -%}
)jinja"
    R"jinja(    {%- set first_user_prefix = "" -%}
)jinja"
    R"jinja(    {%- set loop_messages = messages -%}
)jinja"
    R"jinja({%- endif -%}
)jinja"
    R"jinja({%- for message in loop_messages -%}
)jinja"
    R"jinja(    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
)jinja"
    R"jinja(        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
)jinja"
    R"jinja(    {%- endif -%}
)jinja"
    R"jinja(    {%- if (message['role'] == 'assistant') -%}
)jinja"
    R"jinja(        {%- set role = "model" -%}
)jinja"
    R"jinja(    {%- else -%}
)jinja"
    R"jinja(        {%- set role = message['role'] -%}
)jinja"
    R"jinja(    {%- endif -%}
)jinja"
    R"jinja(    {{ '<start_of_turn>' + role + '
)jinja"
    R"jinja(' + (first_user_prefix if loop.first else "") }}
)jinja"
    R"jinja(    {%- if message['content'] is string -%}
)jinja"
    R"jinja(        {{ message['content'] | trim }}
)jinja"
    R"jinja(    {%- elif message['content'] is iterable -%}
)jinja"
    R"jinja(        {%- for item in message['content'] -%}
)jinja"
    R"jinja(            {%- if item['type'] == 'image' -%}
)jinja"
    R"jinja(                {{ '<start_of_image>' }}
)jinja"
    R"jinja(            {%- elif item['type'] == 'text' -%}
)jinja"
    R"jinja(                {{ item['text'] | trim }}
)jinja"
    R"jinja(            {%- endif -%}
)jinja"
    R"jinja(        {%- endfor -%}
)jinja"
    R"jinja(    {%- else -%}
)jinja"
    R"jinja(        {{ raise_exception("Invalid content type") }}
)jinja"
    R"jinja(    {%- endif -%}
)jinja"
    R"jinja(    {{ '<end_of_turn>
)jinja"
    R"jinja(' }}
)jinja"
    R"jinja({%- endfor -%}
)jinja"
    R"jinja({%- if add_generation_prompt -%}
)jinja"
    R"jinja(    {{'<start_of_turn>model
)jinja"
    R"jinja('}}
)jinja"
    R"jinja({%- endif -%}
)jinja"};

// HuggingFaceH4/zephyr-7b-beta tokenizer_config.json (also TinyLlama/TinyLlama-1.1B-Chat-v1.0)
const ReferenceTemplate kZephyr7BBeta = {
    "HuggingFaceH4/zephyr-7b-beta tokenizer_config.json (also TinyLlama/TinyLlama-1.1B-Chat-v1.0)", "zephyr", "<s>", "</s>",
    R"jinja({% for message in messages %}
)jinja"
    R"jinja({% if message['role'] == 'user' %}
)jinja"
    R"jinja({{ '<|user|>
)jinja"
    R"jinja(' + message['content'] + eos_token }}
)jinja"
    R"jinja({% elif message['role'] == 'system' %}
)jinja"
    R"jinja({{ '<|system|>
)jinja"
    R"jinja(' + message['content'] + eos_token }}
)jinja"
    R"jinja({% elif message['role'] == 'assistant' %}
)jinja"
    R"jinja({{ '<|assistant|>
)jinja"
    R"jinja('  + message['content'] + eos_token }}
)jinja"
    R"jinja({% endif %}
)jinja"
    R"jinja({% if loop.last and add_generation_prompt %}
)jinja"
    R"jinja({{ '<|assistant|>' }}
)jinja"
    R"jinja({% endif %}
)jinja"
    R"jinja({% endfor %})jinja"};

const ReferenceTemplate* const kReferenceTemplates[] = {
    &kLlama2Chat,
    &kLlama3Instruct,
    &kOpenHermesChatML,
    &kQwen2Instruct,
    &kMistral7BInstructV02,
    &kMistral7BInstructV02Original,
    &kPhi35MiniInstruct,
    &kPhi3MiniGGUF,
    &kGemma7BIt,
    &kGemma3It,
    &kZephyr7BBeta,
};

const ReferenceRendering kReferenceRenderings[] = {
    {&kLlama2Chat, Conversation::WithSystem, true,
        "<s>[INST] <<SYS>>\n"
        "You are a helpful assistant.\n"
        "<</SYS>>\n"
        "\n"
        "Hello! Grüß dich 👋 [/INST] Hi there, how can I help? </s><s>[INST] What is 2+2? [/INST]"},
    {&kLlama2Chat, Conversation::WithSystem, false,
        "<s>[INST] <<SYS>>\n"
        "You are a helpful assistant.\n"
        "<</SYS>>\n"
        "\n"
        "Hello! Grüß dich 👋 [/INST] Hi there, how can I help? </s><s>[INST] What is 2+2? [/INST]"},
    {&kLlama3Instruct, Conversation::WithSystem, true,
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n"
        "\n"
        "You are a helpful assistant.<|eot_id|><|start_header_id|>user<|end_header_id|>\n"
        "\n"
        "Hello! Grüß dich 👋<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n"
        "\n"
        "Hi there, how can I help?<|eot_id|><|start_header_id|>user<|end_header_id|>\n"
        "\n"
        "What is 2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n"
        "\n"},
    {&kLlama3Instruct, Conversation::WithSystem, false,
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n"
        "\n"
        "You are a helpful assistant.<|eot_id|><|start_header_id|>user<|end_header_id|>\n"
        "\n"
        "Hello! Grüß dich 👋<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n"
        "\n"
        "Hi there, how can I help?<|eot_id|><|start_header_id|>user<|end_header_id|>\n"
        "\n"
        "What is 2+2?<|eot_id|>"},
    {&kOpenHermesChatML, Conversation::WithSystem, true,
        "<|im_start|>system\n"
        "You are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\n"
        "Hello! Grüß dich 👋<|im_end|>\n"
        "<|im_start|>assistant\n"
        "  Hi there, how can I help?  <|im_end|>\n"
        "<|im_start|>user\n"
        "What is 2+2?<|im_end|>\n"
        "<|im_start|>assistant\n"},
    {&kOpenHermesChatML, Conversation::WithSystem, false,
        "<|im_start|>system\n"
        "You are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\n"
        "Hello! Grüß dich 👋<|im_end|>\n"
        "<|im_start|>assistant\n"
        "  Hi there, how can I help?  <|im_end|>\n"
        "<|im_start|>user\n"
        "What is 2+2?<|im_end|>\n"},
    {&kQwen2Instruct, Conversation::WithSystem, true,
        "<|im_start|>system\n"
        "You are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\n"
        "Hello! Grüß dich 👋<|im_end|>\n"
        "<|im_start|>assistant\n"
        "  Hi there, how can I help?  <|im_end|>\n"
        "<|im_start|>user\n"
        "What is 2+2?<|im_end|>\n"
        "<|im_start|>assistant\n"},
    {&kQwen2Instruct, Conversation::WithSystem, false,
        "<|im_start|>system\n"
        "You are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\n"
        "Hello! Grüß dich 👋<|im_end|>\n"
        "<|im_start|>assistant\n"
        "  Hi there, how can I help?  <|im_end|>\n"
        "<|im_start|>user\n"
        "What is 2+2?<|im_end|>\n"},
    {&kMistral7BInstructV02, Conversation::WithSystem, true,
        "<s> [INST] You are a helpful assistant.\n"
        "\n"
        "Hello! Grüß dich 👋 [/INST]   Hi there, how can I help?  </s> [INST] What is 2+2? [/INST]"},
    {&kMistral7BInstructV02, Conversation::WithSystem, false,
        "<s> [INST] You are a helpful assistant.\n"
        "\n"
        "Hello! Grüß dich 👋 [/INST]   Hi there, how can I help?  </s> [INST] What is 2+2? [/INST]"},
    {&kPhi35MiniInstruct, Conversation::WithSystem, true,
        "<|system|>\n"
        "You are a helpful assistant.<|end|>\n"
        "<|user|>\n"
        "Hello! Grüß dich 👋<|end|>\n"
        "<|assistant|>\n"
        "  Hi there, how can I help?  <|end|>\n"
        "<|user|>\n"
        "What is 2+2?<|end|>\n"
        "<|assistant|>\n"},
    {&kPhi35MiniInstruct, Conversation::WithSystem, false,
        "<|system|>\n"
        "You are a helpful assistant.<|end|>\n"
        "<|user|>\n"
        "Hello! Grüß dich 👋<|end|>\n"
        "<|assistant|>\n"
        "  Hi there, how can I help?  <|end|>\n"
        "<|user|>\n"
        "What is 2+2?<|end|>\n"
        "<|endoftext|>"},
    {&kGemma3It, Conversation::WithSystem, true,
        "<bos><start_of_turn>user\n"
        "You are a helpful assistant.\n"
        "\n"
        "Hello! Grüß dich 👋<end_of_turn>\n"
        "<start_of_turn>model\n"
        "Hi there, how can I help?<end_of_turn>\n"
        "<start_of_turn>user\n"
        "What is 2+2?<end_of_turn>\n"
        "<start_of_turn>model\n"},
    {&kGemma3It, Conversation::WithSystem, false,
        "<bos><start_of_turn>user\n"
        "You are a helpful assistant.\n"
        "\n"
        "Hello! Grüß dich 👋<end_of_turn>\n"
        "<start_of_turn>model\n"
        "Hi there, how can I help?<end_of_turn>\n"
        "<start_of_turn>user\n"
        "What is 2+2?<end_of_turn>\n"},
    {&kZephyr7BBeta, Conversation::WithSystem, true,
        "<|system|>\n"
        "You are a helpful assistant.</s>\n"
        "<|user|>\n"
        "Hello! Grüß dich 👋</s>\n"
        "<|assistant|>\n"
        "  Hi there, how can I help?  </s>\n"
        "<|user|>\n"
        "What is 2+2?</s>\n"
        "<|assistant|>\n"},
    {&kZephyr7BBeta, Conversation::WithSystem, false,
        "<|system|>\n"
        "You are a helpful assistant.</s>\n"
        "<|user|>\n"
        "Hello! Grüß dich 👋</s>\n"
        "<|assistant|>\n"
        "  Hi there, how can I help?  </s>\n"
        "<|user|>\n"
        "What is 2+2?</s>\n"},
    {&kLlama2Chat, Conversation::NoSystem, true,
        "<s>[INST] Hello! Grüß dich 👋 [/INST] Hi there, how can I help? </s><s>[INST] What is 2+2? [/INST]"},
    {&kLlama3Instruct, Conversation::NoSystem, true,
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n"
        "\n"
        "Hello! Grüß dich 👋<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n"
        "\n"
        "Hi there, how can I help?<|eot_id|><|start_header_id|>user<|end_header_id|>\n"
        "\n"
        "What is 2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n"
        "\n"},
    {&kOpenHermesChatML, Conversation::NoSystem, true,
        "<|im_start|>user\n"
        "Hello! Grüß dich 👋<|im_end|>\n"
        "<|im_start|>assistant\n"
        "  Hi there, how can I help?  <|im_end|>\n"
        "<|im_start|>user\n"
        "What is 2+2?<|im_end|>\n"
        "<|im_start|>assistant\n"},
    {&kMistral7BInstructV02, Conversation::NoSystem, true,
        "<s> [INST] Hello! Grüß dich 👋 [/INST]   Hi there, how can I help?  </s> [INST] What is 2+2? [/INST]"},
    {&kPhi35MiniInstruct, Conversation::NoSystem, true,
        "<|user|>\n"
        "Hello! Grüß dich 👋<|end|>\n"
        "<|assistant|>\n"
        "  Hi there, how can I help?  <|end|>\n"
        "<|user|>\n"
        "What is 2+2?<|end|>\n"
        "<|assistant|>\n"},
    {&kGemma3It, Conversation::NoSystem, true,
        "<bos><start_of_turn>user\n"
        "Hello! Grüß dich 👋<end_of_turn>\n"
        "<start_of_turn>model\n"
        "Hi there, how can I help?<end_of_turn>\n"
        "<start_of_turn>user\n"
        "What is 2+2?<end_of_turn>\n"
        "<start_of_turn>model\n"},
    {&kZephyr7BBeta, Conversation::NoSystem, true,
        "<|user|>\n"
        "Hello! Grüß dich 👋</s>\n"
        "<|assistant|>\n"
        "  Hi there, how can I help?  </s>\n"
        "<|user|>\n"
        "What is 2+2?</s>\n"
        "<|assistant|>\n"},
    {&kGemma7BIt, Conversation::NoSystem, true,
        "<bos><start_of_turn>user\n"
        "Hello! Grüß dich 👋<end_of_turn>\n"
        "<start_of_turn>model\n"
        "Hi there, how can I help?<end_of_turn>\n"
        "<start_of_turn>user\n"
        "What is 2+2?<end_of_turn>\n"
        "<start_of_turn>model\n"},
    {&kPhi3MiniGGUF, Conversation::NoSystem, true,
        "<s><|user|>\n"
        "Hello! Grüß dich 👋<|end|>\n"
        "<|assistant|>\n"
        "  Hi there, how can I help?  <|end|>\n"
        "<|user|>\n"
        "What is 2+2?<|end|>\n"
        "<|assistant|>\n"},
    {&kGemma7BIt, Conversation::NoSystem, false,
        "<bos><start_of_turn>user\n"
        "Hello! Grüß dich 👋<end_of_turn>\n"
        "<start_of_turn>model\n"
        "Hi there, how can I help?<end_of_turn>\n"
        "<start_of_turn>user\n"
        "What is 2+2?<end_of_turn>\n"},
    {&kLlama2Chat, Conversation::EndsWithAssistant, false,
        "<s>[INST] <<SYS>>\n"
        "You are a helpful assistant.\n"
        "<</SYS>>\n"
        "\n"
        "Hello! Grüß dich 👋 [/INST] Hi there, how can I help? </s>"},
    {&kMistral7BInstructV02, Conversation::EndsWithAssistant, false,
        "<s> [INST] You are a helpful assistant.\n"
        "\n"
        "Hello! Grüß dich 👋 [/INST]   Hi there, how can I help?  </s>"},
    {&kLlama3Instruct, Conversation::EndsWithAssistant, true,
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n"
        "\n"
        "You are a helpful assistant.<|eot_id|><|start_header_id|>user<|end_header_id|>\n"
        "\n"
        "Hello! Grüß dich 👋<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n"
        "\n"
        "Hi there, how can I help?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n"
        "\n"},
    {&kGemma3It, Conversation::EndsWithAssistant, true,
        "<bos><start_of_turn>user\n"
        "You are a helpful assistant.\n"
        "\n"
        "Hello! Grüß dich 👋<end_of_turn>\n"
        "<start_of_turn>model\n"
        "Hi there, how can I help?<end_of_turn>\n"
        "<start_of_turn>model\n"},
    {&kZephyr7BBeta, Conversation::EndsWithAssistant, true,
        "<|system|>\n"
        "You are a helpful assistant.</s>\n"
        "<|user|>\n"
        "Hello! Grüß dich 👋</s>\n"
        "<|assistant|>\n"
        "  Hi there, how can I help?  </s>\n"
        "<|assistant|>\n"},
    {&kPhi35MiniInstruct, Conversation::EmptySystem, true,
        "<|user|>\n"
        "Hello! Grüß dich 👋<|end|>\n"
        "<|assistant|>\n"
        "  Hi there, how can I help?  <|end|>\n"
        "<|user|>\n"
        "What is 2+2?<|end|>\n"
        "<|assistant|>\n"},
    {&kLlama2Chat, Conversation::EmptySystem, true,
        "<s>[INST] <<SYS>>\n"
        "\n"
        "<</SYS>>\n"
        "\n"
        "Hello! Grüß dich 👋 [/INST] Hi there, how can I help? </s><s>[INST] What is 2+2? [/INST]"},
};
// ---- generated reference data: end ----

// The families whose reference templates write bos_token at the start (see chat_template.hpp).
bool formatWritesBos(const std::string& familyName)
{
    return familyName == "llama2" || familyName == "llama3" || familyName == "mistral" || familyName == "gemma";
}

std::string withoutLeadingText(const std::string& text, const std::string& prefix)
{
    return text.compare(0, prefix.size(), prefix) == 0 ? text.substr(prefix.size()) : text;
}

// The message of the cv::Exception an action throws, or a note that it threw none.
std::string errorOf(const std::function<void()>& action)
{
    try
    {
        action();
    }
    catch (const cv::Exception& e)
    {
        return e.err;
    }
    return "(no exception)";
}

bool mentions(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

const char* const kNotRecognised = "chat template not recognised; pass a template name: "
                                   "llama2, llama3, chatml, mistral, phi3, gemma, zephyr";

} // namespace

TEST(ChatTemplate, recognisesReferenceTemplates)
{
    for (const ReferenceTemplate* reference : kReferenceTemplates)
    {
        SCOPED_TRACE(reference->source);
        EXPECT_EQ(ChatTemplate::fromJinja(reference->jinja).name(), reference->familyName);
    }
}

TEST(ChatTemplate, formatsLikeReferenceTemplates)
{
    for (const ReferenceRendering& rendering : kReferenceRenderings)
    {
        const ReferenceTemplate& reference = *rendering.reference;
        SCOPED_TRACE(std::string(reference.source) + " / " + conversationName(rendering.conversation) +
                     (rendering.addGenerationPrompt ? " / generation prompt" : " / no generation prompt"));
        const ChatTemplate chatTemplate = ChatTemplate::fromName(reference.familyName);
        const std::vector<ChatMessage> messages = conversation(rendering.conversation);
        const std::string expectedWithoutBos = withoutLeadingText(rendering.expected, reference.bosToken);

        // BOS left to the tokenizer: the reference output less its leading BOS.
        EXPECT_EQ(chatTemplate.format(messages, rendering.addGenerationPrompt), expectedWithoutBos);
        // BOS asked for: the reference output itself where the family's template writes BOS.
        EXPECT_EQ(chatTemplate.format(messages, rendering.addGenerationPrompt, reference.bosToken),
                  formatWritesBos(reference.familyName) ? std::string(rendering.expected) : expectedWithoutBos);
    }
}

TEST(ChatTemplate, llama2KeepsBosBetweenTurns)
{
    // No tokenizer adds the BOS of later turns, so it stays even when the first one is left out.
    const std::vector<ChatMessage> messages = {{"user", "a"}, {"assistant", "b"}, {"user", "c"}};
    const ChatTemplate llama2 = ChatTemplate::fromName("llama2");
    EXPECT_EQ(llama2.format(messages, true), "[INST] a [/INST] b </s><s>[INST] c [/INST]");
    EXPECT_EQ(llama2.format(messages, true, "<BOS>"), "<BOS>[INST] a [/INST] b </s><BOS>[INST] c [/INST]");
}

TEST(ChatTemplate, chatmlIgnoresBosText)
{
    const std::vector<ChatMessage> messages = {{"user", "hi"}};
    EXPECT_EQ(ChatTemplate::fromName("chatml").format(messages, true, "<s>"),
              "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, recognisesTemplateStoredInGGUF)
{
    // The only vocabulary of llama.cpp's test set that carries a chat template.
    const cv::Ptr<cv::dnn::GGUFFile> file =
        cv::dnn::GGUFFile::open(llm_test::sharedTestData("llama.cpp-vocab/ggml-vocab-phi-3.gguf"));
    ASSERT_TRUE(file->hasMetadata("tokenizer.chat_template"));
    const std::string jinja = file->getString("tokenizer.chat_template");
    EXPECT_EQ(jinja, kPhi3MiniGGUF.jinja);
    EXPECT_EQ(ChatTemplate::fromJinja(jinja).family(), ChatTemplateFamily::Phi3);
}

TEST(ChatTemplate, rejectsUnknownTemplates)
{
    const char* const unknownTemplates[] = {
        "",
        // Alpaca-style instructions
        "{% for message in messages %}{% if message['role'] == 'user' %}{{ '### Instruction:\\n' + "
        "message['content'] + '\\n' }}{% else %}{{ '### Response:\\n' + message['content'] }}{% endif %}{% endfor %}",
        // Mistral v3 tokenizer: no space before [/INST]
        "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ '[INST] ' + "
        "message['content'] + '[/INST]' }}{% else %}{{ ' ' + message['content'] + eos_token }}{% endif %}{% endfor %}",
        // Phi-4: ChatML tokens with <|im_sep|>
        "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '<|im_sep|>' + message['content'] + "
        "'<|im_end|>' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant<|im_sep|>' }}{% endif %}",
    };
    for (const char* jinja : unknownTemplates)
    {
        SCOPED_TRACE(jinja);
        EXPECT_EQ(errorOf([&] { ChatTemplate::fromJinja(jinja); }), kNotRecognised);
    }
}

TEST(ChatTemplate, namesAndAliases)
{
    const std::pair<const char*, const char*> namesAndFamilies[] = {
        {"llama2", "llama2"}, {"llama3", "llama3"}, {"chatml", "chatml"}, {"qwen2", "chatml"},
        {"mistral", "mistral"}, {"phi3", "phi3"}, {"gemma", "gemma"}, {"zephyr", "zephyr"}, {"ChatML", "chatml"},
    };
    for (const auto& nameAndFamily : namesAndFamilies)
        EXPECT_EQ(ChatTemplate::fromName(nameAndFamily.first).name(), nameAndFamily.second);
    EXPECT_EQ(ChatTemplate(ChatTemplateFamily::Gemma).name(), "gemma");
}

TEST(ChatTemplate, rejectsUnknownNames)
{
    const std::string message = errorOf([] { ChatTemplate::fromName("vicuna"); });
    EXPECT_TRUE(mentions(message, "'vicuna'")) << message;
    EXPECT_TRUE(mentions(message, "llama2, llama3, chatml, mistral, phi3, gemma, zephyr")) << message;
    EXPECT_TRUE(mentions(errorOf([] { ChatTemplate::fromName(""); }), "unknown template name"));
}

TEST(ChatTemplate, rejectsBadRoles)
{
    for (const char* name : {"llama2", "llama3", "chatml", "mistral", "phi3", "gemma", "zephyr"})
    {
        SCOPED_TRACE(name);
        const ChatTemplate chatTemplate = ChatTemplate::fromName(name);
        std::string message = errorOf([&] { chatTemplate.format({{"user", "a"}, {"tool", "b"}}, true); });
        EXPECT_TRUE(mentions(message, "message 1 has unknown role 'tool'")) << message;
        message = errorOf([&] { chatTemplate.format({{"user", "a"}, {"system", "b"}}, true); });
        EXPECT_TRUE(mentions(message, "message 1 is a system message")) << message;
        message = errorOf([&] { chatTemplate.format({}, true); });
        EXPECT_TRUE(mentions(message, "no messages")) << message;
    }
}

TEST(ChatTemplate, strictFamiliesNeedAlternatingTurns)
{
    for (const char* name : {"llama2", "mistral", "gemma"})
    {
        SCOPED_TRACE(name);
        const ChatTemplate chatTemplate = ChatTemplate::fromName(name);
        std::string message = errorOf([&] { chatTemplate.format({{"user", "a"}, {"user", "b"}}, true); });
        EXPECT_TRUE(mentions(message, "message 1 is 'user' (expected 'assistant')")) << message;
        message = errorOf([&] { chatTemplate.format({{"system", "s"}, {"assistant", "a"}}, true); });
        EXPECT_TRUE(mentions(message, "message 1 is 'assistant' (expected 'user')")) << message;
        message = errorOf([&] { chatTemplate.format({{"system", "s"}}, true); });
        EXPECT_TRUE(mentions(message, "needs a user message after it")) << message;
    }
}

TEST(ChatTemplate, lenientFamiliesAcceptAnyOrder)
{
    // Their templates write each message as it comes, as do we.
    const std::vector<ChatMessage> messages = {{"system", "s"}, {"assistant", "a"}, {"assistant", "b"}};
    EXPECT_EQ(ChatTemplate::fromName("chatml").format(messages, false),
              "<|im_start|>system\ns<|im_end|>\n<|im_start|>assistant\na<|im_end|>\n<|im_start|>assistant\nb<|im_end|>\n");
    EXPECT_EQ(ChatTemplate::fromName("zephyr").format({{"system", "s"}}, true), "<|system|>\ns</s>\n<|assistant|>\n");
    EXPECT_NO_THROW(ChatTemplate::fromName("llama3").format(messages, true));
    EXPECT_NO_THROW(ChatTemplate::fromName("phi3").format(messages, true));
}

TEST(ChatTemplate, turnEndMarkers)
{
    const std::pair<const char*, const char*> namesAndMarkers[] = {
        {"llama2", "</s>"}, {"llama3", "<|eot_id|>"}, {"chatml", "<|im_end|>"}, {"mistral", "</s>"},
        {"phi3", "<|end|>"}, {"gemma", "<end_of_turn>"}, {"zephyr", "</s>"},
    };
    for (const auto& nameAndMarker : namesAndMarkers)
        EXPECT_EQ(ChatTemplate::fromName(nameAndMarker.first).turnEndMarkers(),
                  std::vector<std::string>(1, nameAndMarker.second)) << nameAndMarker.first;
}

// The Jinja engine (cv::dnn::ChatTemplate::create) renders each reference template exactly as
// Python's jinja2 did, BOS and EOS texts included; the families above only imitate them.
TEST(ChatTemplate, jinjaEngineRendersReferenceTemplatesAsJinja2)
{
    for (const ReferenceRendering& rendering : kReferenceRenderings)
    {
        const ReferenceTemplate& reference = *rendering.reference;
        SCOPED_TRACE(std::string(reference.source) + ", " + conversationName(rendering.conversation));
        const cv::Ptr<cv::dnn::ChatTemplate> jinja = cv::dnn::ChatTemplate::create(reference.jinja, reference.bosToken,
                                                                                  reference.eosToken);
        std::vector<cv::String> roles, contents;
        for (const ChatMessage& m : conversation(rendering.conversation))
        {
            roles.push_back(m.role);
            contents.push_back(m.content);
        }
        EXPECT_EQ(jinja->apply(roles, contents, rendering.addGenerationPrompt), std::string(rendering.expected));
    }
}
