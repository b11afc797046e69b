package vision

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
)

// Sources says where ReadSource may read images from. The zero value reads
// data URLs and local files and refuses remote URLs: a dataset row or a
// chat request naming http://… must not make a rollout fetch from the
// network unless the user said so.
type Sources struct {
	// AllowRemote lets http:// and https:// URLs be fetched with Client
	// (http.DefaultClient when nil).
	AllowRemote bool
	Client      *http.Client
	// NoFiles refuses local paths and file:// URLs: set it where the source
	// comes from a remote caller (an HTTP request), not from the user's own
	// dataset.
	NoFiles bool
}

// ErrSource is wrapped by ReadSource's errors about the source itself (its
// form or a refused scheme); I/O errors are wrapped as they come.
var ErrSource = errors.New("vision: bad image source")

// ReadSource returns the encoded bytes of an image source as OpenAI's
// image_url parts and verl's {"image": …} entries give it: a data URL
// (data:<type>;base64,<data>), a local file (a path or file://…) or, when
// s.AllowRemote, an http(s) URL. At most maxBytes are read (0 means
// DefaultMaxBytes); a larger image is an ErrTooLarge error found before it
// is read whole.
func ReadSource(ctx context.Context, src string, maxBytes int64, s Sources) ([]byte, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	switch {
	case strings.HasPrefix(src, "data:"):
		meta, payload, ok := strings.Cut(src[len("data:"):], ",")
		if !ok || !strings.HasSuffix(meta, ";base64") {
			return nil, fmt.Errorf("%w: a data URL must be data:<type>;base64,<data>", ErrSource)
		}
		if int64(base64.StdEncoding.DecodedLen(len(payload))) > maxBytes+3 {
			return nil, fmt.Errorf("%w: data URL of %d base64 bytes, the limit is %d decoded", ErrTooLarge, len(payload), maxBytes)
		}
		b, err := base64.StdEncoding.DecodeString(payload)
		if err != nil {
			return nil, fmt.Errorf("%w: data URL: %w", ErrSource, err)
		}
		return b, nil
	case strings.HasPrefix(src, "http://"), strings.HasPrefix(src, "https://"):
		if !s.AllowRemote {
			return nil, fmt.Errorf("%w: remote image URLs are not fetched unless allowed; give a data URL or a file", ErrSource)
		}
		return readRemote(ctx, src, maxBytes, s.Client)
	case src == "":
		return nil, fmt.Errorf("%w: empty image source", ErrSource)
	}
	if s.NoFiles {
		return nil, fmt.Errorf("%w: local image files are not read here; give a data URL", ErrSource)
	}
	path := strings.TrimPrefix(src, "file://")
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > maxBytes {
		return nil, fmt.Errorf("%w: %s is %d bytes, the limit is %d", ErrTooLarge, path, st.Size(), maxBytes)
	}
	return readCapped(f, maxBytes)
}

func readRemote(ctx context.Context, url string, maxBytes int64, c *http.Client) ([]byte, error) {
	if c == nil {
		c = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSource, err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching the image: HTTP %s", resp.Status)
	}
	if resp.ContentLength > maxBytes {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, resp.ContentLength, maxBytes)
	}
	return readCapped(resp.Body, maxBytes)
}

// readCapped reads r to its end, failing once it passes maxBytes: a file
// that grows or a server that lies about its length cannot make it read
// without bound.
func readCapped(r io.Reader, maxBytes int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > maxBytes {
		return nil, fmt.Errorf("%w: over the limit of %d bytes", ErrTooLarge, maxBytes)
	}
	return b, nil
}
