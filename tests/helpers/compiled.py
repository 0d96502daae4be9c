"""A function compiled whole, and what its graph calls as AOTAutograd traces it: where the
registered ops (runtime/library.py) decompose into the PyTorch op, or stay an opaque
`<name>_eager` node that runs tlab's decision when the graph runs."""

import torch


def targets(graph) -> set[str]:
    """The call targets of an FX graph, as text (`tlab.softmax_eager.default`)."""
    return {str(n.target) for n in graph.nodes if n.op == "call_function"}


def traced(fn, args, dynamic=False):
    """fn(*args) compiled with fullgraph=True (a graph break fails), and the call targets of
    its forward graph after AOTAutograd."""
    # late: AOTAutograd is a heavy import only these tests need
    from torch._functorch.aot_autograd import aot_module_simplified

    found = []

    def backend(gm, example):
        def keep(g, _):
            found.append(targets(g.graph))
            return g.forward

        return aot_module_simplified(gm, example, fw_compiler=keep)

    torch._dynamo.reset()
    out = torch.compile(fn, backend=backend, fullgraph=True, dynamic=dynamic)(*args)
    return out, found[0]
