package main

import (
	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/vision"
)

// rolloutVision is the loops' Vision for a model directory with a
// preprocessor_config.json (a vision-language model: rows and tool
// results may carry images); nil for a text model. Images are resized as
// verl's dataset resizes them (fetch_image) and read from data URLs and
// local files, from http(s) only with agentrl.allow_remote_images.
func rolloutVision(dir string, tok *tokenizer.Tokenizer, cfg rolloutConfig) (*agentloop.Vision, error) {
	vis, err := loadTokenizeVision(dir, tok)
	if err != nil || vis == nil {
		return nil, err
	}
	return &agentloop.Vision{Processor: vis.proc, Placeholders: vis.place, Rope: vis.rope, FetchImage: true,
		Sources: vision.Sources{AllowRemote: cfg.AgentRL.AllowRemoteImages}, KeepImages: cfg.AgentRL.KeepImages}, nil
}
