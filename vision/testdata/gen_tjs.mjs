// Generates tjs_golden.json: image grids, token counts and M-RoPE position
// ids computed by transformers.js (@huggingface/transformers on npm), an
// implementation of the Qwen2-VL processor and get_rope_index no one here
// wrote.
//
//   mkdir scratch && cd scratch && npm install --ignore-scripts @huggingface/transformers@4.3.2
//   TJS_DIR=$PWD node <repo>/vision/testdata/gen_tjs.mjs
//
// It reads golden.json (for the corpus's sizes) beside it and writes
// tjs_golden.json there. Every image goes through the processor itself
// (Qwen2VLImageProcessor, sharp resizing a synthetic image of the file's
// size: grids depend on the size only).
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const tjsDir = process.env.TJS_DIR;
if (!tjsDir) {
    console.error('set TJS_DIR to the directory holding node_modules/@huggingface/transformers');
    process.exit(2);
}
const pkgDir = join(tjsDir, 'node_modules', '@huggingface', 'transformers');
const tjs = await import(join(pkgDir, 'dist', 'transformers.node.mjs'));
const { Qwen2VLImageProcessor, Qwen2VLForConditionalGeneration, RawImage, Tensor } = tjs;
const version = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')).version;

const golden = JSON.parse(readFileSync(join(here, 'golden.json'), 'utf8'));
const configs = {};
for (const [name, c] of Object.entries(golden.configs)) {
    configs[name] = new Qwen2VLImageProcessor({
        patch_size: c.patch, merge_size: c.merge, temporal_patch_size: c.temporal,
        min_pixels: c.min_pixels, max_pixels: c.max_pixels,
        do_resize: true, do_rescale: true, rescale_factor: c.rescale, do_normalize: true,
        image_mean: c.mean, image_std: c.std, do_convert_rgb: true, resample: 3,
    });
}

const images = [];
for (const im of golden.images) {
    const entry = { file: im.file, width: im.width, height: im.height, results: {} };
    for (const [name, proc] of Object.entries(configs)) {
        try {
            const raw = new RawImage(new Uint8ClampedArray(im.width * im.height * 3).fill(128), im.width, im.height, 3);
            const out = await proc(raw);
            const grid = out.image_grid_thw.tolist()[0].map(Number);
            const merge = golden.configs[name].merge;
            entry.results[name] = {
                grid,
                tokens: (grid[0] * grid[1] * grid[2]) / (merge * merge),
                shape: out.pixel_values.dims,
                resized: out.reshaped_input_sizes[0],
            };
        } catch (e) {
            entry.results[name] = { error: String(e.message ?? e) };
        }
    }
    images.push(entry);
}

// get_rope_index on synthetic sequences. Token ids are the Qwen-VL ones.
const IMG = 151655, VID = 151656, VS = 151652, VE = 151653;
const config = {
    vision_config: { spatial_merge_size: 2 },
    image_token_id: IMG, video_token_id: VID, vision_start_token_id: VS,
};
const model = Object.create(Qwen2VLForConditionalGeneration.prototype);
model.config = config;

const pads = (id, n) => Array(n).fill(id);
const block = (id, grid) => [VS, ...pads(id, (grid[0] * grid[1] * grid[2]) / 4), VE];
const cases = [
    { name: 'text only', ids: [1, 2, 3, 4, 5] },
    { name: 'text only, left padded', ids: [0, 0, 7, 8, 9], mask: [0, 0, 1, 1, 1] },
    { name: 'one image', ids: [10, 11, ...block(IMG, [1, 4, 6]), 12, 13], images: [[1, 4, 6]] },
    { name: 'image first', ids: [...block(IMG, [1, 2, 2]), 5], images: [[1, 2, 2]] },
    { name: 'image last', ids: [3, ...block(IMG, [1, 6, 2])], images: [[1, 6, 2]] },
    {
        name: 'two images and a video',
        ids: [1, ...block(IMG, [1, 2, 4]), 2, 3, ...block(VID, [3, 4, 4]), 4, ...block(IMG, [1, 8, 2]), 5, 6],
        images: [[1, 2, 4], [1, 8, 2]], videos: [[3, 4, 4]],
    },
    { name: 'video only', ids: [9, ...block(VID, [2, 2, 6]), 9], videos: [[2, 2, 6]] },
    {
        name: 'left padded, one image', ids: [0, 0, 0, 21, ...block(IMG, [1, 4, 4]), 22],
        leftPad: 3, images: [[1, 4, 4]],
    },
    {
        name: 'right padded, two images', ids: [5, ...block(IMG, [1, 2, 2]), ...block(IMG, [1, 4, 2]), 6, 0, 0],
        rightPad: 2, images: [[1, 2, 2], [1, 4, 2]],
    },
    { name: 'large grid', ids: [1, 2, ...block(IMG, [1, 34, 46]), 3], images: [[1, 34, 46]] },
];
const rope = [];
for (const c of cases) {
    const L = c.ids.length;
    if (c.leftPad || c.rightPad) {
        c.mask = c.ids.map((_, i) => (i < (c.leftPad ?? 0) || i >= L - (c.rightPad ?? 0) ? 0 : 1));
        delete c.leftPad;
        delete c.rightPad;
    }
    const ids = new Tensor('int64', BigInt64Array.from(c.ids.map(BigInt)), [1, L]);
    const mask = c.mask ? new Tensor('int64', BigInt64Array.from(c.mask.map(BigInt)), [1, L]) : undefined;
    const grid = (g) => (g ? new Tensor('int64', BigInt64Array.from(g.flat().map(BigInt)), [g.length, 3]) : undefined);
    const [pos, delta] = model.get_rope_index(ids, grid(c.images), grid(c.videos), mask);
    const p = pos.tolist().map((row) => row[0].map(Number));
    rope.push({ ...c, position_ids: p, delta: Number(delta.tolist()[0][0]) });
}

writeFileSync(
    join(here, 'tjs_golden.json'),
    JSON.stringify({ generator: 'gen_tjs.mjs', transformers_js: version, images, rope }, null, 1) + '\n',
);
console.log(images.length, 'images,', rope.length, 'rope cases');
