# What the annotator wraps in torch itself, each wrapper adding a range and nothing else:
#
#   backward                    Tensor.backward and torch.autograd.backward: the op mode entered
#                               first, and the nodes no module call made claimed (call 0)
#   Optimizer.step#<Class>.step          optimizer.step(), as torch.profiler names it; it ends
#                                        the step
#   Optimizer.zero_grad#<Class>.zero_grad  opens a step when none is open
#   enumerate(DataLoader)#<Iterator>.__next__   fetching a batch, as torch.profiler names it
#   nn.functional.<loss>        a torch.nn.functional loss called outside a loss module
#                               (F.cross_entropy inside a model's forward): loss, under the
#                               module that called it
#   torch.nn.utils.clip_grad_norm_ / clip_grad_value_   gradient clipping: optimizer
#
# Optimizer classes are wrapped as the program instantiates them (at Optimizer.__init__), once
# per class.
# Runs on: the thread that imports torch (install); then the calling threads.
import functools

from .backward import grad_nodes

_NAMED_LOSSES = ("cross_entropy", "binary_cross_entropy", "binary_cross_entropy_with_logits",
                 "kl_div")
_CLIPPING = ("clip_grad_norm_", "clip_grad_value_")


def functional_losses(functional):
    """The loss functions of torch.nn.functional: `*_loss`, and the four named otherwise."""
    return [name for name in dir(functional)
            if (name.endswith("_loss") or name in _NAMED_LOSSES) and
            callable(getattr(functional, name))]


class Patches:
    def __init__(self, torch, ranges, guard, steps, claims, module_calls, op_mode):
        self._torch = torch
        self._ranges = ranges
        self._guard = guard
        self._steps = steps
        self._claims = claims
        self._module_calls = module_calls
        self._op_mode = op_mode  # op_mode.OpMode or None

    def install(self):
        self.wrap_backward()
        self.wrap_optimizers()
        self.wrap_data_loader()
        self.wrap_functional_losses()
        self.wrap_gradient_clipping()

    def wrap_backward(self):
        torch = self._torch
        for owner in (torch.Tensor, torch.autograd):
            owner.backward = self._in_backward(owner.backward)

    def _in_backward(self, function):
        guard, steps, claims, op_mode = self._guard, self._steps, self._claims, self._op_mode
        stack = self._ranges.stack
        tensor_type = self._torch.Tensor

        @functools.wraps(function)
        def wrapped(*args, **kwargs):
            # Tensor.backward calls autograd.backward; a backward called inside a node (a
            # reentrant checkpoint's) runs the graph its recompute made, whose nodes no module
            # call made are claimed here as at the outer call.
            if steps.in_backward() and not stack.nodes:
                return function(*args, **kwargs)
            steps.enter_backward()
            stack.backward_calls += 1
            try:
                if guard.may_emit():
                    try:
                        if op_mode is not None:
                            # Autograd runs each node with the calling thread's dispatch modes
                            # as they are now (on every thread it runs nodes on): enter ours.
                            op_mode.enter()
                        if claims.enabled:  # what no module call made, as torch.profiler links
                            roots = grad_nodes(args[0] if args else kwargs.get("tensors"),
                                               tensor_type)
                            if roots:
                                claims.claim(roots, 0, (), ())
                    except Exception as error:
                        guard.disable(error)
                return function(*args, **kwargs)
            finally:
                steps.leave_backward()
                stack.backward_calls -= 1
                if op_mode is not None:
                    try:
                        op_mode.leave_if_scoped()
                    except Exception as error:
                        guard.disable(error)

        return wrapped

    def wrap_optimizers(self):
        optimizer_class = self._torch.optim.Optimizer
        original_init = optimizer_class.__init__
        guard, steps = self._guard, self._steps
        wrap_class = self._wrap_optimizer_class

        @functools.wraps(original_init)
        def init_then_wrap(optimizer, *args, **kwargs):
            original_init(optimizer, *args, **kwargs)
            if guard.enabled:
                try:
                    steps.optimizer_seen = True
                    wrap_class(type(optimizer))
                except Exception as error:
                    guard.disable(error)

        optimizer_class.__init__ = init_then_wrap

    def _wrap_optimizer_class(self, optimizer_type):
        if "_gpuattr_step" in optimizer_type.__dict__:
            return
        optimizer_type._gpuattr_step = True
        class_name = optimizer_type.__name__
        step_name = "Optimizer.step#%s.step" % class_name
        ranged_step = self._guard.around(lambda step: step_name, optimizer_type.step)
        guard, steps = self._guard, self._steps

        @functools.wraps(optimizer_type.step)
        def step_then_close(*args, **kwargs):
            try:
                return ranged_step(*args, **kwargs)
            finally:
                if guard.enabled:
                    steps.close()

        optimizer_type.step = step_then_close
        zero_grad_name = "Optimizer.zero_grad#%s.zero_grad" % class_name

        def open_step_for_zero_grad(zero_grad):
            steps.open()
            return zero_grad_name

        optimizer_type.zero_grad = self._guard.around(open_step_for_zero_grad,
                                                      optimizer_type.zero_grad)

    def wrap_functional_losses(self):
        """A loss module's own call of a functional loss adds nothing: the module's range is the
        loss already."""
        functional = self._torch.nn.functional
        innermost_is_loss = self._module_calls.innermost_is_loss

        def name_of_loss(name):
            range_name = "nn.functional." + name
            return lambda function: None if innermost_is_loss() else range_name

        for name in functional_losses(functional):
            setattr(functional, name,
                    self._guard.around(name_of_loss(name), getattr(functional, name)))

    def wrap_gradient_clipping(self):
        """Wherever the program imports them from after torch: torch.nn.utils, or its
        clip_grad module."""
        utils = self._torch.nn.utils
        clip_grad = getattr(utils, "clip_grad", None)
        for name in _CLIPPING:
            function = getattr(utils, name, None)
            if function is None:
                continue
            range_name = "torch.nn.utils." + name
            wrapped = self._guard.around(lambda function, name=range_name: name, function)
            setattr(utils, name, wrapped)
            if clip_grad is not None and getattr(clip_grad, name, None) is function:
                setattr(clip_grad, name, wrapped)

    def wrap_data_loader(self):
        data_loader = self._torch.utils.data.dataloader
        for iterator_type in (data_loader._SingleProcessDataLoaderIter,
                              data_loader._MultiProcessingDataLoaderIter):
            name = "enumerate(DataLoader)#%s.__next__" % iterator_type.__name__
            iterator_type.__next__ = self._guard.around(lambda next_batch, name=name: name,
                                                        iterator_type.__next__)
