"""A small transformer training step on a real GPU (docs/gpu-validation.md).

Four encoder layers (d_model 512, 8 heads, batch 32 x 256 tokens); layer 2 is activation-
checkpointed (torch.utils.checkpoint), so its forward reruns inside backward (gpuattr: recompute).
Each step is a `train_step` range holding `forward`, `backward` and `optimizer`. Backward kernels
are launched by autograd's device thread with no range of its own: gpuattr attributes them by
inheritance from the main thread's `backward`. With --cuda-graph the whole step (ranges included)
is captured once with torch.cuda.graph and replayed, so its kernels are `captured` under the
capture-time ranges. Prints its truth (median step time from CUDA events) as JSON.
"""
import torch_common as tc
from torch_common import torch
from torch.utils.checkpoint import checkpoint

D_MODEL, HEADS, LAYERS, BATCH, TOKENS = 512, 8, 4, 32, 256
CHECKPOINTED_LAYER = 2


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(
            torch.nn.TransformerEncoderLayer(D_MODEL, HEADS, 4 * D_MODEL, dropout=0.0,
                                             batch_first=True)
            for _ in range(LAYERS))
        self.head = torch.nn.Linear(D_MODEL, D_MODEL)

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = checkpoint(layer, x, use_reentrant=False) if i == CHECKPOINTED_LAYER else layer(x)
        return self.head(x)


def add_args(p):
    p.add_argument("--cuda-graph", action="store_true",
                   help="capture the whole step once with torch.cuda.graph and replay it")


def main():
    args = tc.parse_args(__doc__.splitlines()[0], add_args)
    dev = args.device
    if args.cuda_graph and dev != "cuda":
        raise SystemExit("--cuda-graph needs --device cuda")
    torch.manual_seed(0)
    model = Model().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    x = torch.randn(BATCH, TOKENS, D_MODEL, device=dev)
    target = torch.randn(BATCH, TOKENS, D_MODEL, device=dev)
    losses = []

    def body():
        with tc.nvtx("forward", dev):
            loss = torch.nn.functional.mse_loss(model(x), target)
        with tc.nvtx("backward", dev):
            loss.backward()
        with tc.nvtx("optimizer", dev):
            opt.step()
            opt.zero_grad(set_to_none=False)
        return loss

    if args.cuda_graph:
        # Warm-up on a side stream before capture, as torch.cuda.graphs requires.
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                body()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with tc.nvtx("capture", dev), torch.cuda.graph(graph):
            static_loss = body()

        def step_fn(i):
            with tc.nvtx("train_step", dev):
                graph.replay()
            if i == args.warmup + args.steps - 1:
                losses.append(float(static_loss))
    else:
        def step_fn(i):
            with tc.nvtx("train_step", dev):
                loss = body()
            if i == args.warmup + args.steps - 1:
                losses.append(float(loss))

    with tc.profiler(args):
        step_ms = tc.time_steps(step_fn, args)
    tc.emit({
        "program": "torch_train", "device": dev, "cuda_graph": args.cuda_graph,
        "steps": args.steps, "warmup": args.warmup,
        "step_median_ms": tc.median_low(step_ms),
        "final_loss": losses[0] if losses else None,
        "checkpointed_layer": CHECKPOINTED_LAYER,
        "torch_profiler_trace": args.torch_profiler,
    })


if __name__ == "__main__":
    main()
