"""Where each launch of a torch.compile'd graph belongs, from Inductor's own provenance tracking.

Test bookkeeping for train_compiled.py, sharing nothing with the annotator's kernel maps
(python/gpuattr_site/gpuattr_pytorch/compiled.py), which spy on Inductor's provenance hook with
tracking off and match its kernels to the wrapper's calls by name and buffers. Here:
  - the script turns provenance tracking on (level 1): Inductor then writes a comment with a
    debug handle above each call in the wrapper (`# [Provenance debug handles] NAME:N`), and
    records the post-grad FX node names of each handle;
  - a post-grad pass of the script's records each graph's nodes (its metadata: nn_module_stack,
    fwd_nn_module_stack, partitioner_tag), and whether it is a backward graph (it takes tangents);
  - at a launch, the wrapper's frame on the stack says which line is calling, so which handle;
  - each call of a wrapper notes the module whose call runs it: the module being called around a
    forward graph's call (one graph serves every block when the blocks' forward compiles on its
    own), and for a backward graph its forward's (backward runs the forwards last first).
The launch then belongs where docs/pytorch.md §Compiled models says: its nodes less views (an
extern call's handle names its one node), each node's modules resolved on the real model (from
the module running the graph), to their deepest common module; forward in a forward graph; in a
backward graph, backward when a node is the backward's, else recomputation, whose nodes must
carry the checkpoint policy's tag (a `recompute: untagged` phase says one did not, and no report
can match it). Modules are named as the annotator names them (`nn.Module: Gpt_0` for the root,
qualified names below it). Where in the report's path the module sits (below the graph's range,
or around it, the call of a module whose forward compiled) is the report's own business.
"""
import re
import sys

import torch
import torch._inductor.custom_graph_pass  # noqa: F401 - compiled_truth subclasses its pass

_HANDLE = re.compile(r"#\s*\[Provenance debug handles\]\s*(\S+)")
_SOURCE = re.compile(r"^[LG]\['(\w+)'\]")
_STEP = re.compile(r"\.(\w+)|\[['\"]?([^\]'\"]+)['\"]?\]")
VIEWS = {"view", "_unsafe_view", "reshape", "permute", "transpose", "t", "expand", "squeeze",
         "unsqueeze", "slice", "select", "as_strided", "alias", "detach", "split",
         "split_with_sizes", "unbind"}


def _op(node):
    packet = getattr(node.target, "_overloadpacket", None)
    return getattr(packet, "__name__", None)


