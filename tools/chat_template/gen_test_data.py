#!/usr/bin/env python3
"""Rewrites the generated reference data of test/cpp/chat_template_reference_data.cpp.

Renders each template of templates.json with Python jinja2 set up as transformers'
apply_chat_template does, reports where @huggingface/jinja's rendering (rendered.json, from
render.mjs) differs, and writes the templates and expected strings as C++ literals between the
"generated reference data" markers of the test file given as argument.
"""
import json, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import transformers_env  # noqa: E402

env = transformers_env.make_environment()

system = {"role": "system", "content": "You are a helpful assistant."}
user1 = {"role": "user", "content": "Hello! Grüß dich 👋"}
assistant1 = {"role": "assistant", "content": "  Hi there, how can I help?  "}
user2 = {"role": "user", "content": "What is 2+2?"}
CONVERSATIONS = {
    "WithSystem": [system, user1, assistant1, user2],
    "NoSystem": [user1, assistant1, user2],
    "EndsWithAssistant": [system, user1, assistant1],
    "EmptySystem": [{"role": "system", "content": ""}, user1, assistant1, user2],
}
NODE_KEYS = {"WithSystem": "withSystem", "NoSystem": "noSystem", "EndsWithAssistant": "endsWithAssistant",
             "EmptySystem": "emptySystem"}

# template key -> (C++ name, family fromJinja must find)
REFERENCES = [
    ("llama2", "kLlama2Chat", "llama2"),
    ("llama3", "kLlama3Instruct", "llama3"),
    ("chatml", "kOpenHermesChatML", "chatml"),
    ("qwen2", "kQwen2Instruct", "chatml"),
    ("mistral", "kMistral7BInstructV02", "mistral"),
    ("mistral_legacy", "kMistral7BInstructV02Original", "mistral"),
    ("phi3", "kPhi35MiniInstruct", "phi3"),
    ("phi3_gguf", "kPhi3MiniGGUF", "phi3"),
    ("gemma", "kGemma7BIt", "gemma"),
    ("gemma3", "kGemma3It", "gemma"),
    ("zephyr", "kZephyr7BBeta", "zephyr"),
]
# (template key, conversation, add_generation_prompt). Left out on purpose: qwen2 without a
# system message (its template adds a default one), the original Mistral v0.2 template (no
# system message, no spaces before [INST]), Gemma 1 with a system message (it raises), and
# the GGUF Phi-3 template with a system message or without generation prompt (it drops the
# system message and always writes <|assistant|>).
ROWS = []
for key in ["llama2", "llama3", "chatml", "qwen2", "mistral", "phi3", "gemma3", "zephyr"]:
    ROWS += [(key, "WithSystem", True), (key, "WithSystem", False)]
for key in ["llama2", "llama3", "chatml", "mistral", "phi3", "gemma3", "zephyr", "gemma", "phi3_gguf"]:
    ROWS.append((key, "NoSystem", True))
ROWS += [("gemma", "NoSystem", False), ("llama2", "EndsWithAssistant", False), ("mistral", "EndsWithAssistant", False),
         ("llama3", "EndsWithAssistant", True), ("gemma3", "EndsWithAssistant", True), ("zephyr", "EndsWithAssistant", True),
         ("phi3", "EmptySystem", True), ("llama2", "EmptySystem", True)]


def cpp_string(text, indent='        '):
    """A C++ string literal, split into adjacent literals after each newline and, on long
    lines, before a '{'; UTF-8 kept as is."""
    pieces, current, width = [], '', 0
    for ch in text:
        if ch == '{' and width >= 90:
            pieces.append(current); current, width = '', 0
        current += {'\\': '\\\\', '"': '\\"', '\n': '\\n', '\t': '\\t', '\r': '\\r'}.get(ch, ch)
        width += 1
        if ch == '\n':
            pieces.append(current); current, width = '', 0
    if current or not pieces:
        pieces.append(current)
    return ('\n' + indent).join('"%s"' % p for p in pieces)


def main(test_path):
    templates = json.load(open(HERE + '/templates.json'))
    node = json.load(open(HERE + '/rendered.json'))
    out = []
    for key, cpp_name, family in REFERENCES:
        t = templates[key]
        out.append('// %s\nconst ReferenceTemplate %s = {\n    "%s", "%s", "%s", "%s",\n    %s};\n'
                   % (t['source'], cpp_name, t['source'], family, t['bos'], t['eos'], cpp_string(t['text'], '    ')))
    out.append('const ReferenceTemplate* const kReferenceTemplates[] = {\n    %s,\n};\n'
               % ',\n    '.join('&' + r[1] for r in REFERENCES))
    names = {k: n for k, n, _ in REFERENCES}
    rows = []
    for key, conv, gen in ROWS:
        t = templates[key]
        rendered = env.from_string(t['text']).render(messages=CONVERSATIONS[conv], bos_token=t['bos'],
                                                     eos_token=t['eos'], add_generation_prompt=gen)
        other = node[key]['%s/%s' % (NODE_KEYS[conv], 'gen' if gen else 'nogen')]
        if other != rendered:
            print('note: @huggingface/jinja differs for %s %s gen=%s: %r' % (key, conv, gen, other), file=sys.stderr)
        rows.append('    {&%s, Conversation::%s, %s,\n        %s},' % (names[key], conv, 'true' if gen else 'false',
                                                                     cpp_string(rendered)))
    out.append('const ReferenceRendering kReferenceRenderings[] = {\n%s\n};\n' % '\n'.join(rows))
    block = '\n'.join(out)

    source = open(test_path, encoding='utf-8').read()
    begin = '// ---- generated reference data: begin ----\n'
    end = '// ---- generated reference data: end ----\n'
    head, rest = source.split(begin)
    _, tail = rest.split(end)
    open(test_path, 'w', encoding='utf-8').write(head + begin + block + end + tail)
    print('wrote %d templates and %d renderings into %s' % (len(REFERENCES), len(rows), test_path))


if __name__ == '__main__':
    main(sys.argv[1])
