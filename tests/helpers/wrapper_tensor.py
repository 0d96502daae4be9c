"""A tensor subclass that wraps another, as DTensor does: its own storage holds no data, and
each op it meets runs on the tensor inside (__torch_dispatch__)."""

import torch
from torch.utils import _pytree as pytree


class Wrapped(torch.Tensor):
    @staticmethod
    def __new__(cls, inner: torch.Tensor):
        return torch.Tensor._make_wrapper_subclass(cls, inner.shape, dtype=inner.dtype,
                                                   device=inner.device)

    def __init__(self, inner: torch.Tensor):
        self.inner = inner

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        def unwrap(t):
            return t.inner if isinstance(t, Wrapped) else t

        out = func(*pytree.tree_map(unwrap, args), **pytree.tree_map(unwrap, kwargs or {}))
        return pytree.tree_map(lambda t: Wrapped(t) if isinstance(t, torch.Tensor) else t, out)