class CompiledTruth:
    def __init__(self, roots):
        """`roots`: {frame-local name: module} of the modules the compiled function takes; the
        model is `model`."""
        self._roots = roots
        self._graph = None  # the post-grad graph compiled last: (nodes, is_backward, compile id)
        self._wrappers = {}  # wrapper file -> (range name, {line: nodes}, is_backward)
        # The module whose call ran each compiled forward still to be differentiated, by compile
        # id (backward runs them last first), and the module of each graph call running now.
        self._forward_modules = {}
        self._call_modules = []
        torch._inductor.config.trace.provenance_tracking_level = 1
        torch._inductor.config.post_grad_custom_post_pass = _RecordGraph(self)

    def see_graph(self, graph):
        nodes = {node.name: node for node in graph.nodes}
        backward = any(node.op == "placeholder" and node.name.startswith("tangents")
                       for node in graph.nodes)
        # A backward graph compiles later (in backward) under its forward's compile id.
        compile_id = str(torch._guards.CompileContext.current_compile_id())
        self._graph = (nodes, backward, compile_id)

    def see_wrapper(self, module, path):
        """A wrapper loaded: its calls' nodes by line, from its handles (none on a cache hit)."""
        if self._graph is None:
            return
        nodes, backward, compile_id = self._graph
        self._graph = None
        import torch._inductor.debug as debug

        names_of_handle = dict(debug._inductor_triton_kernel_to_post_grad_node_info)
        with open(path, encoding="utf-8") as source:
            lines = source.read().split("\n")
        by_line = {}
        for index, line in enumerate(lines):
            handle = _HANDLE.search(line)
            if handle and handle.group(1) in names_of_handle:
                by_line[index + 2] = [nodes[name] for name in names_of_handle[handle.group(1)]
                                      if name in nodes]  # the call is the next line (1-based)
        key = module.__name__.rsplit(".", 1)[-1]
        range_name = "torch.compile: %s %s" % (key, "backward" if backward else "forward")
        self._wrappers[path] = (range_name, by_line, backward)
        module.call = self._keeping_its_module(module.call, backward, compile_id)

    def _keeping_its_module(self, call, backward, compile_id):
        """`call` noting the module whose call runs it: for a forward, the module being called
        around it (the graph is that module's forward); for a backward, its forward's."""
        truth = self

        def noted(*args, **kwargs):
            stack = truth._forward_modules.setdefault(compile_id, [])
            if backward:
                module = stack.pop() if stack else None
            else:
                module = _calling_module()
                stack.append(module)
            truth._call_modules.append(module)
            try:
                return call(*args, **kwargs)
            finally:
                truth._call_modules.pop()

        return noted

    def place_of_launch(self):
        """Where the launch being made now belongs: {"graph": its graph's range, "module": the
        range name of its module (None: no module), "phase": forward, backward or recompute}, or
        None outside a compiled graph."""
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename not in self._wrappers:
            frame = frame.f_back
        if frame is None or not self._call_modules:
            return None
        range_name, by_line, backward = self._wrappers[frame.f_code.co_filename]
        nodes = by_line.get(frame.f_lineno)
        if nodes is None:
            return None
        module, phase = self._place(nodes, backward, self._call_modules[-1])
        return {"graph": range_name, "module": module, "phase": phase}

    def _place(self, nodes, backward, call_module):
        computing = [node for node in nodes if _op(node) not in VIEWS] or nodes
        chains = []
        backward_node = False
        for node in computing:
            tagged = node.meta.get("partitioner_tag") == "is_backward"
            backward_node = backward_node or tagged
            stack = (tagged and node.meta.get("fwd_nn_module_stack")) or node.meta.get(
                "nn_module_stack") or {}
            chain = [self._module_name(source, call_module) for source, _ in stack.values()]
            if chain:
                chains.append(chain)
        common = chains[0] if chains else []
        for chain in chains[1:]:
            length = 0
            while length < min(len(common), len(chain)) and common[length] == chain[length]:
                length += 1
            common = common[:length]
        module = common[-1] if common else None
        if not backward:
            return module, "forward"
        if backward_node:
            return module, "backward"
        # Recomputation: each node was made under the checkpoint's policy (its `recompute` tag).
        if not all(node.meta.get("recompute") is not None for node in computing):
            return module, "recompute: untagged"
        return module, "recompute"

    def _module_name(self, source, call_module):
        """The annotator's range name of the module dynamo's source name denotes, resolved on
        the real module tree (`self`: the module whose call runs the graph)."""
        head = _SOURCE.match(source)
        module = call_module if head.group(1) == "self" else self._roots[head.group(1)]
        for attribute, index in _STEP.findall(source[head.end():]):
            module = getattr(module, attribute) if attribute else (
                module[int(index)] if index.isdigit() else module[index])
        model = self._roots["model"]
        if module is model:
            return "nn.Module: %s_0" % type(model).__name__
        qualified = {id(child): name for name, child in model.named_modules()}
        return "nn.Module: " + qualified[id(module)]


def _calling_module():
    """The innermost module being called on this thread's stack, or None."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name in ("_call_impl", "_wrapped_call_impl"):
            module = frame.f_locals.get("self")
            if isinstance(module, torch.nn.Module):
                return module
        frame = frame.f_back
    return None


class _RecordGraph(torch._inductor.custom_graph_pass.CustomGraphPass):
    def __init__(self, truth):
        self._truth = truth

    def __call__(self, graph):
        self._truth.see_graph(graph)

    def uuid(self):
        return "gpuattr-tests-compiled-truth"
