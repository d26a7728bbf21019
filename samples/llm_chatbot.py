#!/usr/bin/python3
"""A streaming chatbot on cv2.dnn.TextGenerationModel, through the step API ("/reset" starts a
new conversation); the first line says which chat template it uses (the model's own Jinja
template, or the built-in family --chat-template names). The same keys as the C++ llm_chatbot,
written the same way (key=value):

    PYTHONPATH=build/opencv/lib/python3 samples/llm_chatbot.py [--model=FILE] [--system=TEXT]
        [--chat-template=NAME] [--temperature=T] [--top-p=P] [--seed=S] [--max-new-tokens=N] [--threads=N]
"""
import argparse
import math
import pathlib
import sys
import time


def number(kind, lo, hi=math.inf, lo_open=False, hi_open=False):
    """An argparse type: a finite number of `kind` in the range (argparse exits 2 otherwise)."""
    def parse(text):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid number '{text}'")
        if not math.isfinite(v) or v < lo or v > hi or (lo_open and v == lo) or (hi_open and v == hi):
            if math.isinf(hi):
                bound = f"{'greater than' if lo_open else 'at least'} {lo}"
            else:
                bound = f"in {'(' if lo_open else '['}{lo}, {hi}{')' if hi_open else ']'}"
            raise argparse.ArgumentTypeError(f"must be {bound}, got '{text}'")
        return v
    return parse


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                 allow_abbrev=False)
    ap.add_argument("--model", "-m", default=str(pathlib.Path(__file__).resolve().parents[1] / "models" / "demo" / "demo-stories.gguf"),
                    metavar="FILE", help="GGUF model file (default: the project's demo model, models/demo/demo-stories.gguf)")
    ap.add_argument("--system", default="", metavar="TEXT", help="system message")
    ap.add_argument("--chat-template", default="", metavar="NAME", help="built-in chat template instead of the model's own: "
                    "llama2, llama3, chatml, mistral, phi3, gemma, zephyr")
    ap.add_argument("--temperature", type=number(float, 0), default=0.0,
                    metavar="T", help="0: greedy; otherwise sample at this temperature")
    ap.add_argument("--top-p", type=number(float, 0, 1, lo_open=True), default=1.0,
                    metavar="P", help="nucleus sampling threshold, in (0, 1]")
    ap.add_argument("--seed", type=number(int, -2**31, 2**31 - 1), default=0, metavar="S", help="random seed")
    ap.add_argument("--max-new-tokens", type=number(int, 0, 2**31 - 1), default=256, metavar="N", help="reply length limit in tokens")
    ap.add_argument("--threads", type=number(int, -1, 1024), default=-1, metavar="N", help="threads (-1: OpenCV's default)")
    ap.add_argument("--context", type=number(int, 0, 2**31 - 1), default=0, metavar="N",
                    help="tokens the conversation may hold (0: the model's training context)")
    args = ap.parse_args()
    if args.threads == 0:
        ap.error("--threads must be -1 (OpenCV's default) or positive, got 0")

    import cv2 as cv  # after the command line: --help and its errors need no OpenCV

    if args.threads > 0:
        cv.setNumThreads(args.threads)
    model = cv.dnn.TextGenerationModel(args.model, args.context)
    if args.chat_template:
        model.setChatTemplate(args.chat_template)
    try:
        chat_template = model.getChatTemplate()
    except cv.error as e:  # no template in the file, or one that does not compile
        sys.exit(f"llm_chatbot.py: {e.err}")
    if chat_template.getName() != "jinja":
        print(f'chat template: built-in "{chat_template.getName()}" (--chat-template)')
    else:
        print(f"chat template: the model's own Jinja template ({len(chat_template.getSource().encode())} bytes)")
    model.resetConversation(args.system)
    config = cv.dnn.GenerationConfig()
    config.temperature = args.temperature
    config.topP = args.top_p
    config.seed = args.seed
    config.maxNewTokens = args.max_new_tokens
    for line in sys.stdin if not sys.stdin.isatty() else iter(lambda: input("> "), None):
        line = line.rstrip("\n")
        if line == "/reset":
            model.resetConversation(args.system)
            print("(new conversation)")
            continue
        start = time.perf_counter()
        model.startChat(line, config)
        while not model.isDone():
            print(model.next(), end="", flush=True)
        n = len(model.getGeneratedTokenIds())
        print(f"\n  [{n} tokens, {n / (time.perf_counter() - start):.1f} tokens/s]")


if __name__ == "__main__":
    try:
        main()
    except (EOFError, KeyboardInterrupt):
        pass
