# FLOP and byte counting for the PyTorch annotator (docs/pytorch.md §FLOPs): actual-path analytic
# counts, by per-op rules over the aten ops that really ran, with their real shapes.
#
# Every op the annotator's dispatch mode sees lands in exactly one of three places:
#   counted  a rule gave its FLOPs (an integer, a fused multiply-add is 2) and its bytes
#            (read-once/write-once unless the rule says otherwise);
#   free     a view or an allocation: no FLOPs and no memory traffic (the table's `free` list);
#   unknown  no rule, or its rule could not be evaluated on these arguments: never a zero, a
#            line of the report's unknown-op ledger with the remedy.
# Rules are data (flop_rules.json, and a --flop-rules file before it): an expression per op over
# its arguments, compiled once from a small, checked subset of Python expressions. Between the
# file's rules and ours, torch's own FlopCounterMode registry answers the ops it knows (torch >=
# 2.1), so that our figures are torch's where torch has one.
#
# Runs on: whichever thread runs an aten op under the annotator's dispatch mode.
import ast
import json
import math
import os

RULES_FORMAT = "gpuattr.flop_rules/1"
DEFAULT_RULES_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "flop_rules.json")

COUNTED, FREE, UNKNOWN = "counted", "free", "unknown"


class RuleFileError(Exception):
    """A rule file that cannot be used, with the file and the place named."""


class Shape(tuple):
    """A tensor argument as a rule sees it: its shape, with its element count and element size."""

    @property
    def numel(self):
        return math.prod(self)


def _numel(shape):
    return math.prod(shape)


def _transposed(shape):
    """The shape with its first two dimensions swapped (torch's flop_counter `t`)."""
    return Shape([shape[1], shape[0]] + list(shape[2:]))


def _conv(x_shape, w_shape, out_shape, transposed):
    """torch's conv_flop_count: 2 FLOPs per multiply-add over the output (the input when
    transposed) positions, the batch, the output and input channels and the filter."""
    conv_shape = (x_shape if transposed else out_shape)[2:]
    c_out, c_in = w_shape[0], w_shape[1]
    return 2 * x_shape[0] * math.prod(conv_shape) * c_out * c_in * math.prod(w_shape[2:])


_HELPERS = {"numel": _numel, "prod": math.prod, "conv": _conv, "tr": _transposed, "len": len,
            "min": min, "max": max, "sum": sum, "abs": abs}
# What an expression evaluates in: the helpers and no builtins (eval would otherwise add them).
_GLOBALS = dict(_HELPERS, __builtins__={})
_ATTRIBUTES = {"numel", "itemsize"}
_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Call,
          ast.Name, ast.Constant, ast.Subscript, ast.Slice, ast.Attribute, ast.Tuple, ast.List,
          ast.GeneratorExp, ast.comprehension, ast.Load, ast.Store, ast.operator, ast.unaryop,
          ast.boolop, ast.cmpop)


def compile_expression(text, where):
    """A rule's expression, checked and compiled: arithmetic, comparisons, conditionals,
    indexing, slicing, generator expressions, calls of the helpers, and .numel/.itemsize."""
    if not isinstance(text, str):
        raise RuleFileError("%s: an expression must be a string" % where)
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as error:
        raise RuleFileError("%s: %s" % (where, error.msg))
    for node in ast.walk(tree):
        if not isinstance(node, _NODES):
            raise RuleFileError("%s: %s is not allowed in a rule" % (where, type(node).__name__))
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and
                                               node.func.id in _HELPERS):
            raise RuleFileError("%s: only %s may be called" % (where, ", ".join(sorted(_HELPERS))))
        if isinstance(node, ast.Attribute) and node.attr not in _ATTRIBUTES:
            raise RuleFileError("%s: only .numel and .itemsize may be read" % where)
    return compile(tree, where, "eval")


class Rule:
    __slots__ = ("flops", "bytes")

    def __init__(self, flops, bytes_code):
        self.flops = flops  # compiled expressions; bytes None: read-once/write-once
        self.bytes = bytes_code


