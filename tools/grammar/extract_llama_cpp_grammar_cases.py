#!/usr/bin/env python3
"""Extracts llama.cpp's grammar test vectors into JSON (test/data/grammar/llama_cpp_grammar_cases.json).

From tests/test-grammar-integration.cpp: every test_grammar(desc, grammar, {passing}, {failing})
and test_schema(desc, schema, {passing}, {failing}) call, and the left-recursion grammars that
test_failure_left_recursion() expects to be refused. From tests/test-json-schema-to-grammar.cpp:
every test({STATUS, name, schema, expected_grammar}) case (our test compares behaviour: strings
sampled from the expected grammar must match our conversion, and FAILURE cases must be refused).

The C++ source is read with a small tokenizer of C++ string literals (plain, raw R"delim(...)delim"
and adjacent concatenations); arguments that are not literals (token(N) + "...") are recorded
with "unsupported" and the reason, so the count of what could not be extracted is explicit.

Usage: extract_llama_cpp_grammar_cases.py LLAMA_CPP_SOURCE_DIR OUTPUT_JSON
"""
import json
import os
import re
import subprocess
import sys


def skip_ws_comments(src, i):
    while i < len(src):
        if src[i].isspace():
            i += 1
        elif src.startswith('//', i):
            j = src.find('\n', i)
            i = len(src) if j < 0 else j + 1
        elif src.startswith('/*', i):
            i = src.index('*/', i) + 2
        else:
            break
    return i


ESC = {'n': '\n', 't': '\t', 'r': '\r', '\\': '\\', '"': '"', "'": "'", '0': '\0', 'a': '\a', 'b': '\b',
       'f': '\f', 'v': '\v', '?': '?'}



def expect_comma(src, i, context=''):
    """The index after the comma that must follow position i (whitespace and comments skipped)."""
    i = skip_ws_comments(src, i)
    assert src[i] == ',', (context, src[i:i + 80])
    return i + 1

def parse_plain_literal(src, i):
    """src[i] == '"'; returns (bytes, next index)."""
    assert src[i] == '"'
    i += 1
    out = bytearray()
    while src[i] != '"':
        c = src[i]
        if c == '\\':
            e = src[i + 1]
            if e == 'x':
                m = re.match(r'[0-9a-fA-F]+', src[i + 2:])
                out.append(int(m.group(0), 16) & 0xFF)
                i += 2 + len(m.group(0))
                continue
            if e == 'u' or e == 'U':
                n = 4 if e == 'u' else 8
                out += chr(int(src[i + 2:i + 2 + n], 16)).encode('utf-8')
                i += 2 + n
                continue
            if e in '01234567' and e != '0' or (e == '0' and src[i + 2] in '01234567'):
                m = re.match(r'[0-7]{1,3}', src[i + 1:])
                out.append(int(m.group(0), 8) & 0xFF)
                i += 1 + len(m.group(0))
                continue
            out += ESC[e].encode('utf-8')
            i += 2
        else:
            out += c.encode('utf-8')
            i += 1
    return bytes(out), i + 1


def parse_string_expr(src, i):
    """A string expression: adjacent literals (plain or raw). Returns (bytes or None, next index, text)."""
    start = i
    parts = []
    while True:
        i = skip_ws_comments(src, i)
        m = re.match(r'(u8)?R"([^(\s]*)\(', src[i:])
        if m:
            delim = ')' + m.group(2) + '"'
            body_start = i + m.end()
            end = src.index(delim, body_start)
            parts.append(src[body_start:end].encode('utf-8'))
            i = end + len(delim)
            continue
        if src.startswith('u8"', i):
            i += 2
        if i < len(src) and src[i] == '"':
            b, i = parse_plain_literal(src, i)
            parts.append(b)
            continue
        break
    if not parts:
        return None, start, ''
    # anything else before the next ',' or '}' / ')' at this level makes it a non-literal expression
    j = skip_ws_comments(src, i)
    if src[j] not in ',});':
        return None, i, ''
    return b''.join(parts), i, src[start:i]


def skip_expression(src, i):
    """Skips a C++ expression up to the ',' or closing bracket at depth 0; returns (text, next index)."""
    depth = 0
    start = i
    while i < len(src):
        c = src[i]
        if c == '"' or src.startswith('R"', i):
            _, i2, _ = parse_string_expr(src, i)
            if i2 == i:
                _, i2 = parse_plain_literal(src, i)
            i = i2
            continue
        if c in '({[':
            depth += 1
        elif c in ')}]':
            if depth == 0:
                break
            depth -= 1
        elif c == ',' and depth == 0:
            break
        i += 1
    return src[start:i].strip(), i


def parse_string_list(src, i):
    """src[i] == '{': a braced list of string expressions. Returns (list, unsupported list, next index)."""
    i = skip_ws_comments(src, i)
    assert src[i] == '{', src[i:i + 40]
    i += 1
    items, unsupported = [], []
    while True:
        i = skip_ws_comments(src, i)
        if src[i] == '}':
            return items, unsupported, i + 1
        b, i2, _ = parse_string_expr(src, i)
        if b is None:
            text, i2 = skip_expression(src, i)
            unsupported.append(text)
        else:
            items.append(b)
        i = skip_ws_comments(src, i2)
        if src[i] == ',':
            i += 1


