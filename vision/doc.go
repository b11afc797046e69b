// Package vision is the image side of Qwen2-VL, Qwen2.5-VL and Qwen3-VL
// rollouts, in pure Go: decoding, HF's image processor, placeholder
// expansion and M-RoPE position ids, exact to the references verl uses.
//
//   - Decode reads PNG, JPEG, WebP and GIF (first frame) within Limits
//     (encoded bytes and pixels, both checked from the header before any
//     pixel memory is allocated) and converts to RGB as qwen_vl_utils'
//     to_rgb does with Pillow: RGBA composited on white with Pillow's
//     integer blend, every other mode through Pillow's convert("RGB").
//   - ResizeBicubic is Pillow's 8-bit bicubic resample (Resample.c,
//     fixed-point coefficients, horizontal then vertical pass), including
//     Pillow 12.2's vertical-first path for very tall images.
//   - Processor is transformers' Qwen2VLImageProcessor (the PIL one) for a
//     Config read from preprocessor_config.json (ParseConfig, or
//     Qwen2VLConfig / Qwen3VLConfig): SmartResize, image_grid_thw, the number
//     of <|image_pad|> tokens and pixel_values in the processor's patch order.
//   - ExpandPlaceholders, CountPlaceholders and CollapsePlaceholders work on
//     token ids, so prompts and tool results are expanded without
//     re-tokenizing; RopeConfig.RopeIndex is get_rope_index for the three
//     families and VerlPositionIDs verl's (4, L) position_ids.
//
// # Exactness
//
// The goldens in testdata come from two references no one here wrote,
// with their generators beside them: gen_golden.py (Debian's Pillow and
// numpy running HF's processing steps) and gen_tjs.mjs (transformers.js'
// Qwen2VLImageProcessor and get_rope_index). On their corpus of 58 images
// (sizes from 1×1 to 3600×3600 and 150×20000, aspect ratios up to and past
// 200, rounding ties, PNG RGB/RGBA/LA/L/P/tRNS/16-bit/1-bit, GIF with a
// transparent index and animated, WebP lossless and lossy, JPEG
// 4:2:0/4:4:4/gray/progressive/CMYK):
//
//   - PNG, GIF and WebP (lossless and lossy, with or without alpha) decode
//     to Pillow's bytes; resize and pixel_values are bit-exact for both
//     Qwen2-VL's and Qwen3-VL's configs.
//   - JPEG decodes within 4 levels of libjpeg-turbo per sample and 0.15
//     levels on average (measured: at most 3 and 0.09): the chroma
//     upsampling and colour conversion are libjpeg-turbo's, the inverse DCT
//     is Go's. pixel_values then differ by the same number of levels
//     (a level is 1/(255·std): 0.0151 for CLIP's std, 0.0078 for 0.5).
//   - Grids and token counts equal transformers.js' except where
//     transformers.js departs from transformers' Python (Math.round at .5
//     ties, and its scaling up of a side below the factor); those cases
//     follow Python and are listed with the reason in the tests.
//
// Known departures from Pillow: a GIF whose first frame is smaller than
// its canvas decodes to the frame (Pillow fills the canvas around it);
// EXIF orientation is not applied (nor does qwen_vl_utils). CMYK JPEG (Adobe, inverted) goes through Pillow's
// cmyk2rgb on Go's samples and is within the JPEG tolerance.
//
// The reference is the slow (PIL) processor. transformers' default "fast"
// processor resizes with torchvision and differs from PIL's bicubic by
// small amounts; verl's rollouts pass images through qwen_vl_utils'
// fetch_image first, whose own smart_resize (with its min/max pixels) must
// be applied by the caller before Process when matching verl.
package vision