class RuleTable:
    """Op name -> Rule, and the free ops; the files given first win. `file_ops`: the ops a file
    before ours named, which win over torch's registry too."""

    def __init__(self):
        self.rules = {}
        self.free = set()
        self.sources = []
        self.file_ops = set()

    @classmethod
    def load(cls, file_paths):
        """The files' rules, then ours."""
        table = cls()
        for path in file_paths:
            table._add_file(path, ours=False)
        table._add_file(DEFAULT_RULES_PATH, ours=True)
        return table

    def _add_file(self, path, ours):
        try:
            with open(path, encoding="utf-8") as file:
                document = json.load(file)
        except (OSError, ValueError) as error:
            raise RuleFileError("%s: %s" % (path, error))
        if not isinstance(document, dict) or document.get("format") != RULES_FORMAT:
            raise RuleFileError("%s: not a %s file" % (path, RULES_FORMAT))
        self.sources.append(os.path.basename(path))
        free = document.get("free", [])
        if not isinstance(free, list) or not all(isinstance(op, str) for op in free):
            raise RuleFileError("%s: free must be a list of op names" % path)
        if not ours:
            self.file_ops.update(free)
        for op in free:
            if op not in self.rules:
                self.free.add(op)
        rules = document.get("rules", [])
        if not isinstance(rules, list):
            raise RuleFileError("%s: rules must be a list" % path)
        for index, entry in enumerate(rules):
            where = "%s: rules[%d]" % (path, index)
            if not isinstance(entry, dict):
                raise RuleFileError("%s: a rule is an object" % where)
            if "ops" not in entry:  # a heading: {"about": ...}
                continue
            ops = entry["ops"]
            if not isinstance(ops, list) or not all(isinstance(op, str) for op in ops):
                raise RuleFileError("%s: ops must be a list of op names" % where)
            flops = compile_expression(entry.get("flops"), where + ".flops")
            bytes_code = (compile_expression(entry["bytes"], where + ".bytes")
                          if "bytes" in entry else None)
            if not ours:
                self.file_ops.update(ops)
            for op in ops:
                if op not in self.rules and op not in self.free:
                    self.rules[op] = Rule(flops, bytes_code)


def _torch_registry():
    """torch's FlopCounterMode formulas by op packet (torch >= 2.1), or None."""
    try:
        from torch.utils.flop_counter import flop_registry
    except ImportError:
        return None
    return flop_registry if isinstance(flop_registry, dict) else None


class FlopCounter:
    """Counts one aten op: (COUNTED, flops, bytes, dtype), (FREE,) or (UNKNOWN,)."""

    def __init__(self, torch, table):
        self._tensor_type = torch.Tensor
        self._table = table
        self._dtype_names = {}  # torch dtype -> "float32"
        registry = _torch_registry()
        self._registry = registry if registry is not None else {}
        self.description = "rules: %s%s" % (
            ", ".join(table.sources), ", torch FlopCounterMode" if registry is not None else "")

    def count(self, func, op, args, kwargs, result):
        table = self._table
        rule = table.rules.get(op)
        if rule is None and op in table.free:
            return (FREE,)
        flops = None
        if op not in table.file_ops:
            formula = self._registry.get(getattr(func, "_overloadpacket", None))
            if formula is not None:
                try:
                    flops = int(formula(*args, **kwargs, out_val=result))
                except Exception:
                    flops = None
        if flops is None and rule is None:
            return (UNKNOWN,)
        names, traffic, dtype = self._describe(args, kwargs, result)
        try:
            if flops is None:
                flops = eval(rule.flops, _GLOBALS, names)
            if rule is not None and rule.bytes is not None:
                traffic = eval(rule.bytes, _GLOBALS, names)
        except Exception:
            return (UNKNOWN,)
        if (type(flops) is not int or flops < 0 or type(traffic) is not int or traffic < 0):
            return (UNKNOWN,)
        return (COUNTED, flops, traffic, dtype)

    def _describe(self, args, kwargs, result):
        """In one walk over the op's arguments and outputs: the names a rule reads them by, the
        read-once/write-once bytes (every tensor argument read once but an `out=` one, every
        output written once; 0-dim tensors are scalars, not traffic), and the dtype (the first
        output's, else the first argument's)."""
        tensor_type = self._tensor_type
        walked = [0, None]  # bytes, first dtype

        def read(value, traffic=True):
            if isinstance(value, tensor_type):
                shape = Shape(value.shape)
                itemsize = shape.itemsize = value.element_size()
                if traffic and shape:
                    walked[0] += math.prod(shape) * itemsize
                if walked[1] is None:
                    walked[1] = value.dtype
                return shape
            if isinstance(value, (list, tuple)):
                return [read(item, traffic) for item in value]
            return value

        out = [read(value) for value in (result if isinstance(result, (list, tuple))
                                          else (result,))]
        names = {"a%d" % index: read(value) for index, value in enumerate(args)}
        names["kw"] = {key: read(value, key != "out") for key, value in kwargs.items()}
        names["out"] = out
        dtype = walked[1]
        name = self._dtype_names.get(dtype)
        if name is None:
            name = self._dtype_names[dtype] = (str(dtype).replace("torch.", "")
                                               if dtype is not None else "none")
        return names, walked[0], name


def load_counter(torch, rule_file=None):
    """A FlopCounter with the rule file (--flop-rules, GPUATTR_FLOP_RULES) before ours."""
    return FlopCounter(torch, RuleTable.load([rule_file] if rule_file else []))
