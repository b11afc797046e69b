package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentrl/agentrl/tokenizer/jinja"
)

// config is what tokenizer_config.json contributes.
type config struct {
	// specials are the special-token variables transformers passes to chat
	// templates (its special_tokens_map): bos_token, eos_token, ... as
	// strings and additional_special_tokens as a list.
	specials map[string]any
	addBOS   *bool
	addEOS   *bool
	cleanUp  bool
}

// chatTemplates holds the parsed chat templates. A template that fails to
// parse does not fail Load (encoding still works); ApplyChatTemplate
// returns its error.
type chatTemplates struct {
	def     *jinja.Template
	defErr  error
	named   map[string]*jinja.Template
	namedSr map[string]string
	errs    map[string]error
}

var specialTokenKeys = []string{"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}

// specialTokenString reads a special token given as a string or as an
// AddedToken dict {"content": ...}; null gives ok=false.
func specialTokenString(raw json.RawMessage) (string, bool, error) {
	if isNull(raw) {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, true, nil
	}
	var d struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &d); err != nil || d.Content == nil {
		return "", false, fmt.Errorf("must be a string or {\"content\": ...}, got %.60s", raw)
	}
	return *d.Content, true, nil
}

func (t *Tokenizer) loadConfig(dir string) error {
	var cfg map[string]json.RawMessage
	path := filepath.Join(dir, "tokenizer_config.json")
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	default:
		if err := json.Unmarshal(data, &cfg); err != nil {
			return fmt.Errorf("%s: %w: %w", path, ErrInvalid, err)
		}
	}
	var genEOS []int32
	if data, err := os.ReadFile(filepath.Join(dir, "generation_config.json")); err == nil {
		var g struct {
			EOS json.RawMessage `json:"eos_token_id"`
		}
		if err := json.Unmarshal(data, &g); err != nil {
			return fmt.Errorf("generation_config.json: %w: %w", ErrInvalid, err)
		}
		var one int32
		if json.Unmarshal(g.EOS, &one) == nil {
			genEOS = []int32{one}
		} else if !isNull(g.EOS) {
			if err := json.Unmarshal(g.EOS, &genEOS); err != nil {
				return fmt.Errorf("generation_config.json: eos_token_id: %w: %w", ErrInvalid, err)
			}
		}
	}
	jinjaSrc := ""
	if data, err := os.ReadFile(filepath.Join(dir, "chat_template.jinja")); err == nil {
		jinjaSrc = string(data)
	}
	if err := t.applyConfig(cfg, genEOS, jinjaSrc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// applyConfig installs the tokenizer_config.json fields (cfg may be nil).
func (t *Tokenizer) applyConfig(cfg map[string]json.RawMessage, genEOS []int32, jinjaSrc string) error {
	t.config.specials = map[string]any{}
	for _, k := range specialTokenKeys {
		s, ok, err := specialTokenString(cfg[k])
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrInvalid, k, err)
		}
		if ok {
			t.config.specials[k] = s
		}
	}
	if raw, ok := cfg["additional_special_tokens"]; ok && !isNull(raw) {
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return fmt.Errorf("%w: additional_special_tokens: %w", ErrInvalid, err)
		}
		var out []any
		for i, r := range list {
			s, ok, err := specialTokenString(r)
			if err != nil {
				return fmt.Errorf("%w: additional_special_tokens[%d]: %w", ErrInvalid, i, err)
			}
			if ok {
				out = append(out, s)
			}
		}
		t.config.specials["additional_special_tokens"] = out
	}
	for k, dst := range map[string]**bool{"add_bos_token": &t.config.addBOS, "add_eos_token": &t.config.addEOS} {
		if raw, ok := cfg[k]; ok && !isNull(raw) {
			var b bool
			if err := json.Unmarshal(raw, &b); err != nil {
				return fmt.Errorf("%w: %s: %w", ErrInvalid, k, err)
			}
			*dst = &b
		}
	}
	if raw, ok := cfg["clean_up_tokenization_spaces"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &t.config.cleanUp); err != nil {
			return fmt.Errorf("%w: clean_up_tokenization_spaces: %w", ErrInvalid, err)
		}
	}
	eos, _ := t.config.specials["eos_token"].(string)
	t.setEOS(eos, genEOS)

	t.chat = chatTemplates{named: map[string]*jinja.Template{}, namedSr: map[string]string{}, errs: map[string]error{}}
	defSrc, hasDef := "", false
	if raw, ok := cfg["chat_template"]; ok && !isNull(raw) {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			defSrc, hasDef = s, true
		} else {
			var list []struct {
				Name     string `json:"name"`
				Template string `json:"template"`
			}
			if err := json.Unmarshal(raw, &list); err != nil {
				return fmt.Errorf("%w: chat_template must be a string or a list of {name, template}: %w", ErrInvalid, err)
			}
			for _, nt := range list {
				t.chat.namedSr[nt.Name] = nt.Template
				if nt.Name == "default" {
					defSrc, hasDef = nt.Template, true
				}
			}
		}
	}
	if jinjaSrc != "" {
		defSrc, hasDef = jinjaSrc, true
	}
	if hasDef {
		t.chat.def, t.chat.defErr = jinja.Parse(defSrc)
	} else {
		t.chat.defErr = ErrNoChatTemplate
	}
	for name, src := range t.chat.namedSr {
		tmpl, err := jinja.Parse(src)
		t.chat.named[name], t.chat.errs[name] = tmpl, err
	}
	return nil
}

// ErrNoChatTemplate is returned by the chat methods of a tokenizer whose
// files define no chat template.
var ErrNoChatTemplate = errors.New("tokenizer: no chat template")

// ChatTemplateNames lists the named templates of a tokenizer_config.json
// whose chat_template is a list (e.g. "default", "tool_use").
func (t *Tokenizer) ChatTemplateNames() []string {
	names := make([]string, 0, len(t.chat.namedSr))
	for n := range t.chat.namedSr {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// SpecialToken returns a named special token of tokenizer_config.json
// ("bos_token", "eos_token", "pad_token", ...).
func (t *Tokenizer) SpecialToken(name string) (string, bool) {
	s, ok := t.config.specials[name].(string)
	return s, ok
}

// AddBOSToken reports tokenizer_config.json's add_bos_token (false when
// absent).
func (t *Tokenizer) AddBOSToken() bool { return t.config.addBOS != nil && *t.config.addBOS }

// AddEOSToken reports tokenizer_config.json's add_eos_token (false when
// absent).
func (t *Tokenizer) AddEOSToken() bool { return t.config.addEOS != nil && *t.config.addEOS }

// CleanUpTokenizationSpaces reports tokenizer_config.json's
// clean_up_tokenization_spaces: whether transformers' decode post-processes
// text with CleanUpTokenizationSpaces (Llama 3 sets it, Qwen does not).
func (t *Tokenizer) CleanUpTokenizationSpaces() bool { return t.config.cleanUp }

// CleanUpTokenizationSpaces is transformers' clean_up_tokenization: it
// removes the space before punctuation and English contractions (" ." → ".",
// " n't" → "n't", ...). Decode does not apply it; callers that need
// transformers' decode text exactly apply it when the tokenizer's
// CleanUpTokenizationSpaces method reports true.
func CleanUpTokenizationSpaces(s string) string {
	for _, r := range [...][2]string{{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
		{" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}} {
		s = strings.ReplaceAll(s, r[0], r[1])
	}
	return s
}