def decode(b):
    return b.decode('utf-8', errors='surrogateescape')


def to_json_string(b):
    # bytes that are not UTF-8 go as a list of byte values
    try:
        return b.decode('utf-8')
    except UnicodeDecodeError:
        return {'bytes': list(b)}


def extract_integration(path):
    src = open(path, encoding='utf-8').read()
    cases = []
    # skip the helper definitions (static void test_grammar(const std::string & ...)
    for m in re.finditer(r'\btest_(grammar|schema)\(\s*(?=")', src):
        kind = m.group(1)
        i = m.end()
        desc, i, _ = parse_string_expr(src, i)
        text, i, _ = parse_string_expr(src, expect_comma(src, i, kind))
        passing, unsup_p, i = parse_string_list(src, expect_comma(src, i, kind))
        failing, unsup_f, i = parse_string_list(src, expect_comma(src, i, kind))
        line = src.count('\n', 0, m.start()) + 1
        case = {'source': 'tests/test-grammar-integration.cpp:%d' % line, 'kind': kind,
                'description': decode(desc), kind: decode(text),
                'passing': [to_json_string(s) for s in passing], 'failing': [to_json_string(s) for s in failing]}
        if unsup_p or unsup_f:
            case['unsupported'] = 'strings built from token(N) (token-id elements <[N]>); not literals: ' + \
                '; '.join(unsup_p + unsup_f)[:300]
        cases.append(case)
    # left recursion: const std::string X_str = R"""(...)"""; assert(test_build_grammar_fails(X_str));
    refused = []
    body = src[src.index('static void test_failure_left_recursion'):]
    body = body[:body.index('\n}\n')]
    for m in re.finditer(r'const std::string (\w+) = ', body):
        g, _, _ = parse_string_expr(body, m.end())
        if re.search(r'test_build_grammar_fails\(%s\)' % m.group(1), body):
            line = src.count('\n', 0, src.index(body)) + body.count('\n', 0, m.start()) + 1
            refused.append({'source': 'tests/test-grammar-integration.cpp:%d' % line, 'grammar': decode(g),
                            'reason': 'left recursion'})
    return cases, refused


def extract_schema_conversion(path):
    src = open(path, encoding='utf-8').read()
    cases = []
    for m in re.finditer(r'\btest\(\{\s*(SUCCESS|FAILURE)\s*,', src):
        i = m.end()
        name, i, _ = parse_string_expr(src, i)
        schema, i, _ = parse_string_expr(src, expect_comma(src, i))
        grammar, i, _ = parse_string_expr(src, expect_comma(src, i))
        line = src.count('\n', 0, m.start()) + 1
        case = {'source': 'tests/test-json-schema-to-grammar.cpp:%d' % line, 'status': m.group(1).lower(),
                'name': decode(name) if name is not None else None,
                'schema': decode(schema) if schema is not None else None,
                'expected_grammar': decode(grammar) if grammar is not None else None}
        if name is None or schema is None or grammar is None:
            case['unsupported'] = 'not string literals'
        cases.append(case)
    return cases


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    root, out = sys.argv[1], sys.argv[2]
    commit = None
    try:
        commit = subprocess.check_output(['git', '-C', root, 'rev-parse', 'HEAD'], text=True,
                                         stderr=subprocess.DEVNULL).strip()
    except Exception:
        pass
    integration, refused = extract_integration(os.path.join(root, 'tests/test-grammar-integration.cpp'))
    conversion = extract_schema_conversion(os.path.join(root, 'tests/test-json-schema-to-grammar.cpp'))
    data = {
        'provenance': 'llama.cpp (MIT licence, Copyright (c) 2023-2024 The ggml authors), commit %s: '
                      'tests/test-grammar-integration.cpp and tests/test-json-schema-to-grammar.cpp; '
                      'extracted by tools/grammar/extract_llama_cpp_grammar_cases.py' % commit,
        'integration': integration,
        'refused_grammars': refused,
        'schema_conversion': conversion,
    }
    with open(out, 'w', encoding='utf-8') as f:
        json.dump(data, f, indent=1, ensure_ascii=False)
        f.write('\n')
    n_str = sum(len(c['passing']) + len(c['failing']) for c in integration)
    print('integration cases: %d (%d grammar, %d schema), %d strings, %d with non-literal strings; '
          'refused grammars: %d; schema conversion cases: %d (%d failure), %d not literal' % (
              len(integration), sum(c['kind'] == 'grammar' for c in integration),
              sum(c['kind'] == 'schema' for c in integration), n_str,
              sum('unsupported' in c for c in integration), len(refused), len(conversion),
              sum(c['status'] == 'failure' for c in conversion), sum('unsupported' in c for c in conversion)))


if __name__ == '__main__':
    main()
