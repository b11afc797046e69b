package wire

import (
	"encoding/base64"
	"net/http"
	"strconv"
)

// AppendIDs appends ids as a JSON list of integers.
func AppendIDs(b []byte, ids []int32) []byte {
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(id), 10)
	}
	return append(b, ']')
}

// SkipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func SkipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\n' || data[i] == '\t' || data[i] == '\r') {
		i++
	}
	return i
}

// AppendDataURL appends an encoded image as a base64 data URL, its media
// type sniffed from the bytes: the form SGLang's load_image and vLLM's
// media connector read without fetching anything. No quotes: base64 and
// the sniffed types need no JSON escaping.
func AppendDataURL(b, data []byte) []byte {
	b = append(b, "data:"...)
	b = append(b, http.DetectContentType(data)...)
	b = append(b, ";base64,"...)
	return base64.StdEncoding.AppendEncode(b, data)
}
