// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The reference data of the chat template tests (test_chat_template_reference.cpp), generated
// (tools/chat_template/gen_test_data.py rewrites it between the markers):
// - each template is the "chat_template" of the named model's tokenizer_config.json (or the
//   tokenizer.chat_template of a GGUF file), copied verbatim as test data;
// - each expected string is that template rendered by Python jinja2 3.1.6 set up as
//   transformers' apply_chat_template does (trim_blocks, lstrip_blocks, raise_exception), with
//   the model's real BOS / EOS texts. @huggingface/jinja 0.5.11 renders the same bytes, except
//   for Llama 2 with an empty system message, where it drops the <<SYS>> block that Python
//   (and so transformers) keeps.

#include <iterator>
#include <vector>

#include "chat_template_reference_data.hpp"

namespace llm_test {

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

const std::vector<const ReferenceTemplate*>& referenceTemplates()
{
    static const std::vector<const ReferenceTemplate*> all(std::begin(kReferenceTemplates), std::end(kReferenceTemplates));
    return all;
}

const std::vector<ReferenceRendering>& referenceRenderings()
{
    static const std::vector<ReferenceRendering> all(std::begin(kReferenceRenderings), std::end(kReferenceRenderings));
    return all;
}

} // namespace llm_test
