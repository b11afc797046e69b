// Times transformers.js' Qwen2VLImageProcessor on the files
// BenchmarkProcess uses, for BENCHMARKS.md's comparison:
//
//   TJS_DIR=<dir with node_modules/@huggingface/transformers> node vision/testdata/bench_tjs.mjs
//
// "process" is the processor call on an already decoded RawImage (resize
// with sharp, rescale, normalize, patchify); "decode" adds RawImage.read.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const pkgDir = join(process.env.TJS_DIR ?? '.', 'node_modules', '@huggingface', 'transformers');
const { Qwen2VLImageProcessor, RawImage } = await import(join(pkgDir, 'dist', 'transformers.node.mjs'));
const version = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')).version;
const golden = JSON.parse(readFileSync(join(here, 'golden.json'), 'utf8'));

const files = ['rgb_448x448_smooth.png', 'rgb_1920x1080_xor.png', 'jpeg_1920x1080.jpg'];
const minSeconds = Number(process.env.BENCH_SECONDS ?? 2);

async function time(fn) {
    await fn(); // warm up
    let n = 0;
    const start = process.hrtime.bigint();
    let elapsed = 0;
    while (elapsed < minSeconds) {
        await fn();
        n++;
        elapsed = Number(process.hrtime.bigint() - start) / 1e9;
    }
    return { n, perImageMs: (elapsed / n) * 1e3, imagesPerSecond: n / elapsed };
}

console.log(`transformers.js ${version}, node ${process.version}`);
for (const file of files) {
    const path = join(here, 'images', file);
    const img = await RawImage.read(path);
    for (const [name, c] of Object.entries(golden.configs)) {
        const proc = new Qwen2VLImageProcessor({
            patch_size: c.patch, merge_size: c.merge, temporal_patch_size: c.temporal,
            min_pixels: c.min_pixels, max_pixels: c.max_pixels, do_resize: true, do_rescale: true,
            rescale_factor: c.rescale, do_normalize: true, image_mean: c.mean, image_std: c.std,
            do_convert_rgb: true, resample: 3,
        });
        const p = await time(() => proc(img));
        const d = await time(async () => proc(await RawImage.read(path)));
        console.log(`${file}/${name}\tprocess ${p.perImageMs.toFixed(2)} ms ${p.imagesPerSecond.toFixed(1)} images/s` +
            `\tdecode+process ${d.perImageMs.toFixed(2)} ms ${d.imagesPerSecond.toFixed(1)} images/s`);
    }
}
