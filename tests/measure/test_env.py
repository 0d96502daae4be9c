"""The note a sweep prints when each of its processes would compile torch from source."""

import importlib.util
import os
import sys

from tritonbench_lab.measure.env import bytecode_note


def module_file(tmp_path, with_bytecode):
    source = tmp_path / "pkg" / "__init__.py"
    source.parent.mkdir()
    source.write_text("x = 1\n")
    if with_bytecode:
        cached = importlib.util.cache_from_source(str(source))
        os.makedirs(os.path.dirname(cached))
        open(cached, "wb").close()
    return str(source)


def test_noted_when_bytecode_is_neither_there_nor_written(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    note = bytecode_note(module_file(tmp_path, with_bytecode=False))
    assert note and "PYTHONDONTWRITEBYTECODE" in note and "unset" in note


def test_silent_when_the_bytecode_is_there(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert bytecode_note(module_file(tmp_path, with_bytecode=True)) is None


def test_silent_when_python_may_write_bytecode(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    assert bytecode_note(module_file(tmp_path, with_bytecode=False)) is None


def test_defaults_to_torch(monkeypatch):
    import torch

    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    has = os.path.exists(importlib.util.cache_from_source(torch.__file__))
    assert (bytecode_note() is None) == has
