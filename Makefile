# tlab: every target sets up what it needs first (`make setup` is idempotent).
PYTHON ?= python3
VENV ?= .venv
# Pinned so that a machine without a GPU here takes the CPU build that lies on disk;
# on a GPU machine PyPI's build of the same version carries CUDA.
TORCH_VERSION ?= 2.13.0
BIN := $(VENV)/bin
# Tests run in this many processes (pytest-xdist); CI's machine has two cores.
TEST_JOBS ?= 2

.PHONY: setup test lint list sweep check plots plots-check clean

setup: $(VENV)/.installed

# Re-run when the project's dependencies change; torch only when the venv has none.
# constraints.txt pins what must not drift between machines (matplotlib draws the committed
# pictures, and CI compares them byte for byte).
$(VENV)/.installed: pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/pip install "torch==$(TORCH_VERSION)"
	$(BIN)/pip install -c constraints.txt -e ".[dev]"
	touch $@

test: setup
	$(BIN)/python -m pytest -n $(TEST_JOBS)

lint: setup
	$(BIN)/ruff check tritonbench_lab tests examples $(wildcard lab)

list: setup
	$(BIN)/tlab list

# The main job. On a GPU: tune bf16 matmul over 512..8192 (results/ and configs/ per GPU).
# Without one: the same sweep in Triton's interpreter on one small shape in fp32 and fp16 (it says so).
sweep: setup
	if $(BIN)/python -c "import sys, torch; sys.exit(not torch.cuda.is_available())"; then \
		$(BIN)/tlab sweep matmul --dtype bf16 --sizes 512-8192; \
	else \
		$(BIN)/tlab sweep matmul; \
	fi

# The CI gate on committed configs (exit 1 when one is broken, or slow on its own GPU).
check: setup
	$(BIN)/tlab check

# The GPUs whose committed results `make plots` compares (tlab compare: the first's speed
# over the second's per kernel, against their ceilings).
COMPARE ?= nvidia-h200 nvidia-h100-80gb-hbm3

# Pictures, REPORT.md and the comparison from the committed results (no GPU); deterministic.
# The only writer of plots/ (tlab's own default is build/plots, which git ignores): drawn
# afresh, then put in place whole, so that nothing stale stays behind.
plots: setup
	rm -rf build/plots-new
	$(BIN)/tlab plot --out build/plots-new
	$(BIN)/tlab report --out build/plots-new
	$(BIN)/tlab compare $(COMPARE) --out build/plots-new > /dev/null
	rm -rf plots && mv build/plots-new plots

# Fails when the committed pictures or REPORT.md are not what the committed results give.
# The three draw apart (different files), side by side: CI has two cores and 15 minutes.
plots-check: setup
	rm -rf build/plots-check
	$(BIN)/tlab plot --out build/plots-check > /dev/null & plot=$$!; \
	$(BIN)/tlab report --out build/plots-check > /dev/null & report=$$!; \
	$(BIN)/tlab compare $(COMPARE) --out build/plots-check > /dev/null & compare=$$!; \
	wait $$plot && wait $$report && wait $$compare
	diff -r plots build/plots-check || { echo "plots/ is stale: run make plots" >&2; exit 1; }

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
