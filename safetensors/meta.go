package safetensors

// Metadata returns the value of a header's __metadata__ key, looked up in
// every file of the set: the first file that has the key gives its value
// (the files of a checkpoint normally carry the same metadata).
func (s *Set) Metadata(key string) (string, bool) {
	for _, f := range s.files {
		if v, ok := f.Metadata[key]; ok {
			return v, true
		}
	}
	return "", false
}
