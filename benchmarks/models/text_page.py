"""A page of rendered text as an OCR detector's input, for accuracy checks.

Random values make a text detector's output degenerate: PP-OCRv4's detector
maps noise to a heat map that is zero but for a few pixels on sigmoid's
tail, where rounding any layer to bfloat16 moves the relative L2 by 0.2
(onnxruntime's own fp32 with and without bf16-rounded convolutions, or
OpenVINO's bf16 at 0.04) and says nothing about the text regions the model
finds. On a rendered page the same bundles differ from onnxruntime by 1e-2.
Needs Pillow (torchvision and matplotlib install it); without it, None.
"""

import numpy as np

WORDS = ["invoice", "total", "compiler", "kernel", "bundle", "latency", "onnx",
         "tensor", "2026", "EUR 17.40"]


def text_page(shape, seed=7):
    """[1, 3, H, W] float32: dark lines of words on a light page, normalized
    with ImageNet's mean and deviation as PaddleOCR's detectors expect."""
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError:
        return None
    _, channels, height, width = shape
    if channels != 3:
        return None
    rng = np.random.default_rng(seed)
    img = Image.new("RGB", (width, height), (245, 245, 240))
    draw = ImageDraw.Draw(img)
    size = max(12, height // 24)
    try:
        font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", size)
    except OSError:
        font = ImageFont.load_default()
    y = size
    while y < height - 2 * size:
        line = " ".join(rng.choice(WORDS, size=int(rng.integers(2, 5))))
        draw.text((int(rng.integers(size // 2, 3 * size)), y), line,
                  fill=(20, 20, 30), font=font)
        y += int(rng.integers(3 * size // 2, 5 * size // 2))
    page = np.asarray(img, dtype=np.float32) / 255.0
    mean = np.array([0.485, 0.456, 0.406], np.float32)
    std = np.array([0.229, 0.224, 0.225], np.float32)
    return ((page - mean) / std).transpose(2, 0, 1)[None].astype(np.float32)
