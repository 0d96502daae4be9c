# tlab: every target sets up what it needs first (`make setup` is idempotent).
PYTHON ?= python3
VENV ?= .venv
# Pinned so that a machine without a GPU here takes the CPU build that lies on disk;
# on a GPU machine PyPI's build of the same version carries CUDA.
TORCH_VERSION ?= 2.13.0
BIN := $(VENV)/bin

.PHONY: setup test lint list clean

setup: $(VENV)/.installed

# Re-run when the project's dependencies change; torch only when the venv has none.
$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/pip install "torch==$(TORCH_VERSION)"
	$(BIN)/pip install -e ".[dev]"
	touch $@

test: setup
	$(BIN)/python -m pytest

lint: setup
	$(BIN)/ruff check tritonbench_lab tests examples

list: setup
	$(BIN)/tlab list

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
