package agentloop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/agentrl/agentrl/tool"
)

// Names of the built-in loops, as in verl.
const (
	SingleTurnAgent = "single_turn_agent"
	ToolAgentName   = "tool_agent"
)

// Factory builds an AgentLoop for an environment and a config. It is called
// once per agent name by a Manager.
type Factory func(env *Env, cfg Config) (AgentLoop, error)

// ErrUnknownAgent is returned for an agent name no one registered.
var ErrUnknownAgent = errors.New("agentloop: unknown agent")

type entry struct {
	factory Factory
	config  Config
	// origin says where the entry came from, for the log line of a
	// replacement: "built-in", "Register", "Registry.Register" or an agent
	// config entry.
	origin string
	// builtin marks single_turn_agent's and tool_agent's factories (also
	// under another name), which take no keyword arguments beyond Config.
	builtin bool
}

// Registry maps agent names to factories and their configs. The zero value
// is not usable; use NewRegistry. A Registry is safe for concurrent use.
type Registry struct {
	mu      sync.RWMutex
	entries map[string]entry
}

// NewRegistry returns a registry holding the built-in loops
// (single_turn_agent, tool_agent) and everything added with Register.
func NewRegistry() *Registry {
	r := &Registry{entries: map[string]entry{
		SingleTurnAgent: {factory: NewSingleTurn, origin: "built-in", builtin: true},
		ToolAgentName:   {factory: NewToolAgent, origin: "built-in", builtin: true},
	}}
	globalMu.RLock()
	for n, e := range global {
		r.entries[n] = e
	}
	globalMu.RUnlock()
	return r
}

var (
	globalMu sync.RWMutex
	global   = map[string]entry{}
)

// Register adds a loop to the process-wide set copied by every NewRegistry,
// like verl's @register decorator; call it from an init function. It panics
// when the name is empty or taken, as registering twice is a programming
// error.
func Register(name string, f Factory) {
	globalMu.Lock()
	defer globalMu.Unlock()
	if name == "" || f == nil {
		panic("agentloop: Register needs a name and a factory")
	}
	if _, dup := global[name]; dup || name == SingleTurnAgent || name == ToolAgentName {
		panic("agentloop: agent registered twice: " + name)
	}
	global[name] = entry{factory: f, origin: "Register"}
}

// Register adds a loop to this registry only; a taken name is an error.
func (r *Registry) Register(name string, f Factory, cfg Config) error {
	_, err := r.put(name, entry{factory: f, config: cfg, origin: "Registry.Register"}, false)
	return err
}

// Replace registers a loop under name, replacing what was registered there
// (a built-in loop included), as verl's agent-loop config file does. It
// reports whether a loop was replaced.
func (r *Registry) Replace(name string, f Factory, cfg Config) (replaced bool, err error) {
	old, err := r.put(name, entry{factory: f, config: cfg, origin: "Registry.Replace"}, true)
	return old != "", err
}

