package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trajectory"
	"github.com/agentrl/agentrl/view"
)

func init() {
	register("view", "write an HTML report of a trajectories JSONL file (or serve it on loopback)", runView)
}

func runView(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("view", flag.ContinueOnError)
	fs.SetOutput(stderr)
	batchPath := fs.String("batch", "", "the safetensors batch collated from the file: its response_mask is checked against each trajectory's")
	tokDir := fs.String("tokenizer", "", "directory with tokenizer.json: show decoded text instead of token ids")
	outPath := fs.String("out", "report.html", "where to write the report (- for stdout)")
	serveAddr := fs.String("serve", "", "serve the file page by page on this loopback address (e.g. 127.0.0.1:8080) instead of writing a report")
	title := fs.String("title", "", "the report's title (default: the file name)")
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: agentrl view TRAJECTORIES.jsonl [--batch FILE] [--tokenizer DIR] [--out report.html | --serve ADDR]

Writes a self-contained HTML report (one file, no network): a sortable table,
summary plots, and every trajectory's tokens with the response mask, logprobs
and the token the reward sits on; for trajectories of agentrl rollout
--harness, each capture rollout's segments and dropped calls. --serve pages
through large files instead.

`)
		fs.PrintDefaults()
	}
	// The file may come before or after the flags.
	var path string
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		path, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if path == "" && fs.NArg() > 0 {
		path = fs.Arg(0)
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return err
		}
	}
	if path == "" || fs.NArg() > 0 {
		fs.Usage()
		return errors.New("want exactly one trajectories JSONL file")
	}
	opts := view.Options{Title: *title}
	if opts.Title == "" {
		opts.Title = path
	}
	if *tokDir != "" {
		tok, err := tokenizer.Load(*tokDir)
		if err != nil {
			return err
		}
		opts.Tokenizer = tok
	}
	if *batchPath != "" {
		f, err := os.Open(*batchPath)
		if err != nil {
			return err
		}
		b, err := trajectory.ReadSafetensorsBatch(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("--batch %s: %w", *batchPath, err)
		}
		opts.Batch = b
	}
	if *serveAddr != "" {
		return serveView(ctx, path, *serveAddr, opts, stderr)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	trajs, err := trajectory.ReadJSONL(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	// Trajectories of agentrl rollout --harness: their capture rollouts'
	// segments and drops get a section.
	cr := newCaptureRollouts()
	for _, t := range trajs {
		if err := cr.add(t); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	opts.Capture = cr.rollouts()
	if *outPath == "-" {
		return view.WriteHTML(stdout, trajs, opts)
	}
	out, err := os.Create(*outPath)
	if err != nil {
		return err
	}
	if err := view.WriteHTML(out, trajs, opts); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s (%d trajectories)\n", *outPath, len(trajs))
	return nil
}

// serveView serves path on addr until ctx ends. Only loopback addresses
// are accepted: the viewer has no authentication and shows training data.
func serveView(ctx context.Context, path, addr string, opts view.Options, stderr io.Writer) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--serve %q: %w", addr, err)
	}
	if !view.LoopbackHost(host) {
		return fmt.Errorf("--serve %q: not a loopback address (use 127.0.0.1, [::1] or localhost): the viewer has no authentication", addr)
	}
	if opts.Capture, err = captureRolloutsOf(path); err != nil {
		return err
	}
	s, err := view.Open(path, opts)
	if err != nil {
		return err
	}
	defer s.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stderr, "serving %d trajectories on http://%s/ (Ctrl-C stops)\n", s.Len(), ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
