"""Every wrapped constructor and factory of our public headers that fails raises cv2.error with a
message naming what is wrong, itself: not the SystemError ("<class ...> returned a result with an
exception set") that cv2's generated constructors raised before patches/0011 (issue 39)."""
import re

import pytest

import cv2 as cv

MISSING = "/nonexistent/folder/model.gguf"


@pytest.fixture
def stories(shared_testdata):
    return str(shared_testdata / "stories260K.gguf")


@pytest.fixture
def bad_files(tmp_path, shared_testdata):
    """Files that exist but are no model: bytes of something else, nothing, a GGUF cut short."""
    garbage = tmp_path / "garbage.gguf"
    garbage.write_bytes(b"this is not a GGUF file at all\n" * 4)
    empty = tmp_path / "empty.gguf"
    empty.write_bytes(b"")
    cut = tmp_path / "cut.gguf"
    cut.write_bytes((shared_testdata / "stories260K.gguf").read_bytes()[:5000])
    return {"garbage": str(garbage), "empty": str(empty), "cut": str(cut)}


def raise_cv_error(call, match):
    """Runs call(); it must raise cv2.error itself (pytest.raises(cv.error) lets a SystemError
    through), with no exception chained to it, and a message matching `match`."""
    with pytest.raises(cv.error) as info:
        call()
    assert type(info.value) is cv.error
    assert info.value.__cause__ is None and info.value.__context__ is None
    assert re.search(match, str(info.value)), str(info.value)
    return info.value


# Constructors: cv2 calls them as tp_init, the path that raised SystemError.

def test_text_generation_model_missing_file():
    raise_cv_error(lambda: cv.dnn.TextGenerationModel(MISSING), "cannot open '%s'" % re.escape(MISSING))


@pytest.mark.parametrize("kind,match", [
    ("garbage", r"garbage\.gguf': not a GGUF file \(bad magic\)"),
    ("empty", r"empty\.gguf' is empty"),
    ("cut", r"cut\.gguf': metadata '.*' .* at offset 5000: .* \(truncated\?\)"),
], ids=["garbage", "empty", "cut"])
def test_text_generation_model_malformed_file(bad_files, kind, match):
    raise_cv_error(lambda: cv.dnn.TextGenerationModel(bad_files[kind]), match)


def test_text_generation_model_with_context_length(stories):
    raise_cv_error(lambda: cv.dnn.TextGenerationModel(MISSING, 256), "cannot open '%s'" % re.escape(MISSING))
    raise_cv_error(lambda: cv.dnn.TextGenerationModel(stories, -1), "context length must not be negative")


def test_text_generation_model_from_a_net_that_is_no_language_model():
    raise_cv_error(lambda: cv.dnn.TextGenerationModel(cv.dnn.Net()), "Net was not made by readNet")


def test_text_generation_model_with_missing_mmproj(stories):
    mmproj = "/nonexistent/folder/mmproj.gguf"
    raise_cv_error(lambda: cv.dnn.TextGenerationModel(stories, mmproj), "cannot open '%s'" % re.escape(mmproj))


def test_text_generation_model_wrong_arguments():
    # No overload takes these: cv2's overload resolution names what each one rejected.
    error = raise_cv_error(lambda: cv.dnn.TextGenerationModel(42), "Overload resolution failed")
    assert "for 'modelPath'" in str(error) and "for argument 'network'" in str(error)
    raise_cv_error(lambda: cv.dnn.TextGenerationModel(MISSING, 1, 2), "Overload resolution failed")


def test_a_failed_constructor_leaves_the_module_usable(stories):
    for _ in range(3):
        raise_cv_error(lambda: cv.dnn.TextGenerationModel(MISSING), "cannot open")
    assert cv.dnn.TextGenerationModel(stories).getTokenizer().getVocabSize() == 512


# Factories (static create/open and free functions).

def test_gguf_file_open(bad_files):
    raise_cv_error(lambda: cv.dnn.GGUFFile.open(MISSING), "cannot open '%s'" % re.escape(MISSING))
    raise_cv_error(lambda: cv.dnn.GGUFFile.open(bad_files["garbage"]), "bad magic")


def test_tokenizer_create(tmp_path, bad_files):
    raise_cv_error(lambda: cv.dnn.Tokenizer.create(MISSING), "cannot open '%s'" % re.escape(MISSING))
    raise_cv_error(lambda: cv.dnn.Tokenizer.create(bad_files["garbage"]), "bad magic")
    raise_cv_error(lambda: cv.dnn.Tokenizer.create(str(tmp_path)), "the folder has no tokenizer.json")


def test_chat_template_create():
    raise_cv_error(lambda: cv.dnn.ChatTemplate.create("{% if %}never closed"), "line 1, column 7: .*Expected an expression")
    raise_cv_error(lambda: cv.dnn.ChatTemplate.createBuiltin("no-such-family"),
                   "unknown template name 'no-such-family'")


def test_read_net_of_a_missing_or_malformed_gguf(bad_files):
    raise_cv_error(lambda: cv.dnn.readNet(MISSING), "cannot open '%s'" % re.escape(MISSING))
    raise_cv_error(lambda: cv.dnn.readNetFromGGUF(MISSING), "cannot open '%s'" % re.escape(MISSING))
    raise_cv_error(lambda: cv.dnn.readNetFromGGUF(bad_files["garbage"]), "bad magic")


def test_llm_state_of_a_net_that_is_no_language_model():
    net = cv.dnn.Net()
    raise_cv_error(lambda: cv.dnn.getLLMKVCache(net), "getLLMKVCache: the Net is not a language model")
    raise_cv_error(lambda: cv.dnn.setLLMBatch(net, [0]), "setLLMBatch: the Net is not a language model")


def test_kv_cache_misuse(stories, tmp_path):
    cache = cv.dnn.getLLMKVCache(cv.dnn.readNet(stories))
    raise_cv_error(lambda: cache.forkSequence(3, 4), "forkSequence: no sequence 3")
    raise_cv_error(lambda: cache.saveSequence(7, str(tmp_path / "s.kv")), "saveSequence: no sequence 7")
    missing = str(tmp_path / "missing.kv")
    raise_cv_error(lambda: cache.loadSequence(missing, 0), "'%s' cannot be opened" % re.escape(missing))
    raise_cv_error(lambda: cache.setStorageType(cv.CV_8U), "storage type .* is not supported")
