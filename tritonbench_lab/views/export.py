"""Winners in the forms other code loads: a Python module of `triton.Config` lists ready for
`@triton.autotune` (with its key), per-GPU JSON keyed by dtype and shape, or vLLM's layout
(a file per device and fixed sizes, keyed by the varying size; `load_vllm_config` reads it).
All are built from configs/<gpu>/<kernel>.csv only.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

from tritonbench_lab.data.layout import Layout
from tritonbench_lab.data.records import Winner, parse_config_text
from tritonbench_lab.data.store import load_winners, make_folder
from tritonbench_lab.errors import TlabError
from tritonbench_lab.shapes import shape_sizes
from tritonbench_lab.space import LAUNCH_OPTIONS


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


def autotune_module(kernel: str, by_gpu: dict[str, list[Winner]], key: tuple[str, ...]) -> str:
    """Python source: CONFIGS[gpu_slug] = distinct winner configs, fastest-first order kept;
    KEY = the kernel's size arguments, for @triton.autotune's key."""
    today = datetime.date.today().isoformat()
    lines = [
        f'"""Tuned configs of {kernel!r}, written by `tlab export {kernel} --format autotune` on',
        f"{today} from configs/<gpu>/{kernel}.csv. Regenerate instead of editing.",
        "",
        "    @triton.autotune(configs=configs_for(), key=KEY)",
        "",
        "configs_for() takes the GPU in use (torch.cuda.get_device_name) or a slug such as",
        "'nvidia-h200'; @triton.autotune then times these configs once per KEY value.",
        '"""',
        "",
        "import re",
        "",
        "import triton",
        "",
        f"KEY = {list(key)!r}",
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
        "def configs_for(gpu_slug=None):",
        '    """The distinct winning configs on that GPU (the current one when None; [] when it',
        '    was never tuned)."""',
        "    if gpu_slug is None:",
        "        import torch",
        "",
        "        if not torch.cuda.is_available():",
        "            raise RuntimeError('configs_for() reads the current GPU, and CUDA sees none: '",
        "                               f'name one of {sorted(CONFIGS)}')",
        "        name = torch.cuda.get_device_name(torch.cuda.current_device())",
        "        gpu_slug = re.sub(r'[^a-z0-9]+', '-', name.lower()).strip('-')",
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


def vllm_documents(by_gpu: dict[str, list[Winner]], dims: tuple[str, ...],
                   varying: str) -> dict[str, str]:
    """vLLM's layout: one file per GPU, dtype and value of the fixed dims, named like
    `N=4096,K=4096,device_name=NVIDIA_H200,dtype=bf16.json`, mapping each tuned value of the
    varying dim (M for matmul, rows for row kernels) to its config."""
    index = dims.index(varying)
    documents: dict[str, dict[str, dict[str, int]]] = {}
    for rows in by_gpu.values():
        for row in rows:
            sizes = shape_sizes(row.shape)
            fixed = ",".join(f"{d}={s}" for d, s in zip(dims, sizes, strict=True) if d != varying)
            device = row.gpu.replace(" ", "_")
            name = f"{fixed + ',' if fixed else ''}device_name={device},dtype={row.dtype}.json"
            documents.setdefault(name, {})[str(sizes[index])] = parse_config_text(row.config)
    return {name: json.dumps(dict(sorted(table.items(), key=lambda kv: int(kv[0]))), indent=2)
            + "\n" for name, table in documents.items()}


def load_vllm_config(path: Path, size: int) -> dict[str, int]:
    """The config a vLLM-layout file (vllm_documents) holds for the varying size nearest
    `size` (vLLM's own rule: the smallest |tuned - size|)."""
    table = json.loads(Path(path).read_text())
    if not table:
        raise TlabError(f"{str(path)!r} holds no configs")
    return table[min(table, key=lambda tuned: abs(int(tuned) - size))]


def write_export(layout: Layout, kernel: str, fmt: str, out: Path, dims: tuple[str, ...],
                 key: tuple[str, ...]) -> list[Path]:
    """Write the export of `kernel` (its shapes' `dims`, its Triton kernel's size arguments
    `key`) in `fmt` ("autotune", "json" or "vllm") under `out`."""
    by_gpu = winners_by_gpu(layout, kernel)
    make_folder(out)
    if fmt == "autotune":
        path = Path(out) / f"{kernel}_configs.py"
        path.write_text(autotune_module(kernel, by_gpu, tuple(key)))
        return [path]
    if fmt == "vllm":
        documents = vllm_documents(by_gpu, tuple(dims), dims[0])
        folder = make_folder(Path(out) / kernel)
    else:
        documents = {f"{kernel}-{slug}.json": text for slug, text in json_documents(by_gpu).items()}
        folder = Path(out)
    written = []
    for name, text in documents.items():
        path = folder / name
        path.write_text(text)
        written.append(path)
    return written
