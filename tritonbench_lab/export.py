"""Winners in the forms other code loads: a Python module of `triton.Config` lists ready for
`@triton.autotune`, or per-GPU JSON keyed by dtype and shape (the form vLLM-style runtimes
read). Both are built from configs/<gpu>/<kernel>.csv only.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

from tritonbench_lab.errors import TlabError
from tritonbench_lab.layout import Layout
from tritonbench_lab.records import Winner, parse_config_text
from tritonbench_lab.space import LAUNCH_OPTIONS
from tritonbench_lab.store import load_winners


def winners_by_gpu(layout: Layout, kernel: str) -> dict[str, list[Winner]]:
    """gpu slug -> winners of `kernel`, for every GPU folder under layout's configs/."""
    found = {}
    for path in layout.config_files([kernel]):
        rows = load_winners(path)
        if rows:
            found[path.parent.name] = rows
    if not found:
        raise TlabError(f"no winners for {kernel!r} under {str(layout.configs)!r}: "
                        "run `tlab sweep` first")
    return found


def _config_call(config: dict[str, int]) -> str:
    meta = {k: v for k, v in config.items() if k not in LAUNCH_OPTIONS}
    options = "".join(f", {k}={config[k]}" for k in LAUNCH_OPTIONS if k in config)
    return f"triton.Config({meta!r}{options})"


def autotune_module(kernel: str, by_gpu: dict[str, list[Winner]]) -> str:
    """Python source: CONFIGS[gpu_slug] = distinct winner configs, fastest-first order kept."""
    today = datetime.date.today().isoformat()
    lines = [
        f'"""Tuned configs of {kernel!r}, written by `tlab export {kernel} --format autotune` on',
        f"{today} from configs/<gpu>/{kernel}.csv. Regenerate instead of editing.",
        "",
        "    @triton.autotune(configs=configs_for(\"nvidia-h200\"), key=[...])",
        '"""',
        "",
        "import triton",
        "",
        "CONFIGS = {",
    ]
    for slug, rows in by_gpu.items():
        lines.append(f"    {slug!r}: [")
        seen = []
        for row in rows:
            if row.config not in seen:
                seen.append(row.config)
                where = f"{row.dtype} {row.shape}"
                lines.append(f"        {_config_call(parse_config_text(row.config))},"
                             f"  # won {where}")
        lines.append("    ],")
    lines += [
        "}",
        "",
        "",
        "def configs_for(gpu_slug):",
        '    """The distinct winning configs on that GPU ([] when it was never tuned)."""',
        "    return list(CONFIGS.get(gpu_slug, []))",
        "",
    ]
    return "\n".join(lines)


def json_documents(by_gpu: dict[str, list[Winner]]) -> dict[str, str]:
    """gpu slug -> JSON text {dtype: {shape: config}} for that GPU."""
    documents = {}
    for slug, rows in by_gpu.items():
        table: dict[str, dict[str, dict[str, int]]] = {}
        for row in rows:
            table.setdefault(row.dtype, {})[row.shape] = parse_config_text(row.config)
        documents[slug] = json.dumps(table, indent=2) + "\n"  # rows come in shape order
    return documents


def write_export(layout: Layout, kernel: str, fmt: str, out: Path) -> list[Path]:
    """Write the export of `kernel` in `fmt` ("autotune" or "json") under `out`."""
    from tritonbench_lab.store import make_folder

    by_gpu = winners_by_gpu(layout, kernel)
    make_folder(out)
    if fmt == "autotune":
        path = Path(out) / f"{kernel}_configs.py"
        path.write_text(autotune_module(kernel, by_gpu))
        return [path]
    written = []
    for slug, text in json_documents(by_gpu).items():
        path = Path(out) / f"{kernel}-{slug}.json"
        path.write_text(text)
        written.append(path)
    return written
