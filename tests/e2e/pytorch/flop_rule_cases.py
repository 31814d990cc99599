"""Evaluates the built-in FLOP rules (python/gpuattr_site/gpuattr_pytorch/flop_rules.json) on ops this torch cannot
run or the models do not reach (torch >= 2.0's attention kernels, transposed convolutions, norms
without affine, embeddings, foreach), with made-up arguments of known shapes, and prints
{case: [kind, flops, bytes]} as JSON for the e2e test to hold to hand-computed values.

    flop_rule_cases.py GPUATTR_SITE_DIR
"""
import json
import sys

sys.path.insert(0, sys.argv[1])
import torch  # noqa: E402

from gpuattr_pytorch import flops  # noqa: E402

counter = flops.load_counter(torch)


def t(*shape, dtype=torch.float32):
    return torch.empty(shape, dtype=dtype)


def count(op, args, result, kwargs=None):
    # A func without _overloadpacket: torch's registry is not asked, the table answers.
    return list(counter.count(object(), op, args, kwargs or {}, result))


q, k, v = t(2, 4, 16, 8), t(2, 4, 32, 8), t(2, 4, 32, 8)
cases = {
    "sdpa": count("aten::_scaled_dot_product_flash_attention", (q, k, v), (t(2, 4, 16, 8),)),
    "sdpa_backward": count("aten::_scaled_dot_product_flash_attention_backward",
                           (t(2, 4, 16, 8), q, k, v), (q, k, v)),
    "conv_transposed": count("aten::convolution",
                             (t(2, 8, 5, 5), t(8, 4, 3, 3), None, [1, 1], [0, 0], [1, 1], True,
                              [0, 0], 1), t(2, 4, 7, 7)),
    "conv_transposed_backward": count(
        "aten::convolution_backward",
        (t(2, 4, 7, 7), t(2, 8, 5, 5), t(8, 4, 3, 3), [4], [1, 1], [0, 0], [1, 1], True, [0, 0], 1,
         [True, True, False]), (t(2, 8, 5, 5), t(8, 4, 3, 3), None)),
    "layer_norm_no_affine": count("aten::native_layer_norm", (t(4, 10), [10], None, None, 1e-5),
                                  (t(4, 10), t(4, 1), t(4, 1))),
    "embedding": count("aten::embedding", (t(100, 16), t(4, 5, dtype=torch.int64)), t(4, 5, 16)),
    "foreach_add": count("aten::_foreach_add_", ([t(3), t(4)], 1.0), None),
    "baddbmm": count("aten::baddbmm", (t(3, 5, 7), t(3, 5, 6), t(3, 6, 7)), t(3, 5, 7)),
    "scalar_only": count("aten::add", (t(), t()), t()),
    "no_rule": count("aten::no_such_op", (t(3),), t(3)),
    "view": count("aten::view", (t(3), [3]), t(3)),
}
print(json.dumps(cases))
