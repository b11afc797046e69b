# Writes zoom_golden.json: verl's ImageZoomInTool box logic
# (_validate_bbox, _maybe_resize_bbox) and texts, run on a grid of boxes.
# The two methods are verl's own, taken from the file at
# verl-project/verl f5e21df6393e89e48e09525aef401ea4a10b6c4a
# verl/tools/image_zoom_in_tool.py by source extraction (ast), not copied by
# hand; the file's imports (ray, qwen_vl_utils) are not needed for them.
#
# usage: git show f5e21df6393e89e48e09525aef401ea4a10b6c4a:verl/tools/image_zoom_in_tool.py > verl_zoom.py
#        python3 gen_zoom.py verl_zoom.py > zoom_golden.json
import ast, json, logging, sys
logging.disable(logging.CRITICAL)
from math import ceil, floor
from typing import Optional

src = open(sys.argv[1]).read()
tree = ast.parse(src)
cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ImageZoomInTool")
keep = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name in ("_validate_bbox", "_maybe_resize_bbox")]
cls.body = [n for n in cls.body if isinstance(n, ast.Assign)] + keep
cls.bases = []
mod = ast.Module(body=[cls], type_ignores=[])
ns = {"ceil": ceil, "floor": floor, "Optional": Optional, "logger": logging.getLogger("x")}
exec(compile(ast.fix_missing_locations(mod), "verl_zoom", "exec"), ns)
tool = ns["ImageZoomInTool"].__new__(ns["ImageZoomInTool"])

sizes = [(640, 480), (28, 28), (30, 2000), (1000, 40), (56, 56)]
boxes = [
    [10, 20, 300, 400], [0, 0, 640, 480], [-50, -50, 100, 100], [600, 400, 700, 500],
    [100, 100, 110, 120], [5, 5, 6, 6], [630, 470, 640, 480], [100, 100, 100, 200],
    [200, 100, 100, 200], [0, 0, 1000, 5], [0, 0, 300, 2.5], [10.5, 20.25, 50.75, 90.5],
    [1, 1, 27.5, 29], [0.4, 0.6, 20.5, 21.5], [320, 240, 321, 241], [0, 0, 28, 28],
    [3, 3, 20, 800], [-10, 0, 10, 10], [12.3, 7.7, 13.1, 9.9], [0, 0, 29, 1],
]
out = []
for w, h in sizes:
    for b in boxes:
        r = tool._maybe_resize_bbox(list(b), image_width=w, image_height=h)
        out.append({"w": w, "h": h, "bbox": b, "text_bbox": str(b), "result": r})
json.dump({"source": "verl-project/verl f5e21df6393e89e48e09525aef401ea4a10b6c4a verl/tools/image_zoom_in_tool.py",
           "cases": out}, sys.stdout, indent=1)
print()
