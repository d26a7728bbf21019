#!/usr/bin/env python3
"""Renders every chat template (*.jinja) of a folder with Python's jinja2 as transformers'
apply_chat_template does (transformers_env.py), for a fixed set of conversations, and writes
the expected strings (or the error each rendering raised) as JSON:

    /usr/bin/python3 tools/chat_template/render_reference.py TEMPLATE_DIR OUT.json

ctest runs it as the fixture make_chat_template_reference (test/tests.cmake) on
../shared/testdata/chat-templates into build/test-models/chat_templates/reference.json, which
test/cpp/test_jinja_reference.cpp renders again with our engine and compares byte for byte.
Needs Debian's python3-jinja2 (tools/build_env.sh installs it for the tests).

Output: {"generator", "jinja2_version", "now", "templates": {file name: source},
"renderings": [{"template": file name,
"case": name, "messages": [...], "add_generation_prompt": bool, "bos_token", "eos_token",
"extra": {tools, documents, other variables}, then "output": text or "error": message}]}.
"""
import json
import os
import sys

import jinja2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import transformers_env  # noqa: E402

BOS, EOS = "<s>", "</s>"

SYSTEM = {"role": "system", "content": "You are a helpful assistant. Answer briefly."}
USER_1 = {"role": "user", "content": "Hello! Grüß dich 👋 — what's \"new\"?\nTell me <b>one</b> thing."}
ASSISTANT_1 = {"role": "assistant", "content": "  Hi there!\nHow can I help you today?  "}
USER_2 = {"role": "user", "content": "What is 2+2? Answer with a number\\digit."}
ASSISTANT_2 = {"role": "assistant", "content": "4"}
THINKING_ASSISTANT = {"role": "assistant",
                      "content": "<think>\nThe user greets me.\n</think>\n\nHello! Nothing much is new."}

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "City name, e.g. Paris"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Temperature unit"},
                "days": {"type": "integer", "description": "Days of forecast", "minimum": 1},
            },
            "required": ["location"],
        },
    },
}
TIME_TOOL = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Current time in a time zone.",
        "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}, "required": []},
    },
}
TOOL_USER = {"role": "user", "content": "What's the weather in Paris, in °C?"}
TOOL_CALL_ASSISTANT = {
    "role": "assistant",
    "content": "",
    "tool_calls": [{"id": "call00001", "type": "function",
                    "function": {"name": "get_weather", "arguments": {"location": "Paris", "unit": "celsius"}}}],
}
TOOL_CALL_ASSISTANT_TEXT_ARGUMENTS = {
    "role": "assistant",
    "content": "",
    "tool_calls": [{"id": "call00001", "type": "function",
                    "function": {"name": "get_weather", "arguments": "{\"location\": \"Paris\", \"unit\": \"celsius\"}"}}],
}
TOOL_RESULT = {"role": "tool", "tool_call_id": "call00001", "name": "get_weather",
               "content": "{\"temperature\": 21.5, \"condition\": \"sunny\"}"}
TOOL_ANSWER = {"role": "assistant", "content": "It is 21.5 °C and sunny in Paris."}

DOCUMENTS = [{"title": "Paris", "text": "Paris is the capital of France."},
             {"title": "Berlin", "text": "Berlin is the capital of Germany."}]

# Reasoning and agent turns as Qwen3.5 and Gemma 4 read them: reasoning_content beside the
# content, several tool calls in one turn (nested and list arguments), consecutive tool
# results, Gemma 4's tool_responses on an assistant turn and its thought channel in content.
REASONING_ASSISTANT = {"role": "assistant", "content": "The answer is 4.",
                       "reasoning_content": "2+2 is 4.\nNothing else to check."}
TWO_CALLS_ASSISTANT = {
    "role": "assistant", "content": "Let me check both.", "reasoning_content": "Two tools are needed.",
    "tool_calls": [{"id": "call00001", "type": "function",
                    "function": {"name": "get_weather", "arguments": {"location": "Paris", "days": 3,
                                                                      "options": {"units": ["celsius"], "hourly": True}}}},
                   {"id": "call00002", "type": "function", "function": {"name": "get_time", "arguments": {"zone": "CET"}}}],
}
TIME_RESULT = {"role": "tool", "tool_call_id": "call00002", "name": "get_time", "content": "09:30"}
GEMMA_TOOL_TURN = {
    "role": "assistant", "content": "",
    "tool_calls": [{"type": "function", "function": {"name": "get_time", "arguments": {"zone": "CET"}}}],
    "tool_responses": [{"name": "get_time", "response": {"time": "09:30", "dst": False}}],
}
CHANNEL_ASSISTANT = {"role": "assistant",
                     "content": "<|channel>thought\nThe user greets me.<channel|>Hello! Nothing much is new."}
