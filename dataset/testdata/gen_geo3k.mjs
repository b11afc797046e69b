// Writes geo3k_duckdb.parquet and geo3k_arrow_rs.parquet: geo3k-format rows
// as verl's examples/data_preprocess/geo3k.py writes them
// (verl-project/verl 1dda039b9c6311889a9c9a26040677e1254814f9): a user
// prompt with <image> markers, an images column of {bytes, path} structs
// (the Hugging Face Image feature's storage), reward_model and extra_info;
// extra_info.tools_kwargs gives DeepEyes' image_zoom_in_tool its image.
// The images are files of the vision package's corpus (PNG, JPEG, WebP,
// GIF), so a test can compare what it reads with them.
//
// usage (in a scratch directory, not in the repository):
//   npm install @duckdb/node-api parquet-wasm apache-arrow
//   node gen_geo3k.mjs REPO/vision/testdata/images OUTDIR
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { DuckDBInstance } from '@duckdb/node-api';
import * as arrow from 'apache-arrow';

const require = createRequire(import.meta.url);
const pq = require('parquet-wasm/node');
const imgDir = process.argv[2];
const out = process.argv[3] || '.';

const instruction = 'You FIRST think about the reasoning process as an internal monologue and then provide the final answer. ' +
  'The reasoning process MUST BE enclosed within <think> </think> tags. The final answer MUST BE put in \\boxed{}.';
const rows = [
  { problem: '<image>Find x.', answer: '3', images: ['rgb_56x56_checker.png'] },
  { problem: '<image>Find the area of the figure. Round to the nearest tenth.', answer: '52.3', images: ['jpeg_420_333x201.jpg'] },
  { problem: 'Compare <image> with <image>. Find y.', answer: '12', images: ['webp_lossy_99x67.webp', 'gif_160x120.gif'] },
];
const bytes = (f) => readFileSync(`${imgDir}/${f}`);

// 1. DuckDB.
const inst = await DuckDBInstance.create(':memory:');
const c = await inst.connect();
const version = (await c.runAndReadAll('select version()')).getRows()[0][0];
const q = (s) => "'" + s.replaceAll("'", "''") + "'";
const blob = (f) => `from_hex('${bytes(f).toString('hex')}')`;
const selects = rows.map((r, i) => `select
  'hiyouga/geometry3k' as data_source,
  [{'content': ${q(r.problem + ' ' + instruction)}, 'role': 'user'}] as prompt,
  [${r.images.map((f) => `{'bytes': ${blob(f)}, 'path': NULL::VARCHAR}`).join(', ')}] as images,
  'math' as ability,
  {'ground_truth': ${q(r.answer)}, 'style': 'rule'} as reward_model,
  {'answer': ${q(r.answer)}, 'index': ${i}::BIGINT, 'question': ${q(r.problem)}, 'split': 'test',
   'tools_kwargs': {'image_zoom_in_tool': {'create_kwargs': {'image': ${blob(r.images[0])}}}}} as extra_info`);
await c.run(`copy (${selects.join('\nunion all\n')}) to '${out}/geo3k_duckdb.parquet' (format parquet)`);
console.log(`wrote ${out}/geo3k_duckdb.parquet with DuckDB ${version}`);

// 2. Arrow-rs (parquet-wasm) from an Arrow JS table.
const utf8 = new arrow.Utf8();
const bin = new arrow.Binary();
const msg = new arrow.Struct([new arrow.Field('content', utf8, true), new arrow.Field('role', utf8, true)]);
const image = new arrow.Struct([new arrow.Field('bytes', bin, true), new arrow.Field('path', utf8, true)]);
const rm = new arrow.Struct([new arrow.Field('ground_truth', utf8, true), new arrow.Field('style', utf8, true)]);
const zoomKw = new arrow.Struct([new arrow.Field('create_kwargs', new arrow.Struct([new arrow.Field('image', bin, true)]), true)]);
const extra = new arrow.Struct([
  new arrow.Field('answer', utf8, true),
  new arrow.Field('index', new arrow.Int64(), true),
  new arrow.Field('question', utf8, true),
  new arrow.Field('split', utf8, true),
  new arrow.Field('tools_kwargs', new arrow.Struct([new arrow.Field('image_zoom_in_tool', zoomKw, true)]), true),
]);
const col = (type, values) => arrow.vectorFromArray(values, type);
const table = new arrow.Table({
  data_source: col(utf8, rows.map(() => 'hiyouga/geometry3k')),
  prompt: col(new arrow.List(new arrow.Field('item', msg, true)), rows.map((r) => [{ content: r.problem + ' ' + instruction, role: 'user' }])),
  images: col(new arrow.List(new arrow.Field('item', image, true)), rows.map((r) => r.images.map((f) => ({ bytes: new Uint8Array(bytes(f)), path: null })))),
  ability: col(utf8, rows.map(() => 'math')),
  reward_model: col(rm, rows.map((r) => ({ ground_truth: r.answer, style: 'rule' }))),
  extra_info: col(extra, rows.map((r, i) => ({
    answer: r.answer, index: BigInt(i), question: r.problem, split: 'test',
    tools_kwargs: { image_zoom_in_tool: { create_kwargs: { image: new Uint8Array(bytes(r.images[0])) } } },
  }))),
});
const wasmTable = pq.Table.fromIPCStream(arrow.tableToIPC(table, 'stream'));
const props = new pq.WriterPropertiesBuilder().setCompression(pq.Compression.SNAPPY).build();
writeFileSync(`${out}/geo3k_arrow_rs.parquet`, pq.writeParquet(wasmTable, props));
console.log(`wrote ${out}/geo3k_arrow_rs.parquet with parquet-wasm (Arrow-rs)`);
