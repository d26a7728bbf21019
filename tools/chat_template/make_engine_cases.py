#!/usr/bin/env python3
"""Writes test/data/jinja/engine_cases.json: small templates, one construct each, with what
Python's jinja2 renders for them set up as transformers does (transformers_env.py), or the
exception it raises. test/cpp/test_jinja_engine.cpp renders each with our engine.

    /usr/bin/python3 tools/chat_template/make_engine_cases.py test/data/jinja/engine_cases.json

Needs Debian's python3-jinja2 (3.1.2 made the committed file). A case is (group, template,
variables); variables are JSON, as the engine's callers pass them.
"""
import json
import os
import sys

import jinja2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import transformers_env  # noqa: E402

MSGS = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": " Hi there "},
        {"role": "assistant", "content": "Hello!"}]
D = {"b": 1, "A": 2, "a": 0, "items": "key named items"}

CASES = [
    # ---- lexer: whitespace control, comments, raw, literals ----
    ("lexer", "a  {%- if true %} b {% endif -%}  c", {}),
    ("lexer", "a\n  {% if true %}\n  b\n  {% endif %}\nc", {}),
    ("lexer", "  {% if true %}x{% endif %}", {}),
    ("lexer", "a {%+ if true %}b{% endif %}", {}),
    ("lexer", "a\n  {#- comment #}\nb", {}),
    ("lexer", "a\n  {# comment #}\nb", {}),
    ("lexer", "x {{- ' y ' -}} z", {}),
    ("lexer", "x\n  {{ 'y' }}\n  z", {}),
    ("lexer", "{% raw %}{{ not evaluated }}{% endraw %}", {}),
    ("lexer", "a\n  {% raw -%}  {{ x }}  {%- endraw %}\nb", {}),
    ("lexer", "line1\r\nline2\rline3\n", {}),
    ("lexer", "two trailing newlines\n\n", {}),
    ("lexer", "{% if true %}\n\nx{% endif %}", {}),
    ("lexer", "{% if true +%}\nx{% endif %}", {}),
    ("lexer", "{{ 'a' 'b' \"c\" }}", {}),
    ("lexer", "{{ 'it\\'s \\\"q\\\" \\\\ \\n \\t \\x41 \\u00e9 \\U0001F600 \\101 \\q' }}", {}),
    ("lexer", "{{ 1_000 + 0x1F + 0o17 + 0b101 }} {{ 1.5e3 }} {{ 2e-3 }} {{ 1_0.5 }}", {}),
    ("lexer", "{{ {'a': {'b': 1}}['a'] }}", {}),
    ("lexer", "{{ [1, 2,] }} {{ (1,) }} {{ {'a': 1,} }}", {}),
    ("lexer", "\t{%- for x in [1, 2] %}\n\t{{ x }}\n\t{%- endfor %}", {}),
    ("lexer", "{% for x in [1, 2] -%}\n  {{ x }}\n{%- endfor %}", {}),
    ("lexer", "{{ 'unterminated }}", {}),
    ("lexer", "{# unterminated comment", {}),
    ("lexer", "{{ 1 }", {}),
    ("lexer", "{{ a ! b }}", {}),
    ("lexer", "{{ (1 ] }}", {}),
    # ---- parser: precedence and structure ----
    ("parser", "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }} {{ 7 // 2 * 2 }}", {}),
    ("parser", "{{ 'a' ~ 1 ~ 2.5 ~ none ~ true }}", {}),
    ("parser", "{{ 'a' ~ 2 + 3 }}", {}),
    ("parser", "{{ not 1 == 2 }} {{ not x is defined }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }}", {}),
    ("parser", "{{ 1 if true else 2 }} {{ 1 if false else 2 if false else 3 }} {{ (1 if false) is defined }}", {}),
    ("parser", "{{ true and 'x' or 'y' }} {{ false or 0 or [] or 'last' }} {{ 0 and 1 }} {{ none or none }}", {}),
    ("parser", "{{ 'abc' | upper | replace('B', '-') }} {{ -3 | abs }} {{ [3, 1] | sort | first }}", {}),
    ("parser", "{{ x is not none }} {{ x is none }} {{ 4 is divisibleby 2 }} {{ 4 is divisibleby(3) }}", {"x": None}),
    ("parser", "{{ 'b' in 'abc' and 'z' not in 'abc' }} {{ 1 in [1, 2] }} {{ 'k' in {'k': 1} }}", {}),
    ("parser", "{{ messages[0].content }} {{ messages[-1]['role'] }} {{ messages[1:] | length }} {{ messages.0.role }}", {"messages": MSGS}),
    ("parser", "{{ f(1) }}", {}),
    ("parser", "{% if %}x{% endif %}", {}),
    ("parser", "{% if true %}x", {}),
    ("parser", "{% endif %}", {}),
    ("parser", "{% for x in %}{% endfor %}", {}),
    ("parser", "{% set 1 = 2 %}", {}),
    ("parser", "{{ x is defined is string }}", {}),
    ("parser", "{% macro m(a=1, b) %}{% endmacro %}", {}),
    ("parser", "{% break %}", {}),
    ("parser", "{% do x %}", {}),
    ("parser", "{{ 'x' | no_such_filter }}", {}),
    ("parser", "{% if false %}{{ 'x' | no_such_filter }}{% endif %}ok", {}),
    ("parser", "{% if true %}{{ 'x' | no_such_filter }}{% endif %}", {}),
    ("parser", "{{ 'x' | no_such_filter if false else 'y' }}", {}),
    ("parser", "{% if true %}{% for x in [1] %}{{ x | no_such_filter }}{% endfor %}{% endif %}", {}),
    ("parser", "{{ x is no_such_test }}", {}),
    ("parser", "{{ (1, 2) }} {{ () }} {{ 1, 2 }}", {}),
    # ---- values: str() and repr() as Python writes them ----
    ("values", "{{ [1, 'a', none, true, 1.5, {'k': 'v'}, (1,), ()] }}", {}),
    ("values", "{{ 1e20 }} {{ 1e16 }} {{ 1e15 }} {{ 0.0001 }} {{ 0.00001 }} {{ 1/3 }} {{ 10/2 }} {{ 0.1 + 0.2 }} {{ -0.0 }} {{ 123456789.125 }}", {}),
    ("values", "{{ ['it\\'s', 'a\"b', 'both \\' \"', 'x\\ny\\t\\\\', 'é😀', '\\x00\\x7f\\xa0\\u2028'] }}", {}),
    ("values", "{{ x }} {{ x.a }} {{ x['b'] }} {{ x.c is defined }}", {"x": {"a": [1, 2], "b": None}}),
    ("values", "{{ none }}|{{ true }}|{{ undefined_name }}|{{ 'x' ~ undefined_name ~ 'y' }}", {}),
    ("values", "{{ 3 * 'ab' }} {{ [1] * 3 }} {{ 'ab' * 0 }} {{ (1, 2) + (3,) }} {{ [1] + [2] }}", {}),
    ("values", "{{ 7 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ 2 ** -1 }} {{ 2 ** 0.5 }}", {}),
    ("values", "{{ true + 1 }} {{ 1 == 1.0 }} {{ 1 == true }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ (1, 2) == [1, 2] }}", {}),
    ("values", "{{ x }} {{ x | tojson }}", {"x": {"z": 1, "a": [True, None, 2.50]}}),
    ("values", "{{ 'x' + 1 }}", {}),
    ("values", "{{ 1 + 'x' }}", {}),
    ("values", "{{ 1 < 'a' }}", {}),
    ("values", "{{ 1 / 0 }}", {}),
    ("values", "{{ 1 // 0 }}", {}),
    ("values", "{{ -'a' }}", {}),
    ("values", "{{ undefined_name + 1 }}", {}),
    ("values", "{{ undefined_name.attr }}", {}),
    ("values", "{{ x.a.b }}", {"x": {}}),
    ("values", "{{ x[5] }}|{{ 'abc'[10] }}|{{ x['nope'] }}|{{ none.attr }}", {"x": [1]}),
    ("values", "{{ d['items'] }} {{ d.b }} {{ d['b'] }}", {"d": D}),
    ("values", "{{ 'abc'[1] }} {{ 'héllo'[1] }} {{ 'héllo'[1:3] }} {{ 'abc'[::-1] }} {{ [1, 2, 3][::2] }} {{ [1, 2, 3][-2:] }} {{ (1, 2, 3)[1:] }}", {}),
    ("values", "{{ [1, 2, 3][5:] }} {{ 'abc'[-10:2] }} {{ [1, 2, 3][::-1] }}", {}),
    ("values", "{{ x[1:] }}", {"x": None}),
    ("values", "{{ x[1:] }}", {"x": {"a": 1}}),
    ("values", "{{ x[1.5:] }}", {"x": [1, 2]}),
    ("values", "{{ undefined_name[1:] }}", {}),
    # ---- statements ----
    ("statements", "{% for x in [1, 2, 3] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}", {}),
    ("statements", "{% for x in [1, 2, 3] %}{{ loop.previtem }}-{{ loop.nextitem }}|{% endfor %}", {}),
    ("statements", "{% for x in [1, 2, 3] if x > 1 %}{{ loop.index }}/{{ loop.length }}:{{ x }} {% endfor %}", {}),
    ("statements", "{% for x in [] %}x{% else %}empty{% endfor %}", {}),
    ("statements", "{% for x in [1, 2] if x > 5 %}x{% else %}filtered away{% endfor %}", {}),
    ("statements", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {"d": D}),
    ("statements", "{% for k in d %}{{ k }},{% endfor %}", {"d": D}),
    ("statements", "{% for c in 'héllo' %}[{{ c }}]{% endfor %}", {}),
    ("statements", "{% for a, b in [[1, 2], (3, 4)] %}{{ a }}{{ b }}{% endfor %}", {}),
    ("statements", "{% for x in [1, 2, 3, 4] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}", {}),
    ("statements", "{% for x in [1, 2] %}{% for y in 'ab' %}{{ loop.index }}{{ y }}{% endfor %}{{ loop.index }};{% endfor %}", {}),
    ("statements", "{% for x in [1, 2, 3] %}{{ loop.cycle('a', 'b') }}{{ loop.changed(x > 1) }}{{ loop.depth }}{% endfor %}", {}),
    ("statements", "{% for x in [[1, [2]], [3]] recursive %}<{{ x if x is number else loop(x) }}:{{ loop.depth }}>{% endfor %}", {}),
    ("statements", "{% for x in 5 %}{% endfor %}", {}),
    ("statements", "{% for x in none %}{% endfor %}", {}),
    ("statements", "{% for x in undefined_name %}x{% else %}nothing{% endfor %}", {}),
    ("statements", "{% set x = 5 %}{% for i in [1, 2] %}{{ x }}{% set x = i %}{{ x }}{% endfor %}[{{ x }}]", {}),
    ("statements", "{% if true %}{% set z = 1 %}{% endif %}{{ z }}", {}),
    ("statements", "{% for x in [] %}{% else %}{% set y = 1 %}{% endfor %}[{{ y }}]", {}),
    ("statements", "{% set ns = namespace(x=1, items=[]) %}{% for i in range(3) %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }} {{ ns }}", {}),
    ("statements", "{% set ns = namespace() %}{% set ns.a = 'v' %}{{ ns.a }} {{ ns.missing is defined }}", {}),
    ("statements", "{% set x = 1 %}{% set x.a = 2 %}", {}),
    ("statements", "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set c, d = [3, 4] %}{{ c }}{{ d }}", {}),
    ("statements", "{% set a, b = [1] %}", {}),
    ("statements", "{% set x %}a{{ 1 }}b{% endset %}{{ x }}|{% set y | upper | replace('B', 'b') %}abc{% endset %}{{ y }}", {}),
    ("statements", "{% filter upper %}x{{ 'y' }}z{% endfilter %}", {}),
    ("statements", "{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]", {}),
    ("statements", "{% macro m(a, b=a ~ '!') %}[{{ a }}{{ b }}{{ varargs }}{{ kwargs }}]{% endmacro %}{{ m(1) }}{{ m(1, 2, 3, k=4) }}{{ m(b='x', a='y') }}", {}),
    ("statements", "{% macro m(a) %}[{{ a }}]{% endmacro %}{{ m() }}|{{ m(1, 2) }}", {}),
    ("statements", "{% macro m(a) %}[{{ a }}]{% endmacro %}{{ m(1, b=2) }}", {}),
    ("statements", "{% macro m(a) %}[{{ a }}]{% endmacro %}{{ m(1, 2) }}", {}),
    ("statements", "{% macro m(a) %}[{{ caller(a) }}]{% endmacro %}{% call(x) m(5) %}<{{ x }}>{% endcall %}", {}),
    ("statements", "{% macro m() %}{{ caller() }}{% endmacro %}{{ m() }}", {}),
    ("statements", "{% set x = 5 %}{% macro m() %}{{ x }}{% endmacro %}{% set x = 6 %}{{ m() }}", {}),
    ("statements", "{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(5) }}", {}),
    ("statements", "{% macro m() %}{% set inner = 1 %}{{ inner }}{% endmacro %}{{ m() }}[{{ inner }}]", {}),
    ("statements", "{{ m }}{% macro m() %}x{% endmacro %}{{ m() }}", {}),
    ("statements", "{% block b %}in block{% endblock %}", {}),
    ("statements", "{% generation %}generated{% endgeneration %}", {}),
    ("statements", "{% print 1, 'a' %}", {}),
    ("statements", "{% autoescape true %}{{ '<b>' }}{{ '<i>' | safe }}{% endautoescape %}{{ '<b>' }}", {}),
    ("statements", "{% include 'x.html' %}", {}),
    ("statements", "{{ raise_exception('Only user and assistant roles are supported!') }}", {}),
    ("statements", "{% if messages[0].role != 'user' %}{{ raise_exception('bad role ' ~ messages[0].role) }}{% endif %}", {"messages": MSGS}),
    # ---- filters ----
    ("filters", "{{ ' a b '|trim }}|{{ 'xxaxx'|trim('x') }}|{{ none|trim }}|{{ 'aBc'|upper }}{{ 'aBc'|lower }}|{{ 'hello wORLD-x (y'|title }}|{{ 'hELLO world'|capitalize }}", {}),
    ("filters", "{{ 'Grüß Straße ǆ'|upper }}|{{ 'ÀÉÎ Σ'|lower }}|{{ 'éa'|capitalize }}", {}),
    ("filters", "{{ x|length }} {{ 'héllo'|length }} {{ d|length }} {{ undefined_name|length }} {{ x|count }}", {"x": [1, 2], "d": D}),
    ("filters", "{{ [1, 2, 3]|join(', ') }}|{{ [1, none, 'x']|join }}|{{ messages|join('-', attribute='role') }}|{{ 'abc'|join('.') }}", {"messages": MSGS}),
    ("filters", "{{ x|default('d') }} {{ ''|default('d') }} {{ ''|default('d', true) }} {{ none|default('d') }} {{ 0|d('zero', boolean=true) }}", {}),
    ("filters", "{{ [1, 2, 3]|first }} {{ [1, 2, 3]|last }} {{ 'abc'|first }} {{ 'abc'|last }} {{ []|first is defined }} {{ d|first }}", {"d": D}),
    ("filters", "{{ 'aaa'|replace('a', 'b', 2) }} {{ 'a-b-c'|replace('-', '') }} {{ none|replace('o', '0') }} {{ 'ab'|replace('', '.') }}", {}),
    ("filters", "{{ messages|selectattr('role', 'equalto', 'user')|list }} {{ messages|rejectattr('role', 'eq', 'user')|map(attribute='role')|list }}", {"messages": MSGS}),
    ("filters", "{{ [{'a': 1}, {'a': 0}, {'b': 3}]|selectattr('a')|list }} {{ [{'a': {'b': 1}}]|map(attribute='a.b')|list }} {{ [{'a': 1}, {}]|map(attribute='a', default='-')|list }}", {}),
    ("filters", "{{ [1, 2, 3, 4]|select('odd')|list }} {{ [1, 2, 3]|reject('gt', 1)|list }} {{ [0, 1, '', 'a']|select|list }} {{ ['a', 'B']|map('upper')|join }} {{ [[1, 2]]|map('join', '-')|list }}", {}),
    ("filters", "{{ [1, 2]|map('string')|list }} {{ [1, 2]|map('string') is iterable }} {{ ([]|select) is sequence }}", {}),
    ("filters", "{% if []|select %}T{% else %}F{% endif %}{% if []|select|list %}T{% else %}F{% endif %}", {}),
    ("filters", "{% set g = [1, 2, 3]|select('odd') %}{{ g|list }}{{ g|list }}", {}),
    ("filters", "{{ [1, 2]|map('string')|tojson }}", {}),
    ("filters", "{{ [1, 2]|map('string')|length }}", {}),
    ("filters", "{{ d|items|list }} {{ d|dictsort }} {{ d|dictsort(true) }} {{ d|dictsort(by='value', reverse=true) }}", {"d": {"b": 1, "A": 2, "a": 0}}),
    ("filters", "{% for k in 'x'|items %}{% endfor %}", {}),
    ("filters", "{{ undefined_name|items|list }}", {}),
    ("filters", "{{ ['b', 'A', 'a', 'C']|sort }} {{ ['b', 'A', 'a']|sort(case_sensitive=true) }} {{ [3, 1, 2]|sort(reverse=true) }} {{ messages|sort(attribute='role')|map(attribute='role')|list }}", {"messages": MSGS}),
    ("filters", "{{ [1, 2, 2, 'a', 'A', 3]|unique|list }} {{ ['a', 'A']|unique(case_sensitive=true)|list }} {{ [3, 1, 2]|min }} {{ [3, 1, 2]|max }} {{ ['b', 'A']|min }} {{ []|max is defined }}", {}),
    ("filters", "{{ [1, 2, 3]|sum }} {{ [1.5, 2]|sum }} {{ [{'n': 2}, {'n': 3}]|sum(attribute='n', start=10) }}", {}),
    ("filters", "{{ -3|abs }} {{ -2.5|abs }} {{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ 7|round }} {{ 2.1|round(0, 'ceil') }} {{ -2.1|round(method='floor') }} {{ 1234.5678|round(-2) }}", {}),
    ("filters", "{{ '42'|int }} {{ ' 42 '|int }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ 4.9|int }} {{ -4.9|int }} {{ '0x1F'|int(0, 16) }} {{ '1F'|int(base=16) }} {{ none|int }} {{ true|int }}", {}),
    ("filters", "{{ '3.5'|float }} {{ 'x'|float }} {{ 3|float }} {{ '1e3'|float }} {{ none|float(1.5) }}", {}),
    ("filters", "{{ 3|string }} {{ none|string }} {{ [1, 'a']|string }} {{ 'a'|string }}", {}),
    ("filters", "{{ [1, 2, 3]|list }} {{ 'ab'|list }} {{ d|list }} {{ (1, 2)|list }}", {"d": D}),
    ("filters", "{{ [1, 2, 3]|reverse|list }} {{ 'abc'|reverse }} {{ [1, 2, 3]|batch(2)|list }} {{ [1, 2, 3]|batch(2, 'x')|list }} {{ [1, 2, 3, 4, 5]|slice(2)|list }} {{ [1, 2, 3, 4]|slice(3, 0)|list }}", {}),
    ("filters", "{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent(2, blank=true) }}|{{ 'a\\nb'|indent('> ') }}", {}),
    ("filters", "{{ 'hello world'|center(15) }}|{{ 'abc'|center(8) }}|{{ 'hello'|truncate(3) }}|{{ 'hello world foo bar'|truncate(12) }}|{{ 'hello world'|truncate(9, true) }}|{{ 'hello'|truncate(4, leeway=0) }}", {}),
    ("filters", "{{ 'one two  three'|wordcount }} {{ '%s-%d' | format('a', 3) }} {{ '%(x)s!'|format(x='y') }} {{ '<b>x</b> &amp; y'|striptags }}", {}),
    ("filters", "{{ '<a&b>'|e }} {{ '<a&b>'|escape }} {{ '<a>'|safe }} {{ ('<a>'|safe + '<b>') }} {{ '<a>'|forceescape }}", {}),
    ("filters", "{{ 1000|filesizeformat }} {{ 1|filesizeformat }} {{ 2048|filesizeformat(true) }} {{ 123456789|filesizeformat }}", {}),
    ("filters", "{{ 'a b/c&d'|urlencode }} {{ {'a': 'x y', 'b': 1}|urlencode }}", {}),
    ("filters", "{{ messages|groupby('role')|map(attribute='grouper')|list }} {% for g in messages|groupby('role') %}{{ g.grouper }}:{{ g.list|length }},{% endfor %}{{ [{'a': 1}]|groupby('a') }}", {"messages": MSGS}),
    ("filters", "{{ d|attr('b') }}|{{ 'abc'|attr('upper') is callable }}", {"d": D}),
    ("filters", "{{ 'x'|tojson }} {{ 'é\"\\\\\\n<>&\\''|tojson }} {{ 'é'|tojson(true) }} {{ none|tojson }} {{ 1.0|tojson }} {{ 3|tojson }} {{ true|tojson }}", {}),
    ("filters", "{{ x|tojson }}|{{ x|tojson(indent=2) }}|{{ x|tojson(sort_keys=true) }}|{{ x|tojson(separators=(',', ':')) }}|{{ x|tojson(indent='\\t') }}", {"x": {"b": [1, {"c": None}], "a": {}, "e": []}}),
    ("filters", "{{ {1: 'a', none: 'b', true: 'c', 2.5: 'd'}|tojson }}", {}),
    ("filters", "{{ undefined_name|tojson }}", {}),
    ("filters", "{{ (1, 2)|tojson }} {{ [1, [2, [3]]]|tojson(indent=1) }}", {}),
    ("filters", "{{ range(3)|tojson }}", {}),
    ("filters", "{{ 'x'|sort }}", {}),
    ("filters", "{{ [1, 'a']|sort }}", {}),
    ("filters", "{{ 'x'|round }}", {}),
    # ---- tests ----
    ("tests", "{{ x is defined }} {{ y is defined }} {{ y is undefined }} {{ none is none }} {{ x is none }}", {"x": 1}),
    ("tests", "{{ 'a' is string }} {{ 1 is string }} {{ {} is mapping }} {{ [] is mapping }} {{ 1 is number }} {{ true is number }} {{ 1.5 is number }}", {}),
    ("tests", "{{ 1 is integer }} {{ true is integer }} {{ 1.0 is float }} {{ true is boolean }} {{ 1 is boolean }} {{ true is true }} {{ 1 is true }} {{ false is false }}", {}),
    ("tests", "{{ [] is sequence }} {{ {} is sequence }} {{ 'a' is sequence }} {{ 1 is sequence }} {{ [] is iterable }} {{ 'a' is iterable }} {{ 1 is iterable }} {{ none is iterable }} {{ y is sequence }} {{ y is iterable }}", {}),
    ("tests", "{{ 3 is odd }} {{ 3 is even }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 'abc' is lower }} {{ 'aBc' is lower }} {{ 'ABC' is upper }} {{ '1' is upper }}", {}),
    ("tests", "{{ 1 is eq 1 }} {{ 1 is equalto 2 }} {{ 1 is ne 2 }} {{ 1 is lt 2 }} {{ 2 is le 2 }} {{ 3 is gt 2 }} {{ 2 is ge 3 }} {{ 1 is greaterthan 0 }} {{ 1 is lessthan 0 }}", {}),
    ("tests", "{{ 1 is in [1, 2] }} {{ 'a' is in 'abc' }} {{ none is sameas none }} {{ x is callable }} {{ range is callable }} {{ 'upper' is filter }} {{ 'odd' is test }} {{ 'x' is filter }}", {"x": None}),
    ("tests", "{{ ('<a>'|safe) is escaped }} {{ '<a>' is escaped }} {{ d.items is callable }}", {"d": D}),
    ("tests", "{{ messages|selectattr('content', 'string')|list|length }} {{ [1, 'a', none]|select('none')|list }} {{ [1, 2, 3]|select('in', [2, 3])|list }}", {"messages": MSGS}),
    # ---- methods ----
    ("methods", "{{ ' x '.strip() }}|{{ 'xax'.strip('x') }}|{{ ' x '.lstrip() }}|{{ ' x '.rstrip() }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'a b c'.split(' ', 1) }}|{{ 'a,b,c'.rsplit(',', 1) }}", {}),
    ("methods", "{{ 'abc'.startswith('a') }} {{ 'abc'.startswith(('x', 'a')) }} {{ 'abc'.endswith('bc') }} {{ 'abc'.startswith('b', 1) }} {{ 'Hello World'.upper() }} {{ 'Hello'.lower() }} {{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }} {{ 'aB'.swapcase() }}", {}),
    ("methods", "{{ 'hello'.find('l') }} {{ 'hello'.rfind('l') }} {{ 'hello'.find('z') }} {{ 'hello'.count('l') }} {{ 'hello'.index('e') }} {{ 'héllo'.find('l') }} {{ 'hello'.find('l', 3) }}", {}),
    ("methods", "{{ ', '.join(['a', 'b']) }} {{ '{} and {}'.format(1, 'x') }} {{ '{0}{1}{0}'.format('a', 'b') }} {{ '{name}!'.format(name='n') }} {{ '{:>5}|{:<4}|{:^5}|{:.2f}|{:05d}|{:,}'.format('a', 'b', 'c', 3.14159, 42, 1234567) }}", {}),
    ("methods", "{{ 'a\\nb\\r\\nc'.splitlines() }} {{ 'abc'.replace('b', 'x') }} {{ 'a.b.c'.partition('.') }} {{ 'a.b.c'.rpartition('.') }} {{ '42'.zfill(5) }} {{ 'ab'.center(6, '*') }} {{ 'ab'.ljust(4, '-') }} {{ 'ab'.rjust(4) }}", {}),
    ("methods", "{{ '123'.isdigit() }} {{ 'abc'.isalpha() }} {{ 'a1'.isalnum() }} {{ '  '.isspace() }} {{ 'abc'.islower() }} {{ 'ABC'.isupper() }} {{ 'Hello World'.istitle() }} {{ ''.isdigit() }}", {}),
    ("methods", "{{ 'prefix_x'.removeprefix('prefix_') }} {{ 'x.txt'.removesuffix('.txt') }}", {}),
    ("methods", "{{ d.get('b') }} {{ d.get('zz') }} {{ d.get('zz', 5) }} {{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }} {{ d.items() }} {{ d.keys() }}", {"d": {"b": 1, "a": 2}}),
    ("methods", "{{ [1, 2, 1].count(1) }} {{ [1, 2, 1].index(2) }} {{ (1, 2).index(2) }}", {}),
    ("methods", "{{ [1, 2].append(3) }}", {}),
    ("methods", "{% set x = [1, 2] %}{% set _ = x.append(3) %}", {}),
    ("methods", "{{ d.pop('b') }}", {"d": {"b": 1}}),
    ("methods", "{{ d.update({'a': 1}) }}", {"d": {"b": 1}}),
    ("methods", "{{ [1, 2].append is defined }}|{{ [1, 2].append }}|{{ d.__class__ is defined }}", {"d": {}}),
    ("methods", "{{ 'abc'.index('z') }}", {}),
    ("methods", "{{ 'a'.split('') }}", {}),
    ("methods", "{{ 'x'.nosuchmethod() }}", {}),
    ("methods", "{{ '%s has %d items (%.1f%%)' % ('list', 3, 42.25) }} {{ '%5s|%-5s|%03d|%x|%r' % ('a', 'b', 7, 255, 'q') }} {{ '%(a)s-%(b)s' % {'a': 1, 'b': 2} }} {{ '%s' % 'single' }}", {}),
    ("methods", "{{ '%s %s' % ('only one',) }}", {}),
    # ---- globals ----
    ("globals", "{{ range(3) }} {{ range(3)|list }} {{ range(1, 10, 3)|list }} {{ range(5, 0, -2)|list }} {{ range(0)|list }} {{ range(3)|length }}", {}),
    ("globals", "{{ range(100001)|length }}", {}),
    ("globals", "{{ dict(a=1, b=2) }} {{ dict([('x', 1)]) }} {{ namespace(a=1).a }} {{ namespace({'x': 5}).x }}", {}),
    ("globals", "{% set c = cycler('a', 'b') %}{{ c.next() }}{{ c.next() }}{{ c.next() }}{{ c.current }}{% set j = joiner(' | ') %}{% for x in [1, 2, 3] %}{{ j() }}{{ x }}{% endfor %}", {}),
    ("globals", "{{ strftime_now('%Y-%m-%d %H:%M:%S %A %a %B %b %d %j %p %I %y %w %%') }} {{ strftime_now('%d %b %Y') }}", {}),
    ("globals", "{{ bos_token }}{{ messages|length }}{{ add_generation_prompt }}{{ tools }}{{ documents }}", {"bos_token": "<s>", "messages": MSGS, "add_generation_prompt": True, "tools": None, "documents": None}),
    ("globals", "{% if tools is defined and tools is not none %}T{% else %}F{% endif %}{% for t in tools %}{% endfor %}", {"tools": None}),
]


def main(out_path):
    env = transformers_env.make_environment()
    cases = []
    for index, (group, template, variables) in enumerate(CASES):
        case = {"name": "%s_%03d" % (group, index), "group": group, "template": template, "variables": variables}
        try:
            compiled = env.from_string(template)
        except Exception as e:
            case["error"] = type(e).__name__
            case["compile_error"] = True
            cases.append(case)
            continue
        try:
            case["output"] = compiled.render(**variables)
        except Exception as e:
            case["error"] = type(e).__name__
            case["compile_error"] = False
        cases.append(case)
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump({"generator": "tools/chat_template/make_engine_cases.py", "jinja2_version": jinja2.__version__,
                   "now": transformers_env.NOW.isoformat(), "cases": cases}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("%d cases (%d raise) -> %s" % (len(cases), sum("error" in c for c in cases), out_path))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