NESTED_TOOL = {
    "type": "function",
    "function": {
        "name": "book_trip",
        "description": "Book a trip.",
        "parameters": {
            "type": "object",
            "properties": {
                "traveller": {"type": "object", "description": "Who travels",
                              "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                              "required": ["name"]},
                "stops": {"type": "array", "description": "Cities on the way",
                          "items": {"type": "string"}},
                "refundable": {"type": "boolean", "nullable": True},
            },
            "required": ["traveller", "stops"],
        },
    },
}

# (case name, messages, add_generation_prompt, extra variables)
CASES = [
    ("system_user", [SYSTEM, USER_1], True, {}),
    ("system_user_no_generation_prompt", [SYSTEM, USER_1], False, {}),
    ("user_only", [USER_1], True, {}),
    ("multi_turn", [SYSTEM, USER_1, ASSISTANT_1, USER_2], True, {}),
    ("multi_turn_ends_with_assistant", [SYSTEM, USER_1, ASSISTANT_1, USER_2, ASSISTANT_2], False, {}),
    ("no_system_multi_turn", [USER_1, ASSISTANT_1, USER_2], True, {}),
    ("thinking_history", [USER_1, THINKING_ASSISTANT, USER_2], True, {}),
    ("content_parts", [{"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
                       {"role": "user", "content": [{"type": "text", "text": "Hello "},
                                                    {"type": "text", "text": "there."}]}], True, {}),
    ("tools_list", [SYSTEM, TOOL_USER], True, {"tools": [WEATHER_TOOL, TIME_TOOL]}),
    ("tool_call", [SYSTEM, TOOL_USER, TOOL_CALL_ASSISTANT, TOOL_RESULT], True, {"tools": [WEATHER_TOOL]}),
    ("tool_call_text_arguments", [TOOL_USER, TOOL_CALL_ASSISTANT_TEXT_ARGUMENTS, TOOL_RESULT, TOOL_ANSWER], False,
     {"tools": [WEATHER_TOOL]}),
    ("documents", [USER_1], True, {"documents": DOCUMENTS}),
    ("extra_variables", [SYSTEM, USER_1], True, {"enable_thinking": False, "reasoning_effort": "low",
                                                 "custom_instructions": "Speak French."}),
    ("thinking_enabled", [SYSTEM, USER_1], True, {"enable_thinking": True}),
    ("reasoning_content_history", [SYSTEM, USER_2, REASONING_ASSISTANT, USER_1], True, {}),
    ("reasoning_after_last_user", [USER_2, REASONING_ASSISTANT], False, {"enable_thinking": True}),
    ("two_tool_calls_and_results", [SYSTEM, TOOL_USER, TWO_CALLS_ASSISTANT, TOOL_RESULT, TIME_RESULT], True,
     {"tools": [WEATHER_TOOL, TIME_TOOL], "enable_thinking": True}),
    ("gemma_tool_responses", [TOOL_USER, GEMMA_TOOL_TURN], True, {"tools": [TIME_TOOL]}),
    ("channel_thought_history", [USER_1, CHANNEL_ASSISTANT, USER_2], True, {}),
    ("nested_tool_parameters", [SYSTEM, TOOL_USER], True, {"tools": [NESTED_TOOL, WEATHER_TOOL]}),
    ("image_parts", [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is this?"}]}], True,
     {"add_vision_id": True}),
]


def error_text(e):
    return "%s: %s" % (type(e).__name__, e)


def main(template_dir, out_path):
    env = transformers_env.make_environment()
    renderings = []
    templates = {}
    names = sorted(n for n in os.listdir(template_dir) if n.endswith(".jinja"))
    if not names:
        sys.exit("no .jinja files in %s" % template_dir)
    for name in names:
        with open(os.path.join(template_dir, name), encoding="utf-8") as f:
            source = f.read()
        templates[name] = source
        for case, messages, generation_prompt, extra in CASES:
            row = {"template": name, "case": case, "messages": messages, "add_generation_prompt": generation_prompt,
                   "bos_token": BOS, "eos_token": EOS, "extra": extra}
            try:
                row["output"] = transformers_env.render(env, source, messages, generation_prompt, BOS, EOS, extra)
            except Exception as e:  # what the template raised (or a syntax error): ours must raise too
                row["error"] = error_text(e)
            renderings.append(row)
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump({"generator": "tools/chat_template/render_reference.py", "jinja2_version": jinja2.__version__,
                   "now": transformers_env.NOW.isoformat(), "templates": templates,
                   "renderings": renderings}, f, ensure_ascii=False, indent=1)
    errors = sum("error" in r for r in renderings)
    print("%d templates x %d conversations: %d renderings, %d raise" % (len(names), len(CASES), len(renderings), errors))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
