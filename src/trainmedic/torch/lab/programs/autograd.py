"""Three mistakes autograd refuses at backward, in a small training loop that runs a few steps first.

--mode no-grad: every parameter frozen, as a LoRA model whose adapters were never attached, with
  reentrant checkpointing (its warning comes first, then "element 0 of tensors does not require grad").
--mode inplace: a ReLU applied in place to an output the next layer saved for backward.
--mode twice: a hidden state carried from one step to the next without detach().
"""

from __future__ import annotations

import argparse

import torch
from torch.utils.checkpoint import checkpoint


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mode", choices=["no-grad", "inplace", "twice"], required=True)
    parser.add_argument("--fail-step", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    enc, head = torch.nn.Linear(8, 8), torch.nn.Linear(8, 1)
    opt = torch.optim.SGD([*enc.parameters(), *head.parameters()], lr=0.01)
    hidden = torch.zeros(4, 8)
    for step in range(8):
        x, y = torch.randn(4, 8), torch.randn(4, 1)
        failing = step == args.fail_step
        if args.mode == "no-grad" and failing:
            for p in [*enc.parameters(), *head.parameters()]:
                p.requires_grad_(False)
            h = checkpoint(enc, x, use_reentrant=True)
        elif args.mode == "inplace" and failing:
            h = torch.sigmoid(enc(x))
            out = head(h)
            h.mul_(2.0)  # the head saved h for its backward; this changes it in place
            loss = torch.nn.functional.mse_loss(out, y)
            print(f"step {step} loss {loss.item():.4f}", flush=True)
            loss.backward()  # type: ignore[no-untyped-call]  # untyped in torch 2.13
            continue
        elif args.mode == "twice":
            hidden = torch.tanh(enc(x) + hidden)  # carried on without detach(): step 1 backprops into step 0
            h = hidden
        else:
            h = torch.relu(enc(x))
        loss = torch.nn.functional.mse_loss(head(h), y)
        print(f"step {step} loss {loss.item():.4f}", flush=True)
        opt.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]  # untyped in torch 2.13
        opt.step()
    print("done", flush=True)


if __name__ == "__main__":
    main()
