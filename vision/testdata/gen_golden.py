#!/usr/bin/python3
"""Generates the vision package's image corpus and its golden processor outputs.

Run with Debian's python3, python3-pil and python3-numpy (no transformers):

    cd vision/testdata && /usr/bin/python3 gen_golden.py

It writes images/ (the corpus, made here from a seeded generator) and
golden.json. The expected values follow HF transformers'
Qwen2VLImageProcessor (slow, PIL) steps written out in numpy:
qwen_vl_utils' to_rgb, smart_resize, PIL bicubic resize, rescale
(float64 then float32), normalize (float32), the temporal tiling and the
patch reshape/transpose of _preprocess. Lossy images (JPEG, lossy WebP) also
get <name>.ref.png: Pillow's decode of them, stored losslessly, so the Go
test can measure its decoder's difference from libjpeg/libwebp.
"""

import hashlib
import io
import json
import math
import os

import numpy as np
import PIL
from PIL import Image

OUT = os.path.dirname(os.path.abspath(__file__))
IMAGES = os.path.join(OUT, "images")

CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]
CONFIGS = {
    # Qwen2VLImageProcessor's defaults (Qwen2-VL, Qwen2.5-VL).
    "qwen2vl": dict(patch=14, merge=2, temporal=2, min_pixels=56 * 56, max_pixels=28 * 28 * 1280,
                    mean=CLIP_MEAN, std=CLIP_STD, rescale=1 / 255),
    # Qwen3-VL's preprocessor_config.json.
    "qwen3vl": dict(patch=16, merge=2, temporal=2, min_pixels=65536, max_pixels=16777216,
                    mean=[0.5, 0.5, 0.5], std=[0.5, 0.5, 0.5], rescale=1 / 255),
}


def smart_resize(height, width, factor, min_pixels, max_pixels):
    # transformers' smart_resize (image_processing_qwen2_vl.py).
    if max(height, width) / min(height, width) > 200:
        raise ValueError(
            f"absolute aspect ratio must be smaller than 200, got {max(height, width) / min(height, width)}"
        )
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def to_rgb(im):
    # qwen_vl_utils.vision_process.to_rgb
    if im.mode == "RGBA":
        white = Image.new("RGB", im.size, (255, 255, 255))
        white.paste(im, mask=im.split()[3])
        return white
    return im.convert("RGB")


def pil_resize(im, w, h):
    # PIL.Image.resize(size, BICUBIC) as Pillow >= 12.2 does it: a very tall
    # image is shrunk vertically first. Written with the public box argument
    # so that older Pillows (Debian's) give the same bytes.
    if (w, h) == im.size:
        return im.copy()
    W, H = im.size
    if H > W * 100 and h < H:
        tmp = im.resize((W, h), Image.BICUBIC, box=(0, 0, W, H))
        return tmp.resize((w, h), Image.BICUBIC, box=(0, 0, W, h))
    return im.resize((w, h), Image.BICUBIC)


