"""Checks that a reply of /v1/chat/completions or /v1/completions is complete and in OpenAI's
shape, streamed or not; shared by load_test.py and nginx_failover.py. Each check returns what
the reply said (text, usage, finish reason, time to first token) or raises CheckFailed."""
import json

from server_process import SseReply

KINDS = {"chat": ("/v1/chat/completions", "chat.completion", "chat.completion.chunk"),
         "completion": ("/v1/completions", "text_completion", "text_completion")}
FINISH_REASONS = ("stop", "length")


class CheckFailed(AssertionError):
    pass


def expect(condition, message, *args):
    if not condition:
        raise CheckFailed(message % args if args else message)


def _check_usage(usage, finish_reason, max_tokens):
    expect(isinstance(usage, dict), "no usage object: %r", usage)
    prompt, completion, total = (usage.get(k) for k in ("prompt_tokens", "completion_tokens", "total_tokens"))
    expect(all(isinstance(v, int) for v in (prompt, completion, total)), "usage counts not integers: %r", usage)
    expect(prompt > 0 and 0 <= completion <= max_tokens, "usage out of range (max_tokens %d): %r", max_tokens, usage)
    expect(total == prompt + completion, "total_tokens != prompt + completion: %r", usage)
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    expect(isinstance(cached, int) and 0 <= cached <= prompt, "cached_tokens missing or out of range: %r", usage)
    expect(finish_reason != "length" or completion == max_tokens,
           "finish_reason length after %d of %d tokens", completion, max_tokens)


class Reply:
    """What a checked reply said."""

    def __init__(self, text, finish_reason, usage, first_token_s=None):
        self.text, self.finish_reason, self.usage, self.first_token_s = text, finish_reason, usage, first_token_s


def check_reply(kind, status, headers, body, max_tokens):
    """A non-streamed reply (body: parsed JSON) of `kind` "chat" or "completion"."""
    _, object_name, _ = KINDS[kind]
    expect(status == 200, "HTTP %d: %r", status, body)
    content_type = headers.get("content-type", "")
    expect(content_type.startswith("application/json"), "content-type %r", content_type)
    expect(body.get("object") == object_name, "object %r, not %r", body.get("object"), object_name)
    expect(isinstance(body.get("id"), str) and isinstance(body.get("model"), str)
           and isinstance(body.get("created"), int), "id / model / created missing: %r", body)
    choices = body.get("choices")
    expect(isinstance(choices, list) and len(choices) == 1 and choices[0].get("index") == 0, "choices: %r", choices)
    choice = choices[0]
    if kind == "chat":
        message = choice.get("message") or {}
        expect(message.get("role") == "assistant" and isinstance(message.get("content"), str), "message: %r", message)
        text = message["content"]
    else:
        text = choice.get("text")
        expect(isinstance(text, str), "text: %r", choice)
    expect(choice.get("finish_reason") in FINISH_REASONS, "finish_reason %r", choice.get("finish_reason"))
    _check_usage(body.get("usage"), choice["finish_reason"], max_tokens)
    return Reply(text, choice["finish_reason"], body["usage"])


def check_stream(kind, reply: SseReply, max_tokens):
    """A streamed reply sent with stream_options.include_usage: `data: {chunk}` lines, one
    finish_reason, then the usage chunk (choices []), then `data: [DONE]` as the last line."""
    _, _, chunk_object = KINDS[kind]
    expect(reply.status == 200, "HTTP %d: %r", reply.status, reply.lines[:3])
    expect(reply.headers.get("content-type", "").startswith("text/event-stream"),
           "content-type %r", reply.headers.get("content-type"))
    expect(reply.complete, "the body ended abruptly after %d lines: %r", len(reply.lines), reply.lines[-2:])
    expect(reply.lines and reply.lines[-1] == "data: [DONE]", "last line %r, not data: [DONE]",
           reply.lines[-1] if reply.lines else None)
    pieces, ids, finish_reason, usage, first_token_s = [], set(), None, None, None
    for index, (line, at) in enumerate(zip(reply.lines[:-1], reply.times)):
        expect(line.startswith("data: ") and line != "data: [DONE]", "line %d: %r", index, line)
        chunk = json.loads(line[len("data: "):])
        expect("error" not in chunk, "an error in the stream: %r", chunk)
        expect(usage is None, "a chunk after the usage chunk: %r", chunk)
        expect(chunk.get("object") == chunk_object, "object %r, not %r", chunk.get("object"), chunk_object)
        ids.add(chunk.get("id"))
        if chunk.get("choices") == []:
            expect(finish_reason is not None, "usage before finish_reason: %r", chunk)
            usage = chunk.get("usage")
            continue
        expect(finish_reason is None, "a choice after finish_reason: %r", chunk)
        choices = chunk.get("choices")
        expect(isinstance(choices, list) and len(choices) == 1 and choices[0].get("index") == 0, "choices: %r", chunk)
        choice = choices[0]
        if kind == "chat":
            delta = choice.get("delta")
            expect(isinstance(delta, dict), "no delta: %r", chunk)
            if index == 0:
                expect(delta.get("role") == "assistant", "first delta without role assistant: %r", chunk)
            piece = delta.get("content") or ""
        else:
            piece = choice.get("text")
            expect(isinstance(piece, str), "no text: %r", chunk)
        pieces.append(piece)
        if piece and first_token_s is None:
            first_token_s = at
        if choice.get("finish_reason") is not None:
            finish_reason = choice["finish_reason"]
            expect(finish_reason in FINISH_REASONS, "finish_reason %r", finish_reason)
            if first_token_s is None:  # nothing generated but the end: that is the first token
                first_token_s = at
    expect(len(ids) == 1 and isinstance(next(iter(ids)), str), "chunk ids: %r", ids)
    expect(finish_reason is not None, "no finish_reason in %d lines", len(reply.lines))
    _check_usage(usage, finish_reason, max_tokens)
    return Reply("".join(pieces), finish_reason, usage, first_token_s)
