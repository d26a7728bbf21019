"""cv2.dnn.ChatTemplate against Python's jinja2 set up as transformers' apply_chat_template
(tools/chat_template/transformers_env.py), rendered here at test time: every chat template of
the shared test data on the conversations of tools/chat_template/render_reference.py, built-in
families, errors, and TextGenerationModel's use of the model's own template."""
import datetime
import json
import sys

import cv2 as cv
import pytest

from conftest import PROJECT_ROOT, SHARED_TESTDATA

sys.path.insert(0, str(PROJECT_ROOT / "tools" / "chat_template"))
import render_reference  # noqa: E402
import transformers_env  # noqa: E402

TEMPLATES = sorted((SHARED_TESTDATA / "chat-templates").glob("*.jinja"))


def jinja2_environment():
    """transformers' environment with the real clock, as ChatTemplate renders strftime_now."""
    env = transformers_env.make_environment()
    env.globals["strftime_now"] = lambda fmt: datetime.datetime.now().strftime(fmt)
    return env


def jinja2_render(env, source, messages, add_generation_prompt, bos, eos, extra=None):
    """The expected text, or the exception jinja2 raised."""
    try:
        return transformers_env.render(env, source, messages, add_generation_prompt, bos, eos, extra)
    except Exception as e:  # the template raised (or does not compile): ours must raise too
        return e


def test_the_shared_folder_has_templates():
    assert TEMPLATES, SHARED_TESTDATA / "chat-templates"


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_shared_template_renders_as_jinja2(path):
    env = jinja2_environment()
    source = path.read_text(encoding="utf-8")
    for case, messages, generation_prompt, extra in render_reference.CASES:
        expected = jinja2_render(env, source, messages, generation_prompt, render_reference.BOS, render_reference.EOS, extra)
        try:
            ours = cv.dnn.ChatTemplate.create(source, render_reference.BOS, render_reference.EOS).applyJSON(
                json.dumps(messages), generation_prompt, json.dumps(extra))
        except cv.error as e:
            ours = e
        if isinstance(expected, Exception):
            assert isinstance(ours, cv.error), (case, expected, ours)
        else:
            assert ours == expected, case


def test_apply_takes_roles_and_contents():
    source = ("{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] | trim }}{{ eos_token }}"
              "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}")
    t = cv.dnn.ChatTemplate.create(source, "<s>", "</s>")
    roles, contents = ["system", "user"], ["Be brief.", " Grüß dich 👋 "]
    messages = [{"role": r, "content": c} for r, c in zip(roles, contents)]
    env = jinja2_environment()
    for generation_prompt in (True, False):
        assert t.apply(roles, contents, generation_prompt) == jinja2_render(env, source, messages, generation_prompt, "<s>", "</s>")
    assert t.getName() == "jinja" and t.getSource() == source
    assert (t.getBosToken(), t.getEosToken()) == ("<s>", "</s>")


def test_extra_variables_and_tools():
    source = ("{% if tools %}{{ tools | tojson }}\n{% endif %}{% if not enable_thinking %}/no_think {% endif %}"
              "{% for m in messages %}{{ m.role }}: {{ m.content }}{% if m.tool_calls is defined %}"
              "{{ m.tool_calls[0].function.arguments | tojson }}{% endif %}\n{% endfor %}")
    messages = [{"role": "user", "content": "Weather in Zürich?"},
                {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {
                    "name": "get_weather", "arguments": {"city": "Zürich", "days": 2}}}]}]
    extra = {"tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
             "enable_thinking": False}
    t = cv.dnn.ChatTemplate.create(source)
    expected = jinja2_render(jinja2_environment(), source, messages, False, "", "", extra)
    assert t.applyJSON(json.dumps(messages), False, json.dumps(extra)) == expected
    # Without extra variables, tools is None (as transformers passes it) and enable_thinking undefined.
    assert t.applyJSON(json.dumps(messages), False, "") == jinja2_render(jinja2_environment(), source, messages, False, "", "")


