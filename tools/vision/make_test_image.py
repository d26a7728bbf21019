#!/usr/bin/env python3
"""Draw the vision tests' synthetic image with OpenCV and write it as a binary PPM (RGB).

    PYTHONPATH=build/opencv/lib/python3 python3 tools/vision/make_test_image.py W H OUT.ppm

The drawing (test/cpp/vision_test_common.hpp drawTestImage() makes the same BGR image): a blue /
green gradient background, a filled red circle, a white rectangle outline, a yellow diagonal
line and a dark filled triangle, sized relative to W x H.
"""
import sys

import cv2
import numpy as np


def draw(w, h):
    img = np.zeros((h, w, 3), np.uint8)
    for y in range(h):
        for x in range(w):
            img[y, x] = (x * 255 // max(1, w - 1), y * 255 // max(1, h - 1), 40)
    cv2.circle(img, (w // 3, h // 2), min(w, h) // 4, (30, 30, 220), -1, cv2.LINE_AA)
    cv2.rectangle(img, (w // 2, h // 6), (w - 4, h // 2), (255, 255, 255), 2)
    cv2.line(img, (0, h - 1), (w - 1, 0), (0, 255, 255), 1, cv2.LINE_AA)
    pts = np.array([[w * 2 // 3, h - 3], [w - 3, h - 3], [w * 5 // 6, h * 2 // 3]], np.int32)
    cv2.fillPoly(img, [pts], (20, 60, 20))
    return img


def write_ppm(path, bgr):
    h, w = bgr.shape[:2]
    with open(path, "wb") as f:
        f.write(b"P6\n%d %d\n255\n" % (w, h))
        f.write(np.ascontiguousarray(bgr[:, :, ::-1]).tobytes())


if __name__ == "__main__":
    w, h, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    write_ppm(out, draw(w, h))
