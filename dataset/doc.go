// Package dataset streams dataset rows into agentloop.Samples: verl's
// layout (prompt, data_source, reward_model, extra_info with index,
// tools_kwargs, interaction_kwargs, tool_selection; uid, agent_name) from
// JSONL or Parquet files, one row at a time, with bounded memory.
//
// A row's images column (verl's geo3k layout: a list of {bytes, path}
// structs, {"image": url} objects or plain sources) is placed in the
// prompt as verl's RLHFDataset._build_messages places it: the i-th
// <image> marker of the messages' text becomes an image part holding the
// i-th image (chat.Image), which the agent loop processes (agentloop's
// Env.Vision). Parquet binary stays bytes; in JSONL "bytes" is base64.
//
// Parquet rows are assembled from the file's repetition and definition
// levels by this package, not by struct mapping, so every list, struct and
// map encoding real writers produce reads the same: pyarrow/pandas and
// Spark 3-level lists, DuckDB's LIST and MAP given only as converted types,
// Arrow-rs's "item" elements, parquet-mr's legacy 2-level lists ("array",
// "_tuple"), bare repeated fields (parquetjs, protobuf writers), MAP and
// MAP_KEY_VALUE. testdata holds files written by DuckDB, Arrow-rs and
// parquetjs, with the scripts that wrote them.
//
// Files are untrusted input. Footer, page headers and compressed page
// sizes are checked against the file before the parquet library reads
// them (it allocates what headers claim, and its LZ4 decoder loops on
// corrupt pages); the library's panics are recovered; a row is bounded by
// Options.MaxRowBytes. Every error about content wraps ErrFormat and is a
// *RowError naming the file, the row and the column:
//
//	data.parquet: row 12: column prompt[1].content: dataset: bad file: must be a string, got a number
//
// The smallest use:
//
//	samples, err := dataset.ReadAll(ctx, dataset.Options{}, "train.parquet")
//
// or, streaming:
//
//	err := dataset.Each(ctx, dataset.Options{}, func(s agentloop.Sample) error { in <- s; return nil }, paths...)
package dataset