def process(rgb, cfg):
    arr = np.array(rgb)  # (H, W, 3) uint8
    height, width = arr.shape[:2]
    factor = cfg["patch"] * cfg["merge"]
    rh, rw = smart_resize(height, width, factor, cfg["min_pixels"], cfg["max_pixels"])
    resized = np.array(pil_resize(Image.fromarray(arr), rw, rh))
    # image_transforms.rescale: float64 multiply, then float32.
    img = (resized.astype(np.float64) * cfg["rescale"]).astype(np.float32)
    # image_transforms.normalize: mean/std cast to the image's dtype.
    img = (img - np.array(cfg["mean"], dtype=np.float32)) / np.array(cfg["std"], dtype=np.float32)
    img = img.transpose(2, 0, 1)  # to channels first
    patches = np.array([img])
    tp, ps, ms = cfg["temporal"], cfg["patch"], cfg["merge"]
    if patches.shape[0] % tp != 0:
        repeats = np.repeat(patches[-1][np.newaxis], tp - 1, axis=0)
        patches = np.concatenate([patches, repeats], axis=0)
    channel = patches.shape[1]
    grid_t = patches.shape[0] // tp
    grid_h, grid_w = rh // ps, rw // ps
    patches = patches.reshape(grid_t, tp, channel, grid_h // ms, ms, ps, grid_w // ms, ms, ps)
    patches = patches.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    flat = patches.reshape(grid_t * grid_h * grid_w, channel * tp * ps * ps)
    flat = np.ascontiguousarray(flat, dtype="<f4")
    return {
        "resized": [rh, rw],
        "resized_sha256": sha(resized.tobytes()),
        "grid": [grid_t, grid_h, grid_w],
        "tokens": grid_t * grid_h * grid_w // (ms * ms),
        "shape": list(flat.shape),
        "pixel_sha256": sha(flat.tobytes()),
        "first": [float(v) for v in flat.reshape(-1)[:8]],
        "mean": float(flat.astype(np.float64).mean()),
        "rms": float(np.sqrt((flat.astype(np.float64) ** 2).mean())),
    }


def sha(b):
    return hashlib.sha256(b).hexdigest()


rng = np.random.RandomState(20260601)


def pattern(w, h, kind, channels=3):
    """A deterministic test picture: gradients, stripes, checkers, noise."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    if kind == "smooth":
        base = [128 + 127 * np.sin(x / max(w, 1) * 6.3 + c) * np.cos(y / max(h, 1) * 4.1 - c) for c in range(channels)]
    elif kind == "stripes":
        base = [((x + 2 * y + 17 * c) // 3 % 2) * 255.0 for c in range(channels)]
    elif kind == "checker":
        base = [(((x // 7) + (y // 5) + c) % 2) * (200.0 - 40 * c) + 20 for c in range(channels)]
    elif kind == "xor":
        base = [((x.astype(np.int64) ^ y.astype(np.int64)) * (c + 1) % 256).astype(np.float64) for c in range(channels)]
    else:  # noise
        base = [rng.randint(0, 256, size=(h, w)).astype(np.float64) for c in range(channels)]
    a = np.stack(base, axis=-1)
    return np.clip(np.rint(a), 0, 255).astype(np.uint8)


def save(name, im, fmt, **kw):
    buf = io.BytesIO()
    im.save(buf, format=fmt, **kw)
    data = buf.getvalue()
    with open(os.path.join(IMAGES, name), "wb") as f:
        f.write(data)
    return data


def main():
    os.makedirs(IMAGES, exist_ok=True)
    for f in os.listdir(IMAGES):
        os.remove(os.path.join(IMAGES, f))
    items = []

    def add(name, im, fmt, lossy=False, note="", **kw):
        data = save(name, im, fmt, **kw)
        items.append((name, data, lossy, note))

    # Sizes and aspect ratios, RGB PNG.
    rgb_sizes = [
        (448, 448, "exact Qwen2 grid, no resize"), (224, 224, ""), (640, 480, ""), (480, 640, ""),
        (1920, 1080, "full HD"), (1080, 1920, ""), (28, 28, "one merged patch"), (56, 56, "min pixels exactly"),
        (100, 30, ""), (30, 100, ""), (10, 10, "below min pixels"), (1, 1, "single pixel"),
        (3600, 3600, "above max pixels; 3600/32 = 112.5 ties for Qwen3"), (1000, 5, "aspect 200, allowed"),
        (5, 1000, "aspect 200, allowed"), (1001, 5, "aspect above 200"), (1, 4000, "aspect 4000"),
        (4000, 1, "aspect 4000"), (10, 1500, "tall: Pillow shrinks vertically first"),
        (12, 2000, "tall: vertical first"), (70, 126, "ties: 70/28 = 2.5, 126/28 = 4.5"),
        (42, 98, "ties: 1.5 and 3.5"), (80, 48, "ties for factor 32: 2.5 and 1.5"),
        (1400, 1400, "ties 1400/28 = 50 exact; 1400/32 = 43.75"), (1232, 1176, "multiples of 28"),
        (333, 777, ""), (1023, 767, ""), (2560, 1440, "above max"), (300, 2, "upscaled, wide"),
        (17, 4000, "tall and above aspect? 235, refused"), (150, 20000, "aspect 133, tall, above max"),
    ]
    kinds = ["smooth", "stripes", "checker", "xor", "noise"]
    for i, (w, h, note) in enumerate(rgb_sizes):
        kind = kinds[i % len(kinds)]
        if w * h > 200000 and kind == "noise":
            kind = "smooth"
        if w * h > 2000000:
            kind = "xor"  # compresses well: the large images stay small on disk
        add(f"rgb_{w}x{h}_{kind}.png", Image.fromarray(pattern(w, h, kind)), "PNG", note=note, optimize=True)

    # Modes.
    rgba = np.dstack([pattern(96, 80, "smooth"), pattern(96, 80, "checker", 1)[..., 0]])
    rgba[::3, ::2, 3] = 0
    rgba[1::4, :, 3] = 128
    add("rgba_96x80.png", Image.fromarray(rgba, "RGBA"), "PNG", note="RGBA: composited on white")
    rgba2 = np.dstack([pattern(300, 200, "noise"), pattern(300, 200, "xor", 1)[..., 0]])
    add("rgba_300x200_noise.png", Image.fromarray(rgba2, "RGBA"), "PNG", note="RGBA, every alpha value")
    la = np.dstack([pattern(64, 90, "stripes", 1)[..., 0], pattern(64, 90, "smooth", 1)[..., 0]])
    add("la_64x90.png", Image.fromarray(la, "LA"), "PNG", note="LA: alpha dropped")
    add("gray_200x150.png", Image.fromarray(pattern(200, 150, "smooth", 1)[..., 0], "L"), "PNG")
    add("gray_57x333_noise.png", Image.fromarray(pattern(57, 333, "noise", 1)[..., 0], "L"), "PNG")
    pal = Image.fromarray(pattern(120, 90, "smooth")).quantize(colors=37)
    add("palette_120x90.png", pal, "PNG", note="P mode")
    palt = Image.fromarray(pattern(77, 55, "checker")).quantize(colors=5)
    add("palette_trns_77x55.png", palt, "PNG", transparency=2, note="P with tRNS: transparency ignored")
    g16 = (pattern(66, 44, "smooth", 1)[..., 0].astype(np.uint16) * 3)
    add("gray16_66x44.png", Image.fromarray(g16.astype(np.int32), "I").convert("I;16"), "PNG",
        note="16-bit gray: Pillow clips at 255")
    add("bilevel_90x60.png", Image.fromarray(pattern(90, 60, "checker", 1)[..., 0]).convert("1"), "PNG",
        note="1-bit")

    # GIF (first frame).
    add("gif_160x120.gif", Image.fromarray(pattern(160, 120, "smooth")).quantize(colors=64), "GIF")
    frames = [Image.fromarray(pattern(50, 40, k)).quantize(colors=16) for k in ("checker", "stripes")]
    buf = io.BytesIO()
    frames[0].save(buf, format="GIF", save_all=True, append_images=frames[1:], duration=100)
    with open(os.path.join(IMAGES, "gif_anim_50x40.gif"), "wb") as f:
        f.write(buf.getvalue())
    items.append(("gif_anim_50x40.gif", buf.getvalue(), False, "animated: first frame"))
    add("gif_gray_33x77.gif", Image.fromarray(pattern(33, 77, "xor", 1)[..., 0], "L"), "GIF")
    add("gif_trns_90x70.gif", Image.fromarray(pattern(90, 70, "checker")).quantize(colors=6), "GIF", transparency=1,
        note="transparent index: its palette colour, as Pillow's convert")

    # WebP lossless.
    add("webp_lossless_200x100.webp", Image.fromarray(pattern(200, 100, "smooth")), "WEBP", lossless=True)
    add("webp_lossless_rgba_64x64.webp", Image.fromarray(rgba[:64, :64], "RGBA"), "WEBP", lossless=True,
        note="lossless with alpha: composited")
    add("webp_lossless_noise_130x70.webp", Image.fromarray(pattern(130, 70, "noise")), "WEBP", lossless=True)

    # Lossy: JPEG (4:2:0, 4:4:4, gray, progressive), WebP lossy.
    lossy = [
        ("jpeg_420_640x480.jpg", Image.fromarray(pattern(640, 480, "smooth")), "JPEG", dict(quality=90)),
        ("jpeg_420_333x201.jpg", Image.fromarray(pattern(333, 201, "checker")), "JPEG", dict(quality=75)),
        ("jpeg_444_256x192.jpg", Image.fromarray(pattern(256, 192, "smooth")), "JPEG", dict(quality=95, subsampling=0)),
        ("jpeg_gray_300x200.jpg", Image.fromarray(pattern(300, 200, "smooth", 1)[..., 0], "L"), "JPEG", dict(quality=85)),
        ("jpeg_prog_200x300.jpg", Image.fromarray(pattern(200, 300, "stripes")), "JPEG", dict(quality=80, progressive=True)),
        ("jpeg_1920x1080.jpg", Image.fromarray(pattern(1920, 1080, "smooth")), "JPEG", dict(quality=70)),
        ("jpeg_10x10.jpg", Image.fromarray(pattern(10, 10, "noise")), "JPEG", dict(quality=90)),
        ("jpeg_cmyk_120x80.jpg", Image.fromarray(pattern(120, 80, "smooth")).convert("CMYK"), "JPEG", dict(quality=90)),
        ("webp_lossy_320x240.webp", Image.fromarray(pattern(320, 240, "smooth")), "WEBP", dict(quality=80)),
        ("webp_lossy_99x67.webp", Image.fromarray(pattern(99, 67, "checker")), "WEBP", dict(quality=60)),
        ("webp_lossy_rgba_80x80.webp", Image.fromarray(rgba[:80, :80], "RGBA"), "WEBP", dict(quality=85)),
    ]
    for name, im, fmt, kw in lossy:
        add(name, im, fmt, lossy=True, **kw)

    out = {
        "generator": "gen_golden.py",
        "pillow": PIL.__version__,
        "numpy": np.__version__,
        "configs": {k: {kk: vv for kk, vv in v.items()} for k, v in CONFIGS.items()},
        "images": [],
    }
    for name, data, is_lossy, note in items:
        im = Image.open(io.BytesIO(data))
        mode = im.mode
        rgb = to_rgb(im)
        entry = {
            "file": "images/" + name,
            "mode": mode,
            "width": rgb.size[0],
            "height": rgb.size[1],
            "lossy": is_lossy,
            "decoded_sha256": sha(rgb.tobytes()),
            "note": note,
            "results": {},
        }
        if is_lossy:
            ref = name + ".ref.png"
            rgb.save(os.path.join(IMAGES, ref), format="PNG", optimize=True)
            entry["ref_png"] = "images/" + ref
        for cname, cfg in CONFIGS.items():
            try:
                entry["results"][cname] = process(rgb, cfg)
            except ValueError as e:
                entry["results"][cname] = {"error": str(e)}
        out["images"].append(entry)
    with open(os.path.join(OUT, "golden.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(len(items), "images")


if __name__ == "__main__":
    main()
