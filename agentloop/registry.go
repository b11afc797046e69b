package agentloop

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
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
		SingleTurnAgent: {factory: NewSingleTurn},
		ToolAgentName:   {factory: NewToolAgent},
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
	global[name] = entry{factory: f}
}

// Register adds a loop to this registry only; a taken name is an error.
func (r *Registry) Register(name string, f Factory, cfg Config) error {
	if name == "" || f == nil {
		return fmt.Errorf("%w: Register needs a name and a factory", ErrConfig)
	}
	if err := cfg.validate(); err != nil {
		return fmt.Errorf("agent %q: %w", name, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.entries[name]; dup {
		return fmt.Errorf("%w: agent %q is already registered", ErrConfig, name)
	}
	r.entries[name] = entry{factory: f, config: cfg}
	return nil
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

// AgentConfig is one entry of an agent config file: a new agent name that
// builds an existing one (Agent) with its own settings.
//
//   - name: math_agent
//     agent: tool_agent
//     config:
//     max_assistant_turns: 5
//     format: hermes
type AgentConfig struct {
	Name   string `yaml:"name"`
	Agent  string `yaml:"agent"`
	Config Config `yaml:"config"`
}

// LoadConfigs reads a YAML list of AgentConfig and registers each entry.
// Unknown keys are errors naming the line. An entry's agent must be
// registered already (built-in, by Register, or earlier in the file).
func (r *Registry) LoadConfigs(rd io.Reader) error {
	data, err := io.ReadAll(rd)
	if err != nil {
		return fmt.Errorf("agentloop: reading agent configs: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var cfgs []AgentConfig
	if err := dec.Decode(&cfgs); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: agent configs: %w", ErrConfig, err)
	}
	for i, c := range cfgs {
		if c.Name == "" || c.Agent == "" {
			return fmt.Errorf("%w: agent config %d: name and agent are required", ErrConfig, i)
		}
		r.mu.RLock()
		base, ok := r.entries[c.Agent]
		var uerr error
		if !ok {
			uerr = r.unknownLocked(c.Agent)
		}
		r.mu.RUnlock()
		if uerr != nil {
			return fmt.Errorf("agent config %d (%s): %w", i, c.Name, uerr)
		}
		if err := r.Register(c.Name, base.factory, c.Config); err != nil {
			return fmt.Errorf("agent config %d: %w", i, err)
		}
	}
	return nil
}
