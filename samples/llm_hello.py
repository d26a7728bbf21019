#!/usr/bin/python3
# This file is part of OpenCV project.
# It is subject to the license terms in the LICENSE file found in the top-level directory
# of this distribution and at http://opencv.org/license.html.
"""Hello, language model: load a GGUF model (by default the project's demo model) with
cv2.dnn.TextGenerationModel and print a prompt with its greedy completion (32 new tokens).

    PYTHONPATH=build/opencv/lib/python3 samples/llm_hello.py [--model=FILE] [--prompt=TEXT]
"""
import argparse
import pathlib

import cv2 as cv

DEMO_MODEL = pathlib.Path(__file__).resolve().parents[1] / "models" / "demo" / "demo-stories.gguf"

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                 allow_abbrev=False)
parser.add_argument("--model", "-m", default=str(DEMO_MODEL), metavar="FILE",
                    help="GGUF model file (default: the project's demo model, models/demo/demo-stories.gguf)")
parser.add_argument("--prompt", "-p", default="Once upon a time", metavar="TEXT", help="the text to complete")
args = parser.parse_args()
model = cv.dnn.TextGenerationModel(args.model)
print(args.prompt + model.generate(args.prompt, 32))
