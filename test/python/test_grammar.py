"""Grammar- and JSON-schema-constrained generation (issue 20) through cv2 and llm_generate.

Many sampled completions of the demo model and of random-weight models, under several schemas,
seeds and temperatures, must parse with Python's json and validate against their schema with an
independent validator (Debian's python3-jsonschema).
"""
import json
import os
import subprocess
import sys

import pytest

import cv2 as cv
from conftest import PROJECT_ROOT, SHARED_TESTDATA

jsonschema = pytest.importorskip("jsonschema")

# Bounded schemas: every string, array and number has a length limit, so that a random model
# ends (the grammar then allows only end-of-generation) within maxNewTokens.
SCHEMAS = {
    "person": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 12},
            "age": {"type": "integer", "minimum": 0, "maximum": 120},
            "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "maxItems": 3},
            "ok": {"type": "boolean"},
        },
        "required": ["name", "age"],
        "additionalProperties": False,
    },
    "choice": {
        "anyOf": [
            {"type": "integer", "minimum": -5, "maximum": 5},
            {"type": "string", "format": "date"},
            {"const": "none"},
            {"type": "null"},
        ]
    },
    "points": {
        "$defs": {
            "pt": {
                "type": "object",
                "properties": {"x": {"type": "integer", "minimum": 0, "maximum": 99},
                               "y": {"type": "integer", "exclusiveMinimum": -10, "exclusiveMaximum": 10}},
                "required": ["x", "y"],
                "additionalProperties": False,
            }
        },
        "type": "array",
        "items": {"$ref": "#/$defs/pt"},
        "minItems": 1,
        "maxItems": 3,
    },
    "codes": {
        "type": "object",
        "properties": {
            "id": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{3}$"},
            "uuid": {"type": "string", "format": "uuid"},
            "kind": {"oneOf": [{"const": 1}, {"const": "one"}]},
        },
        "required": ["id", "uuid", "kind"],
    },
}

PROMPT = "Once upon a time"
MAX_NEW = 400


def validate(text, schema):
    value = json.loads(text)
    jsonschema.validate(value, schema, format_checker=jsonschema.FormatChecker())
    return value


@pytest.fixture(scope="module")
def random_models(tmp_path_factory):
    """Random-weight models: stories260K's SentencePiece vocabulary (byte fallback) and GPT-2's
    byte-level BPE vocabulary."""
    out = tmp_path_factory.mktemp("grammar_models")
    made = {}
    for name, extra in (("spm", []),
                        ("gpt2", ["--vocab-from", str(SHARED_TESTDATA / "llama.cpp-vocab" / "ggml-vocab-gpt-2.gguf")])):
        path = out / f"random_{name}.gguf"
        subprocess.run([sys.executable, "tools/gguf/make_synthetic_model.py", "--shape", "tiny", "--seed", "7",
                        "--type", "F32", "--out", str(path), "-q"] + extra, cwd=PROJECT_ROOT, check=True)
        made[name] = cv.dnn.TextGenerationModel(str(path))
    return made


@pytest.fixture(scope="module")
def demo_model():
    path = PROJECT_ROOT / "models" / "demo" / "demo-stories.gguf"
    if not path.exists():
        pytest.skip("demo model missing: %s" % path)
    return cv.dnn.TextGenerationModel(str(path))


def config(schema, seed, temperature, max_new=MAX_NEW):
    cfg = cv.dnn.GenerationConfig()
    cfg.jsonSchema = json.dumps(schema)
    cfg.maxNewTokens = max_new
    cfg.seed = seed
    cfg.temperature = temperature
    return cfg


def check_many(model, label, max_new=MAX_NEW):
    results = []
    for name, schema in SCHEMAS.items():
        for seed in (1, 2, 3):
            for temperature in (0.0, 0.8, 1.5):
                cfg = config(schema, seed, temperature, max_new)
                text = model.generate(PROMPT, cfg)
                # ended by the grammar (only end-of-generation was left), not by the limit
                assert len(model.getGeneratedTokenIds()) < max_new, (label, name, seed, temperature, text)
                try:
                    validate(text, schema)
                except Exception as e:  # noqa: BLE001  (the message says which)
                    pytest.fail("%s %s seed %d T %.1f: %r: %s" % (label, name, seed, temperature, text, e))
                results.append(text)
    return results


def test_random_models_follow_schemas(random_models):
    for label, model in random_models.items():
        texts = check_many(model, label)
        assert len(texts) == len(SCHEMAS) * 9
        # sampling does explore: not all completions of a schema are the same
        assert len(set(texts)) > len(SCHEMAS) * 3


def test_demo_model_follows_schemas(demo_model):
    # The demo model (a story model, context 512) likes spaces: the JSON whitespace that
    # llama.cpp's conversion allows between tokens (up to 22 characters each time) takes room.
    check_many(demo_model, "demo", max_new=500)


def test_batch_each_sequence_its_own_grammar_state(random_models):
    model = random_models["gpt2"]
    schema = SCHEMAS["person"]
    cfg = config(schema, 11, 1.0)
    prompts = ["Once upon a time", "The cat", "A", "Once upon a time"]
    texts = model.generateBatch(prompts, cfg)
    assert len(texts) == len(prompts)
    for t in texts:
        validate(t, schema)
    # completion i samples with seed + i: equal to a lone generation with that seed
    for i, p in enumerate(prompts):
        assert texts[i] == model.generate(p, config(schema, 11 + i, 1.0))