def test_builtin_family_formats_as_its_reference_template():
    references = json.loads((PROJECT_ROOT / "tools" / "chat_template" / "templates.json").read_text(encoding="utf-8"))
    messages = [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": "Hi"}]
    # ChatML and Zephyr templates do not write BOS, so the built-in family gives their exact text.
    for name, key in (("chatml", "chatml"), ("zephyr", "zephyr")):
        ref = references[key]
        expected = jinja2_render(jinja2_environment(), ref["text"], messages, True, ref["bos"], ref["eos"])
        t = cv.dnn.ChatTemplate.createBuiltin(name)
        assert t.getName() == name and t.getSource() == ""
        assert t.apply([m["role"] for m in messages], [m["content"] for m in messages], True) == expected
        assert t.applyJSON(json.dumps(messages), True, "") == expected
    with pytest.raises(cv.error):
        cv.dnn.ChatTemplate.createBuiltin("no-such-family")


def test_errors_are_cv_errors_with_the_position():
    with pytest.raises(cv.error, match="line 2, column 7"):  # at the %} where an expression was due
        cv.dnn.ChatTemplate.create("ok\n{% if %}{% endif %}")
    t = cv.dnn.ChatTemplate.create("{% for m in messages %}\n  {{ raise_exception('Roles must alternate') }}{% endfor %}")
    with pytest.raises(cv.error, match="line 2, column 6.*Roles must alternate"):
        t.apply(["user"], ["x"], True)
    with pytest.raises(cv.error):
        t.applyJSON("{not json", True, "")
    with pytest.raises(cv.error):
        t.applyJSON("[]", True, "[1]")  # extra variables must be an object
    with pytest.raises(cv.error):
        t.apply(["user", "assistant"], ["x"], True)  # one role per content


def test_text_generation_model_uses_the_models_own_template():
    path = str(PROJECT_ROOT / "models" / "demo" / "demo-stories.gguf")
    model = cv.dnn.TextGenerationModel(path)
    gguf = cv.dnn.GGUFFile.open(path)
    source = gguf.getString("tokenizer.chat_template")
    tokenizer = model.getTokenizer()
    bos = tokenizer.decode([tokenizer.getBosId()], True)
    eos = tokenizer.decode([tokenizer.getEosId()], True)
    t = model.getChatTemplate()
    assert t.getName() == "jinja" and t.getSource() == source and (t.getBosToken(), t.getEosToken()) == (bos, eos)
    roles, contents = ["system", "user", "assistant", "user"], ["Be kind.", "Tell me a story.", "Once upon a time.", "More!"]
    messages = [{"role": r, "content": c} for r, c in zip(roles, contents)]
    assert model.applyChatTemplate(roles, contents, True) == jinja2_render(jinja2_environment(), source, messages, True, bos, eos)
    # A template of one's own replaces it, and so does a built-in family.
    custom = cv.dnn.ChatTemplate.create("{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}")
    model.setCustomChatTemplate(custom)
    assert model.applyChatTemplate(["user"], ["Hi"], True) == "[user] Hi\n"
    model.setChatTemplate("chatml")
    assert model.getChatTemplate().getName() == "chatml"


def test_model_without_template_asks_for_one():
    model = cv.dnn.TextGenerationModel(str(SHARED_TESTDATA / "stories260K.gguf"))
    with pytest.raises(cv.error, match="no chat template"):
        model.getChatTemplate()


def test_onnx_folder_template_comes_from_tokenizer_config(shared_testdata):
    folder = shared_testdata / "onnx" / "tiny-random-LlamaForCausalLM-fp16"
    config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    model = cv.dnn.TextGenerationModel(str(folder / "model.onnx"))
    t = model.getChatTemplate()
    assert t.getName() == "jinja" and t.getSource() == config["chat_template"]
    assert (t.getBosToken(), t.getEosToken()) == (config["bos_token"], config["eos_token"])
    roles, contents = ["system", "user", "assistant", "user"], ["Be brief.", "Hi", "Hello!", "Bye"]
    messages = [{"role": r, "content": c} for r, c in zip(roles, contents)]
    expected = jinja2_render(jinja2_environment(), config["chat_template"], messages, True, config["bos_token"], config["eos_token"])
    assert model.applyChatTemplate(roles, contents, True) == expected
    # chat(): the template writes "<s>" and the tokenizer adds BOS; the prompt starts with one BOS
    # (the template's text is dropped, as llama.cpp does), then the rest of the rendered text.
    model.resetConversation("Be brief.")
    config_greedy = cv.dnn.GenerationConfig()
    config_greedy.maxNewTokens = 1
    model.chat("Hi", config_greedy)
    tokenizer = model.getTokenizer()
    rendered = model.applyChatTemplate(["system", "user"], ["Be brief.", "Hi"], True)
    assert rendered.startswith(config["bos_token"])
    ids = list(model.getPromptTokenIds())
    assert ids == list(tokenizer.encode(rendered[len(config["bos_token"]):], True, True))
    assert ids[0] == tokenizer.getBosId() and ids[1] != tokenizer.getBosId()
