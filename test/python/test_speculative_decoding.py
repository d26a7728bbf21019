"""Speculative decoding from Python: GenerationConfig.draftTokens / lookupNgram,
TextGenerationModel.setDraftModel and getDraftCounts. Greedy output with drafts must still be
llama.cpp's (the demo model's stored greedy continuations, test/data/oracle/demo_model.nlc.json)."""
import json

import pytest

import cv2 as cv
from conftest import PROJECT_ROOT

ORACLE_FILE = PROJECT_ROOT / "test" / "data" / "oracle" / "demo_model.nlc.json"
MODEL = PROJECT_ROOT / "models" / "demo" / "demo-stories.gguf"


@pytest.fixture(scope="module")
def story_cases():
    oracle = json.loads(ORACLE_FILE.read_text())
    # Plain completions (the chat cases' prompts hold special tokens) whose every step is far
    # from a tie (the comparison is exact there).
    cases = [c for c in oracle["cases"] if c["name"].startswith("story") and min(s["gap"] for s in c["steps"]) > 1e-3]
    assert cases, "the oracle has no story case"
    return cases


def drafted_config(n, draft_tokens, lookup_ngram):
    config = cv.dnn.GenerationConfig()
    config.maxNewTokens = n
    config.draftTokens = draft_tokens
    config.lookupNgram = lookup_ngram
    return config


@pytest.mark.parametrize("draft_tokens,lookup_ngram", [(1, 1), (4, 3), (8, 2)])
def test_prompt_lookup_keeps_llama_cpps_greedy_output(story_cases, draft_tokens, lookup_ngram):
    model = cv.dnn.TextGenerationModel(str(MODEL))
    drafted = 0
    for c in story_cases:
        model.generate(c["prompt"], drafted_config(c["max_new_tokens"], draft_tokens, lookup_ngram))
        theirs = [i for i in c["greedy_ids"] if not (c["ended_at_eos"] and i == c["greedy_ids"][-1])]
        assert list(model.getGeneratedTokenIds()) == theirs, c["name"]
        counts = list(model.getDraftCounts())
        assert len(counts) == 2 and 0 <= counts[1] <= counts[0]
        drafted += counts[0]
    assert drafted > 0


def test_draft_model_keeps_llama_cpps_greedy_output(story_cases):
    model = cv.dnn.TextGenerationModel(str(MODEL))
    model.setDraftModel(str(MODEL))  # the model drafts for itself: every draft is kept
    for c in story_cases:
        config = drafted_config(c["max_new_tokens"], 3, 0)
        config.draftMinProbability = 0
        model.generate(c["prompt"], config)
        theirs = [i for i in c["greedy_ids"] if not (c["ended_at_eos"] and i == c["greedy_ids"][-1])]
        assert list(model.getGeneratedTokenIds()) == theirs, c["name"]
        drafted, kept = model.getDraftCounts()
        assert drafted > 0 and kept == drafted


def test_batch_with_drafts_equals_lone_runs(story_cases):
    model = cv.dnn.TextGenerationModel(str(MODEL))
    prompts = [c["prompt"] for c in story_cases]
    config = drafted_config(24, 4, 2)
    config.temperature = 0.8
    config.seed = 5
    batch = model.generateBatch(prompts, config)
    for i, prompt in enumerate(prompts):
        lone = drafted_config(24, 4, 2)
        lone.temperature = 0.8
        lone.seed = 5 + i
        assert model.generate(prompt, lone) == batch[i]


def test_drafts_without_a_drafter_are_an_error():
    model = cv.dnn.TextGenerationModel(str(MODEL))
    with pytest.raises(cv.error, match="draftTokens needs a drafter"):
        model.generate("Lily", drafted_config(8, 4, 0))
