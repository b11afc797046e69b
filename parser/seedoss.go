package parser

const (
	seedCalls      = "<seed:tool_call>"
	seedCallsEnd   = "</seed:tool_call>"
	seedThinkOpen  = "<seed:think>"
	seedThinkClose = "</seed:think>"
	seedEOS        = "<seed:eos>"
)

// seedOSS parses ByteDance Seed-OSS's calls, qwen3_coder's XML in Seed's
// own wrapper:
//
//	<seed:tool_call>
//	<function=NAME>
//	<parameter=P>value</parameter>
//	</function>
//	</seed:tool_call>
//
// Values are read and converted exactly as qwen3_coder reads them (vLLM's
// seed_oss parser converts by the same schema types). Seed-OSS reasons in
// <seed:think>…</seed:think>, which Options.ThinkAware treats as
// splitThink treats <think>…</think> (calls written there are ignored, as
// vLLM ignores them). A trailing <seed:eos> is not content.
type seedOSS struct{}

func (seedOSS) parse(text string, r *Result, v *validator) {
	parseQwenXML(trimEnd(text, seedEOS), seedCalls, seedCallsEnd, r, v)
}
