"""tlab export: the committed winners written for other code (a Triton autotune module,
vLLM's config files, JSON), and the one-line errors of an untuned or unknown kernel."""

import importlib.util

import pytest
import torch
from helpers.commands import tlab
from helpers.paths import REPO

COMMITTED = REPO / "configs"


def test_export_autotune_module_imports_and_holds_triton_configs(tmp_path):
    result = tlab("export", "matmul", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    path = tmp_path / "matmul_configs.py"
    spec = importlib.util.spec_from_file_location("exported_matmul", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    import triton

    configs = module.configs_for("nvidia-h200")
    assert configs and all(isinstance(c, triton.Config) for c in configs)
    winners = (COMMITTED / "nvidia-h200" / "matmul.csv").read_text()
    assert len(configs) == len({line.split(",")[3] for line in winners.splitlines()[1:]})
    first = configs[0]
    assert {"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"} <= set(first.kwargs)
    assert first.num_warps in (4, 8) and first.num_stages in (3, 4, 5)
    assert module.configs_for("no-such-gpu") == []
    assert module.KEY == ["M", "N", "K"]  # matmul_kernel's size arguments
    if not torch.cuda.is_available():  # the current GPU asked for, and none: say so
        with pytest.raises(RuntimeError, match="CUDA sees none: name one of .*'nvidia-h200'"):
            module.configs_for()


def test_export_vllm_layout_is_a_file_per_fixed_sizes_keyed_by_the_varying_one(tmp_path):
    from tritonbench_lab.views.export import load_vllm_config

    result = tlab("export", "softmax", "--format", "vllm", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    path = tmp_path / "softmax" / "cols=4096,device_name=NVIDIA_H200,dtype=fp32.json"
    import json

    table = json.loads(path.read_text())
    assert list(table) == ["8192"]  # rows tuned at this width
    committed = {line.split(",")[2]: line.split(",")[3] for line in
                 (COMMITTED / "nvidia-h200" / "softmax.csv").read_text().splitlines()[1:]
                 if line.split(",")[1] == "fp32"}
    config = load_vllm_config(path, 100)  # nearest tuned row count
    assert " ".join(f"{k}={v}" for k, v in config.items()) == committed["8192x4096"]


def test_export_json_is_keyed_by_dtype_and_shape(tmp_path):
    import json

    result = tlab("export", "softmax", "--format", "json", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    table = json.loads((tmp_path / "softmax-nvidia-h200.json").read_text())
    assert set(table) == {"fp32", "bf16"}
    assert set(table["fp32"]["8192x4096"]) == {"ROWS", "num_warps", "PER_SM", "SPLIT", "TILES",
                                                "KEEP_LAST"}
    assert table["fp32"]["8192x65536"]["SPLIT"] > 1  # the split kernel won the widest rows


def test_export_of_an_untuned_kernel_is_a_one_line_error(tmp_path):
    result = tlab("export", "matmul_gelu_tanh", "--out", str(tmp_path))
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "no winners for 'matmul_gelu_tanh'" in result.stderr
    result = tlab("export", "nope", "--out", str(tmp_path))
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "unknown kernel 'nope' (did you mean 'rope'?)" in result.stderr
    assert not list(tmp_path.iterdir())  # nothing written
