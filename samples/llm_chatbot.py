#!/usr/bin/python3
"""A streaming chatbot on cv2.dnn.TextGenerationModel, through the step API ("/reset" starts a
new conversation).

    PYTHONPATH=build/opencv/lib/python3 samples/llm_chatbot.py --model FILE [--template NAME]
"""
import argparse
import pathlib
import sys
import time

import cv2 as cv


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default=str(pathlib.Path(__file__).resolve().parents[1] / "models" / "demo" / "demo-stories.gguf"),
                    help="GGUF model (default: the project's demo model)")
    ap.add_argument("--system", default="")
    ap.add_argument("--template", help="chat template name when the model has none")
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--max-new-tokens", type=int, default=256)
    args = ap.parse_args()

    model = cv.dnn.TextGenerationModel(args.model)
    if args.template:
        model.setChatTemplate(args.template)
    model.resetConversation(args.system)
    config = cv.dnn.GenerationConfig()
    config.temperature = args.temperature
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
