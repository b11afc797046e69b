#!/usr/bin/python3
"""Regenerates the jinja goldens with Python jinja2, configured exactly as
transformers' apply_chat_template configures it (see README.md).

Run from the repository root:
    /usr/bin/python3 tokenizer/jinja/testdata/gen_golden.py
"""
import datetime
import json
import os
import sys

import jinja2
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
SHARED = os.path.normpath(os.path.join(REPO, "..", "shared"))

# The clock used for strftime_now in every golden; the Go test injects the
# same instant.
FIXED_NOW = datetime.datetime(2026, 7, 26, 14, 5, 9)


class AssistantTracker(Extension):
    # transformers' {% generation %} extension; for plain rendering the body
    # is emitted unchanged.
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return FIXED_NOW.strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


ENV = make_env()


def render(template, variables):
    try:
        t = ENV.from_string(template)
    except jinja2.exceptions.TemplateSyntaxError as e:
        return {"error": {"kind": "syntax", "message": str(e)}}
    except Exception as e:  # assertion errors (unknown filter/test) are compile-time too
        return {"error": {"kind": "syntax", "message": "%s: %s" % (type(e).__name__, e)}}
    try:
        return {"output": t.render(**variables)}
    except jinja2.exceptions.TemplateSyntaxError as e:
        return {"error": {"kind": "syntax", "message": str(e)}}
    except jinja2.exceptions.UndefinedError as e:
        return {"error": {"kind": "render", "message": str(e)}}
    except jinja2.exceptions.SecurityError as e:
        return {"error": {"kind": "render", "message": str(e)}}
    except jinja2.exceptions.TemplateError as e:
        if type(e) is jinja2.exceptions.TemplateError:
            return {"error": {"kind": "exception", "message": e.message}}
        return {"error": {"kind": "render", "message": str(e)}}
    except Exception as e:
        return {"error": {"kind": "render", "message": "%s: %s" % (type(e).__name__, e)}}


sys.path.insert(0, HERE)
from feature_cases import FEATURE_CASES  # noqa: E402
from family_cases import FAMILY_TEMPLATES, FAMILY_CONTEXTS  # noqa: E402


def write(path, records):
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print("wrote", len(records), "records to", os.path.relpath(path, REPO))


def main():
    feats = []
    seen = set()
    for name, template, variables in FEATURE_CASES:
        assert name not in seen, name
        seen.add(name)
        rec = {"name": name, "template": template, "vars": json.loads(json.dumps(variables))}
        rec.update(render(template, variables))
        feats.append(rec)
    write(os.path.join(HERE, "golden_features.jsonl"), feats)

    fams = []
    for tname, spec in FAMILY_TEMPLATES.items():
        if spec.get("shared"):
            # Meta's licence forbids committing the Llama template; its
            # goldens reference it by path and the Go test skips without it.
            cfg = os.path.join(SHARED, spec["shared"])
            if not os.path.exists(cfg):
                print("skipping", tname, "(", cfg, "absent )")
                continue
            with open(cfg, encoding="utf-8") as f:
                src = json.load(f)["chat_template"]
        else:
            with open(os.path.join(HERE, "templates", spec["file"]), encoding="utf-8") as f:
                src = f.read()
        for cname, ctx in FAMILY_CONTEXTS.items():
            if cname in spec.get("skip", ()):
                continue
            variables = dict(spec.get("special", {}))
            variables.update(ctx)
            variables = json.loads(json.dumps(variables))
            rec = {"name": tname + "/" + cname, "template_file": spec.get("file") or ("shared:" + spec["shared"]), "vars": json.loads(json.dumps(variables))}
            rec.update(render(src, variables))
            fams.append(rec)
    write(os.path.join(HERE, "golden_templates.jsonl"), fams)


if __name__ == "__main__":
    main()