// put adds e under name; with replace a taken name is overwritten and the
// old entry's origin returned.
func (r *Registry) put(name string, e entry, replace bool) (oldOrigin string, err error) {
	if name == "" || e.factory == nil {
		return "", fmt.Errorf("%w: Register needs a name and a factory", ErrConfig)
	}
	if err := e.config.validate(); err != nil {
		return "", fmt.Errorf("agent %q: %w", name, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, dup := r.entries[name]; dup {
		if !replace {
			return "", fmt.Errorf("%w: agent %q is already registered", ErrConfig, name)
		}
		oldOrigin = old.origin
	}
	r.entries[name] = e
	return oldOrigin, nil
}

// Names lists the registered agent names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.entries))
	for n := range r.entries {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// SetConfig replaces the config of a registered agent (the CLI uses it to
// apply the multi_turn section to tool_agent).
func (r *Registry) SetConfig(name string, cfg Config) error {
	if err := cfg.validate(); err != nil {
		return fmt.Errorf("agent %q: %w", name, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[name]
	if !ok {
		return r.unknownLocked(name)
	}
	e.config = cfg
	r.entries[name] = e
	return nil
}

// Config returns the config a registered agent is built with.
func (r *Registry) Config(name string) (Config, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.entries[name]
	if !ok {
		return Config{}, r.unknownLocked(name)
	}
	return e.config, nil
}

// New builds the loop registered under name.
func (r *Registry) New(name string, env *Env) (AgentLoop, error) {
	r.mu.RLock()
	e, ok := r.entries[name]
	var err error
	if !ok {
		err = r.unknownLocked(name)
	}
	r.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	if err := env.check(); err != nil {
		return nil, err
	}
	loop, err := e.factory(env, e.config)
	if err != nil {
		return nil, fmt.Errorf("agent %q: %w", name, err)
	}
	return loop, nil
}

func (r *Registry) unknownLocked(name string) error {
	names := make([]string, 0, len(r.entries))
	for n := range r.entries {
		names = append(names, n)
	}
	sort.Strings(names)
	return fmt.Errorf("%w %q (registered: %s)", ErrUnknownAgent, name, strings.Join(names, ", "))
}

// AgentConfig is one entry of an agent config file in agentrl's format: a
// new agent name that builds an existing one (Agent) with its own settings.
//
//   - name: math_agent
//     agent: tool_agent
//     config:
//     max_assistant_turns: 5
//     format: hermes
type AgentConfig struct {
	Name   string `yaml:"name" json:"name"`
	Agent  string `yaml:"agent" json:"agent"`
	Config Config `yaml:"config" json:"config"`
}

// Class paths of verl's built-in loops, as _target_ names them
// (verl/experimental/agent_loop/{tool_agent,single_turn_agent}_loop.py).
var verlTargets = map[string]string{
	"verl.experimental.agent_loop.tool_agent_loop.ToolAgentLoop":              ToolAgentName,
	"verl.experimental.agent_loop.single_turn_agent_loop.SingleTurnAgentLoop": SingleTurnAgent,
}

// builtinFactories are the factories behind verlTargets. hydra instantiates
// verl's class whatever the registry holds under its name, so a _target_
// naming it builds the built-in loop even after a config entry replaced
// that name with another loop.
var builtinFactories = map[string]Factory{ToolAgentName: NewToolAgent, SingleTurnAgent: NewSingleTurn}

// LoadConfigs reads a YAML list of agent configs and registers each entry.
// Two formats are accepted, also mixed in one file:
//
// agentrl's (AgentConfig): name, agent (a registered loop) and config (the
// loop's Config; unknown keys are errors).
//
// verl's (actor_rollout_ref.rollout.agent.agent_loop_config_path), where
// hydra instantiates _target_ with the other keys as keyword arguments:
//
//   - name: math_agent
//     _target_: verl.experimental.agent_loop.tool_agent_loop.ToolAgentLoop
//     max_assistant_turns: 3
//
// _target_ is mapped to a registered loop: verl's ToolAgentLoop and
// SingleTurnAgentLoop to tool_agent and single_turn_agent; otherwise a loop
// registered under the whole class path, or under its class name in
// snake_case without a "Loop" suffix (ReactAgentLoop → react_agent). The
// entry starts from that loop's current config (the multi_turn settings,
// as verl's loops read the trainer config) and the keyword arguments that
// are Config keys override it. Other keyword arguments go to Config.Extra
// for custom loops and are errors for the built-in ones, which take none.
//
// An entry's loop must be registered already (built-in, by Register, or
// earlier in the file).
//
// A verl entry overwrites a loop already registered under its name, a
// built-in one included, as verl's agent_loop.py does
// (_agent_loop_registry[config.name] = config); users' configs redeclare
// tool_agent that way. The replacements are returned, in file order, for
// the caller to log. An agentrl entry must take a new name: it derives a
// loop, and reusing a name is more likely a typo than a wish.
func (r *Registry) LoadConfigs(rd io.Reader) ([]Replacement, error) {
	data, err := io.ReadAll(io.LimitReader(rd, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("agentloop: reading agent configs: %w", err)
	}
	js, err := tool.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%w: agent configs: %w", ErrConfig, err)
	}
	var entries []map[string]json.RawMessage
	if string(js) != "null" {
		if err := json.Unmarshal(js, &entries); err != nil {
			return nil, fmt.Errorf("%w: agent configs: want a list of entries: %w", ErrConfig, err)
		}
	}
	var reps []Replacement
	for i, e := range entries {
		rep, err := r.loadEntry(i, e)
		if err != nil {
			return reps, fmt.Errorf("agent config %d: %w", i, err)
		}
		if rep != nil {
			reps = append(reps, *rep)
		}
	}
	return reps, nil
}

// Replacement records a registry name that a verl agent config entry took
// over: Old and New say where the replaced and the replacing entries came
// from ("built-in", "Register", "Registry.Register", "Registry.Replace" or
// "agent config entry N (_target_ ...)").
type Replacement struct {
	Name, Old, New string
}

func (r *Registry) loadEntry(i int, e map[string]json.RawMessage) (*Replacement, error) {
	var name string
	if raw, ok := e["name"]; ok {
		if err := json.Unmarshal(raw, &name); err != nil {
			return nil, fmt.Errorf("%w: name must be a string", ErrConfig)
		}
	}
	if name == "" {
		return nil, fmt.Errorf("%w: name is required", ErrConfig)
	}
	if _, verl := e["_target_"]; !verl {
		var c AgentConfig
		dec := json.NewDecoder(bytes.NewReader(mustJSON(e)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrConfig, name, err)
		}
		if c.Agent == "" {
			return nil, fmt.Errorf("%w: %s: agent (or verl's _target_) is required", ErrConfig, name)
		}
		base, err := r.entry(c.Agent)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		_, err = r.put(name, entry{factory: base.factory, config: c.Config, builtin: base.builtin,
			origin: fmt.Sprintf("agent config entry %d (agent %s)", i, c.Agent)}, false)
		return nil, err
	}
	var target string
	if err := json.Unmarshal(e["_target_"], &target); err != nil || target == "" {
		return nil, fmt.Errorf("%w: %s: _target_ must be a class path", ErrConfig, name)
	}
	baseName, base, err := r.resolveTarget(target)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	builtin := base.builtin
	// Start from the loop's config; keyword arguments override its keys.
	merged := map[string]json.RawMessage{}
	if err := json.Unmarshal(mustJSON(base.config), &merged); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrConfig, name, err)
	}
	known := configKeys()
	extra := map[string]any{}
	for k, v := range base.config.Extra {
		extra[k] = v
	}
	for k, raw := range e {
		switch {
		case k == "name" || k == "_target_":
		case known[k]:
			merged[k] = raw
		case builtin:
			return nil, fmt.Errorf("%w: %s: %s (%s) takes no keyword argument %q (its settings: %s)", ErrConfig, name, target, baseName, k, strings.Join(sortedKeys(known), ", "))
		default:
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, fmt.Errorf("%w: %s: %s: %w", ErrConfig, name, k, err)
			}
			extra[k] = v
		}
	}
	delete(merged, "extra")
	var cfg Config
	dec := json.NewDecoder(bytes.NewReader(mustJSON(merged)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrConfig, name, err)
	}
	if len(extra) > 0 {
		cfg.Extra = extra
	}
	ne := entry{factory: base.factory, config: cfg, builtin: builtin, origin: fmt.Sprintf("agent config entry %d (_target_ %s)", i, target)}
	old, err := r.put(name, ne, true)
	if err != nil || old == "" {
		return nil, err
	}
	return &Replacement{Name: name, Old: old, New: ne.origin}, nil
}

// resolveTarget maps a verl _target_ class path to a registered loop.
func (r *Registry) resolveTarget(target string) (string, entry, error) {
	cands := []string{target}
	if v, ok := verlTargets[target]; ok {
		e, err := r.entry(v)
		if err != nil {
			return "", entry{}, err
		}
		if !e.builtin {
			// The name was replaced: keep its settings (the multi_turn
			// ones or the replacement's), not the other loop's factory.
			e.factory, e.builtin = builtinFactories[v], true
			e.config.Extra = nil
		}
		return v, e, nil
	}
	class := target[strings.LastIndexByte(target, '.')+1:]
	snake := camelToSnake(class)
	cands = append(cands, class, strings.TrimSuffix(snake, "_loop"), snake)
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, c := range cands {
		if e, ok := r.entries[c]; ok {
			return c, e, nil
		}
	}
	return "", entry{}, fmt.Errorf("_target_ %q: %w (looked for %s)", target, r.unknownLocked(strings.TrimSuffix(snake, "_loop")), strings.Join(cands[1:], ", "))
}

func (r *Registry) entry(name string) (entry, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.entries[name]
	if !ok {
		return entry{}, r.unknownLocked(name)
	}
	return e, nil
}

// camelToSnake turns "ReactAgentLoop" into "react_agent_loop" and
// "MCPAgentLoop" into "mcp_agent_loop".
func camelToSnake(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, c := range rs {
		upper := c >= 'A' && c <= 'Z'
		if upper && i > 0 {
			prevLower := rs[i-1] >= 'a' && rs[i-1] <= 'z' || rs[i-1] >= '0' && rs[i-1] <= '9'
			nextLower := i+1 < len(rs) && rs[i+1] >= 'a' && rs[i+1] <= 'z'
			if prevLower || (nextLower && rs[i-1] >= 'A' && rs[i-1] <= 'Z') {
				b.WriteByte('_')
			}
		}
		if upper {
			c += 'a' - 'A'
		}
		b.WriteRune(c)
	}
	return b.String()
}

// configKeys are the JSON keys of Config.
func configKeys() map[string]bool {
	keys := map[string]bool{}
	t := reflect.TypeOf(Config{})
	for i := 0; i < t.NumField(); i++ {
		tag := strings.Split(t.Field(i).Tag.Get("json"), ",")[0]
		if tag != "" && tag != "-" && tag != "extra" {
			keys[tag] = true
		}
	}
	return keys
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte("null") // only plain decoded JSON values reach here
	}
	return b
}