def test_streaming_step_api(random_models):
    model = random_models["spm"]
    schema = SCHEMAS["points"]
    cfg = config(schema, 5, 1.0)
    model.start(PROMPT, cfg)
    pieces = []
    while not model.isDone():
        pieces.append(model.next())
    text = "".join(pieces)
    validate(text, schema)
    assert text == model.generate(PROMPT, cfg)


def test_json_mode_and_grammar(random_models):
    model = random_models["spm"]
    ended = 0
    for seed in range(6):
        cfg = cv.dnn.GenerationConfig()
        cfg.jsonMode = True
        cfg.temperature = 1.0
        cfg.seed = seed
        cfg.maxNewTokens = MAX_NEW
        text = model.generate(PROMPT, cfg)
        if len(model.getGeneratedTokenIds()) < MAX_NEW:  # ended by the model, not by the limit
            json.loads(text)
            ended += 1
    assert ended >= 1
    cfg = cv.dnn.GenerationConfig()
    cfg.grammar = 'root ::= ("yes" | "no") (", " ("maybe" | "never"))?\n'
    for seed in range(4):
        cfg.seed = seed
        cfg.temperature = 1.5
        assert model.generate(PROMPT, cfg) in {"yes", "no", "yes, maybe", "yes, never", "no, maybe", "no, never"}


def test_stop_string_cuts_constrained_text(random_models):
    model = random_models["spm"]
    cfg = cv.dnn.GenerationConfig()
    cfg.grammar = 'root ::= "abc" [0-9]{3} "xyz"\n'
    cfg.stopStrings = ["xy"]
    assert model.generate(PROMPT, cfg)[:3] == "abc"
    text = model.generate(PROMPT, cfg)
    assert len(text) == 6 and text[3:].isdigit()


def test_errors(random_models):
    model = random_models["spm"]
    cfg = cv.dnn.GenerationConfig()
    cfg.grammar = 'root ::= "a" | root "b"\n'
    with pytest.raises(cv.error, match="left-recursive"):
        model.generate(PROMPT, cfg)
    cfg.grammar = 'root ::= "a"\nfoo ::= [a-\n'
    with pytest.raises(cv.error, match="line 2, column"):
        model.generate(PROMPT, cfg)
    cfg = cv.dnn.GenerationConfig()
    cfg.jsonSchema = '{"type": "object", "properties": {"a": {"$ref": "#/$defs/none"}}}'
    with pytest.raises(cv.error, match="points to nothing"):
        model.generate(PROMPT, cfg)
    cfg = cv.dnn.GenerationConfig()
    cfg.jsonMode = True
    cfg.grammar = 'root ::= "a"\n'
    with pytest.raises(cv.error, match="only one of"):
        model.generate(PROMPT, cfg)


def llm_generate(args):
    exe = os.path.join(os.environ.get("LLM_BIN_DIR", str(PROJECT_ROOT / "build" / "bin")), "llm_generate")
    return subprocess.run([exe] + args, capture_output=True, text=True, timeout=300)


def test_llm_generate_json_schema_pipes_into_json(random_models, tmp_path):
    demo = PROJECT_ROOT / "models" / "demo" / "demo-stories.gguf"
    schema = SCHEMAS["person"]
    schema_file = tmp_path / "schema.json"
    schema_file.write_text(json.dumps(schema))
    for arg in ("--json-schema=@" + str(schema_file), "--json-schema=" + json.dumps(schema)):
        r = llm_generate(["--model=" + str(demo), "--prompt=" + PROMPT, "--max-new-tokens=400",
                          "--temperature=0.9", "--seed=4", arg])
        assert r.returncode == 0, r.stderr
        validate(r.stdout, schema)
        assert "tokens generated" in r.stderr
    grammar_file = tmp_path / "g.gbnf"
    grammar_file.write_text('root ::= [0-9]{2} "-" [a-z]{3}\n')
    r = llm_generate(["--model=" + str(demo), "--prompt=" + PROMPT, "--grammar-file=" + str(grammar_file)])
    assert r.returncode == 0, r.stderr
    text = r.stdout.rstrip("\n")
    assert len(text) == 6 and text[:2].isdigit() and text[2] == "-" and text[3:].isalpha()
    r = llm_generate(["--model=" + str(demo), "--prompt=" + PROMPT, "--json", "--grammar-file=" + str(grammar_file)])
    assert r.returncode == 2


def test_speculative_decoding_under_a_schema(random_models):
    """Drafts (prompt lookup) are checked against the masked distribution: a drafted token the
    grammar does not allow is rejected. Greedy output equals the output without drafts; sampled
    output still validates."""
    model = random_models["gpt2"]
    for name in ("person", "points"):
        schema = SCHEMAS[name]
        plain = model.generate(PROMPT, config(schema, 1, 0.0))
        cfg = config(schema, 1, 0.0)
        cfg.draftTokens = 4
        cfg.lookupNgram = 2
        assert model.generate(PROMPT, cfg) == plain
        for seed in (1, 2):
            cfg = config(schema, seed, 1.0)
            cfg.draftTokens = 3
            cfg.lookupNgram = 1
            validate(model.generate(PROMPT, cfg), schema)
