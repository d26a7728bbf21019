"""The Jinja environment that Hugging Face transformers' apply_chat_template renders with, on
Debian's python3-jinja2 (no transformers needed).

transformers (utils/chat_template_utils.py, _compile_jinja_template) uses an
ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks, the loopcontrols extension and
its own `{% generation %}` tag, replaces the tojson filter by json.dumps without ASCII escaping,
and adds the globals raise_exception and strftime_now. It renders with messages, tools,
documents (None when not given), add_generation_prompt and the tokenizer's special tokens.
strftime_now is fixed here to NOW, so that renderings are reproducible.
"""
import datetime
import json

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

# The moment strftime_now() reports: Thursday 15 January 2026, 09:30:05 (naive local time).
NOW = datetime.datetime(2026, 1, 15, 9, 30, 5)


class GenerationTag(Extension):
    """transformers' AssistantTracker: {% generation %}...{% endgeneration %} renders its body."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render_body"), [], [], body).set_lineno(lineno)

    def _render_body(self, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(fmt):
    return NOW.strftime(fmt)


def make_environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTag, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(env, source, messages, add_generation_prompt, bos_token, eos_token, extra=None):
    """apply_chat_template's call: tools and documents are passed (None when absent)."""
    extra = dict(extra or {})
    tools = extra.pop("tools", None)
    documents = extra.pop("documents", None)
    return env.from_string(source).render(messages=messages, tools=tools, documents=documents,
                                          add_generation_prompt=add_generation_prompt,
                                          bos_token=bos_token, eos_token=eos_token, **extra)
